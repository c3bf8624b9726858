#pragma once
// What a CUDA device is: written into every output file and printed by the benchmarks.

#include <cstdint>
#include <string>

namespace tally {

struct DeviceInfo {
  int index = -1;
  std::string name;
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  std::int64_t global_mem_bytes = 0;
  std::int64_t l2_bytes = 0;
  std::int64_t shared_mem_per_sm = 0;
  int sm_clock_khz = 0;
  int mem_clock_khz = 0;
  int mem_bus_bits = 0;
  int driver_version = 0;  ///< e.g. 13000 for 13.0
  int runtime_version = 0;
  /// 2 * memory clock * bus width: the datasheet-style peak, for reference only (measure the real one).
  [[nodiscard]] double peak_bandwidth_gbs() const { return 2.0 * mem_clock_khz * 1e3 * (mem_bus_bits / 8.0) / 1e9; }
  [[nodiscard]] std::string summary() const;  ///< one line
};

/// Number of usable CUDA devices (0 without CUDA in the build, without a driver or without a GPU).
[[nodiscard]] int cuda_device_count();
/// Queries device `index`. Throws tally::Error when the build has no CUDA or the device is absent.
DeviceInfo query_device(int index);
/// "13.0" from 13000.
std::string cuda_version_string(int v);

}  // namespace tally
