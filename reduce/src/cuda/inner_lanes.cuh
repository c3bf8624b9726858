#pragma once
// The inner kernels that give each output G lanes of a warp (G = 1..32) or one thread: many short
// rows (inner_group_kernel), single ragged rows of up to ReducePolicy::row_batch vectors a lane (inner_row_kernel),
// single rows of at most ReducePolicy::thread_row_vecs vectors (inner_thread_kernel). Dispatched by kernels.cuh.

#include <cuda_runtime.h>

#include <cstdint>

#include "kernel_folds.cuh"
#include "tally/reduce/detail/launch.cuh"
#include "tally/reduce/device/worker.cuh"

namespace tally::reduce::detail::cuda {

// ---------------------------------------------------------------------------------------------
// inner, G lanes per output
// ---------------------------------------------------------------------------------------------
/// A thread's place among the grid's groups of G lanes (G a power of two up to a warp: a group never
/// straddles two warps). Loops over outputs step from warp_first, the same in every lane of a warp,
/// so that the shuffles of group_reduce_n see every lane.
struct LaneGroup {
  int lane;                 ///< within the group
  std::int64_t ngroups;     ///< in the grid
  std::int64_t warp_first;  ///< index of the first group of this thread's warp
  std::int64_t rel;         ///< this group's index - warp_first
  __device__ explicit LaneGroup(int G)
      : lane(static_cast<int>(threadIdx.x) & (G - 1)),
        ngroups(static_cast<std::int64_t>(gridDim.x) * ReducePolicy::block / G),
        warp_first((static_cast<std::int64_t>(blockIdx.x) * ReducePolicy::block + threadIdx.x) / G -
                   (static_cast<int>(threadIdx.x) % device::warp_size) / G),
        rel((static_cast<int>(threadIdx.x) % device::warp_size) / G) {}
};

template <class Op, class T, class Acc, int V>
__global__ void __launch_bounds__(ReducePolicy::block, ReducePolicy::min_blocks_sm)
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
          acc[u] = fold_row<Op, Acc, V, true>(acc[u], base + row_offset(p, q), std::int64_t{lane} * V, p.n,
                                              std::int64_t{G} * V);
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

/// One row per output (rows == 1) of at most G <= ReducePolicy::thread_row_vecs vectors, one output per thread:
/// each vector folded alone from the identity, then the G partials joined in the order of
/// group_reduce_n's xor tree (at each level i < w takes i + w, combine(own, other)), i.e. what lane 0
/// of inner_group_kernel's group of G lanes computes, without the shuffles. A warp reads 32 whole
/// rows (64 contiguous bytes a thread for 16 floats) and stores 32 consecutive outputs in one
/// instruction (lane groups store 32 bytes a warp); U outputs a thread in flight, at least 64 bytes.
template <class Op, class T, class Acc, int V, int G>
__global__ void __launch_bounds__(ReducePolicy::block, ReducePolicy::min_blocks_sm)
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
        x[i] = std::int64_t{i} * V < p.n ? device::fold<Op, Acc>(Op::template identity<Acc>(), v[u][i])
                                         : Op::template identity<Acc>();
#pragma unroll
      for (int w = G / 2; w > 0; w /= 2)
#pragma unroll
        for (int i = 0; i < w; ++i) x[i] = detail::op_combine<Op, Acc>(x[i], x[i + w]);
      out[o] = op_finish<Op>(x[0], p.per_output());
    }
  }
}

/// One row per output (rows == 1) of more than one and at most ReducePolicy::row_batch vectors per lane, ragged
/// (fold_row would give some lanes one more round of loads than others, and the warp waits for
/// both): every load of a lane's row in one batch, folded in the same order. A kernel of its own:
/// inside inner_group_kernel the batch's registers would cost every other path occupancy.
template <class Op, class T, class Acc, int V>
__global__ void __launch_bounds__(ReducePolicy::block, ReducePolicy::min_blocks_sm)
    inner_row_kernel(Plan p, int G, const T* __restrict__ in, Acc* __restrict__ out) {
  enter_after_predecessor();
  const LaneGroup g(G);
  const std::int64_t step = std::int64_t{G} * V, left = p.n - std::int64_t{g.lane} * V;
  for (std::int64_t o0 = g.warp_first; o0 < p.n_out; o0 += g.ngroups) {
    const std::int64_t o = o0 + g.rel;
    Acc acc = Op::template identity<Acc>();
    if (o < p.n_out) {
      const T* row = in + out_offset(p, o) + std::int64_t{g.lane} * V;
      device::Vec<T, V> v[ReducePolicy::row_batch];
#pragma unroll
      for (int u = 0; u < ReducePolicy::row_batch; ++u)
        if (u * step < left) v[u] = device::load_vec<V>(row + u * step);
#pragma unroll
      for (int u = 0; u < ReducePolicy::row_batch; ++u)
        if (u * step < left) acc = device::fold<Op, Acc>(acc, v[u]);
    }
    acc = device::group_reduce_n<Op>(acc, G);
    if (g.lane == 0 && o < p.n_out) out[o] = op_finish<Op>(acc, p.per_output());
  }
}

}  // namespace tally::reduce::detail::cuda
