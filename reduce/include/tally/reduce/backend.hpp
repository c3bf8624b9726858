#pragma once
// Where a reduction runs. The driver code of an app names a Backend once; nothing else in it
// needs to know which one it got.

#include <string>
#include <string_view>

namespace tally::reduce {

enum class Backend { cpu, cuda };

[[nodiscard]] std::string to_string(Backend b);

/// True when this build has the CUDA backend (TALLY_CUDA found a toolkit). The usable devices:
/// tally::cuda_device_count() (tally/common/device_info.hpp).
[[nodiscard]] bool cuda_built();

/// "cpu", "cuda" or "auto". "auto" picks cuda when a device is usable and cpu otherwise
/// (*fell_back is set when it had to fall back). "cuda" without a usable device, or an unknown
/// name, throws std::invalid_argument with a message that says why.
[[nodiscard]] Backend resolve_backend(std::string_view request, bool* fell_back = nullptr);

}  // namespace tally::reduce
