// The CUDA error macros on a real device: failed calls throw with expression, file and line;
// a bad launch configuration is caught at the launch.
#include <cuda_runtime_api.h>

#include <string>

#include "catch.hpp"
#include "tally/common/cuda_check.cuh"
#include "tally/common/device_info.hpp"

void launch_with_too_many_threads();  // cuda_check_kernels.cu
void launch_fine(int* d_out);

TEST_CASE("TALLY_CUDA_TRY throws CudaError with the expression and place", "[cuda]") {
  void* p = nullptr;
  try {
    TALLY_CUDA_TRY(cudaMalloc(&p, std::size_t{1} << 62));  // 4 EiB: cannot succeed
    FAIL("cudaMalloc of 4 EiB succeeded");
  } catch (const tally::CudaError& e) {
    const std::string what = e.what();
    CHECK(what.find("cudaMalloc(&p, std::size_t{1} << 62)") != std::string::npos);
    CHECK(what.find("test_cuda_check.cpp:") != std::string::npos);
    CHECK(e.code() == static_cast<int>(cudaErrorMemoryAllocation));
  }
  CHECK(cudaGetLastError() == cudaSuccess);  // not sticky: the context is still usable
}

TEST_CASE("TALLY_CHECK_LAUNCH reports a bad launch configuration", "[cuda]") {
  CHECK_THROWS_AS(launch_with_too_many_threads(), tally::CudaError);
  int* d = nullptr;
  TALLY_CUDA_TRY(cudaMalloc(reinterpret_cast<void**>(&d), sizeof(int)));
  launch_fine(d);
  int h = 0;
  TALLY_CUDA_TRY(cudaMemcpy(&h, d, sizeof(int), cudaMemcpyDeviceToHost));
  CHECK(h == 42);
  TALLY_CUDA_TRY(cudaFree(d));
}

TEST_CASE("device query describes the device", "[cuda]") {
  const auto d = tally::query_device(0);
  CHECK_FALSE(d.name.empty());
  CHECK(d.sm_count > 0);
  CHECK(d.global_mem_bytes > (std::int64_t{1} << 30));
  CHECK(d.l2_bytes > 0);
  CHECK(d.runtime_version >= 12000);
  CHECK(d.driver_version >= d.runtime_version / 1000 * 1000);
  INFO(d.summary());
  CHECK_THROWS_AS(tally::query_device(1000), tally::Error);
}
