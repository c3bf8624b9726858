#include "tally/common/progress.hpp"

#include <unistd.h>

#include <cstdio>

namespace tally {

Progress::Progress(bool quiet, double interval_s)
    : enabled_(!quiet && isatty(STDERR_FILENO) != 0), interval_s_(interval_s) {}

Progress::~Progress() { finish(); }

bool Progress::due() const { return enabled_ && (last_ < 0 || clock_.seconds() - last_ >= interval_s_); }

void Progress::update(const std::string& line) {
  if (!due()) return;
  last_ = clock_.seconds();
  std::fprintf(stderr, "\r\033[K%s", line.c_str());
  std::fflush(stderr);
  printed_ = true;
}

void Progress::finish() {
  if (printed_) std::fprintf(stderr, "\r\033[K");
  printed_ = false;
}

}  // namespace tally
