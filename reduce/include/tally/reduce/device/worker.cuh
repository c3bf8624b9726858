#pragma once
// Worker level: reductions across the warps of a block. The caller owns the shared memory
// (CUB style), so a kernel can place, reuse or union it with its own.
//
//   __shared__ tally::reduce::device::BlockReduceStorage<double> tmp;
//   double r = block_reduce<Max>(x, tmp);   // any block shape and size (1..1024), result in thread 0
//
// Each warp reduces with shuffles (partial last warps included), warp 0 combines the warps' values
// in warp order. Every thread of the block must call it (it contains __syncthreads).

#include "tally/reduce/device/index.cuh"
#include "tally/reduce/device/vector.cuh"
#include "tally/reduce/ops.hpp"

namespace tally::reduce::device {

template <class T>
struct BlockReduceStorage {
  T warp_values[warp_size];
};

/// Reduces x over every thread of the block; the result is valid in thread 0 (linear rank 0).
/// The storage may be reused as soon as the call returns.
template <class Op, class T>
__device__ __forceinline__ T block_reduce(T x, BlockReduceStorage<T>& tmp) {
  const unsigned rank = block_thread_rank();
  const unsigned nthreads = block_size();
  const unsigned warp = rank / warp_size, lane = rank % warp_size;
  const unsigned nwarps = (nthreads + warp_size - 1) / warp_size;
  x = warp_reduce_partial<Op>(x, nthreads - warp * warp_size);
  if (nwarps == 1) return x;  // a single warp: no shared memory, no barrier
  if (lane == 0) tmp.warp_values[warp] = x;
  __syncthreads();
  T r = detail::op_identity<Op, T>();
  if (warp == 0) r = warp_reduce<Op>(lane < nwarps ? tmp.warp_values[lane] : detail::op_identity<Op, T>());
  __syncthreads();  // the storage is free again
  return r;
}

/// Reduces over threadIdx.y for each threadIdx.x of a 2-D block (the OpenACC worker level with the
/// vector lanes kept). `smem` holds blockDim.x * blockDim.y values. The result is valid in the
/// threads with threadIdx.y == 0; workers are combined in order y = 0, 1, 2, ...
template <class Op, class T>
__device__ __forceinline__ T worker_reduce(T x, T* smem) {
  if (blockDim.y == 1) return x;
  smem[threadIdx.y * blockDim.x + threadIdx.x] = x;
  __syncthreads();
  if (threadIdx.y == 0) {
    for (unsigned y = 1; y < blockDim.y; ++y) x = detail::op_combine<Op, T>(x, smem[y * blockDim.x + threadIdx.x]);
  }
  __syncthreads();
  return x;
}

}  // namespace tally::reduce::device
