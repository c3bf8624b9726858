#include "tally/common/provenance.hpp"

#include <unistd.h>

#include <array>
#include <chrono>
#include <ctime>

#include "tally_version.hpp"

namespace tally {

Provenance collect_provenance(const std::string& command_line, const std::optional<DeviceInfo>& device) {
  Provenance p;
  p.project_version = TALLY_VERSION_STRING;
  p.git_revision = TALLY_GIT_REVISION;
  p.compiler = TALLY_COMPILER;
  p.build_type = TALLY_BUILD_TYPE;
  p.cuda_runtime = device ? cuda_version_string(device->runtime_version) : "none";
  p.cuda_driver = device ? cuda_version_string(device->driver_version) : "none";
  p.device = device ? device->summary() : "cpu";
  std::array<char, 256> host{};
  if (gethostname(host.data(), host.size() - 1) == 0) p.host = host.data();
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  std::array<char, 32> date{};
  std::strftime(date.data(), date.size(), "%Y-%m-%dT%H:%M:%SZ", &tm);
  p.date_utc = date.data();
  p.command_line = command_line;
  return p;
}

void write_provenance(h5::Location& where, const Provenance& p, const std::optional<DeviceInfo>& device) {
  auto g = where.group("provenance");
  g.attr("project_version", p.project_version);
  g.attr("git_revision", p.git_revision);
  g.attr("compiler", p.compiler);
  g.attr("build_type", p.build_type);
  g.attr("cuda_runtime", p.cuda_runtime);
  g.attr("cuda_driver", p.cuda_driver);
  g.attr("device", p.device);
  g.attr("host", p.host);
  g.attr("date_utc", p.date_utc);
  g.attr("command_line", p.command_line);
  if (device) {
    auto d = where.group("device");
    d.attr("name", device->name);
    d.attr("compute_capability", std::to_string(device->cc_major) + "." + std::to_string(device->cc_minor));
    d.attr("sm_count", device->sm_count);
    d.attr("global_mem_bytes", device->global_mem_bytes);
    d.attr("l2_bytes", device->l2_bytes);
    d.attr("sm_clock_khz", device->sm_clock_khz);
    d.attr("mem_clock_khz", device->mem_clock_khz);
    d.attr("mem_bus_bits", device->mem_bus_bits);
    d.attr("driver_version", device->driver_version);
    d.attr("runtime_version", device->runtime_version);
  }
}

}  // namespace tally
