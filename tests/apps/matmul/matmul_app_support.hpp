#pragma once
// For the tests of the matmul executable: run it with arguments, capture its exit code and output.
#include <string>

#include "app_ranks_support.hpp"

namespace tally::test {

/// `matmul args` (shell words) as a plain process: its exit code and its stdout and stderr.
inline CommandResult run_matmul(const std::string& args) { return run_command(std::string(MATMUL_EXE) + " " + args); }

}  // namespace tally::test
