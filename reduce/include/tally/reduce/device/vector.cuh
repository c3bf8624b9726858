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
// Op is a Kokkos-style operator (Sum, Max, ...) or a generic Reducer (reducer.hpp: ArgMax, MeanVar, a
// user's type); a value that is not arithmetic is shuffled 4 bytes at a time (shfl_xor / shfl_down).

#include <cstring>
#include <type_traits>

#include "tally/reduce/device/index.cuh"
#include "tally/reduce/ops.hpp"
#include "tally/reduce/reducer.hpp"

namespace tally::reduce::device {

inline constexpr int warp_size = 32;

/// Lane of this thread in its warp, for any block shape (warps are formed from the linear rank).
__device__ __forceinline__ unsigned lane_id() { return block_thread_rank() % warp_size; }

/// __shfl_xor_sync / __shfl_down_sync for any trivially copyable T (arithmetic types: one intrinsic).
template <class T>
__device__ __forceinline__ T shfl_xor(unsigned mask, const T& x, int offset, int width = warp_size) {
  if constexpr (std::is_arithmetic_v<T>) {
    return __shfl_xor_sync(mask, x, offset, width);
  } else {
    static_assert(std::is_trivially_copyable_v<T>, "shuffled values must be trivially copyable");
    constexpr int W = static_cast<int>((sizeof(T) + 3) / 4);
    unsigned w[W] = {};
    std::memcpy(w, &x, sizeof(T));
#pragma unroll
    for (int k = 0; k < W; ++k) w[k] = __shfl_xor_sync(mask, w[k], offset, width);
    T r;
    std::memcpy(&r, w, sizeof(T));
    return r;
  }
}
template <class T>
__device__ __forceinline__ T shfl_down(unsigned mask, const T& x, unsigned offset) {
  if constexpr (std::is_arithmetic_v<T>) {
    return __shfl_down_sync(mask, x, offset);
  } else {
    static_assert(std::is_trivially_copyable_v<T>, "shuffled values must be trivially copyable");
    constexpr int W = static_cast<int>((sizeof(T) + 3) / 4);
    unsigned w[W] = {};
    std::memcpy(w, &x, sizeof(T));
#pragma unroll
    for (int k = 0; k < W; ++k) w[k] = __shfl_down_sync(mask, w[k], offset);
    T r;
    std::memcpy(&r, w, sizeof(T));
    return r;
  }
}

/// Reduces x across each aligned group of G lanes (G a power of two, 1..32). Every lane of the
/// group must call it (mask: the lanes taking part, all 32 by default) and gets the group's result.
template <class Op, int G, class T>
__device__ __forceinline__ T group_reduce(T x, unsigned mask = 0xffffffffu) {
  static_assert(G >= 1 && G <= warp_size && (G & (G - 1)) == 0, "G must be a power of two <= 32");
#pragma unroll
  for (int offset = G / 2; offset > 0; offset /= 2) x = detail::op_combine<Op, T>(x, shfl_xor(mask, x, offset, G));
  return x;
}

/// group_reduce with a run-time group size g (a power of two, 1..32): for kernels that pick the
/// lanes per output from the problem. Every lane of the warp must call it with the same g.
template <class Op, class T>
__device__ __forceinline__ T group_reduce_n(T x, int g) {
  for (int offset = g / 2; offset > 0; offset /= 2) x = detail::op_combine<Op, T>(x, shfl_xor(0xffffffffu, x, offset));
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
    const T y = shfl_down(mask, x, offset);
    if (lane + offset < n) x = detail::op_combine<Op, T>(x, y);
  }
  return x;
}

}  // namespace tally::reduce::device
