#include "memory.hpp"

#include <cstdlib>
#include <cstring>
#include <stdexcept>

#ifdef TALLY_CHECKSUMS_CUDA
#include <cuda_runtime_api.h>
#endif

namespace checksums {

namespace {
#ifdef TALLY_CHECKSUMS_CUDA
void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}
#else
[[noreturn]] void no_cuda() { throw std::runtime_error("this build has no CUDA backend"); }
#endif
}  // namespace

void* allocate(Backend b, std::size_t bytes) {
  if (b == Backend::cpu) {
    void* p = std::malloc(bytes == 0 ? 1 : bytes);
    if (p == nullptr) throw std::bad_alloc();
    return p;
  }
#ifdef TALLY_CHECKSUMS_CUDA
  void* p = nullptr;
  check(cudaMalloc(&p, bytes == 0 ? 1 : bytes), "cudaMalloc");
  return p;
#else
  no_cuda();
#endif
}

void release(Backend b, void* p) {
  if (b == Backend::cpu) {
    std::free(p);
    return;
  }
#ifdef TALLY_CHECKSUMS_CUDA
  cudaFree(p);
#endif
}

namespace {
void copy(Backend b, void* dst, const void* src, std::size_t bytes, bool to_device) {
  if (bytes == 0) return;
  if (b == Backend::cpu) {
    std::memcpy(dst, src, bytes);
    return;
  }
#ifdef TALLY_CHECKSUMS_CUDA
  check(cudaMemcpy(dst, src, bytes, to_device ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost),
        to_device ? "cudaMemcpy to the device" : "cudaMemcpy to the host");
#else
  (void)to_device;
  no_cuda();
#endif
}
}  // namespace

void to_backend(Backend b, void* dst, const void* host, std::size_t bytes) { copy(b, dst, host, bytes, true); }
void to_host(Backend b, void* host, const void* src, std::size_t bytes) { copy(b, host, src, bytes, false); }

void finish(Backend b) {
  if (b == Backend::cpu) return;
#ifdef TALLY_CHECKSUMS_CUDA
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  check(cudaGetLastError(), "a kernel");
#endif
}

std::string device_key() {
#ifdef TALLY_CHECKSUMS_CUDA
  int dev = 0, major = 0, minor = 0, sms = 0;
  check(cudaGetDevice(&dev), "cudaGetDevice");
  check(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev), "cudaDeviceGetAttribute");
  check(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev), "cudaDeviceGetAttribute");
  check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev), "cudaDeviceGetAttribute");
  return "sm_" + std::to_string(major) + std::to_string(minor) + ", " + std::to_string(sms) + " SMs";
#else
  return "none";
#endif
}

std::string device_name() {
#ifdef TALLY_CHECKSUMS_CUDA
  int dev = 0;
  cudaDeviceProp p{};
  check(cudaGetDevice(&dev), "cudaGetDevice");
  check(cudaGetDeviceProperties(&p, dev), "cudaGetDeviceProperties");
  return p.name;
#else
  return "none";
#endif
}

}  // namespace checksums
