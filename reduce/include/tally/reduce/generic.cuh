#pragma once
// The generic engine for reducers (reducer.hpp), CUDA backend, header-only: the library's ArgMax,
// ArgMin, MinMax and MeanVar run through it (compiled in src/cuda/reducers_cuda*.cu), and a user's
// reducer does too from any .cu file:
//
//   #include <tally/reduce/generic.cuh>
//   reduce_custom<BBox2>(Backend::cuda, View<const Point>::flat(d_pts, n), Levels::all(),
//                        std::span<Box>(d_box, 1), ws, stream);         // asynchronous
//   Box b = reduce_custom_to_host<BBox2>(Backend::cuda, view, ws, stream);  // waits for the stream
//
// No floating-point atomics; the combination tree is fixed by the launch shape, so a deterministic
// combine gives the same bits run to run (the kernels: detail/generic.cuh). value_type must be
// trivially copyable and trivially default constructible (it lives in __shared__).

#include <span>

#include "tally/reduce/detail/generic.cuh"
#include "tally/reduce/generic.hpp"

namespace tally::reduce {

/// A user's reducer R over `levels` of `in` (device memory), into d_out (device memory, one
/// R::value_type per remaining position), asynchronous on `stream`. Checks as reduce() does.
template <class R, class T>
requires ReducerFor<R, T>
void reduce_custom_cuda(View<const T> in, Levels levels, std::span<typename R::value_type> d_out, Workspace& ws,
                        stream_t stream = nullptr) {
  detail::check_custom<R>(in, levels, static_cast<std::int64_t>(d_out.size()), d_out.data(), ws, Backend::cuda);
  detail::generic::run<R, T>(in, levels, d_out.data(), ws, stream);
}

/// Either backend (CPU: generic.hpp's engine, `ws` and `stream` unused but checked).
template <class R, class T>
requires ReducerFor<R, T>
void reduce_custom(Backend backend, View<const T> in, Levels levels, std::span<typename R::value_type> out,
                   Workspace& ws, stream_t stream = nullptr) {
  if (backend == Backend::cpu) {
    detail::check_workspace(ws, backend);
    reduce_custom_cpu<R, T>(in, levels, out);
  } else {
    reduce_custom_cuda<R, T>(in, levels, out, ws, stream);
  }
}

/// All three levels to one value on the host (CUDA: waits for `stream`).
template <class R, class T>
requires ReducerFor<R, T>
typename R::value_type reduce_custom_to_host(Backend backend, View<const T> in, Workspace& ws,
                                             stream_t stream = nullptr) {
  typename R::value_type r = R::identity();
  if (backend == Backend::cpu) {
    reduce_custom<R, T>(backend, in, Levels::all(), std::span<typename R::value_type>(&r, 1), ws, stream);
    return r;
  }
  detail::check_custom<R>(in, Levels::all(), 1, &r, ws, Backend::cuda);
  detail::generic::run<R, T>(in, Levels::all(), nullptr, ws, stream, &r);
  return r;
}

}  // namespace tally::reduce
