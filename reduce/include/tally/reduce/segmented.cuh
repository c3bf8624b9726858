#pragma once
// Segmented reductions on CUDA, header-only: the library's segmented_reduce() runs these kernels
// (compiled in src/segmented/segmented_cuda*.cu), and a user's reducer (reducer.hpp) does too from any
// .cu file:
//
//   #include <tally/reduce/segmented.cuh>
//   segmented_reduce_custom<BBox2, Point2>(Backend::cuda, std::span<const Point2>(d_pts, n),
//                                          std::span<const std::int64_t>(d_off, n_seg + 1),
//                                          std::span<Box2>(d_box, n_seg), ws, stream);
//
// Segments given by CSR offsets, balanced however uneven their lengths.
//
// Each segment's class, and with it its combination order, is a function of its length L alone:
//   * short  (L <= kThreadMax):            one thread, element order (device::thread_segment_fold);
//   * medium (kThreadMax < L <= kWarpMax): one warp, lanes strided, the xor tree (warp_segment_reduce);
//   * long   (L > kWarpMax):               chunks of kChunk elements (chunk k = [k kChunk, (k+1) kChunk)
//     of the segment), each a block (block_segment_reduce); the chunks' partials combined in chunk
//     order by the last chunk to finish (a ticket per segment, gang_arrive).
// Three launches (no memset: the list's count is a workspace ticket, zero between calls):
//   1. staged_kernel (16-byte aligned input) or short_kernel: a warp per tile of 32 consecutive
//      segments (grid-stride over tiles): each lane reduces its short segment, then the warp reduces
//      the tile's medium segments one after the other; a tile holding long segments appends itself
//      and its count of long chunks to a list (an atomic slot). A tile's serial work is at most
//      32 kWarpMax elements, so no warp is left with much more than its share. short_kernel loads
//      the next tile's offsets while it reduces a tile; staged_kernel also copies the next tile's
//      elements to shared memory (cp.async), so a tile's round trips overlap the tile before.
//   2. scan_list_kernel, one block: the list's inclusive scan, the global chunk numbering; it moves
//      the count to the list's size and zeroes the ticket. A call without long segments finds an
//      empty list (a scan of every tile's count, 8.6 us for the 524 288 tiles of 2^28 floats in
//      segments of 16, was 3% of that call; H200).
//   3. long_kernel: a persistent grid, block b taking the consecutive chunks [b total / grid,
//      (b + 1) total / grid); a chunk's segment is looked up when the block enters it (the first list
//      entry whose scan exceeds the chunk's number by a 32-ary warp search, then a warp scan of that
//      tile's 32 chunk counts) and kept while the block stays in it.
// Nothing depends on the grid size or the order in which blocks run or append to the list (a
// segment's chunks are numbered consecutively wherever its tile lands, and combined in chunk order):
// bitwise reproducible.

#include <cuda_runtime.h>

#include <algorithm>
#include <cub/block/block_scan.cuh>
#include <cstdint>
#include <span>
#include <type_traits>

#include "tally/common/cuda_check.cuh"
#include "tally/reduce/device/gang.cuh"
#include "tally/reduce/device/launch.cuh"
#include "tally/reduce/device/segment.cuh"
#include "tally/reduce/segmented.hpp"
#include "tally/reduce/segmented_generic.hpp"

namespace tally::reduce::detail::cuda::seg {

inline constexpr int kBlock = 256;       ///< threads per block (the library's production kernels' too)
inline constexpr int kMinBlocksSm = 4;   ///< residency the register budget is held to (launch bounds)
/// The tile kernel's (its warps wait on one dependent round trip after another, so more of them hide
/// more). H200, power law: 5 blocks (48 registers) 668 us; 4 (55 registers, the medium loop 16 loads
/// deep) 734; 6 (40 registers) spilled, 732, uniform 16 and 1000 5-7% slower than at 5.
inline constexpr int kShortBlocksSm = 5;
inline std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }
/// Blocks that fill the device once at kMinBlocksSm per SM (the Tuning's SM count).
inline std::int64_t fill_blocks(const Tuning& t) {
  return std::int64_t{std::max(t.sm_count, 1)} * std::min(std::max(t.blocks_per_sm, 1), kMinBlocksSm);
}

inline constexpr std::int64_t kThreadMax = 32;    ///< short: at most this many elements
inline constexpr std::int64_t kWarpMax = 2048;    ///< medium: at most this many
inline constexpr std::int64_t kChunk = 16384;     ///< long: chunks of this many (64 per thread)
inline constexpr int kTile = device::warp_size;   ///< segments per tile (one per lane)

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

/// A tile's medium segments (lanes with kThreadMax < len <= kWarpMax), one after the other by the whole
/// warp, each read from the staged window win = in[wb, wend) where it lies inside (the staged kernel)
/// and from in otherwise; then, where the tile holds long segments, the tile and its chunk count
/// appended to the list (rare: the 64-bit division, the warp sum, the slot).
template <class Op, class T, class Acc, bool Staged, class P>
__device__ __forceinline__ void tile_medium_long(const T* __restrict__ in, const T* win, P wb, P wend, P tile, P b, P len, Acc* __restrict__ out,
                                                 const LongList& list, int lane) {
  for (unsigned mid = __ballot_sync(0xffffffffu, len > kThreadMax && len <= kWarpMax); mid != 0; mid &= mid - 1) {
    const int src = __ffs(static_cast<int>(mid)) - 1;
    const P sb = __shfl_sync(0xffffffffu, b, src);
    const int sl = __shfl_sync(0xffffffffu, static_cast<int>(len), src);
    // Two calls, not one on a selected pointer: each is compiled for its own memory (LDS, LDG).
    const Acc r = Staged && sb >= wb && sb + sl <= wend ? device::warp_segment_reduce<Op, Acc>(win + (sb - wb), sl, lane)
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
    short_kernel(const T* __restrict__ in, std::int64_t n, const Off* __restrict__ off, std::int64_t n_seg, Acc* __restrict__ out,
                 LongList list) {
  enter_after_predecessor();
  const int lane = static_cast<int>(threadIdx.x) % device::warp_size;
  const std::int64_t warps = static_cast<std::int64_t>(gridDim.x) * (kBlock / device::warp_size);
  const std::int64_t tiles = (n_seg + kTile - 1) / kTile;
  std::int64_t tile = (static_cast<std::int64_t>(blockIdx.x) * kBlock + threadIdx.x) / device::warp_size;  // warp-uniform
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
      out[s] = len > 0 ? device::thread_segment_fold<Op, Acc>(detail::op_identity<Op, Acc>(), in, n, b, static_cast<int>(len))
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
      "{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %2, 0;\n\t@p cp.async.cg.shared.global [%0], [%1], 16;\n\t}" ::"r"(to), "l"(gmem),
      "r"(static_cast<int>(copy))
      : "memory");
}
/// 4 bytes likewise (cp.async.ca: copies under 16 bytes go through L1).
__device__ __forceinline__ void copy4_async(void* smem, const void* gmem, bool copy) {
  const auto to = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile(
      "{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %2, 0;\n\t@p cp.async.ca.shared.global [%0], [%1], 4;\n\t}" ::"r"(to), "l"(gmem),
      "r"(static_cast<int>(copy))
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
__device__ __forceinline__ void copy_window(T* dst, const T* __restrict__ in, P first, P last, P n_end, int lane, P& wb, int& wlen) {
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
__device__ __forceinline__ void staged_short(const T* __restrict__ in, const T* win, P wb, int wlen, P s, P b, P len, Acc* __restrict__ out) {
  Acc r = detail::empty_segment<Op, Acc>();
  if (len > 0)
    r = b >= wb && b - wb + len <= static_cast<P>(wlen)
            ? device::thread_segment_fold_blocks<Op, Acc>(detail::op_identity<Op, Acc>(), win, static_cast<int>(b - wb), static_cast<int>(len))
            : device::thread_segment_fold_scalar<Op, Acc>(detail::op_identity<Op, Acc>(), in + b, static_cast<int>(len));
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
    staged_kernel(const T* __restrict__ in, const Off* __restrict__ off, std::int64_t n_seg, Acc* __restrict__ out, LongList list,
                  std::int64_t n_tiles, std::int64_t n_window_end) {
  // Positions and segment numbers in 32 bits, as the offsets are (the loop's state is ten of them;
  // in 64 bits it spilled, and with int64 offsets the kernel ran uniform 1000 at 0.30 of the full sum,
  // short_kernel at 0.86: H200, 2026-11-29).
  static_assert(sizeof(Off) <= 4, "staged_kernel takes 32-bit offsets");
  using P = std::uint32_t;
  constexpr int W = kStageBytes / static_cast<int>(sizeof(T));
  constexpr int kWarps = kBlock / device::warp_size;
  // Padded by a round of thread_segment_fold_blocks (which reads whole rounds; what lies past a
  // window is never folded).
  __shared__ __align__(16) unsigned char stage[kWarps * 2 * kStageBytes + device::segment_round_blocks * 16];
  enter_after_predecessor();
  const int lane = static_cast<int>(threadIdx.x) % device::warp_size, wid = static_cast<int>(threadIdx.x) / device::warp_size;
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
    copy_window<W>(buffer(k), in, __shfl_sync(0xffffffffu, b, 0), __shfl_sync(0xffffffffu, e, device::warp_size - 1), n_end, lane, wb, wlen);
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

/// The pair kernel's blocks (4 warps; registers held to 64, for 8 an SM, but 29 KB of shared memory
/// each lets 7 in), its tiles (two of 32 segments, a pair a warp) and its windows (768 floats: a pair
/// of the power law's segments spans 344 on average).
inline constexpr int kPairBlock = 128;
inline constexpr int kPairBlocksSm = 8;
inline constexpr int kPairStageBytes = 3072;

/// staged_kernel for short segments (a mean under 32 bytes): tiles of 64 segments, lane l reducing
/// segments l and l + 32 (the per-tile work of the window, its copies and the wait paid once for two
/// of staged_kernel's tiles), the offsets staged too (tile t's 65 copied to shared memory two tiles
/// ahead, its elements one tile ahead, one cp.async group a tile: the loop holds no offsets in
/// registers). The same folds from the same windowed or global memory: the same bits.
/// H200, 2^28 floats: power law 490 us against staged_kernel's 548-552 (0.49 of the full sum against
/// 0.44), uniform 4 397 against 474, uniform 8 316 against 323; longer segments are slower here
/// (uniform 16 365 against 281: the window holds three quarters of a tile's 1024 floats).
template <class Op, class T, class Acc, class Off>
__global__ void __launch_bounds__(kPairBlock, kPairBlocksSm)
    staged_pair_kernel(const T* __restrict__ in, const Off* __restrict__ off, std::int64_t n_seg, Acc* __restrict__ out, LongList list,
                       std::int64_t n_pairs, std::int64_t n_window_end) {
  static_assert(sizeof(Off) == 4, "staged_pair_kernel copies 32-bit offsets");
  using P = std::uint32_t;
  constexpr int W = kPairStageBytes / static_cast<int>(sizeof(T)), S = 2 * kTile, kWarps = kPairBlock / device::warp_size;
  constexpr int OS = (S + 1 + 3) / 4 * 4;  // a tile's offsets, padded to 16 bytes
  __shared__ __align__(16) unsigned char stage[kWarps * 2 * kPairStageBytes + device::segment_round_blocks * 16];
  __shared__ __align__(16) P offs[kWarps][3][OS];
  enter_after_predecessor();
  const int lane = static_cast<int>(threadIdx.x) % device::warp_size, wid = static_cast<int>(threadIdx.x) / device::warp_size;
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
  const auto issue = [&](int q, int k, P& wb, int& wlen) { copy_window<W>(buffer(k), in, offs[wid][q][0], offs[wid][q][S], n_end, lane, wb, wlen); };
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

/// Where a long chunk lies (found by the block's first warp, read by all).
struct ChunkSlot {
  std::int64_t seg, begin, len, count, first;  ///< segment, its extent, its chunk count, its first chunk's number
};

/// The first list entry t < entries with prefix[t] > c (one exists: c < prefix[entries - 1]), by the
/// calling warp: a 32-ary search, each probe round one load per lane (5 round trips for 10^6 entries,
/// not 20).
__device__ __forceinline__ std::int64_t find_tile(const int* __restrict__ prefix, std::int64_t entries, std::int64_t c, int lane) {
  std::int64_t lo = 0, hi = entries - 1;  // the answer lies in [lo, hi]; prefix[hi] > c
  while (lo < hi) {
    const std::int64_t step = (hi - lo + device::warp_size) / device::warp_size;  // ceil((hi - lo + 1) / 32)
    const std::int64_t q = min(lo + lane * step, hi);
    const unsigned above = __ballot_sync(0xffffffffu, prefix[q] > c);  // a suffix of the lanes: prefix is non-decreasing
    if (above == 0) {
      lo += (device::warp_size - 1) * step + 1;  // lane 31's probe was below hi
    } else {
      const int j = __ffs(static_cast<int>(above)) - 1;
      hi = min(lo + j * step, hi);
      if (j > 0) lo += (j - 1) * step + 1;
    }
  }
  return lo;
}

/// Entries of the list the kernels may read (at most cap, whatever offsets that break the rules did).
__device__ __forceinline__ std::int64_t list_size(std::int64_t count, const LongList& list) { return min(count, list.cap); }

inline constexpr int kScanBlock = 1024;

/// The list's chunk counts made their inclusive scan, in place, by one block: thread t sums a
/// contiguous run, a block scan of the runs, then each run rewritten from its offset. The count is
/// moved to size and its ticket zeroed (after every thread has read it). An empty list (no long
/// segment) is a load and two stores.
template <int Block = kScanBlock>  // a template: defined in every translation unit that launches it
__global__ void __launch_bounds__(Block) scan_list_kernel(LongList list) {
  enter_after_predecessor();
  using Scan = cub::BlockScan<int, Block>;
  __shared__ typename Scan::TempStorage tmp;
  const std::int64_t count = *list.count;
  __syncthreads();
  if (threadIdx.x == 0) *list.size = count, *list.count = 0;
  const std::int64_t size = list_size(count, list);
  if (size == 0) return;
  const std::int64_t per = (size + Block - 1) / Block, b = min(size, per * threadIdx.x), e = min(size, b + per);
  int run = 0;
  for (std::int64_t i = b; i < e; ++i) run += list.chunks[i];
  Scan(tmp).ExclusiveSum(run, run);
  for (std::int64_t i = b; i < e; ++i) list.chunks[i] = run += list.chunks[i];
}

template <class Op, class T, class Acc, class Off>
__global__ void __launch_bounds__(kBlock, kMinBlocksSm)
    long_kernel(const T* __restrict__ in, const Off* __restrict__ off, std::int64_t n_seg, Acc* __restrict__ out, LongList list,
                std::int64_t max_chunks, Acc* __restrict__ partials, unsigned int* __restrict__ tickets) {
  enter_after_predecessor();
  const std::int64_t entries = list_size(*list.size, list);
  if (entries == 0) return;  // no long segment
  const int* __restrict__ prefix = list.chunks;
  __shared__ device::BlockReduceStorage<Acc> tmp;
  __shared__ ChunkSlot slot;
  __shared__ bool last;
  // The inclusive scan's last value is the total; at most max_chunks, the bound the partials and
  // tickets were sized for, which only offsets that break the rules (SegmentCheck::trusted) could pass.
  const std::int64_t total = min(static_cast<std::int64_t>(prefix[entries - 1]), max_chunks);
  // Block b takes the consecutive chunks [b total / grid, (b + 1) total / grid): mostly of one segment,
  // which is looked up once (find_tile over the list, then a warp scan of the tile's chunk counts),
  // not per chunk.
  const std::int64_t c_end = total * (blockIdx.x + 1) / gridDim.x;
  ChunkSlot my{0, 0, 0, 0, 0};
  for (std::int64_t c = total * blockIdx.x / gridDim.x; c < c_end; ++c) {
    if (c < my.first || c >= my.first + my.count) {  // block-uniform: another segment
      if (threadIdx.x < device::warp_size) {
        const int lane = static_cast<int>(threadIdx.x);
        const std::int64_t at = find_tile(prefix, entries, c, lane);
        const std::int64_t before = at > 0 ? prefix[at - 1] : 0;
        const std::int64_t s = list.tile[at] * kTile + lane;
        std::int64_t b = 0, len = 0;
        if (s < n_seg) b = off[s], len = static_cast<std::int64_t>(off[s + 1]) - b;
        const auto count = static_cast<int>(chunks_of(len));
        int incl = count;
        for (int d = 1; d < device::warp_size; d *= 2) {
          const int y = __shfl_up_sync(0xffffffffu, incl, d);
          if (lane >= d) incl += y;
        }
        const std::int64_t r = c - before;
        if (lane == 0) slot.count = 0;  // none found: only from offsets that break the rules
        __syncwarp();
        if (count > 0 && r >= incl - count && r < incl) slot = ChunkSlot{s, b, len, count, before + incl - count};
      }
      __syncthreads();
      my = slot;
      if (my.count == 0 || my.first + my.count > max_chunks) {  // only from offsets that break the rules: nothing written
        my.count = 0;
        __syncthreads();
        continue;
      }
    }
    const std::int64_t c0 = (c - my.first) * kChunk, c1 = min(my.len, c0 + kChunk);
    Acc v = device::block_segment_reduce<Op, Acc>(in + my.begin + c0, c1 - c0, tmp, c0);
    if (my.count == 1) {
      if (threadIdx.x == 0) out[my.seg] = v;
    } else {
      if (threadIdx.x == 0) partials[c] = v;
      if (device::gang_arrive(tickets + my.first, static_cast<unsigned int>(my.count), last)) {
        // The segment's partials in chunk order: strided over the threads, then the block tree.
        v = detail::op_identity<Op, Acc>();
        for (std::int64_t k = threadIdx.x; k < my.count; k += kBlock)
          v = detail::op_combine<Op, Acc>(v, device::load_coherent(partials + my.first + k));
        v = device::block_reduce<Op>(v, tmp);
        if (threadIdx.x == 0) out[my.seg] = v;
      }
    }
    __syncthreads();  // slot and tmp are reused
  }
}

template <class Off>
__global__ void __launch_bounds__(kBlock) check_kernel(const Off* __restrict__ off, std::int64_t n_seg, std::int64_t n,
                                                      unsigned long long* __restrict__ first_bad) {
  enter_after_predecessor();
  for (std::int64_t i = device::global_thread_id(); i <= n_seg; i += device::grid_stride()) {
    const std::int64_t a = off[i];
    const bool bad = (i == 0 && a < 0) || (i < n_seg && a > static_cast<std::int64_t>(off[i + 1])) || (i == n_seg && a > n);
    if (bad) atomicMin(first_bad, static_cast<unsigned long long>(i));
  }
}

inline std::size_t round256(std::size_t b) { return (b + 255) / 256 * 256; }

template <class Op, class T, class Acc, class Off>
void segmented_cuda_impl(const T* in, std::int64_t n, const Off* off, std::int64_t n_seg, Acc* out, Workspace& ws,
                         stream_t stream) {
  const Tuning& tune = ws.tuning();
  const std::int64_t tiles = ceil_div(n_seg, kTile);
  const std::int64_t max_chunks = n / kChunk + std::min(n_seg, n / (kWarpMax + 1));
  // Scratch: the list's size, its tiles and chunk counts (at most one entry per long segment), the
  // long chunks' partials. Tickets: one per long chunk, then the list's count.
  const std::int64_t cap = std::min(tiles, n / (kWarpMax + 1));
  const std::size_t tile_at = 256, chunks_at = tile_at + round256(static_cast<std::size_t>(cap) * sizeof(std::int64_t)),
                    part_at = chunks_at + round256(static_cast<std::size_t>(cap) * sizeof(int));
  LongList list;
  Acc* partials = nullptr;
  if (max_chunks > 0) {
    ws.reserve(part_at + static_cast<std::size_t>(max_chunks) * sizeof(Acc), static_cast<std::size_t>(max_chunks) + 1, stream);
    auto* const base = static_cast<unsigned char*>(ws.scratch());
    list = LongList{ws.ticket_array() + max_chunks, reinterpret_cast<std::int64_t*>(base), reinterpret_cast<std::int64_t*>(base + tile_at),
                    reinterpret_cast<int*>(base + chunks_at), cap};
    partials = reinterpret_cast<Acc*>(base + part_at);
  }
  // Whole rounds of the blocks the device holds (registers allowing, 5 an SM where fill_blocks counts
  // 4: a grid of 4 x 4 an SM ran a fifth of a round last, uniform 16 4% slower), how many by the mean
  // segment length. Where it is 16 or more a tile is full 16-byte rounds, bandwidth-bound, and short
  // blocks even out the end: 32 rounds, ~3 tiles a warp for segments of 16. Shorter segments are
  // latency-bound and each warp's first tile waits for its offsets, which later tiles find loaded:
  // 8 rounds. H200, 2^28 floats, us by rounds 4 / 8 / 16 / 32 / 64: uniform 16 287.0 / 285.3 /
  // 283.6 / 281.7 / 282.0, power law 649.9 / 643.2 / 644.0 / 656.8 / 683.6 (one tile a warp: 865.8).
  const int rounds = n >= 16 * n_seg ? 32 : 8;
  const auto grid_of = [&](int resident, std::int64_t units = 0, int block = kBlock) {  // units: tiles by default
    return std::clamp<std::int64_t>(ceil_div(units > 0 ? units : tiles, block / device::warp_size), 1,
                                    std::int64_t{std::max(tune.sm_count, 1)} * resident * rounds);
  };
  // The staged kernels wherever they can run: 16-byte aligned input of a type cp.async copies whole,
  // 32-bit offsets (segment numbers below 2^31); the pair kernel where segments average at most 32
  // bytes (H200: the power law's 21 bytes, uniform 4 and 8 faster there, uniform 16 slower);
  // short_kernel otherwise.
  bool staged = false;
  if constexpr (stageable<T> && sizeof(Off) <= 4) {
    staged = reinterpret_cast<std::uintptr_t>(in) % 16 == 0 && n_seg < (std::int64_t{1} << 31);
    // Windows hold whole 16-byte blocks inside in[0, n), below 2^32 (positions are 32-bit).
    constexpr std::int64_t v = device::vec16<T>;
    const std::int64_t window_end = std::min(n, (std::int64_t{1} << 32) - v) / v * v;
    bool pair = false;
    if constexpr (sizeof(Off) == 4) {
      pair = staged && n * static_cast<std::int64_t>(sizeof(T)) <= 32 * n_seg;
      if (pair) {
        static const int resident = resident_blocks(staged_pair_kernel<Op, T, Acc, Off>, kPairBlock);
        const std::int64_t pairs = ceil_div(n_seg, 2 * kTile);
        launch(staged_pair_kernel<Op, T, Acc, Off>, grid_of(resident, pairs, kPairBlock), kPairBlock, tune, stream, in, off, n_seg, out, list,
               pairs, window_end);
      }
    }
    if (staged && !pair) {
      static const int resident = resident_blocks(staged_kernel<Op, T, Acc, Off>, kBlock);
      launch(staged_kernel<Op, T, Acc, Off>, grid_of(resident), kBlock, tune, stream, in, off, n_seg, out, list, tiles, window_end);
    }
  }
  if (!staged) {
    static const int resident = resident_blocks(short_kernel<Op, T, Acc, Off>, kBlock);
    launch(short_kernel<Op, T, Acc, Off>, grid_of(resident), kBlock, tune, stream, in, n, off, n_seg, out, list);
  }
  if (max_chunks == 0) return;  // no segment can be long
  launch(scan_list_kernel<>, 1, kScanBlock, tune, stream, list);
  const std::int64_t long_grid = std::clamp<std::int64_t>(max_chunks, 1, fill_blocks(tune));
  launch(long_kernel<Op, T, Acc, Off>, long_grid, kBlock, tune, stream, in, off, n_seg, out, list, max_chunks, partials,
         ws.ticket_array());
}

template <class Off>
void check_offsets_cuda_impl(const Off* d_off, std::int64_t n_seg, std::int64_t n, Workspace& ws, stream_t stream) {
  auto* const slot = static_cast<unsigned long long*>(ws.result_slot());
  TALLY_CUDA_TRY(cudaMemsetAsync(slot, 0xFF, sizeof(unsigned long long), stream));
  const std::int64_t grid = std::clamp<std::int64_t>(ceil_div(n_seg + 1, kBlock), 1, fill_blocks(ws.tuning()) * 4);
  launch(check_kernel<Off>, grid, kBlock, ws.tuning(), stream, d_off, n_seg, n, slot);
  unsigned long long first = 0;
  TALLY_CUDA_TRY(cudaMemcpyAsync(&first, slot, sizeof first, cudaMemcpyDeviceToHost, stream));
  TALLY_CUDA_TRY(cudaStreamSynchronize(stream));
  if (first == ~0ull) return;
  const auto i = static_cast<std::int64_t>(first);
  Off pair[2] = {0, 0};
  TALLY_CUDA_TRY(cudaMemcpyAsync(pair, d_off + i, sizeof(Off) * (i < n_seg ? 2 : 1), cudaMemcpyDeviceToHost, stream));
  TALLY_CUDA_TRY(cudaStreamSynchronize(stream));
  throw_bad_offsets<Off>(i, pair[0], pair[1], n_seg, n);
}

}  // namespace tally::reduce::detail::cuda::seg

namespace tally::reduce {

/// A user's reducer (reducer.hpp) over segments, on either backend, the same semantics as
/// segmented_reduce() (checks, empty segments, determinism; load(x, index) sees the position within
/// the segment). CUDA: in, offsets and out in device memory; asynchronous unless check is full.
template <class R, class T, class Off>
  requires(Reducer<R> && is_segment_offset<Off>)
void segmented_reduce_custom(Backend backend, std::span<const T> in, std::span<const Off> offsets, std::span<typename R::value_type> out,
                             Workspace& ws, stream_t stream = nullptr, SegmentCheck check = SegmentCheck::full) {
  const auto n = static_cast<std::int64_t>(in.size()), n_out = static_cast<std::int64_t>(out.size());
  detail::validate_segment_sizes(n, in.data(), static_cast<std::int64_t>(offsets.size()), offsets.data(), n_out, out.data());
  detail::check_workspace(ws, backend);
  if (n_out == 0) return;
  if (backend == Backend::cpu) {
    if (check == SegmentCheck::full) detail::check_offsets_cpu(offsets.data(), n_out, n);
    detail::segmented_cpu<R, T, typename R::value_type, Off>(in.data(), n, offsets.data(), n_out, out.data());
  } else {
    if (check == SegmentCheck::full) detail::check_offsets_cuda(offsets.data(), n_out, n, ws, stream);
    detail::cuda::seg::segmented_cuda_impl<R, T, typename R::value_type, Off>(in.data(), n, offsets.data(), n_out, out.data(), ws, stream);
  }
}

}  // namespace tally::reduce
