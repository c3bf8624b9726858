#pragma once
// The rank level: the fourth level of the reduction hierarchy (vector, worker, gang, rank), over the
// ranks of the rank runtime (tally/ranks/comm.hpp: MPI processes, NCCL for device buffers). Host-only
// header: no MPI, NCCL or CUDA headers; a build without MPI has the same API with one rank.
//
//   comm.use_device(comm.pick_device(), stream);            // each rank its GPU; NCCL when each has its own
//   reduce<Sum, float, double>(comm, Backend::cuda, slab, Levels::all(), out, ws, stream);  // all four levels
//   allreduce<Max, double>(comm, d_res, d_res, ranks::Memory::device, stream);             // the cross-rank step
//
// Determinism. allreduce() combines the ranks' values in rank order on every rank,
//   out = combine(...combine(combine(x_0, x_1), x_2)..., x_{size-1}),
// so every rank holds the same bits, run to run, whatever ring or tree NCCL or MPI would choose
// (floating-point operands are gathered and folded in that order; only integer Sum/Prod/Max/Min,
// exact in any order, may use the transport's own reduction). Max, Min and every integer operator
// are therefore bitwise identical for every rank count; a floating-point Sum depends on the rank
// count (and on where the gang axis was split), not on anything else; ExactSum does not (the ranks
// add their unrounded accumulators as integers and round once). Max and Min propagate NaN,
// as everywhere in the library (NCCL's and MPI's own max/min are never used on floating point).

#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "tally/ranks/comm.hpp"
#include "tally/reduce/exact.hpp"
#include "tally/reduce/reduce.hpp"

namespace tally::reduce {

namespace detail {

/// out[i] = combine(...combine(x_0[i], x_1[i])..., x_{n-1}[i]) over `nranks` rows of `count` T.
template <class Op, class T>
void fold_ranks_host(const void* gathered, void* out, std::size_t count, int nranks) {
  const T* g = static_cast<const T*>(gathered);
  T* o = static_cast<T*>(out);
  for (std::size_t i = 0; i < count; ++i) {
    T acc = g[i];
    for (int r = 1; r < nranks; ++r) acc = Op::template combine<T>(acc, g[static_cast<std::size_t>(r) * count + i]);
    o[i] = acc;
  }
}
/// The same fold on device memory, by a kernel on `stream` (src/cuda/fold_ranks.cu): the same
/// sequence of combines, the library's operators (NaN propagates through Max and Min).
template <class Op, class T>
void fold_ranks_device(const void* gathered, void* out, std::size_t count, int nranks, stream_t stream);

template <class Op>
constexpr ranks::NativeOp native_op() {
  if constexpr (std::is_same_v<Op, Sum>) return ranks::NativeOp::sum;
  else if constexpr (std::is_same_v<Op, Prod>) return ranks::NativeOp::prod;
  else if constexpr (std::is_same_v<Op, Max>) return ranks::NativeOp::max;
  else return ranks::NativeOp::min;
}

}  // namespace detail

/// Collective. out[i] = the combination of every rank's in[i] in rank order (see the top), on every
/// rank. in and out may be the same span; every rank passes the same count. Op/T: every operator and
/// type of the library (is_supported<Op, T, T>). Device memory: after comm.use_device().
template <class Op, class T>
void allreduce(const ranks::Comm& comm, std::span<const T> in, std::span<T> out, ranks::Memory where,
               stream_t stream = nullptr) {
  static_assert(is_supported<Op, T, T>, "allreduce: this (operator, type) is not in the library");
  static_assert(!std::is_same_v<Op, Mean>,
                "allreduce: no mean across ranks (allreduce the sums, divide by the total count)");
  if (in.size() != out.size())
    throw std::invalid_argument("allreduce: out has " + std::to_string(out.size()) + " elements, in has " +
                                std::to_string(in.size()));
  ranks::RankFold fold;
  fold.host = &detail::fold_ranks_host<Op, T>;
  fold.device = &detail::fold_ranks_device<Op, T>;
  // Integer Sum/Prod/Max/Min are exact in any order: the transport's own reduction gives the same bits.
  fold.use_native = std::is_integral_v<T> && !is_bitwise_op<Op>;
  fold.native = detail::native_op<Op>();
  comm.allreduce_with(in.data(), out.data(), in.size(), ranks::dtype_of<T>(), fold, where, stream);
}

namespace detail {

/// ExactSum over several ranks (levels with gang): each rank's unrounded, normalised accumulators
/// (exact.hpp), added across ranks as integers by an integer allreduce (exact in any order: every
/// limb below 2^32 after normalisation, so up to 2^31 ranks), rounded once on every rank: the same
/// bits for every rank count, equal to the single-process exact sum. Both backends.
template <class T, class Out>
void exact_across_ranks(const ranks::Comm& comm, Backend backend, View<const T> in, Levels levels, std::span<Out> out,
                        Workspace& ws, stream_t stream) {
  using A = exact::Accumulator<T>;
  static_assert(sizeof(A) == sizeof(std::int64_t) * A::words, "exact::Accumulator: a plain array of int64");
  const Problem p{in.data, in.ext, in.stride_w, in.stride_g, levels, static_cast<std::int64_t>(out.size())};
  validate(p, out.data());
  check_workspace(ws, backend);
  const std::size_t words = out.size() * A::words;
  if (backend == Backend::cpu) {
    std::vector<A> acc(out.size());
    exact_cpu<T, A>(p, acc.data());
    const std::span<std::int64_t> w(acc.empty() ? nullptr : acc.data()->w, words);
    allreduce<Sum, std::int64_t>(comm, std::span<const std::int64_t>(w.data(), w.size()), w, ranks::Memory::host);
    for (std::size_t o = 0; o < out.size(); ++o) out[o] = acc[o].template round<Out>();
    return;
  }
  // Device: the accumulators in the communicator's own buffer (the kernels use the workspace's
  // scratch), grown once, so the hot path neither allocates nor waits for the device.
  void* buf = comm.device_scratch(words * sizeof(std::int64_t));
  A* d_acc = static_cast<A*>(buf);
  exact_cuda<T, A>(p, d_acc, ws, stream);
  auto* d_words = static_cast<std::int64_t*>(buf);
  allreduce<Sum, std::int64_t>(comm, std::span<const std::int64_t>(d_words, words),
                               std::span<std::int64_t>(d_words, words), ranks::Memory::device, stream);
  exact_round_cuda<T, Out>(d_acc, out.data(), static_cast<std::int64_t>(out.size()), ws, stream);
}

}  // namespace detail

/// Collective when `levels` contains gang. Each rank holds a slab of the gang axis (its own ng; nw,
/// nv and `levels` the same on every rank; a rank may hold an empty slab, ng = 0). With Level::gang
/// in `levels` the slabs reduce through all four levels: each rank's local result (reduce()) is then
/// combined across ranks by allreduce() and every rank's `out` holds the whole job's result. Without
/// gang the gang axis stays distributed: each rank's output covers its own slab, no communication.
/// Backend::cuda: `out` is device memory, stream-ordered; Backend::cpu: host memory.
template <class Op, class T, class Acc = T>
void reduce(const ranks::Comm& comm, Backend backend, View<const T> in, Levels levels, std::span<Acc> out,
            Workspace& ws, stream_t stream = nullptr) {
  static_assert(!std::is_same_v<Op, Mean>, "rank-level reduce: no Mean (reduce Sum across ranks, divide by the count)");
  if constexpr (std::is_same_v<Op, ExactSum>) {
    if (levels.contains(Level::gang) && comm.size() > 1)
      detail::exact_across_ranks<T, Acc>(comm, backend, in, levels, out, ws, stream);
    else reduce<Op, T, Acc>(backend, in, levels, out, ws, stream);
  } else {
    reduce<Op, T, Acc>(backend, in, levels, out, ws, stream);
    if (levels.contains(Level::gang) && comm.size() > 1)
      allreduce<Op, Acc>(comm, std::span<const Acc>(out.data(), out.size()), out,
                         backend == Backend::cpu ? ranks::Memory::host : ranks::Memory::device, stream);
  }
}

/// All four levels to a scalar on the host of every rank (waits for `stream`).
template <class Op, class T, class Acc = T>
Acc reduce_to_host(const ranks::Comm& comm, Backend backend, View<const T> in, Workspace& ws,
                   stream_t stream = nullptr) {
  static_assert(!std::is_same_v<Op, Mean>,
                "rank-level reduce_to_host: no Mean (reduce Sum across ranks, divide by the count)");
  if constexpr (std::is_same_v<Op, ExactSum>) {
    if (comm.size() == 1) return reduce_to_host<Op, T, Acc>(backend, in, ws, stream);
    if (backend == Backend::cpu) {
      Acc r{};
      detail::exact_across_ranks<T, Acc>(comm, backend, in, Levels::all(), std::span<Acc>(&r, 1), ws, stream);
      return r;
    }
    Acc* d_r = static_cast<Acc*>(ws.result_slot());
    detail::exact_across_ranks<T, Acc>(comm, backend, in, Levels::all(), std::span<Acc>(d_r, 1), ws, stream);
    return detail::copy_scalar_to_host(d_r, stream);
  } else {
    Acc r = reduce_to_host<Op, T, Acc>(backend, in, ws, stream);
    if (comm.size() > 1)
      allreduce<Op, Acc>(comm, std::span<const Acc>(&r, 1), std::span<Acc>(&r, 1), ranks::Memory::host);
    return r;
  }
}

}  // namespace tally::reduce
