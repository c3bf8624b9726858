#pragma once
// Segmented reductions, CPU engine, header-only: the library's segmented_reduce() on the CPU backend
// runs it (compiled in src/segmented/segmented_cpu.cpp), and a user's reducer (reducer.hpp) does too:
//
//   #include <tally/reduce/segmented_generic.hpp>
//   segmented_reduce_custom_cpu<BBox2, Point2>(std::span<const Point2>(pts), std::span<const std::int64_t>(off),
//                                              std::span<Box2>(boxes));
//
// Each segment is folded in an order that depends on the segment alone (detail/segmented_generic.hpp):
// the bits depend neither on the thread count nor on the other segments. Op: an operator of ops.hpp
// or a Reducer, loaded with its position in the segment. OpenMP where the including code is compiled
// with it (serial otherwise, the same bits).

#include <span>

#include "tally/reduce/detail/segmented_generic.hpp"
#include "tally/reduce/segmented.hpp"

namespace tally::reduce {

/// A user's reducer over segments on the CPU: the same checks and semantics as segmented_reduce().
template <class R, class T, class Off>
requires(Reducer<R>&& is_segment_offset<Off>) void segmented_reduce_custom_cpu(
    std::span<const T> in, std::span<const Off> offsets, std::span<typename R::value_type> out,
    SegmentCheck check = SegmentCheck::full) {
  const auto n = static_cast<std::int64_t>(in.size()), n_out = static_cast<std::int64_t>(out.size());
  detail::validate_segment_sizes(n, in.data(), static_cast<std::int64_t>(offsets.size()), offsets.data(), n_out,
                                 out.data());
  if (n_out == 0) return;
  if (check == SegmentCheck::full) detail::check_offsets_cpu(offsets.data(), n_out, n);
  detail::segmented_cpu<R, T, typename R::value_type, Off>(in.data(), n, offsets.data(), n_out, out.data());
}

}  // namespace tally::reduce
