#pragma once
// Where a result came from, written into every output file.

#include <optional>
#include <string>

#include "tally/common/device_info.hpp"
#include "tally/common/h5.hpp"

namespace tally {

struct Provenance {
  std::string project_version, git_revision, compiler, build_type;
  std::string cuda_runtime, cuda_driver;  ///< "none" without CUDA
  std::string device;                     ///< device summary, or "cpu"
  std::string host, date_utc, command_line;
};

/// Collects what is known at run time; `device` when the run used a GPU.
Provenance collect_provenance(const std::string& command_line, const std::optional<DeviceInfo>& device);
/// Writes it as string attributes of group "provenance" (and the device's numbers in group "device").
void write_provenance(h5::Location& where, const Provenance& p, const std::optional<DeviceInfo>& device);

}  // namespace tally
