#pragma once
// The pieces every production reduction kernel of kernels.cuh shares: the plan's offsets without
// divisions, and the folds of rows and of split segments' partials (each in a fixed order). Their
// launch constants are ReducePolicy's (detail/tuning_cuda.hpp).

#include <cuda_runtime.h>

#include <cstdint>

#include "plan.hpp"
#include "tally/reduce/detail/tuning_cuda.hpp"
#include "tally/reduce/device/gang.cuh"
#include "tally/reduce/device/thread.cuh"
#include "tally/reduce/device/vector.cuh"
#include "tally/reduce/device/worker.cuh"

namespace tally::reduce::detail::cuda {

// roff/koff without a 64-bit division when the rows (outputs) are a single strided axis.
__device__ __forceinline__ std::int64_t row_offset(const Plan& p, std::int64_t q) {
  return p.r_ext2 >= p.rows ? q * p.r_s2 : p.roff(q);
}
__device__ __forceinline__ std::int64_t out_offset(const Plan& p, std::int64_t o) {
  return p.k_ext2 >= p.n_out ? o * p.k_s2 : p.koff(o);
}

/// Reads a partial written by another block of this launch (after the ticket, gang_arrive): through L2.
template <class Acc>
__device__ __forceinline__ Acc load_partial(const Acc* p) {
  return __ldcg(p);
}

/// acc folded with p[(begin + k*step) * stride] for begin + k*step < end, in that order, eight
/// loads issued before the first is used (the loads are volatile: unrolling alone keeps them apart).
template <class Op, class Acc>
__device__ __forceinline__ Acc fold_partials(Acc acc, const Acc* p, std::int64_t begin, std::int64_t end,
                                             std::int64_t step, std::int64_t stride) {
  constexpr int B = 8;
  std::int64_t k = begin;
  for (; k + (B - 1) * step < end; k += B * step) {
    Acc t[B];
#pragma unroll
    for (int u = 0; u < B; ++u) t[u] = load_partial(p + (k + u * step) * stride);
#pragma unroll
    for (int u = 0; u < B; ++u) acc = Op::template combine<Acc>(acc, t[u]);
  }
  for (; k < end; k += step) acc = Op::template combine<Acc>(acc, load_partial(p + k * stride));
  return acc;
}

/// The last block of a split segment: combines partials[0..S) in a fixed order (strided per
/// thread, then the block tree). Every thread calls; the result is valid in thread 0.
template <class Op, class Acc>
__device__ __forceinline__ Acc combine_partials(const Acc* partials, std::int64_t S,
                                                device::BlockReduceStorage<Acc>& tmp) {
  const Acc acc = fold_partials<Op>(Op::template identity<Acc>(), partials, threadIdx.x, S, blockDim.x, 1);
  return device::block_reduce<Op>(acc, tmp);
}

/// acc folded with the V-vectors at row[i] for i = begin, begin + step, ... < end, in order, with
/// ReducePolicy::unroll loads in flight. BatchTail: the tail (fewer than ReducePolicy::unroll left) is one batch of
/// predicated loads, not a loop of dependent ones, for rows of a few thousand bytes, which are mostly tail (a warp
/// waits for its slowest lane). Long rows keep the loop: the batch's registers would make the block kernel spill. I:
/// the index type (the flat kernel's 32-bit indices keep the loop's arithmetic short).
template <class Op, class Acc, int V, bool BatchTail = false, class T, class I>
__device__ __forceinline__ Acc fold_row(Acc acc, const T* row, I begin, I end, I step) {
  I i = begin;
  for (; i + (ReducePolicy::unroll - 1) * step < end; i += ReducePolicy::unroll * step) {
    device::Vec<T, V> v[ReducePolicy::unroll];
#pragma unroll
    for (int u = 0; u < ReducePolicy::unroll; ++u) v[u] = device::load_vec<V>(row + i + u * step);
#pragma unroll
    for (int u = 0; u < ReducePolicy::unroll; ++u) acc = device::fold<Op, Acc>(acc, v[u]);
  }
  if constexpr (BatchTail) {
    device::Vec<T, V> v[ReducePolicy::unroll - 1];
#pragma unroll
    for (int u = 0; u < ReducePolicy::unroll - 1; ++u)
      if (i + u * step < end) v[u] = device::load_vec<V>(row + i + u * step);
#pragma unroll
    for (int u = 0; u < ReducePolicy::unroll - 1; ++u)
      if (i + u * step < end) acc = device::fold<Op, Acc>(acc, v[u]);
  } else {
    for (; i < end; i += step) acc = device::fold<Op, Acc>(acc, device::load_vec<V>(row + i));
  }
  return acc;
}

}  // namespace tally::reduce::detail::cuda
