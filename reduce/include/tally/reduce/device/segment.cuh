#pragma once
// Segment level: one contiguous segment of an array reduced by one thread, one warp or one block, in
// an order fixed by the segment's length (and, for a block, the block size) alone: the orders
// segmented_reduce() uses (segmented.hpp), so a fused kernel that reduces its own segments with these
// gets the host API's bits.
//
//   // one thread per short segment [b, e) of x[0, n) (element order; 16-byte loads where x allows)
//   float s = tally::reduce::device::thread_segment_reduce<Sum, float>(x, n, b, e);
//   // one warp per segment: lane l folds elements l, l + 32, ...; a fixed shuffle tree; every lane gets it
//   float s = tally::reduce::device::warp_segment_reduce<Sum, float>(x + b, e - b);
//   // one block per segment (or chunk): thread t folds t, t + blockDim, ...; block_reduce; thread 0 has it
//   __shared__ tally::reduce::device::BlockReduceStorage<float> tmp;
//   float s = tally::reduce::device::block_segment_reduce<Sum, float>(x + b, e - b, tmp);
//
// Op: an operator of ops.hpp (Sum, Max, ...) or a Reducer (reducer.hpp: ArgMax, MeanVar, a user's type);
// a Reducer's load sees each element's position within the segment. Empty segments give Op's
// identity (thread form: detail::empty_segment, ArgMax/ArgMin's index -1). Every lane of the warp (thread of the block) must call the warp
// (block) form with the same segment.

#include <cstdint>

#include "tally/reduce/device/thread.cuh"
#include "tally/reduce/device/vector.cuh"
#include "tally/reduce/device/worker.cuh"
#include "tally/reduce/ops.hpp"
#include "tally/reduce/segmented.hpp"

namespace tally::reduce::device {

/// Loads in flight per thread in the thread (unaligned x) and warp forms (scalar loads: 32 bytes of floats).
inline constexpr int segment_unroll = 8;
/// Loads in flight per thread in the block form: 64 bytes of T (16 floats, 8 doubles). 32 bytes per
/// thread left a long chunk's block latency-bound on the H200 (4 blocks of 256 threads per SM kept
/// 32 KB in flight). The fold order does not depend on it.
template <class T>
inline constexpr int block_segment_unroll = sizeof(T) >= 8 ? 8 : 16;

/// Elements [begin, end) of x[0, n), folded in element order by this thread. Where x is 16-byte
/// aligned, the aligned 16-byte blocks covering the segment are loaded whole (those inside x[0, n))
/// and only the segment's elements folded: a warp of short segments reads whole sectors, not one
/// element per sector per load.
template <class Op, class Acc, class T>
__device__ __forceinline__ Acc thread_segment_reduce(const T* __restrict__ x, std::int64_t n, std::int64_t begin,
                                                     std::int64_t end) {
  constexpr int V = vec16<T>, B = 4;
  if (begin >= end) return detail::empty_segment<Op, Acc>();
  Acc acc = detail::op_identity<Op, Acc>();
  if (V > 1 && is_aligned<V>(x)) {
    const std::int64_t k1 = (end + V - 1) / V;
    const bool inside = k1 * V <= n;  // every block of the segment inside x[0, n): loaded whole, unchecked
    for (std::int64_t k = begin / V; k < k1; k += B) {
      // Flat position p = u V + j of this round's B blocks is the segment's when db <= p < de: one
      // pair of compares against constants per element (per-element 64-bit index tests and per-block
      // branches made this fold ~250 instructions a round, the short-segment kernel's bottleneck).
      const int db = static_cast<int>(max(begin - k * V, std::int64_t{-1}));
      const int de = static_cast<int>(min(end - k * V, std::int64_t{B * V}));
      Vec<T, V> v[B];
      if (inside) {  // the common case: B predicated 16-byte loads, no branches
#pragma unroll
        for (int u = 0; u < B; ++u)
          if (u * V < de) v[u] = load_vec<V>(x + (k + u) * V);
      } else {
#pragma unroll
        for (int u = 0; u < B; ++u) {
          if (u * V >= de) continue;
          const std::int64_t at = (k + u) * V;
          if (at + V <= n) {
            v[u] = load_vec<V>(x + at);
          } else {
#pragma unroll
            for (int j = 0; j < V; ++j) v[u].v[j] = at + j < end ? x[at + j] : T{};
          }
        }
      }
#pragma unroll
      for (int u = 0; u < B; ++u)
#pragma unroll
        for (int j = 0; j < V; ++j) {
          const int p = u * V + j;
          if (p >= db && p < de) acc = detail::op_combine<Op, Acc>(acc, detail::segment_load<Op, Acc>(v[u].v[j], k * V + p - begin));
        }
    }
    return acc;
  }
  for (std::int64_t i = begin; i < end; i += segment_unroll) {
    T v[segment_unroll];
#pragma unroll
    for (int u = 0; u < segment_unroll; ++u)
      if (i + u < end) v[u] = x[i + u];
#pragma unroll
    for (int u = 0; u < segment_unroll; ++u)
      if (i + u < end) acc = detail::op_combine<Op, Acc>(acc, detail::segment_load<Op, Acc>(v[u], i + u - begin));
  }
  return acc;
}

/// acc folded with x[first], x[first + step], ... below len, in that order, U loads in flight (U does
/// not change the order); element i is loaded as position index0 + i of its segment.
template <class Op, class Acc, int U = segment_unroll, class T>
__device__ __forceinline__ Acc strided_segment_fold(Acc acc, const T* __restrict__ x, std::int64_t first, std::int64_t len,
                                                    std::int64_t step, std::int64_t index0 = 0) {
  std::int64_t i = first;
  for (; i + (U - 1) * step < len; i += U * step) {
    T v[U];
#pragma unroll
    for (int u = 0; u < U; ++u) v[u] = x[i + u * step];
#pragma unroll
    for (int u = 0; u < U; ++u) acc = detail::op_combine<Op, Acc>(acc, detail::segment_load<Op, Acc>(v[u], index0 + i + u * step));
  }
  T v[U - 1];
#pragma unroll
  for (int u = 0; u < U - 1; ++u)
    if (i + u * step < len) v[u] = x[i + u * step];
#pragma unroll
  for (int u = 0; u < U - 1; ++u)
    if (i + u * step < len) acc = detail::op_combine<Op, Acc>(acc, detail::segment_load<Op, Acc>(v[u], index0 + i + u * step));
  return acc;
}

/// x[0, len) by the calling warp: lane l folds x[l], x[l + 32], ... in order, then the xor tree of
/// warp_reduce. Every lane gets the result.
template <class Op, class Acc, class T>
__device__ __forceinline__ Acc warp_segment_reduce(const T* __restrict__ x, std::int64_t len) {
  const Acc acc = strided_segment_fold<Op, Acc>(detail::op_identity<Op, Acc>(), x, static_cast<std::int64_t>(lane_id()), len,
                                                std::int64_t{warp_size});
  return warp_reduce<Op>(acc);
}

/// x[0, len) by the calling block: thread t folds x[t], x[t + blockDim], ... in order, then
/// block_reduce. The result is valid in thread 0. index0: the position of x[0] in its segment (a chunk).
template <class Op, class Acc, class T>
__device__ __forceinline__ Acc block_segment_reduce(const T* __restrict__ x, std::int64_t len, BlockReduceStorage<Acc>& tmp,
                                                    std::int64_t index0 = 0) {
  const Acc acc = strided_segment_fold<Op, Acc, block_segment_unroll<T>>(detail::op_identity<Op, Acc>(), x,
                                                                        static_cast<std::int64_t>(block_thread_rank()), len,
                                                                        static_cast<std::int64_t>(block_size()), index0);
  return block_reduce<Op>(acc, tmp);
}

}  // namespace tally::reduce::device
