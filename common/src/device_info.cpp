#include "tally/common/device_info.hpp"

#include <sstream>

#include "tally/common/error.hpp"

namespace tally {

std::string cuda_version_string(int v) { return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10); }

std::string DeviceInfo::summary() const {
  std::ostringstream s;
  s << name << " (sm_" << cc_major << cc_minor << ", " << sm_count << " SMs, " << (global_mem_bytes >> 20)
    << " MiB, L2 " << (l2_bytes >> 20) << " MiB, driver " << cuda_version_string(driver_version) << ", runtime "
    << cuda_version_string(runtime_version) << ")";
  return s.str();
}

#ifndef TALLY_HAS_CUDA
int cuda_device_count() { return 0; }
DeviceInfo query_device(int) { throw Error("this build of tally has no CUDA backend"); }
#endif

}  // namespace tally
