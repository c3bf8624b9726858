#pragma once
// Gang level: a reduction across the blocks of a grid in ONE launch. Each block publishes its
// partial, takes a ticket, and the last block to arrive combines the partials in block order, so
// the result is deterministic for a given launch shape. No floating-point atomics touch a result.
//
// Scalar form, fused into an app kernel (e.g. a stencil sweep that also wants max |u_new - u|):
//
//   __global__ void sweep(..., double* d_partials, unsigned* d_ticket, double* d_residual) {
//     __shared__ tally::reduce::device::GangStorage<double> tmp;
//     double local = Max::identity<double>();
//     for (auto i : grid_stride_range(n)) { ...update...; local = Max::combine(local, fabs(diff)); }
//     double r;
//     if (tally::reduce::device::gang_reduce<Max>(local, d_partials, d_ticket, r, tmp))
//       if (threadIdx.x == 0) *d_residual = r;   // only in the last block
//   }
//
// d_partials holds one value per block; d_ticket is one unsigned, zero before the first launch
// (cudaMemset once): the last block resets it, so it can be reused launch after launch on one
// stream (not by two launches in flight at once).
//
// Segmented, vector-valued form (many outputs, each split over `count` blocks, e.g. a matrix tile
// whose K loop is split across blocks): every block writes its `width` partial values to
// d_partials[index_in_segment * width + e], calls gang_arrive() on the segment's ticket, and the
// block that gets true reads each output e with gang_combine().

#include <cstdint>

#include "tally/reduce/device/index.cuh"
#include "tally/reduce/device/worker.cuh"
#include "tally/reduce/ops.hpp"

namespace tally::reduce::device {

template <class T>
struct GangStorage {
  BlockReduceStorage<T> block;
  bool last;
};

/// Load that bypasses the (non-coherent) L1, for partials written by other blocks of this launch.
template <class T>
__device__ __forceinline__ T load_coherent(const T* p) {
  return *static_cast<const volatile T*>(p);
}

/// Call from every thread of the block after the block's partials are written. Returns true (in
/// every thread) in the last of `count` blocks to arrive at `d_ticket`, and re-arms the ticket.
__device__ __forceinline__ bool gang_arrive(unsigned int* d_ticket, unsigned int count, bool& last_flag) {
  __threadfence();  // each writer makes its partials visible device-wide before the ticket is taken
  __syncthreads();
  if (block_thread_rank() == 0) {
    const unsigned int ticket = atomicAdd(d_ticket, 1u);
    last_flag = (ticket == count - 1);
    if (last_flag) *d_ticket = 0;  // every block of the segment has arrived: re-arm for the next launch
  }
  __syncthreads();
  const bool last = last_flag;
  if (last) __threadfence();
  return last;
}

/// Element e of a segment's partials, combined over its `count` blocks in block order.
template <class Op, class T>
__device__ __forceinline__ T gang_combine(const T* d_partials, std::int64_t count, std::int64_t width, std::int64_t e) {
  T acc = Op::template identity<T>();
  for (std::int64_t b = 0; b < count; ++b) acc = Op::template combine<T>(acc, load_coherent(d_partials + b * width + e));
  return acc;
}

/// Scalar grid reduction. `x` is each thread's value (all threads call). Returns true in the last
/// block, whose thread 0 then holds the grid's result in `result`. `nblocks`/`block` default to the
/// whole grid; pass them to reduce over a subset of blocks (a segment) with its own partials and ticket.
template <class Op, class T>
__device__ __forceinline__ bool gang_reduce(T x, T* d_partials, unsigned int* d_ticket, T& result, GangStorage<T>& tmp,
                                            std::int64_t nblocks = grid_blocks(), std::int64_t block = block_rank()) {
  const T block_value = block_reduce<Op>(x, tmp.block);
  if (block_thread_rank() == 0) d_partials[block] = block_value;
  if (!gang_arrive(d_ticket, static_cast<unsigned int>(nblocks), tmp.last)) return false;
  // Each thread folds a fixed strided subset of the partials, then a fixed tree: deterministic.
  T acc = Op::template identity<T>();
  for (std::int64_t b = block_thread_rank(); b < nblocks; b += block_size())
    acc = Op::template combine<T>(acc, load_coherent(d_partials + b));
  acc = block_reduce<Op>(acc, tmp.block);
  if (block_thread_rank() == 0) result = acc;
  return true;
}

}  // namespace tally::reduce::device
