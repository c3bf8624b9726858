#pragma once
// A progress line on a terminal, refreshed a few times per second, silent when stderr is not a
// terminal or when quiet. update() is cheap enough to call every iteration.

#include <string>

#include "tally/common/timing.hpp"

namespace tally {

class Progress {
 public:
  explicit Progress(bool quiet, double interval_s = 0.25);
  ~Progress();                     ///< ends the line
  [[nodiscard]] bool due() const;  ///< whether update() would print now (to skip formatting)
  void update(const std::string& line);
  void finish();

 private:
  bool enabled_;
  double interval_s_;
  double last_ = -1.0;
  HostTimer clock_;
  bool printed_ = false;
};

}  // namespace tally
