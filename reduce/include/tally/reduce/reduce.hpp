#pragma once
// tally::reduce host API.
//
//   reduce<Op, T, Acc = T>(backend, input view, levels, output, workspace, stream)
//
// reduces the levels `levels` of a (ng, nw, nv) input (gang = ng, worker = nw, vector = nv) with the
// operator Op, accumulating in Acc; the output holds the remaining axes in order (see output_shape()).
//
// * CUDA: `in.data` and `out` are device memory (or memory the device can read/write). The call is
//   asynchronous on `stream`: it enqueues kernels and returns, with no allocation once the workspace
//   has grown to the problem and no device synchronisation. reduce_to_host() is the one call that
//   waits, for a scalar result on the host.
// * CPU: OpenMP threads plus SIMD; `stream` is ignored.
//
// Determinism: for the same input, level set, backend and launch configuration (device, Tuning),
// every production path returns bitwise identical results run to run: each output element is
// combined in a fixed order (per-thread strided partials, a fixed shuffle tree, per-block partials
// combined in block order by the last block to finish). No floating-point atomics touch a result.
//
// Empty inputs give the identity of Op for every output element. Max and Min propagate NaN.
//
// Exact sum: reduce<ExactSum, T, Out> with (T, Out) = (float, float), (float, double) or (double,
// double) returns for every output the exact sum of its elements rounded once, to nearest even, to
// Out: bitwise the same on both backends and for any level set reaching the same elements, thread
// count, block count or tuning. NaN, or +Inf with -Inf, gives NaN; an Inf otherwise wins; an exact
// result beyond Out's range rounds to Inf; an exact zero is +0 unless every element was -0. See exact.hpp.
//
// Mean: reduce<Mean, T, Acc> with (T, Acc) = (float, float), (float, double) or (double, double) is
// the sum's reduction (same kernels, same speed, same order) with each output divided once by its
// element count: bitwise reproducible as the sum is (on the CPU whatever the thread count). NaN
// propagates; the mean of nothing is NaN. (MeanVar, reducers.hpp, keeps it in double by Welford/Chan.)
//
// Bad arguments (output of the wrong size, an empty level set, a null pointer with a non-zero size,
// a stride smaller than the row, a negative extent, a workspace of the other backend) throw
// std::invalid_argument naming the argument.

#include <cstdint>
#include <span>
#include <type_traits>

#include "tally/reduce/backend.hpp"
#include "tally/reduce/config.hpp"
#include "tally/reduce/levels.hpp"
#include "tally/reduce/ops.hpp"
#include "tally/reduce/reducer.hpp"
#include "tally/reduce/reducers.hpp"
#include "tally/reduce/view.hpp"
#include "tally/reduce/workspace.hpp"

namespace tally::reduce {

namespace exact {
template <class T>
struct Accumulator;  // exact.hpp
}  // namespace exact

namespace detail {
// The checked, backend-neutral description of a reduction (see src/plan.hpp).
struct Problem {
  const void* data;
  Extents ext;
  std::int64_t stride_w, stride_g;
  Levels levels;
  std::int64_t out_size;
};
void validate(const Problem& p, const void* out);
/// Elements reduced into each output: the product of the reduced levels' extents.
constexpr std::int64_t elements_per_output(Extents e, Levels levels) {
  std::int64_t per = 1;
  constexpr Level order[3] = {Level::gang, Level::worker, Level::vector};
  for (int a = 0; a < 3; ++a)
    if (levels.contains(order[a])) per *= e[a];
  return per;
}

template <class Op, class T, class Acc>
void reduce_cpu(const Problem& p, Acc* out);
template <class Op, class T, class Acc>
void reduce_cuda(const Problem& p, Acc* d_out, Workspace& ws, stream_t stream);
template <class T, class Out>
void exact_cpu(const Problem& p, Out* out);  // ExactSum (exact.hpp)
template <class T, class Out>
void exact_cuda(const Problem& p, Out* d_out, Workspace& ws, stream_t stream);  // Out: also exact::Accumulator<T>
template <class T, class Out>
void exact_round_cuda(const exact::Accumulator<T>* d_acc, Out* d_out, std::int64_t n, Workspace& ws, stream_t stream);
template <class Acc>
Acc copy_scalar_to_host(const Acc* d_value, stream_t stream);  // cudaMemcpyAsync + stream sync
void check_workspace(const Workspace& ws, Backend b);

// Generic reducers (reducer.hpp): the engines of generic.hpp / generic.cuh, compiled into the library
// for is_compiled_reducer's pairs. `in`, `levels` and `out` have passed validate().
template <class R, class T>
void reducer_cpu(View<const T> in, Levels levels, typename R::value_type* out, std::int64_t out_size);
template <class R, class T>
void reducer_cuda(View<const T> in, Levels levels, typename R::value_type* d_out, std::int64_t out_size, Workspace& ws,
                  stream_t stream);
/// A full reduction's value, copied to the host (waits for `stream`).
template <class R, class T>
typename R::value_type reducer_cuda_to_host(View<const T> in, Workspace& ws, stream_t stream);
/// Throws std::invalid_argument when a reducer that needs input (`name`: argmax, argmin) would
/// reduce an empty set: some output and no element per output.
void check_nonempty(const char* name, Extents e, Levels levels, std::int64_t out_size);
}  // namespace detail

/// A generic reducer (reducers.hpp: ArgMax<T>, ArgMin<T>, MinMax<T>, MeanVar) over `levels`: out has
/// R::value_type elements, one per remaining position as for the operators above. CUDA: `out` in
/// device memory, asynchronous on `stream`. Arg-reductions of an empty set throw std::invalid_argument.
/// User reducers: reduce_custom_cpu (generic.hpp) and reduce_custom_cuda / reduce_custom (generic.cuh).
template <class R, class T>
requires(Reducer<R>&& is_compiled_reducer<R, T>) void reduce(Backend backend, View<const T> in, Levels levels,
                                                             std::span<typename R::value_type> out, Workspace& ws,
                                                             stream_t stream = nullptr) {
  const detail::Problem p{in.data, in.ext, in.stride_w, in.stride_g, levels, static_cast<std::int64_t>(out.size())};
  detail::validate(p, out.data());
  detail::check_workspace(ws, backend);
  if constexpr (reducer_needs_input<R>()) detail::check_nonempty(R::name, in.ext, levels, p.out_size);
  if (backend == Backend::cpu) detail::reducer_cpu<R, T>(in, levels, out.data(), p.out_size);
  else detail::reducer_cuda<R, T>(in, levels, out.data(), p.out_size, ws, stream);
}

/// All three levels of `in` by a generic reducer, the value on the host (on CUDA: waits for `stream`).
template <class R, class T>
requires(Reducer<R>&& is_compiled_reducer<R, T>) typename R::value_type
    reduce_to_host(Backend backend, View<const T> in, Workspace& ws, stream_t stream = nullptr) {
  if (backend == Backend::cpu) {
    typename R::value_type r = R::identity();
    reduce<R, T>(backend, in, Levels::all(), std::span<typename R::value_type>(&r, 1), ws, stream);
    return r;
  }
  const detail::Problem p{in.data, in.ext, in.stride_w, in.stride_g, Levels::all(), 1};
  detail::validate(p, &p);  // any non-null output: the scalar lives in the workspace
  detail::check_workspace(ws, backend);
  if constexpr (reducer_needs_input<R>()) detail::check_nonempty(R::name, in.ext, Levels::all(), 1);
  return detail::reducer_cuda_to_host<R, T>(in, ws, stream);
}

template <class Op, class T, class Acc = T>
requires(!Reducer<Op>) void reduce(Backend backend, View<const T> in, Levels levels, std::span<Acc> out, Workspace& ws,
                                   stream_t stream = nullptr) {
  static_assert(is_supported<Op, T, Acc>,
                "this (operator, input type, accumulator) is not compiled into tally::reduce");
  const detail::Problem p{in.data, in.ext, in.stride_w, in.stride_g, levels, static_cast<std::int64_t>(out.size())};
  detail::validate(p, out.data());
  detail::check_workspace(ws, backend);
  if constexpr (std::is_same_v<Op, ExactSum>) {
    if (backend == Backend::cpu) detail::exact_cpu<T, Acc>(p, out.data());
    else detail::exact_cuda<T, Acc>(p, out.data(), ws, stream);
  } else {
    if (backend == Backend::cpu) detail::reduce_cpu<Op, T, Acc>(p, out.data());
    else detail::reduce_cuda<Op, T, Acc>(p, out.data(), ws, stream);
  }
}

/// Reduces all three levels and returns the scalar on the host. On CUDA this is the one explicit
/// synchronisation: it waits for `stream`. The device-side scalar lives in the workspace.
template <class Op, class T, class Acc = T>
requires(!Reducer<Op>) Acc reduce_to_host(Backend backend, View<const T> in, Workspace& ws, stream_t stream = nullptr) {
  if (backend == Backend::cpu) {
    Acc r{};
    reduce<Op, T, Acc>(backend, in, Levels::all(), std::span<Acc>(&r, 1), ws, stream);
    return r;
  }
  Acc* d_r = static_cast<Acc*>(ws.result_slot());
  reduce<Op, T, Acc>(backend, in, Levels::all(), std::span<Acc>(d_r, 1), ws, stream);
  return detail::copy_scalar_to_host(d_r, stream);
}

}  // namespace tally::reduce
