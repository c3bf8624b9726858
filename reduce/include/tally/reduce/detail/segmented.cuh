#pragma once
// The CUDA engine of segmented reductions (tally/reduce/segmented.cuh is its public face): segments
// given by CSR offsets, balanced however uneven their lengths.
//
// Each segment's class, and with it its combination order, is a function of its length L alone:
//   * short  (L <= kThreadMax):            one thread, element order (device::thread_segment_fold);
//   * medium (kThreadMax < L <= kWarpMax): one warp, lanes strided, the xor tree (warp_segment_reduce);
//   * long   (L > kWarpMax):               chunks of kChunk elements (chunk k = [k kChunk, (k+1) kChunk)
//     of the segment), each a block in block_segment_reduce's order (chunk_fold); the chunks' partials
//     combined in chunk order by the last chunk to finish (a ticket per segment, gang_arrive).
// Three launches (no memset: the list's count is a workspace ticket, zero between calls):
//   1. a tile kernel (segmented_tiles.cuh): a warp per tile of 32 consecutive segments (grid-stride
//      over tiles): each lane reduces its short segment, then the warp reduces the tile's medium
//      segments one after the other; a tile holding long segments appends itself and its count of
//      long chunks to a list (an atomic slot). A tile's serial work is at most 32 kWarpMax elements,
//      so no warp is left with much more than its share. short_kernel loads the next tile's offsets
//      while it reduces a tile; staged_kernel (16-byte aligned input, 32-bit offsets) also copies the
//      next tile's elements to shared memory (cp.async), so a tile's round trips overlap the tile
//      before; staged_pair_kernel, where segments average at most 32 bytes, takes two tiles at once.
//   2. scan_list_kernel, one block: the list's inclusive scan, the global chunk numbering; it moves
//      the count to the list's size and zeroes the ticket. A call without long segments finds an
//      empty list, whose scan is a load and two stores (the list holds only the tiles with long
//      segments, not every tile's count).
//   3. long_kernel: a persistent grid, block b taking the consecutive chunks [b total / grid,
//      (b + 1) total / grid), located 32 at a time by its first warp (locate_chunks: the first list
//      entry whose scan exceeds the batch's first chunk by a 32-ary warp search, then a warp scan of
//      the chunk counts of that entry's tile and the ones after it, until 32 chunks are placed).
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
#include "tally/reduce/detail/launch.cuh"
#include "tally/reduce/detail/segmented_generic.hpp"
#include "tally/reduce/detail/segmented_tiles.cuh"
#include "tally/reduce/device/gang.cuh"
#include "tally/reduce/device/segment.cuh"
#include "tally/reduce/segmented.hpp"

namespace tally::reduce::detail::cuda::seg {

/// Where a long chunk lies (found by the block's first warp, read by all).
struct ChunkSlot {
  std::int64_t seg, begin, len, count, first;  ///< segment, its extent, its chunk count, its first chunk's number
};

/// The first list entry t < entries with prefix[t] > c (one exists: c < prefix[entries - 1]), by the
/// calling warp: a 32-ary search, each probe round one load per lane (5 round trips for 10^6 entries,
/// not 20).
__device__ __forceinline__ std::int64_t find_tile(const int* __restrict__ prefix, std::int64_t entries, std::int64_t c,
                                                  int lane) {
  std::int64_t lo = 0, hi = entries - 1;  // the answer lies in [lo, hi]; prefix[hi] > c
  while (lo < hi) {
    const std::int64_t step = (hi - lo + device::warp_size) / device::warp_size;  // ceil((hi - lo + 1) / 32)
    const std::int64_t q = min(lo + lane * step, hi);
    const unsigned above =
        __ballot_sync(0xffffffffu, prefix[q] > c);  // a suffix of the lanes: prefix is non-decreasing
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

/// Where the chunks [c0, c0 + nb) lie, nb <= 32 and at most those of 32 list entries, written to
/// slots[0, nb) by the calling warp (one 32-ary search for c0's entry, then each entry's tile's offsets
/// loaded a lane a segment, four entries' loads in flight at once, and each segment writing the slots
/// of its chunks in the batch); a chunk no segment claims (only from offsets that break the rules)
/// keeps count 0. Returns nb. Locating a batch at once spares each segment its own search, offsets
/// and block barrier (five dependent round trips), which most long segments, a single chunk each,
/// would otherwise pay.
template <class Off>
__device__ __forceinline__ int locate_chunks(ChunkSlot* slots, const int* __restrict__ prefix, std::int64_t entries,
                                             const LongList& list, const Off* __restrict__ off, std::int64_t n_seg,
                                             std::int64_t c0, std::int64_t c_end, int lane) {
  constexpr unsigned full = 0xffffffffu;
  const std::int64_t at = find_tile(prefix, entries, c0, lane);
  const std::int64_t t = at + lane;  // lane j: entry at + j's tile and first chunk
  const std::int64_t tile = t < entries ? list.tile[t] : 0;
  const std::int64_t first = t < entries && t > 0 ? prefix[t - 1] : 0;
  const std::int64_t covered = prefix[min(at + device::warp_size - 1, entries - 1)];
  const int nb = static_cast<int>(min(min(std::int64_t{device::warp_size}, c_end - c0), covered - c0));
  const std::int64_t cb = c0 + nb;
  slots[lane].count = 0;
  __syncwarp();
  constexpr int U = 4;
  for (int e0 = 0; e0 < device::warp_size; e0 += U) {
    std::int64_t sb[U], sl[U], sf[U], ss[U];
    bool live[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      sf[u] = __shfl_sync(full, first, e0 + u);
      live[u] = at + e0 + u < entries && sf[u] < cb;  // warp-uniform
      ss[u] = __shfl_sync(full, tile, e0 + u) * kTile + lane;
      sb[u] = 0, sl[u] = 0;
      if (live[u] && ss[u] < n_seg) sb[u] = off[ss[u]], sl[u] = static_cast<std::int64_t>(off[ss[u] + 1]) - sb[u];
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      if (!live[u]) break;
      const auto count = static_cast<int>(chunks_of(sl[u]));
      int incl = count;
      for (int d = 1; d < device::warp_size; d *= 2) {
        const int y = __shfl_up_sync(full, incl, d);
        if (lane >= d) incl += y;
      }
      const std::int64_t f = sf[u] + incl - count;  // this segment's first chunk
      for (std::int64_t c = max(f, c0); c < min(f + count, cb); ++c)
        slots[c - c0] = ChunkSlot{ss[u], sb[u], sl[u], count, f};
    }
    if (!live[U - 1]) break;
  }
  __syncwarp();
  return nb;
}

/// Entries of the list the kernels may read (at most cap, whatever offsets that break the rules did).
__device__ __forceinline__ std::int64_t list_size(std::int64_t count, const LongList& list) {
  return min(count, list.cap);
}

/// The list's chunk counts made their inclusive scan, in place, by one block: thread t sums a
/// contiguous run, a block scan of the runs, then each run rewritten from its offset. The count is
/// moved to size and its ticket zeroed (after every thread has read it). An empty list (no long
/// segment) is a load and two stores.
template <int Block = SegmentedPolicy::scan_block>  // a template: defined in every translation unit that launches it
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

/// This thread's fold of a chunk x[0, len), len <= kChunk: elements t, t + SegmentedPolicy::block, ... in order
/// (block_segment_reduce's), every load of a round of SegmentedPolicy::long_round bytes a thread issued before the
/// first combine: a full float chunk costs two round trips (at 16 loads a round it would cost four,
/// and a part-full chunk one more for its remainder).
template <class Op, class Acc, class T>
__device__ __forceinline__ Acc chunk_fold(const T* __restrict__ x, int len, std::int64_t index0) {
  constexpr int per = static_cast<int>(kChunk / SegmentedPolicy::block),
                fit = SegmentedPolicy::long_round / static_cast<int>(sizeof(T));
  constexpr int R = fit < 1 ? 1 : fit > per ? per : fit;  // loads a round
  Acc acc = detail::op_identity<Op, Acc>();
#pragma unroll 1
  for (int base = static_cast<int>(threadIdx.x); base < len; base += R * SegmentedPolicy::block) {
    // One address, the loads at constant offsets from it; the bound a compare with a constant.
    const T* __restrict__ p = x + base;
    const int rem = len - base;
    T v[R];
#pragma unroll
    for (int u = 0; u < R; ++u)
      if (u * SegmentedPolicy::block < rem) v[u] = p[u * SegmentedPolicy::block];
#pragma unroll
    for (int u = 0; u < R; ++u)
      if (u * SegmentedPolicy::block < rem)
        acc = detail::op_combine<Op, Acc>(
            acc, detail::segment_load<Op, Acc>(v[u], index0 + base + u * SegmentedPolicy::block));
  }
  return acc;
}

/// Chunk c of the segment in `my`: its block reduction, and the segment's result (one chunk) or its
/// partial, the last of its chunks combining them in chunk order; ends with a block barrier.
template <class Op, class T, class Acc>
__device__ __forceinline__ void long_chunk(const T* __restrict__ in, Acc* __restrict__ out, const ChunkSlot& my,
                                           std::int64_t c, Acc* __restrict__ partials,
                                           unsigned int* __restrict__ tickets, device::BlockReduceStorage<Acc>& tmp,
                                           bool& last) {
  const std::int64_t c0 = (c - my.first) * kChunk, c1 = min(my.len, c0 + kChunk);
  Acc v = device::block_reduce<Op>(chunk_fold<Op, Acc>(in + my.begin + c0, static_cast<int>(c1 - c0), c0), tmp);
  if (my.count == 1) {
    if (threadIdx.x == 0) out[my.seg] = v;
  } else {
    if (threadIdx.x == 0) partials[c] = v;
    if (device::gang_arrive(tickets + my.first, static_cast<unsigned int>(my.count), last)) {
      // The segment's partials in chunk order: strided over the threads, then the block tree.
      v = detail::op_identity<Op, Acc>();
      for (std::int64_t k = threadIdx.x; k < my.count; k += SegmentedPolicy::block)
        v = detail::op_combine<Op, Acc>(v, device::load_coherent(partials + my.first + k));
      v = device::block_reduce<Op>(v, tmp);
      if (threadIdx.x == 0) out[my.seg] = v;
    }
  }
  __syncthreads();  // tmp and last are reused
}

template <class Op, class T, class Acc, class Off>
__global__ void __launch_bounds__(SegmentedPolicy::block, SegmentedPolicy::long_blocks_sm)
    long_kernel(const T* __restrict__ in, const Off* __restrict__ off, std::int64_t n_seg, Acc* __restrict__ out,
                LongList list, std::int64_t max_chunks, Acc* __restrict__ partials,
                unsigned int* __restrict__ tickets) {
  enter_after_predecessor();
  const std::int64_t entries = list_size(*list.size, list);
  if (entries == 0) return;  // no long segment
  const int* __restrict__ prefix = list.chunks;
  __shared__ device::BlockReduceStorage<Acc> tmp;
  __shared__ bool last;
  // The inclusive scan's last value is the total; at most max_chunks, the bound the partials and
  // tickets were sized for, which only offsets that break the rules (SegmentCheck::trusted) could pass.
  const std::int64_t total = min(static_cast<std::int64_t>(prefix[entries - 1]), max_chunks);
  // Block b takes the consecutive chunks [b total / grid, (b + 1) total / grid), located 32 at a time
  // by its first warp (locate_chunks), then reduced one after another by the whole block.
  const std::int64_t c_end = total * (blockIdx.x + 1) / gridDim.x;
  __shared__ ChunkSlot slots[device::warp_size];
  __shared__ int batch;
  for (std::int64_t c = total * blockIdx.x / gridDim.x; c < c_end;) {
    if (threadIdx.x < device::warp_size) {
      const int nb = locate_chunks(slots, prefix, entries, list, off, n_seg, c, c_end, static_cast<int>(threadIdx.x));
      if (threadIdx.x == 0) batch = nb;
    }
    __syncthreads();
    const int nb = batch;
    for (int i = 0; i < nb; ++i, ++c) {
      const ChunkSlot my = slots[i];
      if (my.count == 0 || my.first + my.count > max_chunks)
        continue;  // only from offsets that break the rules: nothing written
      long_chunk<Op>(in, out, my, c, partials, tickets, tmp, last);
    }
    __syncthreads();  // slots are rewritten
  }
}

template <class Off>
__global__ void __launch_bounds__(SegmentedPolicy::block)
    check_kernel(const Off* __restrict__ off, std::int64_t n_seg, std::int64_t n,
                 unsigned long long* __restrict__ first_bad) {
  enter_after_predecessor();
  for (std::int64_t i = device::global_thread_id(); i <= n_seg; i += device::grid_stride()) {
    const std::int64_t a = off[i];
    const bool bad =
        (i == 0 && a < 0) || (i < n_seg && a > static_cast<std::int64_t>(off[i + 1])) || (i == n_seg && a > n);
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
    ws.reserve(part_at + static_cast<std::size_t>(max_chunks) * sizeof(Acc), static_cast<std::size_t>(max_chunks) + 1,
               stream);
    auto* const base = static_cast<unsigned char*>(ws.scratch());
    list = LongList{ws.ticket_array() + max_chunks, reinterpret_cast<std::int64_t*>(base),
                    reinterpret_cast<std::int64_t*>(base + tile_at), reinterpret_cast<int*>(base + chunks_at), cap};
    partials = reinterpret_cast<Acc*>(base + part_at);
  }
  // Whole rounds of the blocks the device holds (the kernel's own residency, registers allowing, not
  // fill_blocks' count: a grid of a smaller count runs a fraction of a round last), how many by the
  // mean segment length. Where it is 16 or more a tile is full 16-byte rounds, bandwidth-bound, and
  // short blocks even out the end (rounds_long, ~3 tiles a warp for segments of 16). Shorter segments
  // are latency-bound and each warp's first tile waits for its offsets, which later tiles find loaded
  // (rounds_short).
  const int rounds = n >= 16 * n_seg ? SegmentedPolicy::rounds_long : SegmentedPolicy::rounds_short;
  const auto grid_of = [&](int resident, std::int64_t warp_tiles, int block) {  // a warp a tile
    return std::clamp<std::int64_t>(ceil_div(warp_tiles, block / device::warp_size), 1,
                                    std::int64_t{std::max(tune.sm_count, 1)} * resident * rounds);
  };
  // The staged kernels wherever they can run: 16-byte aligned input of a type cp.async copies whole,
  // 32-bit offsets (segment numbers below 2^31); the pair kernel where segments average at most 32
  // bytes (the power law's average is 21), where it is the faster; short_kernel otherwise.
  bool staged = false;
  if constexpr (stageable<T> && sizeof(Off) == 4) {
    staged = reinterpret_cast<std::uintptr_t>(in) % 16 == 0 && n_seg < (std::int64_t{1} << 31);
    if (staged) {
      // Windows hold whole 16-byte blocks inside in[0, n), below 2^32 (positions are 32-bit).
      constexpr std::int64_t v = device::vec16<T>;
      const std::int64_t window_end = std::min(n, (std::int64_t{1} << 32) - v) / v * v;
      if (n * static_cast<std::int64_t>(sizeof(T)) <= 32 * n_seg) {
        static const int resident = resident_blocks(staged_pair_kernel<Op, T, Acc, Off>, SegmentedPolicy::pair_block);
        const std::int64_t pairs = ceil_div(n_seg, 2 * kTile);
        launch(staged_pair_kernel<Op, T, Acc, Off>, grid_of(resident, pairs, SegmentedPolicy::pair_block),
               SegmentedPolicy::pair_block, tune, stream, in, off, n_seg, out, list, pairs, window_end);
      } else {
        static const int resident = resident_blocks(staged_kernel<Op, T, Acc, Off>, SegmentedPolicy::block);
        launch(staged_kernel<Op, T, Acc, Off>, grid_of(resident, tiles, SegmentedPolicy::block), SegmentedPolicy::block,
               tune, stream, in, off, n_seg, out, list, tiles, window_end);
      }
    }
  }
  if (!staged) {
    static const int resident = resident_blocks(short_kernel<Op, T, Acc, Off>, SegmentedPolicy::block);
    launch(short_kernel<Op, T, Acc, Off>, grid_of(resident, tiles, SegmentedPolicy::block), SegmentedPolicy::block,
           tune, stream, in, n, off, n_seg, out, list);
  }
  if (max_chunks == 0) return;  // no segment can be long
  launch(scan_list_kernel<>, 1, SegmentedPolicy::scan_block, tune, stream, list);
  static const int long_resident = resident_blocks(long_kernel<Op, T, Acc, Off>, SegmentedPolicy::block);
  const std::int64_t long_grid =
      std::clamp<std::int64_t>(max_chunks, 1, std::int64_t{std::max(tune.sm_count, 1)} * long_resident);
  launch(long_kernel<Op, T, Acc, Off>, long_grid, SegmentedPolicy::block, tune, stream, in, off, n_seg, out, list,
         max_chunks, partials, ws.ticket_array());
}

template <class Off>
void check_offsets_cuda_impl(const Off* d_off, std::int64_t n_seg, std::int64_t n, Workspace& ws, stream_t stream) {
  auto* const slot = static_cast<unsigned long long*>(ws.result_slot());
  TALLY_CUDA_TRY(cudaMemsetAsync(slot, 0xFF, sizeof(unsigned long long), stream));
  const std::int64_t grid =
      std::clamp<std::int64_t>(ceil_div(n_seg + 1, SegmentedPolicy::block), 1, fill_blocks(ws.tuning()) * 4);
  launch(check_kernel<Off>, grid, SegmentedPolicy::block, ws.tuning(), stream, d_off, n_seg, n, slot);
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
