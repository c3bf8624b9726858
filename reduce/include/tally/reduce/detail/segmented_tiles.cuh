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
#include "tally/reduce/device/segment.cuh"

namespace tally::reduce::detail::cuda::seg {

inline constexpr int kBlock = 256;      ///< threads per block (the library's production kernels' too)
inline constexpr int kMinBlocksSm = 4;  ///< residency the register budget is held to (launch bounds)
/// The tile kernel's (its warps wait on one dependent round trip after another, so more of them hide
/// more). H200, power law: 5 blocks (48 registers) 668 us; 4 (55 registers, the medium loop 16 loads
/// deep) 734; 6 (40 registers) spilled, 732, uniform 16 and 1000 5-7% slower than at 5.
inline constexpr int kShortBlocksSm = 5;
inline std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }
/// Blocks that fill the device once at kMinBlocksSm per SM (the Tuning's SM count).
inline std::int64_t fill_blocks(const Tuning& t) {
  return std::int64_t{std::max(t.sm_count, 1)} * std::min(std::max(t.blocks_per_sm, 1), kMinBlocksSm);
}

// The segment classes (segmented.hpp states them for fused kernels).
inline constexpr std::int64_t kThreadMax = segment_thread_max;  ///< short: at most this many elements
inline constexpr std::int64_t kWarpMax = segment_warp_max;      ///< medium: at most this many
inline constexpr std::int64_t kChunk = segment_chunk;           ///< long: chunks of this many (64 per thread)
static_assert(kBlock == segment_block, "a long chunk is folded by a block of segment_block threads");
// The long kernel's rounds: 32 floats (16 doubles) a thread in flight, 3 blocks an SM (80 registers).
// H200, 2^28 floats, against 16 loads at 4 blocks (us): power law 497.1 -> 486.0 (its long kernel
// 96.8 -> 84.0 under ncu), uniform 2^20 266.5 -> 258.4, 10^5 ones + 1 giant 274.3 -> 263.7; 256-byte
// rounds at 2 blocks 496.4 / 263.7 / 280.6, 128-byte rounds at 4 blocks (spilling) 494.5 / 276.3 / 282.6.
inline constexpr int kLongRound = 128;           ///< bytes a thread loads before folding them
inline constexpr int kLongBlocksSm = 3;          ///< the long kernel's residency (launch bounds)
inline constexpr int kTile = device::warp_size;  ///< segments per tile (one per lane)

/// An offset as int64, int32 ones zero-extended (offsets are >= 0): no instruction reads the loaded word
/// until the value is used.
template <class Off>
__device__ __forceinline__ std::int64_t widen(Off o) {
  return static_cast<std::int64_t>(static_cast<std::make_unsigned_t<Off>>(o));
}

TALLY_HD std::int64_t chunks_of(std::int64_t len) { return len > kWarpMax ? (len + kChunk - 1) / kChunk : 0; }

/// The tiles holding long segments, in the order they were appended, and their chunk counts (made
/// their inclusive scan by scan_list_kernel). count is a workspace ticket (zero between calls: the
/// scan kernel copies it to size and zeroes it, so no memset node precedes the short kernel, 1-2 us
/// a call on the H200); entries past cap (only from offsets that break the rules) are dropped.
struct LongList {
  unsigned int* count = nullptr;  ///< null: no segment can be long, nothing appended
  std::int64_t* size = nullptr;   ///< the count, as the long kernel reads it
  std::int64_t* tile = nullptr;
  int* chunks = nullptr;
  std::int64_t cap = 0;
};

/// Loads a lane issues at a time for a medium segment in a staged window (not the order): shared
/// memory answers in tens of cycles, and the fold's tail runs U - 1 predicated loads whatever the
/// length. 4 against 8: the pair kernel 1344 -> 1280 SASS instructions, the power law 474.4-479.3 us
/// against 479.4-481.2 (H200, same machine, 2026-11-29).
inline constexpr int kWindowUnroll = 4;

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
    // memory with fewer loads a lane in flight (kWindowUnroll).
    const Acc r = Staged && sb >= wb && sb + sl <= wend
                      ? device::warp_segment_reduce<Op, Acc, kWindowUnroll>(win + (sb - wb), sl, lane)
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
__global__ void __launch_bounds__(kBlock, kShortBlocksSm)
    short_kernel(const T* __restrict__ in, std::int64_t n, const Off* __restrict__ off, std::int64_t n_seg,
                 Acc* __restrict__ out, LongList list) {
  enter_after_predecessor();
  const int lane = static_cast<int>(threadIdx.x) % device::warp_size;
  const std::int64_t warps = static_cast<std::int64_t>(gridDim.x) * (kBlock / device::warp_size);
  const std::int64_t tiles = (n_seg + kTile - 1) / kTile;
  std::int64_t tile =
      (static_cast<std::int64_t>(blockIdx.x) * kBlock + threadIdx.x) / device::warp_size;  // warp-uniform
  // The next tile's offsets are loaded while this one is reduced: one dependent round trip per tile
  // fewer (a tile of short segments is otherwise two: its offsets, then its elements). Held as int64
  // whatever Off is (with int32 registers the kernel spilled 8 bytes), and widened from int32 by zero
  // extension (offsets are >= 0): a sign extension reads the loaded word, so the warp waited for the
  // next tile's offsets right after asking for them (ncu, H200: 18% of the tile kernel's stall samples
  // on that one instruction, which is why int64 offsets ran the power law faster than int32 ones).
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

/// Bytes of each of a warp's two staging buffers in the staged kernel: 512 floats, which hold every
/// short segment of 99% of the power law's tiles and 95% of its medium segments (a tile's 32 segments
/// span 172 floats on average, with a heavy tail).
inline constexpr int kStageBytes = 2048;
/// The staged kernel's residency: 4 blocks an SM (64 registers; at 5, i.e. 48 registers, its loop
/// state spilled), 4 x 33 KB of shared memory.
inline constexpr int kStagedBlocksSm = 4;

/// short_kernel for 16-byte aligned input, its tiles' elements staged: while a warp reduces a tile, the
/// next tile's elements (from its first segment's 16-byte block, at most kStageBytes) are copied to
/// the warp's other buffer by cp.async, which holds no registers; segments lying inside the window are
/// folded from shared memory, those past it (rare: a window of 512 floats holds 99% of the power
/// law's short segments and 95% of its medium ones) from global memory as short_kernel does. The folds
/// are short_kernel's (the window starts on a 16-byte block of in, so thread_segment_fold's rounds and
/// masks are the same): the same bits. Offsets are loaded two tiles ahead, a tile's window issued
/// one tile ahead: the round trips that short_kernel waits for (its offsets, then its short
/// segments' rounds, then each medium segment's) are overlapped with the reduction of the tile before.
/// H200, 2^28 floats, int32 offsets: power law 549-552 us against short_kernel's 625-627 (ncu: issue
/// active 86% of cycles against ~65%, long-scoreboard stalls 0.27 per issue), uniform 1000 0.87 of
/// the full sum against 0.86, uniform 16 unchanged (0.86).
template <class Op, class T, class Acc, class Off>
__global__ void __launch_bounds__(kBlock, kStagedBlocksSm)
    staged_kernel(const T* __restrict__ in, const Off* __restrict__ off, std::int64_t n_seg, Acc* __restrict__ out,
                  LongList list, std::int64_t n_tiles, std::int64_t n_window_end) {
  // Positions and segment numbers in 32 bits, as the offsets are (the loop's state is ten of them;
  // in 64 bits it spilled, and with int64 offsets the kernel ran uniform 1000 at 0.30 of the full sum,
  // short_kernel at 0.86: H200, 2026-11-29).
  static_assert(sizeof(Off) == 4, "staged_kernel takes 32-bit offsets");
  using P = std::uint32_t;
  constexpr int W = kStageBytes / static_cast<int>(sizeof(T));
  constexpr int kWarps = kBlock / device::warp_size;
  // Padded by a round of thread_segment_fold_blocks (which reads whole rounds; what lies past a
  // window is never folded).
  __shared__ __align__(16) unsigned char stage[kWarps * 2 * kStageBytes + device::segment_round_blocks * 16];
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
  const auto buffer = [&](int k) { return reinterpret_cast<T*>(stage + (2 * wid + k) * kStageBytes); };
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

/// The pair kernel's blocks (4 warps, 8 an SM: registers held to 64, and 8 x (27.3 KB of shared
/// memory + 1 KB the system reserves a block) = 226 KB of the SM's 228), its tiles (two of 32
/// segments, a pair a warp) and its windows (768 floats: a pair of the power law's segments spans
/// 344 on average).
inline constexpr int kPairBlock = 128;
inline constexpr int kPairBlocksSm = 8;
inline constexpr int kPairStageBytes = 3072;

/// staged_kernel for short segments (at most 32 bytes on average): tiles of 64 segments, lane l reducing
/// segments l and l + 32 (the per-tile work of the window, its copies and the wait paid once for two
/// of staged_kernel's tiles), the offsets staged too (tile t's 65 copied to shared memory two tiles
/// ahead, its elements one tile ahead, one cp.async group a tile: the loop holds no offsets in
/// registers). The same folds from the same windowed or global memory: the same bits.
/// H200, 2^28 floats: power law 486-490 us against staged_kernel's 548-552 (0.50 of the full sum
/// against 0.44), uniform 4 397-400 against 472-474, uniform 8 316 against 323; longer segments are
/// slower here (uniform 16 365 against 281: the window holds three quarters of a tile's 1024 floats).
template <class Op, class T, class Acc, class Off>
__global__ void __launch_bounds__(kPairBlock, kPairBlocksSm)
    staged_pair_kernel(const T* __restrict__ in, const Off* __restrict__ off, std::int64_t n_seg, Acc* __restrict__ out,
                       LongList list, std::int64_t n_pairs, std::int64_t n_window_end) {
  static_assert(sizeof(Off) == 4, "staged_pair_kernel copies 32-bit offsets");
  using P = std::uint32_t;
  constexpr int W = kPairStageBytes / static_cast<int>(sizeof(T)), S = 2 * kTile,
                kWarps = kPairBlock / device::warp_size;
  constexpr int OS = (S + 1 + 3) / 4 * 4;  // a tile's offsets, padded to 16 bytes
  __shared__ __align__(16) unsigned char stage[kWarps * 2 * kPairStageBytes + device::segment_round_blocks * 16];
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
  const auto buffer = [&](int k) { return reinterpret_cast<T*>(stage + (2 * wid + k) * kPairStageBytes); };
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
