#pragma once
// Segment level: one contiguous segment of an array reduced by one thread, one warp or one block, in
// an order fixed by the segment's length (and, for a block, the block size) alone: the orders
// segmented_reduce() uses (segmented.hpp), so a fused kernel that reduces its own segments with these
// gets the host API's bits, when it gives each segment the form segmented.hpp's classes
// (segment_thread_max, segment_warp_max, segment_chunk, segment_block) assign to its length (a test,
// tests/reduce/blocks, does so for lengths across every boundary).
//
//   // one thread per short segment [b, e) of x[0, n) (element order; 16-byte loads where x allows)
//   float s = tally::reduce::device::thread_segment_reduce<Sum, float>(x, n, b, e);
//   // the same order and bits from a staged copy (16-byte aligned, readable in whole rounds), or by
//   // element loads (fewer registers)
//   float t = tally::reduce::device::thread_segment_fold_blocks<Sum, float>(0.f, smem, b, e - b);
//   float u = tally::reduce::device::thread_segment_fold_scalar<Sum, float>(0.f, x + b, e - b);
//   // one warp per segment: lane l folds elements l, l + 32, ...; a fixed shuffle tree; every lane gets it
//   float s = tally::reduce::device::warp_segment_reduce<Sum, float>(x + b, e - b);
//   // one block per segment (or chunk): thread t folds t, t + blockDim, ...; block_reduce; thread 0 has it
//   __shared__ tally::reduce::device::BlockReduceStorage<float> tmp;
//   float s = tally::reduce::device::block_segment_reduce<Sum, float>(x + b, e - b, tmp);
//
// Op: an operator of ops.hpp (Sum, Max, ...) or a Reducer (reducer.hpp: ArgMax, MeanVar, a user's type);
// a Reducer's load sees each element's position within the segment. Empty segments give Op's
// identity (thread form: detail::empty_segment, ArgMax/ArgMin's index -1). Every lane of the warp (thread of the block)
// must call the warp (block) form with the same segment.

#include <cstdint>
#include <type_traits>

#include "tally/reduce/device/thread.cuh"
#include "tally/reduce/device/vector.cuh"
#include "tally/reduce/device/worker.cuh"
#include "tally/reduce/ops.hpp"
#include "tally/reduce/segmented.hpp"

namespace tally::reduce::device {

/// Loads in flight per thread in the thread (unaligned x) and warp forms (scalar loads: 32 bytes of
/// floats; more would take the segmented tile kernel past the 48 registers of its residency).
inline constexpr int segment_unroll = 8;
/// Loads in flight per thread in the block form: 64 bytes of T (16 floats, 8 doubles), enough to
/// keep a chunk's block from being latency-bound at 4 blocks of 256 threads an SM. The fold order
/// does not depend on it. (The library's long-segment kernel folds its chunks in this order with
/// chunk_fold, segmented.cuh: a whole round of predicated loads at constant offsets, which needs the
/// chunk bound and block size at compile time.)
template <class T>
inline constexpr int block_segment_unroll = sizeof(T) >= 8 ? 8 : 16;

/// The most elements thread_segment_fold takes in one call (its positions are 32-bit).
inline constexpr std::int64_t thread_fold_max = std::int64_t{1} << 30;

/// acc folded with x[0, len) in element order by this thread, element loads segment_unroll at a time
/// (thread_segment_fold's order and bits, fewer registers); element i is loaded as position index0 + i.
template <class Op, class Acc, class T>
__device__ __forceinline__ Acc thread_segment_fold_scalar(Acc acc, const T* __restrict__ x, int len,
                                                          std::int64_t index0 = 0) {
  for (int i = 0; i < len; i += segment_unroll) {
    T v[segment_unroll] = {};
#pragma unroll
    for (int u = 0; u < segment_unroll; ++u)
      if (i + u < len) v[u] = x[i + u];
#pragma unroll
    for (int u = 0; u < segment_unroll; ++u)
      if (i + u < len) acc = detail::op_combine<Op, Acc>(acc, detail::segment_load<Op, Acc>(v[u], index0 + (i + u)));
  }
  return acc;
}

/// Blocks of a round of the block-wise folds below: B 16-byte blocks, B V elements.
inline constexpr int segment_round_blocks = 4;

/// One round of the block-wise folds: acc folded, in order, with the slots of v (flat positions
/// p = u V + j) that lie in [db, de) of the round, each loaded as position index0 + p - db.
template <class Op, class Acc, class T, int V, int B>
__device__ __forceinline__ Acc fold_round(Acc acc, const Vec<T, V> (&v)[B], int db, int de, std::int64_t index0) {
  // Slot p is the run's when db <= p < de: bit p of a mask made once a round, so each element costs
  // one bit test, not a pair of compares or a 64-bit index test (the fold is the short-segment
  // kernel's inner loop).
  const int lo = db > 0 ? db : 0, hi = de < B * V ? de : B * V;                  // lo < hi: the run meets this round
  using Mask = std::conditional_t<(B * V >= 32), std::uint64_t, std::uint32_t>;  // 1 << hi defined: hi < bits
  Mask below_hi = ~Mask{0};
  if constexpr (B * V < 64) below_hi = (Mask{1} << hi) - 1;
  else if (hi < 64) below_hi = (Mask{1} << hi) - 1;
  const Mask mask = below_hi & (~Mask{0} << lo);
#pragma unroll
  for (int u = 0; u < B; ++u)
#pragma unroll
    for (int j = 0; j < V; ++j) {
      const int p = u * V + j;
      if (((mask >> p) & 1u) != 0)
        acc = detail::op_combine<Op, Acc>(acc, detail::segment_load<Op, Acc>(v[u].v[j], index0 + (p - db)));
    }
  return acc;
}

/// acc folded with x[begin, begin + len) in element order by this thread, 0 <= begin, 0 < len, where x
/// is 16-byte aligned and readable in whole rounds: x[k, k + B V r) with k = begin rounded down to V and
/// r = ceil((begin - k + len) / (B V)) (a staged window in shared memory, padded). thread_segment_fold's
/// rounds and bits, without its bounds checks: every round's loads unpredicated, nothing zeroed.
template <class Op, class Acc, class T>
__device__ __forceinline__ Acc thread_segment_fold_blocks(Acc acc, const T* __restrict__ x, int begin, int len,
                                                          std::int64_t index0 = 0) {
  constexpr int V = vec16<T>, B = segment_round_blocks;
  // begin >= 0 and len > 0: the remainder unsigned (a mask) and no test before the first round, which
  // keeps each segment's path in the pair kernel short.
  const int a = static_cast<int>(static_cast<unsigned>(begin) % V),
            last = a + len;  // the run is flat positions [a, last) of xk
  const T* xk = x + (begin - a);
  int r = 0;
  do {
    Vec<T, V> v[B];
#pragma unroll
    for (int u = 0; u < B; ++u) v[u] = load_vec<V>(xk + u * V);
    acc = fold_round<Op, Acc>(acc, v, a - r, last - r, index0);
    r += B * V, xk += B * V;
  } while (r < last);
  return acc;
}

/// acc folded with x[begin, begin + len) of x[0, n) in element order by this thread, 0 <= begin,
/// 0 < len <= thread_fold_max; element i is loaded as position index0 + i of its segment. Where x is
/// 16-byte aligned, the aligned 16-byte blocks covering the run are loaded whole (those inside
/// x[0, n)) and only the run's elements folded: a warp of short segments reads whole sectors, not one
/// element per sector per load. Positions are 32-bit and relative to the first block, so a round's
/// bounds are two subtractions, not 64-bit clamps and divisions.
template <class Op, class Acc, class T>
__device__ __forceinline__ Acc thread_segment_fold(Acc acc, const T* __restrict__ x, std::int64_t n, std::int64_t begin,
                                                   int len, std::int64_t index0 = 0) {
  constexpr int V = vec16<T>, B = segment_round_blocks;
  if (V > 1 && is_aligned<V>(x)) {
    const auto ub = static_cast<std::uint64_t>(begin);       // >= 0: / and % are shifts and masks
    const int a = static_cast<int>(ub % V), last = a + len;  // the run is flat positions [a, last) of xk
    const auto k0 = static_cast<std::int64_t>(ub / V * V);   // the first block's element
    const T* xk = x + k0;
    const bool inside =
        k0 + (last + V - 1) / V * V <= n;  // every block of the run inside x[0, n): loaded whole, unchecked
    for (int r = 0; r < last; r += B * V, xk += B * V) {
      const int db = a - r, de = last - r;
      Vec<T, V> v[B] = {};  // defined where not loaded: nothing carried from the round before
      if (inside) {         // the common case: B predicated 16-byte loads, no branches
#pragma unroll
        for (int u = 0; u < B; ++u)
          if (u * V < de) v[u] = load_vec<V>(xk + u * V);
      } else {
#pragma unroll
        for (int u = 0; u < B; ++u) {
          if (u * V >= de) continue;
          const std::int64_t at = k0 + r + u * V;
          if (at + V <= n) {
            v[u] = load_vec<V>(xk + u * V);
          } else {
#pragma unroll
            for (int j = 0; j < V; ++j) v[u].v[j] = u * V + j < de ? xk[u * V + j] : T{};
          }
        }
      }
      acc = fold_round<Op, Acc>(acc, v, db, de, index0);
    }
    return acc;
  }
  return thread_segment_fold_scalar<Op, Acc>(acc, x + begin, len, index0);
}

/// Elements [begin, end) of x[0, n), 0 <= begin, folded in element order by this thread
/// (thread_segment_fold's loads), runs of thread_fold_max at a time.
template <class Op, class Acc, class T>
__device__ __forceinline__ Acc thread_segment_reduce(const T* __restrict__ x, std::int64_t n, std::int64_t begin,
                                                     std::int64_t end) {
  if (begin >= end) return detail::empty_segment<Op, Acc>();
  Acc acc = detail::op_identity<Op, Acc>();
  for (std::int64_t b = begin; b < end; b += thread_fold_max)
    acc = thread_segment_fold<Op, Acc>(acc, x, n, b, static_cast<int>(min(end - b, thread_fold_max)), b - begin);
  return acc;
}

/// acc folded with x[first], x[first + step], ... below len, in that order, U loads in flight (U does
/// not change the order); element i is loaded as position index0 + i of its segment.
template <class Op, class Acc, int U = segment_unroll, class T, class I = std::int64_t>
__device__ __forceinline__ Acc strided_segment_fold(Acc acc, const T* __restrict__ x, I first, I len, I step,
                                                    std::int64_t index0 = 0) {
  I i = first;
  for (; i + (U - 1) * step < len; i += U * step) {
    T v[U];
#pragma unroll
    for (int u = 0; u < U; ++u) v[u] = x[i + u * step];
#pragma unroll
    for (int u = 0; u < U; ++u)
      acc = detail::op_combine<Op, Acc>(acc, detail::segment_load<Op, Acc>(v[u], index0 + i + u * step));
  }
  T v[U - 1];
#pragma unroll
  for (int u = 0; u < U - 1; ++u)
    if (i + u * step < len) v[u] = x[i + u * step];
#pragma unroll
  for (int u = 0; u < U - 1; ++u)
    if (i + u * step < len)
      acc = detail::op_combine<Op, Acc>(acc, detail::segment_load<Op, Acc>(v[u], index0 + i + u * step));
  return acc;
}

/// x[0, len) by the calling warp: lane l folds x[l], x[l + 32], ... in order, then the xor tree of
/// warp_reduce. Every lane gets the result. U: loads in flight a lane (not the order); I: the index
/// type (int where the caller knows len < 2^31: 32-bit loop bounds); lane: lane_id(), which a caller
/// that knows it passes (fewer instructions).
template <class Op, class Acc, int U = segment_unroll, class T, class I = std::int64_t>
__device__ __forceinline__ Acc warp_segment_reduce(const T* __restrict__ x, I len, unsigned lane = lane_id()) {
  const Acc acc =
      strided_segment_fold<Op, Acc, U>(detail::op_identity<Op, Acc>(), x, static_cast<I>(lane), len, I{warp_size});
  return warp_reduce<Op>(acc);
}

/// x[0, len) by the calling block: thread t folds x[t], x[t + blockDim], ... in order, then
/// block_reduce. The result is valid in thread 0. index0: the position of x[0] in its segment (a chunk).
template <class Op, class Acc, class T>
__device__ __forceinline__ Acc block_segment_reduce(const T* __restrict__ x, std::int64_t len,
                                                    BlockReduceStorage<Acc>& tmp, std::int64_t index0 = 0) {
  const Acc acc = strided_segment_fold<Op, Acc, block_segment_unroll<T>>(
      detail::op_identity<Op, Acc>(), x, static_cast<std::int64_t>(block_thread_rank()), len,
      static_cast<std::int64_t>(block_size()), index0);
  return block_reduce<Op>(acc, tmp);
}

}  // namespace tally::reduce::device
