#pragma once
// Vector level: a reduction across the lanes of a warp (or of an aligned group of G lanes), with
// shuffles only: no shared memory, no warp-synchronous assumptions.
//
//   float r = tally::reduce::device::warp_reduce<Sum>(x);          // full warp, result in every lane
//   float r = tally::reduce::device::group_reduce<Max, 8>(x);      // each group of 8 lanes, all lanes
//   float r = tally::reduce::device::warp_reduce_partial<Sum>(x, n);  // lanes [0, n) valid, result in lane 0
//   float r = tally::reduce::device::group_reduce_n<Sum>(x, g);    // run-time group size g
//
// The butterfly (xor) tree is fixed, so every lane gets the same bits and results are reproducible.

#include "tally/reduce/device/index.cuh"
#include "tally/reduce/ops.hpp"

namespace tally::reduce::device {

inline constexpr int warp_size = 32;

/// Lane of this thread in its warp, for any block shape (warps are formed from the linear rank).
__device__ __forceinline__ unsigned lane_id() { return block_thread_rank() % warp_size; }

/// Reduces x across each aligned group of G lanes (G a power of two, 1..32). Every lane of the
/// group must call it (mask: the lanes taking part, all 32 by default) and gets the group's result.
template <class Op, int G, class T>
__device__ __forceinline__ T group_reduce(T x, unsigned mask = 0xffffffffu) {
  static_assert(G >= 1 && G <= warp_size && (G & (G - 1)) == 0, "G must be a power of two <= 32");
#pragma unroll
  for (int offset = G / 2; offset > 0; offset /= 2) x = Op::template combine<T>(x, __shfl_xor_sync(mask, x, offset, G));
  return x;
}

/// group_reduce with a run-time group size g (a power of two, 1..32): for kernels that pick the
/// lanes per output from the problem. Every lane of the warp must call it with the same g.
template <class Op, class T>
__device__ __forceinline__ T group_reduce_n(T x, int g) {
  for (int offset = g / 2; offset > 0; offset /= 2) x = Op::template combine<T>(x, __shfl_xor_sync(0xffffffffu, x, offset));
  return x;
}

/// Reduces x across a full warp; every lane gets the result.
template <class Op, class T>
__device__ __forceinline__ T warp_reduce(T x) {
  return group_reduce<Op, warp_size>(x);
}

/// Reduces x over lanes [0, n) of a warp whose lanes [0, n) are the only ones present (a partial
/// last warp of a block whose size is not a multiple of 32). The result is valid in lane 0.
template <class Op, class T>
__device__ __forceinline__ T warp_reduce_partial(T x, unsigned n) {
  if (n >= warp_size) return warp_reduce<Op>(x);
  const unsigned mask = (1u << n) - 1u;
  const unsigned lane = lane_id();
#pragma unroll
  for (unsigned offset = 16; offset > 0; offset /= 2) {
    const T y = __shfl_down_sync(mask, x, offset);
    if (lane + offset < n) x = Op::template combine<T>(x, y);
  }
  return x;
}

}  // namespace tally::reduce::device
