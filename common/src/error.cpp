#include "tally/common/error.hpp"

#include <cstdio>
#include <cstdlib>

namespace tally {

void fatal(std::string_view msg) {
  std::fprintf(stderr, "tally: fatal: %.*s\n", static_cast<int>(msg.size()), msg.data());
  std::fflush(stderr);
  std::abort();
}

}  // namespace tally
