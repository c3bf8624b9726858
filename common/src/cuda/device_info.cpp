#include "tally/common/device_info.hpp"

#include <cuda_runtime_api.h>

#include <sstream>

#include "tally/common/cuda_check.cuh"

namespace tally {

int cuda_device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();  // no driver / no device: not an error for the caller
    return 0;
  }
  return n;
}

DeviceInfo query_device(int index) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || index < 0 || index >= count) {
    cudaGetLastError();  // clear the non-sticky error of a missing driver or device
    throw Error("no CUDA device " + std::to_string(index) + " (found " + std::to_string(count) + ")");
  }
  cudaDeviceProp p{};
  TALLY_CUDA_TRY(cudaGetDeviceProperties(&p, index));
  DeviceInfo d;
  d.index = index;
  d.name = p.name;
  d.cc_major = p.major;
  d.cc_minor = p.minor;
  d.sm_count = p.multiProcessorCount;
  d.global_mem_bytes = static_cast<std::int64_t>(p.totalGlobalMem);
  d.l2_bytes = p.l2CacheSize;
  d.shared_mem_per_sm = static_cast<std::int64_t>(p.sharedMemPerMultiprocessor);
  d.mem_bus_bits = p.memoryBusWidth;
  TALLY_CUDA_TRY(cudaDeviceGetAttribute(&d.sm_clock_khz, cudaDevAttrClockRate, index));
  TALLY_CUDA_TRY(cudaDeviceGetAttribute(&d.mem_clock_khz, cudaDevAttrMemoryClockRate, index));
  TALLY_CUDA_TRY(cudaDriverGetVersion(&d.driver_version));
  TALLY_CUDA_TRY(cudaRuntimeGetVersion(&d.runtime_version));
  return d;
}

}  // namespace tally
