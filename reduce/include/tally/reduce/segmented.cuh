#pragma once
// Segmented reductions on CUDA, header-only: the library's segmented_reduce() runs these kernels
// (compiled in src/segmented/segmented_cuda*.cu), and a user's reducer (reducer.hpp) does too from any
// .cu file:
//
//   #include <tally/reduce/segmented.cuh>
//   segmented_reduce_custom<BBox2, Point2>(Backend::cuda, std::span<const Point2>(d_pts, n),
//                                          std::span<const std::int64_t>(d_off, n_seg + 1),
//                                          std::span<Box2>(d_box, n_seg), ws, stream);
//
// Segments given by CSR offsets, balanced however uneven their lengths; each combined in an order
// fixed by its length (segmented.hpp): bitwise reproducible. The design: detail/segmented.cuh.

#include <cstdint>
#include <span>

#include "tally/reduce/detail/segmented.cuh"
#include "tally/reduce/segmented.hpp"
#include "tally/reduce/segmented_generic.hpp"

namespace tally::reduce {

/// A user's reducer (reducer.hpp) over segments, on either backend, the same semantics as
/// segmented_reduce() (checks, empty segments, determinism; load(x, index) sees the position within
/// the segment). CUDA: in, offsets and out in device memory; asynchronous unless check is full.
template <class R, class T, class Off>
requires(Reducer<R>&& is_segment_offset<Off>) void segmented_reduce_custom(Backend backend, std::span<const T> in,
                                                                           std::span<const Off> offsets,
                                                                           std::span<typename R::value_type> out,
                                                                           Workspace& ws, stream_t stream = nullptr,
                                                                           SegmentCheck check = SegmentCheck::full) {
  const auto n = static_cast<std::int64_t>(in.size()), n_out = static_cast<std::int64_t>(out.size());
  detail::validate_segment_sizes(n, in.data(), static_cast<std::int64_t>(offsets.size()), offsets.data(), n_out,
                                 out.data());
  detail::check_workspace(ws, backend);
  if (n_out == 0) return;
  if (backend == Backend::cpu) {
    if (check == SegmentCheck::full) detail::check_offsets_cpu(offsets.data(), n_out, n);
    detail::segmented_cpu<R, T, typename R::value_type, Off>(in.data(), n, offsets.data(), n_out, out.data());
  } else {
    if (check == SegmentCheck::full) detail::check_offsets_cuda(offsets.data(), n_out, n, ws, stream);
    detail::cuda::seg::segmented_cuda_impl<R, T, typename R::value_type, Off>(in.data(), n, offsets.data(), n_out,
                                                                              out.data(), ws, stream);
  }
}

}  // namespace tally::reduce
