#pragma once
// The tile kernels of segmented reductions on CUDA (detail/segmented.cuh has the design and runs them): a
// warp per tile of consecutive segments, each lane folding its short segment, the warp the tile's
// medium ones, the tiles holding long segments listed for the long kernel.
//   * short_kernel: any input; the next tile's offsets loaded while a tile is reduced;
//   * staged_kernel: 16-byte aligned input, 32-bit offsets: the next tile's elements copied to shared
//     memory (cp.async) while a tile is reduced;
//   * staged_pair_kernel: the same for segments of at most 32 bytes on average, tiles of 64.
// All three fold each segment in the order its length gives it: the same bits.

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "tally/reduce/detail/launch.cuh"
#include "tally/reduce/detail/segmented_generic.hpp"
#include "tally/reduce/detail/tuning_cuda.hpp"
#include "tally/reduce/device/segment.cuh"

namespace tally::reduce::detail::cuda::seg {

inline std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }
/// Blocks that fill the device once at SegmentedPolicy::min_blocks_sm per SM (the Tuning's SM count).
inline std::int64_t fill_blocks(const Tuning& t) {
  return std::int64_t{std::max(t.sm_count, 1)} * std::min(std::max(t.blocks_per_sm, 1), SegmentedPolicy::min_blocks_sm);
}

// The segment classes (segmented.hpp states them for fused kernels).
inline constexpr std::int64_t kThreadMax = segment_thread_max;  ///< short: at most this many elements
inline constexpr std::int64_t kWarpMax = segment_warp_max;      ///< medium: at most this many
inline constexpr std::int64_t kChunk = segment_chunk;           ///< long: chunks of this many (64 per thread)
inline constexpr int kTile = device::warp_size;                 ///< segments per tile (one per lane)

/// An offset as int64, int32 ones zero-extended (offsets are >= 0): no instruction reads the loaded word
/// until the value is used.
template <class Off>
__device__ __forceinline__ std::int64_t widen(Off o) {
  return static_cast<std::int64_t>(static_cast<std::make_unsigned_t<Off>>(o));
}

TALLY_HD std::int64_t chunks_of(std::int64_t len) { return len > kWarpMax ? (len + kChunk - 1) / kChunk : 0; }

/// The tiles holding long segments, in the order they were appended, and their chunk counts (made
/// their inclusive scan by scan_list_kernel). count is a workspace ticket (zero between calls: the
/// scan kernel copies it to size and zeroes it, so no memset node precedes the short kernel); entries
/// past cap (only from offsets that break the rules) are dropped.
struct LongList {
  unsigned int* count = nullptr;  ///< null: no segment can be long, nothing appended
  std::int64_t* size = nullptr;   ///< the count, as the long kernel reads it
  std::int64_t* tile = nullptr;
  int* chunks = nullptr;
  std::int64_t cap = 0;
};

/// A tile's medium segments (lanes with kThreadMax < len <= kWarpMax), one after the other by the whole
/// warp, each read from the staged window win = in[wb, wend) where it lies inside (the staged kernel)
/// and from in otherwise; then, where the tile holds long segments, the tile and its chunk count
/// appended to the list (rare: the 64-bit division, the warp sum, the slot).
template <class Op, class T, class Acc, bool Staged, class P>
__device__ __forceinline__ void tile_medium_long(const T* __restrict__ in, const T* win, P wb, P wend, P tile, P b,
                                                 P len, Acc* __restrict__ out, const LongList& list, int lane) {
  for (unsigned mid = __ballot_sync(0xffffffffu, len > kThreadMax && len <= kWarpMax); mid != 0; mid &= mid - 1) {
    const int src = __ffs(static_cast<int>(mid)) - 1;
    const P sb = __shfl_sync(0xffffffffu, b, src);
    const int sl = __shfl_sync(0xffffffffu, static_cast<int>(len), src);
    // Two calls, not one on a selected pointer: each is compiled for its own memory (LDS, LDG), shared
    // memory with fewer loads a lane in flight (SegmentedPolicy::window_unroll).
    const Acc r = Staged && sb >= wb && sb + sl <= wend
                      ? device::warp_segment_reduce<Op, Acc, SegmentedPolicy::window_unroll>(win + (sb - wb), sl, lane)
                      : device::warp_segment_reduce<Op, Acc>(in + sb, sl, lane);
    if (lane == 0) out[tile * kTile + src] = r;
  }
  if (__ballot_sync(0xffffffffu, len > kWarpMax) != 0) {
    const auto chunks = static_cast<int>(__reduce_add_sync(0xffffffffu, static_cast<unsigned>(chunks_of(len))));
    if (lane == 0 && list.count != nullptr) {
      const auto slot = static_cast<std::int64_t>(atomicAdd(list.count, 1u));
      if (slot < list.cap) list.tile[slot] = tile, list.chunks[slot] = chunks;
    }
  }
}

template <class Op, class T, class Acc, class Off>
__global__ void __launch_bounds__(SegmentedPolicy::block, SegmentedPolicy::short_blocks_sm)
    short_kernel(const T* __restrict__ in, std::int64_t n, const Off* __restrict__ off, std::int64_t n_seg,
                 Acc* __restrict__ out, LongList list) {
  enter_after_predecessor();
  const int lane = static_cast<int>(threadIdx.x) % device::warp_size;
  const std::int64_t warps = static_cast<std::int64_t>(gridDim.x) * (SegmentedPolicy::block / device::warp_size);
  const std::int64_t tiles = (n_seg + kTile - 1) / kTile;
  std::int64_t tile = (static_cast<std::int64_t>(blockIdx.x) * SegmentedPolicy::block + threadIdx.x) /
                      device::warp_size;  // warp-uniform
  // The next tile's offsets are loaded while this one is reduced: one dependent round trip per tile
  // fewer (a tile of short segments is otherwise two: its offsets, then its elements). Held as int64
  // whatever Off is (in int32 registers the kernel spills), and widened from int32 by zero
  // extension (offsets are >= 0): a sign extension reads the loaded word, so the warp would wait for
  // the next tile's offsets right after asking for them.
  // The loads are unconditional (a lane past the end rereads the last segment's offsets and takes
  // length 0), so that nothing is selected or copied from the loaded words before their use.
  std::int64_t nb = 0, ne = 0;
  const auto fetch = [&](std::int64_t s) {  // segment s's offsets (the last segment's past the end)
    s = min(s, n_seg - 1);
    nb = widen(off[s]), ne = widen(off[s + 1]);
  };
  if (tile < tiles) fetch(tile * kTile + lane);
  for (; tile < tiles; tile += warps) {
    const std::int64_t s = tile * kTile + lane;
    const std::int64_t b = nb, len = s < n_seg ? ne - b : 0;
    fetch(s + warps * kTile);
    // Short and medium lengths fit an int: 32-bit positions and loop bounds in the folds.
    if (s < n_seg && len <= kThreadMax)
      out[s] = len > 0 ? device::thread_segment_fold<Op, Acc>(detail::op_identity<Op, Acc>(), in, n, b,
                                                              static_cast<int>(len))
                       : detail::empty_segment<Op, Acc>();
    tile_medium_long<Op, T, Acc, false, std::int64_t>(in, in, 0, 0, tile, b, len, out, list, lane);
  }
}

/// Whether the staged kernels take T: whole elements in a 16-byte block (cp.async's unit).
template <class T>
inline constexpr bool stageable = sizeof(T) <= 16 && 16 % sizeof(T) == 0;

/// 16 bytes from global to shared memory where `copy`, asynchronously (cp.async, L2 only: the window
/// is read once). The predicate is the instruction's: the addresses are computed unconditionally, from
/// one base with immediate offsets (an `if` around the copy had the compiler rebuild each copy's
/// 64-bit address under its own predicate: ~6 instructions a copy).
__device__ __forceinline__ void copy16_async(void* smem, const void* gmem, bool copy) {
  const auto to = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile(
      "{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %2, 0;\n\t@p cp.async.cg.shared.global [%0], [%1], 16;\n\t}" ::"r"(to),
      "l"(gmem), "r"(static_cast<int>(copy))
      : "memory");
}
/// 4 bytes likewise (cp.async.ca: copies under 16 bytes go through L1).
__device__ __forceinline__ void copy4_async(void* smem, const void* gmem, bool copy) {
  const auto to = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile(
      "{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %2, 0;\n\t@p cp.async.ca.shared.global [%0], [%1], 4;\n\t}" ::"r"(to),
      "l"(gmem), "r"(static_cast<int>(copy))
      : "memory");
}
__device__ __forceinline__ void copy_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
/// Waits until at most one of this thread's committed groups is still in flight.
__device__ __forceinline__ void copy_async_wait_but_one() { asm volatile("cp.async.wait_group 1;" ::: "memory"); }
__device__ __forceinline__ void copy_async_wait_all() { asm volatile("cp.async.wait_group 0;" ::: "memory"); }

/// A tile's window of at most W elements: from the 16-byte block holding its first segment's start
/// (first) to its last segment's end (last), whole blocks below n_end, into dst asynchronously (the
/// caller commits); lanes copy blocks lane, lane + 32, ... Sets [wb, wb + wlen).
template <int W, class T, class P>
__device__ __forceinline__ void copy_window(T* dst, const T* __restrict__ in, P first, P last, P n_end, int lane, P& wb,
                                            int& wlen) {
  constexpr int V = device::vec16<T>;
  wb = first / V * V;
  const P wend = min(min(wb + W, (last + V - 1) / V * V), n_end);
  wlen = wend > wb ? static_cast<int>(wend - wb) : 0;
  const int at = lane * V;  // then + 32 V a copy: immediate offsets from one address
  T* const d = dst + at;
  const T* const s = in + wb + at;
#pragma unroll
  for (int j = 0; j < W / V / device::warp_size; ++j)
    copy16_async(d + j * device::warp_size * V, s + j * device::warp_size * V, at + j * device::warp_size * V < wlen);
}

/// A lane's short segment s = [b, b + len) of a staged tile: from the window win = in[wb, wb + wlen)
/// where it lies inside, from global memory otherwise, in thread_segment_fold's order either way.
template <class Op, class T, class Acc, class P>
__device__ __forceinline__ void staged_short(const T* __restrict__ in, const T* win, P wb, int wlen, P s, P b, P len,
                                             Acc* __restrict__ out) {
  Acc r = detail::empty_segment<Op, Acc>();
  if (len > 0)
    r = b >= wb && b - wb + len <= static_cast<P>(wlen)
            ? device::thread_segment_fold_blocks<Op, Acc>(detail::op_identity<Op, Acc>(), win, static_cast<int>(b - wb),
                                                          static_cast<int>(len))
            : device::thread_segment_fold_scalar<Op, Acc>(detail::op_identity<Op, Acc>(), in + b,
                                                          static_cast<int>(len));
  out[s] = r;
}

/// short_kernel for 16-byte aligned input, its tiles' elements staged: while a warp reduces a tile, the
/// next tile's elements (from its first segment's 16-byte block, at most SegmentedPolicy::stage_bytes) are copied to
/// the warp's other buffer by cp.async, which holds no registers; segments lying inside the window are
/// folded from shared memory, those past it (rare: a window of 512 floats holds 99% of the power
/// law's short segments and 95% of its medium ones) from global memory as short_kernel does. The folds
/// are short_kernel's (the window starts on a 16-byte block of in, so thread_segment_fold's rounds and
/// masks are the same): the same bits. Offsets are loaded two tiles ahead, a tile's window issued
/// one tile ahead: the round trips that short_kernel waits for (its offsets, then its short
/// segments' rounds, then each medium segment's) are overlapped with the reduction of the tile before
/// (BENCHMARKS.md#segments).
template <class Op, class T, class Acc, class Off>
__global__ void __launch_bounds__(SegmentedPolicy::block, SegmentedPolicy::staged_blocks_sm)
    staged_kernel(const T* __restrict__ in, const Off* __restrict__ off, std::int64_t n_seg, Acc* __restrict__ out,
                  LongList list, std::int64_t n_tiles, std::int64_t n_window_end) {
  // Positions and segment numbers in 32 bits, as the offsets are: the loop's state is ten of them,
  // which in 64 bits spill.
  static_assert(sizeof(Off) == 4, "staged_kernel takes 32-bit offsets");
  using P = std::uint32_t;
  constexpr int W = SegmentedPolicy::stage_bytes / static_cast<int>(sizeof(T));
  constexpr int kWarps = SegmentedPolicy::block / device::warp_size;
  // Padded by a round of thread_segment_fold_blocks (which reads whole rounds; what lies past a
  // window is never folded).
  __shared__ __align__(
      16) unsigned char stage[kWarps * 2 * SegmentedPolicy::stage_bytes + device::segment_round_blocks * 16];
  enter_after_predecessor();
  const int lane = static_cast<int>(threadIdx.x) % device::warp_size,
            wid = static_cast<int>(threadIdx.x) / device::warp_size;
  const P warps = static_cast<P>(gridDim.x) * kWarps, tiles = static_cast<P>(n_tiles), last = static_cast<P>(n_seg - 1);
  P tile = static_cast<P>(blockIdx.x) * kWarps + wid;  // warp-uniform
  if (tile >= tiles) return;
  const P n_end = static_cast<P>(n_window_end);
  const auto offsets = [&](P t, P& b, P& e) {  // the lane's segment of tile t (the last one past the end)
    const P s = min(t * kTile + lane, last);
    b = static_cast<P>(off[s]), e = static_cast<P>(off[s + 1]);
  };
  const auto buffer = [&](int k) { return reinterpret_cast<T*>(stage + (2 * wid + k) * SegmentedPolicy::stage_bytes); };
  const auto issue = [&](P b, P e, int k, P& wb, int& wlen) {  // tile (b, e)'s window to buffer k
    copy_window<W>(buffer(k), in, __shfl_sync(0xffffffffu, b, 0), __shfl_sync(0xffffffffu, e, device::warp_size - 1),
                   n_end, lane, wb, wlen);
    copy_async_commit();
  };
  P b, e, nb, ne, wb, nwb = 0;
  int wlen, nwlen = 0;
  offsets(tile, b, e);
  issue(b, e, 0, wb, wlen);
  offsets(tile + warps, nb, ne);
  for (int k = 0; tile < tiles; tile += warps, k ^= 1) {
    const P s = tile * kTile + lane;
    const P len = s < n_seg ? e - b : 0;
    if (tile + warps < tiles) issue(nb, ne, k ^ 1, nwb, nwlen);
    else copy_async_commit();  // an empty group: the wait below counts groups
    P nnb, nne;
    offsets(tile + 2 * warps, nnb, nne);
    copy_async_wait_but_one();
    __syncwarp();  // every lane's copies of this tile's window visible to the warp
    const T* const win = buffer(k);
    if (s < n_seg && len <= kThreadMax) staged_short<Op>(in, win, wb, wlen, s, b, len, out);
    tile_medium_long<Op, T, Acc, true, P>(in, win, wb, wb + wlen, tile, b, len, out, list, lane);
    __syncwarp();  // the window read before the next tile's copy reuses its buffer
    b = nb, e = ne, nb = nnb, ne = nne, wb = nwb, wlen = nwlen;
  }
}

/// staged_kernel for short segments (at most 32 bytes on average): tiles of 64 segments, lane l reducing
/// segments l and l + 32 (the per-tile work of the window, its copies and the wait paid once for two
/// of staged_kernel's tiles), the offsets staged too (tile t's 65 copied to shared memory two tiles
/// ahead, its elements one tile ahead, one cp.async group a tile: the loop holds no offsets in
/// registers). The same folds from the same windowed or global memory: the same bits. Faster than
/// staged_kernel where segments are that short, slower for longer ones (a window then holds only part
/// of a tile's elements).
template <class Op, class T, class Acc, class Off>
__global__ void __launch_bounds__(SegmentedPolicy::pair_block, SegmentedPolicy::pair_blocks_sm)
    staged_pair_kernel(const T* __restrict__ in, const Off* __restrict__ off, std::int64_t n_seg, Acc* __restrict__ out,
                       LongList list, std::int64_t n_pairs, std::int64_t n_window_end) {
  static_assert(sizeof(Off) == 4, "staged_pair_kernel copies 32-bit offsets");
  using P = std::uint32_t;
  constexpr int W = SegmentedPolicy::pair_stage_bytes / static_cast<int>(sizeof(T)), S = 2 * kTile,
                kWarps = SegmentedPolicy::pair_block / device::warp_size;
  constexpr int OS = (S + 1 + 3) / 4 * 4;  // a tile's offsets, padded to 16 bytes
  __shared__ __align__(
      16) unsigned char stage[kWarps * 2 * SegmentedPolicy::pair_stage_bytes + device::segment_round_blocks * 16];
  __shared__ __align__(16) P offs[kWarps][3][OS];
  enter_after_predecessor();
  const int lane = static_cast<int>(threadIdx.x) % device::warp_size,
            wid = static_cast<int>(threadIdx.x) / device::warp_size;
  const P warps = static_cast<P>(gridDim.x) * kWarps, pairs = static_cast<P>(n_pairs), segs = static_cast<P>(n_seg);
  P pair = static_cast<P>(blockIdx.x) * kWarps + wid;  // warp-uniform
  if (pair >= pairs) return;
  const P n_end = static_cast<P>(n_window_end);
  const auto copy_offsets = [&](P t, int q) {  // pair t's S + 1 offsets (clamped to off[n_seg]) to stage q
#pragma unroll
    for (int h = 0; h <= 2; ++h) {
      const int at = h * device::warp_size + lane;
      copy4_async(&offs[wid][q][at], off + min(t * S + at, segs), at <= S);
    }
  };
  const auto buffer = [&](int k) {
    return reinterpret_cast<T*>(stage + (2 * wid + k) * SegmentedPolicy::pair_stage_bytes);
  };
  const auto issue = [&](int q, int k, P& wb, int& wlen) {
    copy_window<W>(buffer(k), in, offs[wid][q][0], offs[wid][q][S], n_end, lane, wb, wlen);
  };
  P wb = 0, nwb = 0;
  int wlen = 0, nwlen = 0;
  copy_offsets(pair, 0);
  copy_async_commit();
  copy_async_wait_all();
  __syncwarp();
  issue(0, 0, wb, wlen);
  copy_offsets(pair + warps, 1);  // past the end: clamped, never read
  copy_async_commit();
  for (int k = 0, q = 0; pair < pairs; pair += warps, k ^= 1, q = q == 2 ? 0 : q + 1) {
    copy_async_wait_all();
    __syncwarp();  // this pair's elements and the next pair's offsets landed for every lane, and the
                   // buffers about to be refilled were read by every lane in the iteration before
    const int q1 = q == 2 ? 0 : q + 1, q2 = q1 == 2 ? 0 : q1 + 1;
    if (pair + warps < pairs) issue(q1, k ^ 1, nwb, nwlen);
    copy_offsets(pair + 2 * warps, q2);
    copy_async_commit();
    const T* const win = buffer(k);
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int at = h * device::warp_size + lane;
      const P s = pair * S + at, b = offs[wid][q][at];
      const P len = s < segs ? offs[wid][q][at + 1] - b : 0;
      if (s < segs && len <= kThreadMax) staged_short<Op>(in, win, wb, wlen, s, b, len, out);
      tile_medium_long<Op, T, Acc, true, P>(in, win, wb, wb + wlen, pair * 2 + h, b, len, out, list, lane);
    }
    wb = nwb, wlen = nwlen;
  }
  copy_async_wait_all();  // no copy may still target shared memory at exit
}

}  // namespace tally::reduce::detail::cuda::seg
