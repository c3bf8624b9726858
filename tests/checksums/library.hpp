#pragma once
#include <string>
#include <vector>

#include "memory.hpp"

namespace checksums {

/// One line per library case: "name hash..." (reduce/ lines: one hash per level set, kLevelNames).
std::vector<std::string> library_checksums(Backend backend);
extern const char* const kLevelNames;

}  // namespace checksums
