#include "tally/common/copy_bandwidth.cuh"

#include <algorithm>
#include <vector>

#include "tally/common/device_buffer.cuh"
#include "tally/common/device_timer.cuh"
#include "tally/common/timing.hpp"

namespace tally {

double copy_bandwidth_gbs(void* d_dst, const void* d_src, std::size_t bytes, int repeats, cudaStream_t stream) {
  constexpr int warmups = 2;
  EventTimer timer;
  std::vector<double> seconds;
  for (int rep = 0; rep < warmups + std::max(repeats, 1); ++rep) {
    timer.start(stream);
    TALLY_CUDA_TRY(cudaMemcpyAsync(d_dst, d_src, bytes, cudaMemcpyDeviceToDevice, stream));
    timer.stop(stream);
    const double s = timer.elapsed_s();
    if (rep >= warmups) seconds.push_back(s);
  }
  return 2.0 * static_cast<double>(bytes) / median(std::move(seconds)) * 1e-9;
}

double copy_bandwidth_gbs(std::size_t bytes, int repeats, cudaStream_t stream) {
  DeviceBuffer<unsigned char> src(bytes), dst(bytes);
  src.fill_bytes(0x5A, stream);
  return copy_bandwidth_gbs(dst.data(), src.data(), bytes, repeats, stream);
}

}  // namespace tally
