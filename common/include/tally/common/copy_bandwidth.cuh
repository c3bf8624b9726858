#pragma once
// The memory ceiling every benchmark reports against: the device-to-device copy bandwidth, measured
// in the same run, counting bytes read + bytes written.

#include <cuda_runtime_api.h>

#include <cstddef>

namespace tally {

/// GB/s of cudaMemcpyAsync(d_dst, d_src, bytes): 2 * bytes over the median of `repeats` CUDA-event
/// timed copies after two warm-ups. Synchronises `stream`.
double copy_bandwidth_gbs(void* d_dst, const void* d_src, std::size_t bytes, int repeats,
                          cudaStream_t stream = nullptr);

/// The same on two buffers of its own, `bytes` each, the source filled first (never time on zeros).
double copy_bandwidth_gbs(std::size_t bytes, int repeats, cudaStream_t stream = nullptr);

}  // namespace tally
