#pragma once
// --restart FILE: continue a heat2d output (any status) bit for bit as if the run had never stopped.

#include <cstdint>
#include <string>
#include <vector>

#include "heat2d.hpp"

namespace tally::heat2d {

/// What a restart takes from its file besides the field (read per rank in main.cpp): the sweeps
/// done and the residual history to continue.
struct Restart {
  std::int64_t iterations = 0;
  std::vector<std::int64_t> check_iteration;
  std::vector<double> check_residual;
};

/// Opens `path` and checks that it is a heat2d solve of the same problem as `p` at `precision`
/// (grid, precision, mode, edges and init by value, in transient mode alpha and dt): a mismatch is
/// an InputError naming the option and both values, as is a file that already reaches rule.last.
/// Sets rule.first to the file's sweeps and returns the history to continue, on this run's check
/// schedule: the file's final check is dropped when it was only its --max-iter's last sweep, which
/// an uninterrupted run would not have checked.
Restart read_restart(const std::string& path, const Problem& p, const std::string& precision, StopRule& rule);

}  // namespace tally::heat2d
