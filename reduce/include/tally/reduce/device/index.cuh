#pragma once
// 64-bit thread indices and grid-stride helpers: inputs of more than 2^31 elements must work.

#include <cstdint>

namespace tally::reduce::device {

/// Linear index of this thread in its block (any block shape, x fastest).
__device__ __forceinline__ unsigned block_thread_rank() {
  return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}
__device__ __forceinline__ unsigned block_size() { return blockDim.x * blockDim.y * blockDim.z; }

/// Linear index of this block in the grid (x fastest), 64-bit.
__device__ __forceinline__ std::int64_t block_rank() {
  return static_cast<std::int64_t>(blockIdx.x) +
         static_cast<std::int64_t>(gridDim.x) * (blockIdx.y + static_cast<std::int64_t>(gridDim.y) * blockIdx.z);
}
__device__ __forceinline__ std::int64_t grid_blocks() {
  return static_cast<std::int64_t>(gridDim.x) * gridDim.y * gridDim.z;
}

/// Global 1-D thread index and thread count of a 1-D launch, 64-bit.
__device__ __forceinline__ std::int64_t global_thread_id() {
  return static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ std::int64_t grid_stride() { return static_cast<std::int64_t>(gridDim.x) * blockDim.x; }

/// for (auto i : grid_stride_range(n)) — a 1-D grid-stride loop with 64-bit indices.
class grid_stride_range {
 public:
  __device__ explicit grid_stride_range(std::int64_t n) : begin_(global_thread_id()), step_(grid_stride()), n_(n) {}
  struct iterator {
    std::int64_t i, step;
    __device__ std::int64_t operator*() const { return i; }
    __device__ iterator& operator++() {
      i += step;
      return *this;
    }
    __device__ bool operator!=(const iterator& end) const { return i < end.i; }
  };
  __device__ iterator begin() const { return {begin_, step_}; }
  __device__ iterator end() const { return {n_, 0}; }

 private:
  std::int64_t begin_, step_, n_;
};

}  // namespace tally::reduce::device
