#pragma once
// The pieces every production reduction kernel of kernels.cuh shares: the launch constants, the
// plan's offsets without divisions, and the folds of rows and of split segments' partials (each in a
// fixed order).

#include <cuda_runtime.h>

#include <cstdint>

#include "plan.hpp"
#include "tally/reduce/device/gang.cuh"
#include "tally/reduce/device/thread.cuh"
#include "tally/reduce/device/vector.cuh"
#include "tally/reduce/device/worker.cuh"

namespace tally::reduce::detail::cuda {

inline constexpr int kBlock = 256;        ///< threads per block of every production kernel
inline constexpr int kMinBlocksSm = 4;    ///< residency the register budget is held to (launch bounds)
inline constexpr int kUnroll = 4;         ///< independent 16-byte loads in flight per thread
inline constexpr int kRowBatch = 8;       ///< inner_row_kernel: vectors per lane loaded as one batch
inline constexpr int kThreadRowVecs = 4;  ///< inner_thread_kernel: rows of at most this many vectors
inline constexpr int kFlatBlocksSm = 3;   ///< flat_kernel's wave (H100, 2^22-2^28: 1-2% faster than 2 or 4)

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
/// kUnroll loads in flight. BatchTail: the tail (fewer than kUnroll left) is one batch of predicated
/// loads, not a loop of dependent ones, for rows of a few thousand bytes, which are mostly tail (a
/// warp waits for its slowest lane: innermost extent 1000 ran at 0.83 of the full reduction with
/// the loop). Long rows keep the loop: the batch's registers made the block kernel spill.
/// I: the index type (the flat kernel's 32-bit indices keep the loop's arithmetic short).
template <class Op, class Acc, int V, bool BatchTail = false, class T, class I>
__device__ __forceinline__ Acc fold_row(Acc acc, const T* row, I begin, I end, I step) {
  I i = begin;
  for (; i + (kUnroll - 1) * step < end; i += kUnroll * step) {
    device::Vec<T, V> v[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) v[u] = device::load_vec<V>(row + i + u * step);
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) acc = device::fold<Op, Acc>(acc, v[u]);
  }
  if constexpr (BatchTail) {
    device::Vec<T, V> v[kUnroll - 1];
#pragma unroll
    for (int u = 0; u < kUnroll - 1; ++u)
      if (i + u * step < end) v[u] = device::load_vec<V>(row + i + u * step);
#pragma unroll
    for (int u = 0; u < kUnroll - 1; ++u)
      if (i + u * step < end) acc = device::fold<Op, Acc>(acc, v[u]);
  } else {
    for (; i < end; i += step) acc = device::fold<Op, Acc>(acc, device::load_vec<V>(row + i));
  }
  return acc;
}

}  // namespace tally::reduce::detail::cuda
