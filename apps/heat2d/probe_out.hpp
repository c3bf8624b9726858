#pragma once
// --out checked before any work, in both modes: a bad path fails with exit 2 before the run.

#include <filesystem>
#include <string>
#include <system_error>

#include "tally/common/error.hpp"
#include "tally/common/h5.hpp"

namespace tally::heat2d {

/// Creates the folder of `out` and an empty temporary file there, which is dropped again (the
/// result file is created only once the run is done). Throws tally::InputError naming --out.
inline void probe_out(const std::string& out) {
  const std::filesystem::path path(out);
  if (path.has_parent_path()) {
    std::error_code ec;
    std::filesystem::create_directories(path.parent_path(), ec);
    if (ec) throw InputError("--out " + out + ": cannot create its folder (" + ec.message() + ")");
  }
  (void)h5::File::create(out);
}

}  // namespace tally::heat2d
