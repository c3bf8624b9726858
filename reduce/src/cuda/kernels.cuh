#pragma once
// Production CUDA kernels of tally::reduce and their dispatch (see ../plan.hpp for the two families).
//
// inner (contiguous axis reduced): out[o] = reduce_{q<rows, i<n} in[koff(o) + roff(q) + i]
//   * inner_group_kernel: G lanes per output (G = 1..32 from the row length, so that each lane issues
//     16-byte loads), a lane-group shuffle tree; for many short segments. inner_row_kernel: the same
//     for single ragged rows of up to ReducePolicy::row_batch vectors per lane, loaded in one batch.
//     inner_thread_kernel: single rows of at most ReducePolicy::thread_row_vecs vectors, the lane group's order
//     computed by one thread. (These three are in inner_lanes.cuh; the constants and folds that every
//     kernel here uses in kernel_folds.cuh.)
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

#include "tally/reduce/detail/launch.cuh"
#include "plan.hpp"
#include "tally/common/cuda_check.cuh"
#include "tally/reduce/device/gang.cuh"
#include "tally/reduce/device/thread.cuh"
#include "tally/reduce/device/vector.cuh"
#include "tally/reduce/device/worker.cuh"
#include "inner_lanes.cuh"
#include "kernel_folds.cuh"

namespace tally::reduce::detail::cuda {

/// Nothing reduced (every reduced axis has extent 1) and the output is the contiguous input: a
/// converting copy with vector loads, each element still joined with the identity so that a
/// one-element reduction means the same as on every other path (LogicalAnd/Or give 0 or 1).
template <class Op, class T, class Acc, int V>
__global__ void __launch_bounds__(ReducePolicy::block)
    copy_kernel(const T* __restrict__ in, Acc* __restrict__ out, std::int64_t n) {
  enter_after_predecessor();
  for (std::int64_t i = device::global_thread_id() * V; i < n; i += device::grid_stride() * V) {
    const auto v = device::load_vec<V>(in + i);
    device::Vec<Acc, V> w;
#pragma unroll
    for (int k = 0; k < V; ++k)
      w.v[k] = op_finish<Op>(Op::template combine<Acc>(Op::template identity<Acc>(), static_cast<Acc>(v.v[k])), 1);
    *reinterpret_cast<device::Vec<Acc, V>*>(out + i) = w;  // the caller checked the alignment
  }
}

// ---------------------------------------------------------------------------------------------
// one contiguous run to one value: the full reduction of a contiguous array
// ---------------------------------------------------------------------------------------------
/// The block-per-chunk kernel below does this too, but its 64-bit chunk arithmetic before the first
/// load and its second fold of the partials after the ticket are a large part of a short array's
/// time. Here: 32-bit indices (n < 2^31), a grid-stride loop whose
/// loads issue at once, and the library's own gang_reduce.
template <class Op, class T, class Acc, int V>
__global__ void __launch_bounds__(ReducePolicy::block, ReducePolicy::min_blocks_sm)
    flat_kernel(const T* __restrict__ in, std::uint32_t n, Acc* __restrict__ out, Acc* __restrict__ partials,
                unsigned int* __restrict__ ticket) {
  enter_after_predecessor();
  __shared__ device::GangStorage<Acc> tmp;
  const std::uint32_t step = gridDim.x * std::uint32_t{ReducePolicy::block} * V;
  const Acc acc = fold_row<Op, Acc, V>(Op::template identity<Acc>(), in,
                                       (blockIdx.x * ReducePolicy::block + threadIdx.x) * V, n, step);
  Acc r;
  if (device::gang_reduce<Op>(acc, partials, ticket, r, tmp) && threadIdx.x == 0) *out = op_finish<Op>(r, n);
}

// ---------------------------------------------------------------------------------------------
// inner, a block per (output, chunk)
// ---------------------------------------------------------------------------------------------
struct InnerBlockArgs {
  Plan p;
  int X = ReducePolicy::block;  ///< lanes along a row (power of two); ReducePolicy::block / X rows at a time
  std::int64_t Sq = 1;          ///< row chunks per output
  std::int64_t qchunk = 1;      ///< rows per row chunk
  std::int64_t Si = 1;          ///< column chunks per row (only with X == ReducePolicy::block)
  std::int64_t ichunk = 0;      ///< elements per column chunk (a multiple of ReducePolicy::block * V)
};

template <class Op, class T, class Acc, int V>
__global__ void __launch_bounds__(ReducePolicy::block, ReducePolicy::min_blocks_sm)
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
      // Long rows (X == ReducePolicy::block): each row chunk's column range [c0, c1), ReducePolicy::unroll vector loads
      // in flight per thread.
      const std::int64_t c0 = (s % a.Si) * a.ichunk, c1 = min(p.n, c0 + a.ichunk);
      constexpr std::int64_t step = std::int64_t{ReducePolicy::block} * V;
      for (std::int64_t q = q0; q < q1; ++q)
        acc = fold_row<Op, Acc, V>(acc, base + row_offset(p, q), c0 + std::int64_t{threadIdx.x} * V, c1, step);
    } else {
      // Rows of at most the block's vectors: X lanes along a row, each at most one vector of it, Y
      // rows at a time; UQ rows' loads in flight per thread (in row order, as folded).
      const int x = static_cast<int>(threadIdx.x) & (a.X - 1);
      const int y = static_cast<int>(threadIdx.x) / a.X, Y = ReducePolicy::block / a.X;
      constexpr int UQ = sizeof(T) * V >= 16 ? 4 : 8;
      if (std::int64_t{x} * V < p.n) {
        for (std::int64_t q = q0 + y; q < q1; q += std::int64_t{UQ} * Y) {
          device::Vec<T, V> v[UQ];
#pragma unroll
          for (int u = 0; u < UQ; ++u)
            if (q + std::int64_t{u} * Y < q1)
              v[u] = device::load_vec<V>(base + row_offset(p, q + std::int64_t{u} * Y) + std::int64_t{x} * V);
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
  int X = 32;              ///< threads along the columns (power of two); Y = ReducePolicy::block / X along the rows
  std::int64_t tiles = 1;  ///< column tiles of X * V columns per b
  std::int64_t S = 1;      ///< row splits per tile
  std::int64_t chunk = 0;  ///< rows per split
};

template <class Op, class T, class Acc, int V>
__global__ void __launch_bounds__(ReducePolicy::block, ReducePolicy::min_blocks_sm)
    outer_kernel(OuterArgs a, const T* __restrict__ in, Acc* __restrict__ out, Acc* __restrict__ partials,
                 unsigned int* __restrict__ tickets) {
  enter_after_predecessor();
  __shared__ Acc smem[ReducePolicy::block * V];
  __shared__ bool last;
  const Plan& p = a.p;
  const int tid = static_cast<int>(threadIdx.x);
  const int X = a.X, Y = ReducePolicy::block / X, TW = X * V;
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
        for (int k = 0; k < V; ++k)
          acc[k] = Op::template combine<Acc>(acc[k], __shfl_xor_sync(0xffffffffu, acc[k], off));
      }
      R = ReducePolicy::block / device::warp_size;
      if (lane < X) {
#pragma unroll
        for (int k = 0; k < V; ++k) smem[warp * TW + x * V + k] = acc[k];
      }
    } else {
#pragma unroll
      for (int k = 0; k < V; ++k) smem[y * TW + x * V + k] = acc[k];
    }
    __syncthreads();
    for (int t = tid; t < TW; t += ReducePolicy::block) {
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
        const int P = TW >= ReducePolicy::block ? 1 : ReducePolicy::block / TW;
        __syncthreads();  // smem is reused
        for (int t0 = 0; t0 < TW; t0 += ReducePolicy::block) {
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
  for (std::int64_t i = device::global_thread_id(); i < n; i += device::grid_stride())
    out[i] = op_finish<Op>(Op::template identity<Acc>(), 0);
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
inline bool aligned_to(const void* ptr, std::size_t bytes) {
  return reinterpret_cast<std::uintptr_t>(ptr) % bytes == 0;
}

/// Blocks that fill the device once (every block resident).
inline std::int64_t fill_blocks(const Tuning& t) {
  return std::int64_t{std::max(t.sm_count, 1)} * std::min(std::max(t.blocks_per_sm, 1), ReducePolicy::min_blocks_sm);
}

template <class Op, class T, class Acc, int V>
void launch_inner(const Plan& p, const T* in, Acc* d_out, Workspace& ws, stream_t stream) {
  const Tuning& tune = ws.tuning();
  const std::int64_t target = fill_blocks(tune);
  const std::int64_t per = p.rows * p.n;
  if (p.n_out == 1 && p.rows == 1 && p.n < (std::int64_t{1} << 31)) {
    // One contiguous run: ReducePolicy::unroll vectors per thread in one pass where the run is short (one block
    // up to ReducePolicy::block * V * ReducePolicy::unroll elements: no ticket), a wave of ReducePolicy::flat_blocks_sm
    // blocks per SM otherwise.
    const std::int64_t wave = std::int64_t{std::max(tune.sm_count, 1)} * ReducePolicy::flat_blocks_sm;
    const std::int64_t grid =
        std::clamp<std::int64_t>(ceil_div(p.n, std::int64_t{ReducePolicy::block} * V * ReducePolicy::unroll), 1, wave);
    ws.reserve(static_cast<std::size_t>(grid) * sizeof(Acc), 1, stream);
    launch(flat_kernel<Op, T, Acc, V>, grid, ReducePolicy::block, tune, stream, in, static_cast<std::uint32_t>(p.n),
           d_out, static_cast<Acc*>(ws.scratch()), ws.ticket_array());
    return;
  }
  const int G = pow2_at_least(ceil_div(p.n, V), device::warp_size);
  // Enough independent outputs to keep the lanes busy with G lanes each, or segments so short
  // that a block per output would idle: lane groups.
  if (p.n_out * G >= target * ReducePolicy::block || per <= std::int64_t{G} * V * 8 ||
      (per < ReducePolicy::min_chunk && p.n_out * G >= ReducePolicy::block * 4)) {
    const std::int64_t grid = std::clamp<std::int64_t>(ceil_div(p.n_out * G, ReducePolicy::block * 2), 1, target * 16);
    const std::int64_t lane_vecs = ceil_div(p.n, std::int64_t{G} * V);  // vectors per lane and row
    if (p.rows == 1 && G <= ReducePolicy::thread_row_vecs) {
      const std::int64_t tgrid = std::clamp<std::int64_t>(ceil_div(p.n_out, ReducePolicy::block), 1, target * 16);
      if (G == 1) launch(inner_thread_kernel<Op, T, Acc, V, 1>, tgrid, ReducePolicy::block, tune, stream, p, in, d_out);
      else if (G == 2)
        launch(inner_thread_kernel<Op, T, Acc, V, 2>, tgrid, ReducePolicy::block, tune, stream, p, in, d_out);
      else
        launch(inner_thread_kernel<Op, T, Acc, V, ReducePolicy::thread_row_vecs>, tgrid, ReducePolicy::block, tune,
               stream, p, in, d_out);
    } else if (p.rows == 1 && lane_vecs > 1 && lane_vecs <= ReducePolicy::row_batch &&
               p.n % (std::int64_t{G} * V * ReducePolicy::unroll) != 0)
      launch(inner_row_kernel<Op, T, Acc, V>, grid, ReducePolicy::block, tune, stream, p, G, in, d_out);
    else launch(inner_group_kernel<Op, T, Acc, V>, grid, ReducePolicy::block, tune, stream, p, G, in, d_out);
    return;
  }
  // A block per (output, chunk). With fewer outputs than resident blocks, split each output into at
  // most target / n_out chunks (rounded down: one wave, no tail of a second one).
  InnerBlockArgs a{p};
  const std::int64_t want = std::max<std::int64_t>(1, target / p.n_out);
  if (p.n >= std::int64_t{ReducePolicy::block} * V) {
    a.X = ReducePolicy::block;
    a.Sq = std::min(p.rows, want);
    // Chunks of at least one 16-byte load per thread: small inputs spread over many blocks (latency).
    a.Si = std::clamp<std::int64_t>(want / a.Sq, 1,
                                    std::max<std::int64_t>(1, p.n / (std::int64_t{ReducePolicy::block} * V)));
  } else {
    a.X = pow2_at_least(ceil_div(p.n, V), ReducePolicy::block);
    const std::int64_t min_rows = std::max<std::int64_t>(1, ReducePolicy::min_chunk / std::max<std::int64_t>(p.n, 1));
    a.Sq = std::clamp<std::int64_t>(want, 1, std::max<std::int64_t>(1, p.rows / min_rows));
  }
  a.qchunk = ceil_div(p.rows, a.Sq);
  a.Sq = ceil_div(p.rows, a.qchunk);
  a.ichunk = ceil_div(ceil_div(p.n, a.Si), std::int64_t{ReducePolicy::block} * V) * ReducePolicy::block * V;
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
  launch(inner_block_kernel<Op, T, Acc, V>, grid, ReducePolicy::block, tune, stream, a, in, d_out, partials, tickets);
}

template <class Op, class T, class Acc, int V>
void launch_outer(const Plan& p, const T* in, Acc* d_out, Workspace& ws, stream_t stream) {
  const Tuning& tune = ws.tuning();
  const std::int64_t target = fill_blocks(tune);
  OuterArgs a{p};
  const std::int64_t cols_v = ceil_div(p.nc, V);
  a.X = pow2_at_least(cols_v, device::warp_size);
  // Few rows: widen the tile so that each thread still folds >= 64 rows (or every row): long items.
  while (a.X < ReducePolicy::block && a.X < cols_v && p.rows < std::int64_t{ReducePolicy::block / a.X} * 64) a.X *= 2;
  const int Y = ReducePolicy::block / a.X;
  a.tiles = ceil_div(cols_v, a.X);
  const std::int64_t base_items = p.nb * a.tiles;
  a.S = 1;
  if (base_items < target) {
    const std::int64_t min_rows =
        std::max<std::int64_t>(std::int64_t{Y} * 8, ReducePolicy::min_chunk / (std::int64_t{a.X} * V));
    a.S = std::clamp<std::int64_t>(target / base_items, 1, std::max<std::int64_t>(1, p.rows / min_rows));  // one wave
  }
  a.chunk = ceil_div(p.rows, a.S);
  a.S = ceil_div(p.rows, a.chunk);
  Acc* partials = nullptr;
  unsigned int* tickets = nullptr;
  if (a.S > 1) {
    const std::int64_t tw = std::int64_t{a.X} * V;
    ws.reserve(static_cast<std::size_t>(base_items * a.S * tw) * sizeof(Acc), static_cast<std::size_t>(base_items),
               stream);
    partials = static_cast<Acc*>(ws.scratch());
    tickets = ws.ticket_array();
  }
  const std::int64_t grid = std::clamp<std::int64_t>(base_items * a.S, 1, target * 16);
  launch(outer_kernel<Op, T, Acc, V>, grid, ReducePolicy::block, tune, stream, a, in, d_out, partials, tickets);
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
    launch(fill_kernel<Op, Acc>, std::clamp<std::int64_t>(ceil_div(p.n_out, ReducePolicy::block), 1, 4096),
           ReducePolicy::block, ws.tuning(), stream, d_out, p.n_out);
    return;
  }
  const T* in = static_cast<const T*>(prob.data);
  constexpr int V = device::vec16<T>;
  constexpr int V2 = V / 2 > 1 ? V / 2 : 1;  // 8-byte loads of 4-byte types (rows of 2, 6, ...)
  if (p.kind == Plan::Kind::inner && p.rows * p.n == 1 && p.k_ext2 >= p.n_out && p.k_s2 == 1) {
    // Every reduced axis has extent 1 and the output is the contiguous input: a converting copy.
    const std::int64_t grid = std::clamp<std::int64_t>(ceil_div(p.n_out, std::int64_t{ReducePolicy::block} * V * 4), 1,
                                                       fill_blocks(ws.tuning()) * 8);
    if (aligned_to(in, sizeof(T) * V) && aligned_to(d_out, sizeof(Acc) * V) && p.n_out % V == 0)
      launch(copy_kernel<Op, T, Acc, V>, grid, ReducePolicy::block, ws.tuning(), stream, in, d_out, p.n_out);
    else launch(copy_kernel<Op, T, Acc, 1>, grid, ReducePolicy::block, ws.tuning(), stream, in, d_out, p.n_out);
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
