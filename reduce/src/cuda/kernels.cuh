#pragma once
// Production CUDA kernels of tally::reduce and their dispatch (see ../plan.hpp for the two families).
//
// inner (contiguous axis reduced): out[o] = reduce_{q<rows, i<n} in[koff(o) + roff(q) + i]
//   * inner_group_kernel: G lanes per output (G = 1..32 from the row length, so that each lane issues
//     16-byte loads), a lane-group shuffle tree; for many short segments. inner_row_kernel: the same
//     for single ragged rows of up to kRowBatch vectors per lane, loaded in one batch.
//     inner_thread_kernel: single rows of at most kThreadRowVecs vectors, the lane group's order
//     computed by one thread.
//   * inner_block_kernel: a whole block per (output, chunk); an output's segment is split over S blocks
//     when there are too few outputs to fill the GPU. Each block writes its partial to the workspace,
//     the last block of the segment (per-segment ticket) combines the S partials in chunk order: one
//     launch, deterministic.
//   * flat_kernel: one contiguous run to one value (the full reduction of a contiguous array, shorter
//     than 2^31): a grid-stride loop, then gang_reduce.
// outer (contiguous axis kept, nc columns): out[b*nc + c] = reduce_{q<rows} in[b*sb + roff(q) + c]
//   * outer_kernel: block (X, Y), X threads over column vectors of V columns (16-byte loads), Y over
//     rows, so that a warp reads contiguous memory even for nc = 2 or 16; rows split over S blocks when
//     there are too few column tiles, combined by the tile's last block as above.
//
// Vector loads only where the pointer, every stride and the row length allow them; otherwise the same
// kernels with V = 1. Every combination order is fixed by the launch shape: bitwise reproducible.
// Every kernel is started through launch() (launch.cuh): its launch overlaps the previous kernel's end.
// Every output is written through op_finish (ops.hpp): Mean's sum is divided by its element count
// there, in the same store, so the mean is the sum's kernels at the sum's speed; other operators store as is.

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "tally/reduce/device/launch.cuh"
#include "plan.hpp"
#include "tally/common/cuda_check.cuh"
#include "tally/reduce/device/gang.cuh"
#include "tally/reduce/device/thread.cuh"
#include "tally/reduce/device/vector.cuh"
#include "tally/reduce/device/worker.cuh"

namespace tally::reduce::detail::cuda {

inline constexpr int kBlock = 256;       ///< threads per block of every production kernel
inline constexpr int kMinBlocksSm = 4;   ///< residency the register budget is held to (launch bounds)
inline constexpr int kUnroll = 4;        ///< independent 16-byte loads in flight per thread
inline constexpr int kRowBatch = 8;     ///< inner_row_kernel: vectors per lane loaded as one batch
inline constexpr int kThreadRowVecs = 4;  ///< inner_thread_kernel: rows of at most this many vectors
inline constexpr int kFlatBlocksSm = 3;  ///< flat_kernel's wave (H100, 2^22-2^28: 1-2% faster than 2 or 4)

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
__device__ __forceinline__ Acc fold_partials(Acc acc, const Acc* p, std::int64_t begin, std::int64_t end, std::int64_t step,
                                             std::int64_t stride) {
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
__device__ __forceinline__ Acc combine_partials(const Acc* partials, std::int64_t S, device::BlockReduceStorage<Acc>& tmp) {
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

// ---------------------------------------------------------------------------------------------
// inner, G lanes per output
// ---------------------------------------------------------------------------------------------
/// A thread's place among the grid's groups of G lanes (G a power of two up to a warp: a group never
/// straddles two warps). Loops over outputs step from warp_first, the same in every lane of a warp,
/// so that the shuffles of group_reduce_n see every lane.
struct LaneGroup {
  int lane;                  ///< within the group
  std::int64_t ngroups;      ///< in the grid
  std::int64_t warp_first;   ///< index of the first group of this thread's warp
  std::int64_t rel;          ///< this group's index - warp_first
  __device__ explicit LaneGroup(int G)
      : lane(static_cast<int>(threadIdx.x) & (G - 1)),
        ngroups(static_cast<std::int64_t>(gridDim.x) * kBlock / G),
        warp_first((static_cast<std::int64_t>(blockIdx.x) * kBlock + threadIdx.x) / G - (static_cast<int>(threadIdx.x) % device::warp_size) / G),
        rel((static_cast<int>(threadIdx.x) % device::warp_size) / G) {}
};

template <class Op, class T, class Acc, int V>
__global__ void __launch_bounds__(kBlock, kMinBlocksSm)
    inner_group_kernel(Plan p, int G, const T* __restrict__ in, Acc* __restrict__ out) {
  enter_after_predecessor();
  const LaneGroup g(G);
  const int lane = g.lane;
  const std::int64_t ngroups = g.ngroups, warp_first = g.warp_first, rel = g.rel;
  if (p.rows == 1 && p.n <= std::int64_t{G} * V) {
    // Each lane loads at most one vector per output: U outputs' loads in flight before any shuffle.
    constexpr int U = sizeof(T) * V >= 16 ? 4 : 8;
    const bool active = std::int64_t{lane} * V < p.n;
    for (std::int64_t o0 = warp_first; o0 < p.n_out; o0 += U * ngroups) {  // warp-uniform condition
      device::Vec<T, V> v[U];
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const std::int64_t o = o0 + rel + u * ngroups;
        if (active && o < p.n_out) v[u] = device::load_vec<V>(in + out_offset(p, o) + std::int64_t{lane} * V);
      }
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const std::int64_t o = o0 + rel + u * ngroups;
        Acc acc = Op::template identity<Acc>();
        if (active && o < p.n_out) acc = device::fold<Op, Acc>(acc, v[u]);
        acc = device::group_reduce_n<Op>(acc, G);
        if (lane == 0 && o < p.n_out) out[o] = op_finish<Op>(acc, p.per_output());
      }
    }
    return;
  }
  if (p.n <= std::int64_t{G} * V) {
    // Short rows, several of them: one vector per lane per row, UQ rows' loads in flight.
    constexpr int UQ = sizeof(T) * V >= 16 ? 4 : 8;
    const bool active = std::int64_t{lane} * V < p.n;
    for (std::int64_t o0 = warp_first; o0 < p.n_out; o0 += ngroups) {
      const std::int64_t o = o0 + rel;
      Acc acc = Op::template identity<Acc>();
      if (active && o < p.n_out) {
        const T* base = in + out_offset(p, o) + std::int64_t{lane} * V;
        std::int64_t q = 0;
        for (; q + UQ <= p.rows; q += UQ) {
          device::Vec<T, V> v[UQ];
#pragma unroll
          for (int u = 0; u < UQ; ++u) v[u] = device::load_vec<V>(base + row_offset(p, q + u));
#pragma unroll
          for (int u = 0; u < UQ; ++u) acc = device::fold<Op, Acc>(acc, v[u]);
        }
        for (; q < p.rows; ++q) acc = device::fold<Op, Acc>(acc, device::load_vec<V>(base + row_offset(p, q)));
      }
      acc = device::group_reduce_n<Op>(acc, G);
      if (lane == 0 && o < p.n_out) out[o] = op_finish<Op>(acc, p.per_output());
    }
    return;
  }
  constexpr int U = 2;  // outputs per group in flight
  // The loop condition uses the warp's first group: uniform across the warp (the shuffles need all lanes).
  for (std::int64_t o0 = warp_first; o0 < p.n_out; o0 += U * ngroups) {
    Acc acc[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      acc[u] = Op::template identity<Acc>();
      const std::int64_t o = o0 + rel + u * ngroups;
      if (o < p.n_out) {
        const T* base = in + out_offset(p, o);
        for (std::int64_t q = 0; q < p.rows; ++q)
          acc[u] = fold_row<Op, Acc, V, true>(acc[u], base + row_offset(p, q), std::int64_t{lane} * V, p.n, std::int64_t{G} * V);
      }
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const Acc r = device::group_reduce_n<Op>(acc[u], G);
      const std::int64_t o = o0 + rel + u * ngroups;
      if (lane == 0 && o < p.n_out) out[o] = op_finish<Op>(r, p.per_output());
    }
  }
}

/// One row per output (rows == 1) of at most G <= kThreadRowVecs vectors, one output per thread:
/// each vector folded alone from the identity, then the G partials joined in the order of
/// group_reduce_n's xor tree (at each level i < w takes i + w, combine(own, other)), i.e. what lane 0
/// of inner_group_kernel's group of G lanes computes, without the shuffles. A warp reads 32 whole
/// rows (64 contiguous bytes a thread for 16 floats) and stores 32 consecutive outputs in one
/// instruction; U outputs a thread in flight, at least 64 bytes (rows of 2 floats ran at 0.64 of the
/// full sum with lane groups' 8 outputs of 8 bytes, 0.61 with 2). H200, 2^28 floats in rows of 16:
/// 0.89 of the full sum with lane groups (4 outputs a group in flight, 4 stores of 32 bytes a warp),
/// 0.91-0.92 here.
template <class Op, class T, class Acc, int V, int G>
__global__ void __launch_bounds__(kBlock, kMinBlocksSm)
    inner_thread_kernel(Plan p, const T* __restrict__ in, Acc* __restrict__ out) {
  enter_after_predecessor();
  constexpr int row_bytes = G * V * static_cast<int>(sizeof(T)), U = row_bytes >= 32 ? 2 : row_bytes >= 16 ? 4 : 8;
  const std::int64_t stride = device::grid_stride();
  for (std::int64_t o0 = device::global_thread_id(); o0 < p.n_out; o0 += U * stride) {
    device::Vec<T, V> v[U][G];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const std::int64_t o = o0 + u * stride;
#pragma unroll
      for (int i = 0; i < G; ++i)
        if (o < p.n_out && std::int64_t{i} * V < p.n) v[u][i] = device::load_vec<V>(in + out_offset(p, o) + i * V);
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const std::int64_t o = o0 + u * stride;
      if (o >= p.n_out) continue;
      Acc x[G];
#pragma unroll
      for (int i = 0; i < G; ++i)
        x[i] = std::int64_t{i} * V < p.n ? device::fold<Op, Acc>(Op::template identity<Acc>(), v[u][i]) : Op::template identity<Acc>();
#pragma unroll
      for (int w = G / 2; w > 0; w /= 2)
#pragma unroll
        for (int i = 0; i < w; ++i) x[i] = detail::op_combine<Op, Acc>(x[i], x[i + w]);
      out[o] = op_finish<Op>(x[0], p.per_output());
    }
  }
}

/// One row per output (rows == 1) of more than one and at most kRowBatch vectors per lane, ragged
/// (fold_row would give some lanes one more round of loads than others, and the warp waits for
/// both): every load of a lane's row in one batch, folded in the same order. H200, `vector` on
/// 64 x 1048 x 1000 floats: 0.88 of the full reduction with fold_row, 1.03 here. A kernel of its own:
/// inside inner_group_kernel the batch's registers cost every other path occupancy (rows of 1024
/// floats: 1.00 -> 0.84-0.95) and gave this case only 0.94-0.97.
template <class Op, class T, class Acc, int V>
__global__ void __launch_bounds__(kBlock, kMinBlocksSm)
    inner_row_kernel(Plan p, int G, const T* __restrict__ in, Acc* __restrict__ out) {
  enter_after_predecessor();
  const LaneGroup g(G);
  const std::int64_t step = std::int64_t{G} * V, left = p.n - std::int64_t{g.lane} * V;
  for (std::int64_t o0 = g.warp_first; o0 < p.n_out; o0 += g.ngroups) {
    const std::int64_t o = o0 + g.rel;
    Acc acc = Op::template identity<Acc>();
    if (o < p.n_out) {
      const T* row = in + out_offset(p, o) + std::int64_t{g.lane} * V;
      device::Vec<T, V> v[kRowBatch];
#pragma unroll
      for (int u = 0; u < kRowBatch; ++u)
        if (u * step < left) v[u] = device::load_vec<V>(row + u * step);
#pragma unroll
      for (int u = 0; u < kRowBatch; ++u)
        if (u * step < left) acc = device::fold<Op, Acc>(acc, v[u]);
    }
    acc = device::group_reduce_n<Op>(acc, G);
    if (g.lane == 0 && o < p.n_out) out[o] = op_finish<Op>(acc, p.per_output());
  }
}

/// Nothing reduced (every reduced axis has extent 1) and the output is the contiguous input: a
/// converting copy with vector loads, each element still joined with the identity so that a
/// one-element reduction means the same as on every other path (LogicalAnd/Or give 0 or 1).
template <class Op, class T, class Acc, int V>
__global__ void __launch_bounds__(kBlock) copy_kernel(const T* __restrict__ in, Acc* __restrict__ out, std::int64_t n) {
  enter_after_predecessor();
  for (std::int64_t i = device::global_thread_id() * V; i < n; i += device::grid_stride() * V) {
    const auto v = device::load_vec<V>(in + i);
    device::Vec<Acc, V> w;
#pragma unroll
    for (int k = 0; k < V; ++k) w.v[k] = op_finish<Op>(Op::template combine<Acc>(Op::template identity<Acc>(), static_cast<Acc>(v.v[k])), 1);
    *reinterpret_cast<device::Vec<Acc, V>*>(out + i) = w;  // the caller checked the alignment
  }
}

// ---------------------------------------------------------------------------------------------
// one contiguous run to one value: the full reduction of a contiguous array
// ---------------------------------------------------------------------------------------------
/// The block-per-chunk kernel below does this too, but its 64-bit chunk arithmetic before the first
/// load and its second fold of the partials after the ticket cost about 1 us of a 2^16-element
/// reduction's 3.7 us (H100, graph replays). Here: 32-bit indices (n < 2^31), a grid-stride loop whose
/// loads issue at once, and the library's own gang_reduce.
template <class Op, class T, class Acc, int V>
__global__ void __launch_bounds__(kBlock, kMinBlocksSm)
    flat_kernel(const T* __restrict__ in, std::uint32_t n, Acc* __restrict__ out, Acc* __restrict__ partials,
                unsigned int* __restrict__ ticket) {
  enter_after_predecessor();
  __shared__ device::GangStorage<Acc> tmp;
  const std::uint32_t step = gridDim.x * std::uint32_t{kBlock} * V;
  const Acc acc = fold_row<Op, Acc, V>(Op::template identity<Acc>(), in, (blockIdx.x * kBlock + threadIdx.x) * V, n, step);
  Acc r;
  if (device::gang_reduce<Op>(acc, partials, ticket, r, tmp) && threadIdx.x == 0) *out = op_finish<Op>(r, n);
}

// ---------------------------------------------------------------------------------------------
// inner, a block per (output, chunk)
// ---------------------------------------------------------------------------------------------
struct InnerBlockArgs {
  Plan p;
  int X = kBlock;           ///< lanes along a row (power of two); kBlock / X rows at a time
  std::int64_t Sq = 1;      ///< row chunks per output
  std::int64_t qchunk = 1;  ///< rows per row chunk
  std::int64_t Si = 1;      ///< column chunks per row (only with X == kBlock)
  std::int64_t ichunk = 0;  ///< elements per column chunk (a multiple of kBlock * V)
};

template <class Op, class T, class Acc, int V>
__global__ void __launch_bounds__(kBlock, kMinBlocksSm)
    inner_block_kernel(InnerBlockArgs a, const T* __restrict__ in, Acc* __restrict__ out, Acc* __restrict__ partials,
                       unsigned int* __restrict__ tickets) {
  enter_after_predecessor();
  __shared__ device::GangStorage<Acc> tmp;
  const Plan& p = a.p;
  const std::int64_t S = a.Sq * a.Si;
  const std::int64_t items = p.n_out * S;
  for (std::int64_t item = blockIdx.x; item < items; item += gridDim.x) {
    const std::int64_t o = item / S, s = item % S;
    const std::int64_t q0 = (s / a.Si) * a.qchunk, q1 = min(p.rows, q0 + a.qchunk);
    const T* base = in + out_offset(p, o);
    Acc acc = Op::template identity<Acc>();
    if (a.Si > 1 || p.n > std::int64_t{a.X} * V) {
      // Long rows (X == kBlock): each row chunk's column range [c0, c1), kUnroll vector loads in
      // flight per thread.
      const std::int64_t c0 = (s % a.Si) * a.ichunk, c1 = min(p.n, c0 + a.ichunk);
      constexpr std::int64_t step = std::int64_t{kBlock} * V;
      for (std::int64_t q = q0; q < q1; ++q)
        acc = fold_row<Op, Acc, V>(acc, base + row_offset(p, q), c0 + std::int64_t{threadIdx.x} * V, c1, step);
    } else {
      // Rows of at most the block's vectors: X lanes along a row, each at most one vector of it, Y
      // rows at a time; UQ rows' loads in flight per thread (in row order, as folded).
      const int x = static_cast<int>(threadIdx.x) & (a.X - 1);
      const int y = static_cast<int>(threadIdx.x) / a.X, Y = kBlock / a.X;
      constexpr int UQ = sizeof(T) * V >= 16 ? 4 : 8;
      if (std::int64_t{x} * V < p.n) {
        for (std::int64_t q = q0 + y; q < q1; q += std::int64_t{UQ} * Y) {
          device::Vec<T, V> v[UQ];
#pragma unroll
          for (int u = 0; u < UQ; ++u)
            if (q + std::int64_t{u} * Y < q1) v[u] = device::load_vec<V>(base + row_offset(p, q + std::int64_t{u} * Y) + std::int64_t{x} * V);
#pragma unroll
          for (int u = 0; u < UQ; ++u)
            if (q + std::int64_t{u} * Y < q1) acc = device::fold<Op, Acc>(acc, v[u]);
        }
      }
    }
    acc = device::block_reduce<Op>(acc, tmp.block);
    if (S == 1) {
      if (threadIdx.x == 0) out[o] = op_finish<Op>(acc, p.per_output());
      continue;
    }
    if (threadIdx.x == 0) partials[item] = acc;
    if (device::gang_arrive(tickets + o, static_cast<unsigned int>(S), tmp.last)) {
      acc = combine_partials<Op>(partials + o * S, S, tmp.block);
      if (threadIdx.x == 0) out[o] = op_finish<Op>(acc, p.per_output());
    }
  }
}

// ---------------------------------------------------------------------------------------------
// outer: columns kept
// ---------------------------------------------------------------------------------------------
struct OuterArgs {
  Plan p;
  int X = 32;               ///< threads along the columns (power of two); Y = kBlock / X along the rows
  std::int64_t tiles = 1;   ///< column tiles of X * V columns per b
  std::int64_t S = 1;       ///< row splits per tile
  std::int64_t chunk = 0;   ///< rows per split
};

template <class Op, class T, class Acc, int V>
__global__ void __launch_bounds__(kBlock, kMinBlocksSm)
    outer_kernel(OuterArgs a, const T* __restrict__ in, Acc* __restrict__ out, Acc* __restrict__ partials,
                 unsigned int* __restrict__ tickets) {
  enter_after_predecessor();
  __shared__ Acc smem[kBlock * V];
  __shared__ bool last;
  const Plan& p = a.p;
  const int tid = static_cast<int>(threadIdx.x);
  const int X = a.X, Y = kBlock / X, TW = X * V;
  const int x = tid & (X - 1), y = tid / X;
  const int lane = tid % device::warp_size, warp = tid / device::warp_size;
  const std::int64_t items = p.nb * a.tiles * a.S;
  for (std::int64_t item = blockIdx.x; item < items; item += gridDim.x) {
    const std::int64_t s = item % a.S, bt = item / a.S;
    const std::int64_t b = bt / a.tiles, tile = bt % a.tiles;
    const std::int64_t c = (tile * X + x) * V;
    const std::int64_t q0 = s * a.chunk, q1 = min(p.rows, q0 + a.chunk);
    Acc acc[V];
#pragma unroll
    for (int k = 0; k < V; ++k) acc[k] = Op::template identity<Acc>();
    if (c < p.nc) {
      // UQ rows' loads in flight per thread: 64 bytes whatever the load width.
      constexpr int UQ = sizeof(T) * V >= 16 ? 4 : (sizeof(T) * V >= 8 ? 8 : 16);
      const T* base = in + b * p.sb + c;
      std::int64_t q = q0 + y;
      for (; q + std::int64_t{UQ - 1} * Y < q1; q += std::int64_t{UQ} * Y) {
        device::Vec<T, V> v[UQ];
#pragma unroll
        for (int u = 0; u < UQ; ++u) v[u] = device::load_vec<V>(base + row_offset(p, q + std::int64_t{u} * Y));
#pragma unroll
        for (int u = 0; u < UQ; ++u)
#pragma unroll
          for (int k = 0; k < V; ++k) acc[k] = Op::template combine<Acc>(acc[k], static_cast<Acc>(v[u].v[k]));
      }
      for (; q < q1; q += Y) {
        const auto v = device::load_vec<V>(base + row_offset(p, q));
#pragma unroll
        for (int k = 0; k < V; ++k) acc[k] = Op::template combine<Acc>(acc[k], static_cast<Acc>(v.v[k]));
      }
    }
    // Combine over y: inside a warp with a fixed butterfly (lanes l and l^off, off >= X, share x),
    // then the warps' (or rows') values in order from shared memory.
    int R = Y;
    if (X < device::warp_size) {
      for (int off = device::warp_size / 2; off >= X; off /= 2) {
#pragma unroll
        for (int k = 0; k < V; ++k) acc[k] = Op::template combine<Acc>(acc[k], __shfl_xor_sync(0xffffffffu, acc[k], off));
      }
      R = kBlock / device::warp_size;
      if (lane < X) {
#pragma unroll
        for (int k = 0; k < V; ++k) smem[warp * TW + x * V + k] = acc[k];
      }
    } else {
#pragma unroll
      for (int k = 0; k < V; ++k) smem[y * TW + x * V + k] = acc[k];
    }
    __syncthreads();
    for (int t = tid; t < TW; t += kBlock) {
      Acc v = Op::template identity<Acc>();
      for (int r = 0; r < R; ++r) v = Op::template combine<Acc>(v, smem[r * TW + t]);
      const std::int64_t col = tile * TW + t;
      if (a.S == 1) {
        if (col < p.nc) out[b * p.nc + col] = op_finish<Op>(v, p.rows);
      } else {
        partials[(bt * a.S + s) * TW + t] = v;
      }
    }
    if (a.S > 1) {
      if (device::gang_arrive(tickets + bt, static_cast<unsigned int>(a.S), last)) {
        // The tile's last block: each column's S partials in split order; with few columns, P
        // threads per column take every P-th split, then those P values are combined in order.
        const Acc* part = partials + bt * a.S * TW;
        const int P = TW >= kBlock ? 1 : kBlock / TW;
        __syncthreads();  // smem is reused
        for (int t0 = 0; t0 < TW; t0 += kBlock) {
          const int t = t0 + (P == 1 ? tid : tid % TW), j = P == 1 ? 0 : tid / TW;
          Acc v = Op::template identity<Acc>();
          if (t < TW && j < P) v = fold_partials<Op>(v, part + t, j, a.S, P, TW);
          if (P > 1) {
            if (j < P) smem[j * TW + t] = v;
            __syncthreads();
            if (j == 0) {
              for (int r = 1; r < P; ++r) v = Op::template combine<Acc>(v, smem[r * TW + t]);
            }
          }
          const std::int64_t col = tile * TW + t;
          if (j == 0 && t < TW && col < p.nc) out[b * p.nc + col] = op_finish<Op>(v, p.rows);
        }
      }
    }
    __syncthreads();  // smem is free for the next item
  }
}

template <class Op, class Acc>
__global__ void fill_kernel(Acc* __restrict__ out, std::int64_t n) {
  enter_after_predecessor();
  for (std::int64_t i = device::global_thread_id(); i < n; i += device::grid_stride()) out[i] = op_finish<Op>(Op::template identity<Acc>(), 0);
}

// ---------------------------------------------------------------------------------------------
// dispatch
// ---------------------------------------------------------------------------------------------
inline int pow2_at_least(std::int64_t v, int cap) {
  int g = 1;
  while (g < cap && g < v) g *= 2;
  return g;
}
inline std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }
inline bool aligned_to(const void* ptr, std::size_t bytes) { return reinterpret_cast<std::uintptr_t>(ptr) % bytes == 0; }

/// Blocks that fill the device once (every block resident).
inline std::int64_t fill_blocks(const Tuning& t) {
  return std::int64_t{std::max(t.sm_count, 1)} * std::min(std::max(t.blocks_per_sm, 1), kMinBlocksSm);
}

/// Minimum elements a split chunk gets (fewer: the combine would cost more than it saves).
inline constexpr std::int64_t kMinChunk = 8 * kBlock * 4;

template <class Op, class T, class Acc, int V>
void launch_inner(const Plan& p, const T* in, Acc* d_out, Workspace& ws, stream_t stream) {
  const Tuning& tune = ws.tuning();
  const std::int64_t target = fill_blocks(tune);
  const std::int64_t per = p.rows * p.n;
  if (p.n_out == 1 && p.rows == 1 && p.n < (std::int64_t{1} << 31)) {
    // One contiguous run: kUnroll vectors per thread in one pass where the run is short (one block
    // up to kBlock * V * kUnroll elements: no ticket), a wave of kFlatBlocksSm blocks per SM otherwise.
    const std::int64_t wave = std::int64_t{std::max(tune.sm_count, 1)} * kFlatBlocksSm;
    const std::int64_t grid = std::clamp<std::int64_t>(ceil_div(p.n, std::int64_t{kBlock} * V * kUnroll), 1, wave);
    ws.reserve(static_cast<std::size_t>(grid) * sizeof(Acc), 1, stream);
    launch(flat_kernel<Op, T, Acc, V>, grid, kBlock, tune, stream, in, static_cast<std::uint32_t>(p.n), d_out,
           static_cast<Acc*>(ws.scratch()), ws.ticket_array());
    return;
  }
  const int G = pow2_at_least(ceil_div(p.n, V), device::warp_size);
  // Enough independent outputs to keep the lanes busy with G lanes each, or segments so short
  // that a block per output would idle: lane groups.
  if (p.n_out * G >= target * kBlock || per <= std::int64_t{G} * V * 8 || (per < kMinChunk && p.n_out * G >= kBlock * 4)) {
    const std::int64_t grid = std::clamp<std::int64_t>(ceil_div(p.n_out * G, kBlock * 2), 1, target * 16);
    const std::int64_t lane_vecs = ceil_div(p.n, std::int64_t{G} * V);  // vectors per lane and row
    if (p.rows == 1 && G <= kThreadRowVecs) {
      const std::int64_t tgrid = std::clamp<std::int64_t>(ceil_div(p.n_out, kBlock), 1, target * 16);
      if (G == 1) launch(inner_thread_kernel<Op, T, Acc, V, 1>, tgrid, kBlock, tune, stream, p, in, d_out);
      else if (G == 2) launch(inner_thread_kernel<Op, T, Acc, V, 2>, tgrid, kBlock, tune, stream, p, in, d_out);
      else launch(inner_thread_kernel<Op, T, Acc, V, kThreadRowVecs>, tgrid, kBlock, tune, stream, p, in, d_out);
    } else if (p.rows == 1 && lane_vecs > 1 && lane_vecs <= kRowBatch && p.n % (std::int64_t{G} * V * kUnroll) != 0)
      launch(inner_row_kernel<Op, T, Acc, V>, grid, kBlock, tune, stream, p, G, in, d_out);
    else
      launch(inner_group_kernel<Op, T, Acc, V>, grid, kBlock, tune, stream, p, G, in, d_out);
    return;
  }
  // A block per (output, chunk). With fewer outputs than resident blocks, split each output into at
  // most target / n_out chunks (rounded down: one wave, no tail of a second one).
  InnerBlockArgs a{p};
  const std::int64_t want = std::max<std::int64_t>(1, target / p.n_out);
  if (p.n >= std::int64_t{kBlock} * V) {
    a.X = kBlock;
    a.Sq = std::min(p.rows, want);
    // Chunks of at least one 16-byte load per thread: small inputs spread over many blocks (latency).
    a.Si = std::clamp<std::int64_t>(want / a.Sq, 1, std::max<std::int64_t>(1, p.n / (std::int64_t{kBlock} * V)));
  } else {
    a.X = pow2_at_least(ceil_div(p.n, V), kBlock);
    const std::int64_t min_rows = std::max<std::int64_t>(1, kMinChunk / std::max<std::int64_t>(p.n, 1));
    a.Sq = std::clamp<std::int64_t>(want, 1, std::max<std::int64_t>(1, p.rows / min_rows));
  }
  a.qchunk = ceil_div(p.rows, a.Sq);
  a.Sq = ceil_div(p.rows, a.qchunk);
  a.ichunk = ceil_div(ceil_div(p.n, a.Si), std::int64_t{kBlock} * V) * kBlock * V;
  a.Si = ceil_div(p.n, a.ichunk);
  const std::int64_t S = a.Sq * a.Si;
  Acc* partials = nullptr;
  unsigned int* tickets = nullptr;
  if (S > 1) {
    ws.reserve(static_cast<std::size_t>(p.n_out * S) * sizeof(Acc), static_cast<std::size_t>(p.n_out), stream);
    partials = static_cast<Acc*>(ws.scratch());
    tickets = ws.ticket_array();
  }
  const std::int64_t grid = std::clamp<std::int64_t>(p.n_out * S, 1, target * 16);
  launch(inner_block_kernel<Op, T, Acc, V>, grid, kBlock, tune, stream, a, in, d_out, partials, tickets);
}

template <class Op, class T, class Acc, int V>
void launch_outer(const Plan& p, const T* in, Acc* d_out, Workspace& ws, stream_t stream) {
  const Tuning& tune = ws.tuning();
  const std::int64_t target = fill_blocks(tune);
  OuterArgs a{p};
  const std::int64_t cols_v = ceil_div(p.nc, V);
  a.X = pow2_at_least(cols_v, device::warp_size);
  // Few rows: widen the tile so that each thread still folds >= 64 rows (or every row): long items.
  while (a.X < kBlock && a.X < cols_v && p.rows < std::int64_t{kBlock / a.X} * 64) a.X *= 2;
  const int Y = kBlock / a.X;
  a.tiles = ceil_div(cols_v, a.X);
  const std::int64_t base_items = p.nb * a.tiles;
  a.S = 1;
  if (base_items < target) {
    const std::int64_t min_rows = std::max<std::int64_t>(std::int64_t{Y} * 8, kMinChunk / (std::int64_t{a.X} * V));
    a.S = std::clamp<std::int64_t>(target / base_items, 1, std::max<std::int64_t>(1, p.rows / min_rows));  // one wave
  }
  a.chunk = ceil_div(p.rows, a.S);
  a.S = ceil_div(p.rows, a.chunk);
  Acc* partials = nullptr;
  unsigned int* tickets = nullptr;
  if (a.S > 1) {
    const std::int64_t tw = std::int64_t{a.X} * V;
    ws.reserve(static_cast<std::size_t>(base_items * a.S * tw) * sizeof(Acc), static_cast<std::size_t>(base_items), stream);
    partials = static_cast<Acc*>(ws.scratch());
    tickets = ws.ticket_array();
  }
  const std::int64_t grid = std::clamp<std::int64_t>(base_items * a.S, 1, target * 16);
  launch(outer_kernel<Op, T, Acc, V>, grid, kBlock, tune, stream, a, in, d_out, partials, tickets);
}

/// Whether every access of the plan can be a V-element vector load.
template <int V, class T>
bool vectorizable(const Plan& p, const T* in) {
  if constexpr (V == 1) return true;
  if (!aligned_to(in, sizeof(T) * V)) return false;
  const auto ok = [](std::int64_t s) { return s % V == 0; };
  if (!ok(p.r_s1) || !ok(p.r_s2)) return false;
  if (p.kind == Plan::Kind::inner) return ok(p.n) && ok(p.k_s1) && ok(p.k_s2);
  return ok(p.nc) && ok(p.sb);
}

template <class Op, class T, class Acc>
void reduce_cuda_impl(const Problem& prob, Acc* d_out, Workspace& ws, stream_t stream) {
  const Plan p = make_plan(prob);
  if (p.n_out == 0) return;
  if (p.empty) {
    launch(fill_kernel<Op, Acc>, std::clamp<std::int64_t>(ceil_div(p.n_out, kBlock), 1, 4096), kBlock, ws.tuning(), stream, d_out, p.n_out);
    return;
  }
  const T* in = static_cast<const T*>(prob.data);
  constexpr int V = device::vec16<T>;
  constexpr int V2 = V / 2 > 1 ? V / 2 : 1;  // 8-byte loads of 4-byte types (rows of 2, 6, ...)
  if (p.kind == Plan::Kind::inner && p.rows * p.n == 1 && p.k_ext2 >= p.n_out && p.k_s2 == 1) {
    // Every reduced axis has extent 1 and the output is the contiguous input: a converting copy.
    const std::int64_t grid = std::clamp<std::int64_t>(ceil_div(p.n_out, std::int64_t{kBlock} * V * 4), 1, fill_blocks(ws.tuning()) * 8);
    if (aligned_to(in, sizeof(T) * V) && aligned_to(d_out, sizeof(Acc) * V) && p.n_out % V == 0)
      launch(copy_kernel<Op, T, Acc, V>, grid, kBlock, ws.tuning(), stream, in, d_out, p.n_out);
    else
      launch(copy_kernel<Op, T, Acc, 1>, grid, kBlock, ws.tuning(), stream, in, d_out, p.n_out);
    return;
  }
  if (p.kind == Plan::Kind::inner) {
    if (vectorizable<V>(p, in)) launch_inner<Op, T, Acc, V>(p, in, d_out, ws, stream);
    else if (V2 > 1 && vectorizable<V2>(p, in)) launch_inner<Op, T, Acc, V2>(p, in, d_out, ws, stream);
    else launch_inner<Op, T, Acc, 1>(p, in, d_out, ws, stream);
  } else {
    if (vectorizable<V>(p, in)) launch_outer<Op, T, Acc, V>(p, in, d_out, ws, stream);
    else if (V2 > 1 && vectorizable<V2>(p, in)) launch_outer<Op, T, Acc, V2>(p, in, d_out, ws, stream);
    else launch_outer<Op, T, Acc, 1>(p, in, d_out, ws, stream);
  }
}

}  // namespace tally::reduce::detail::cuda
