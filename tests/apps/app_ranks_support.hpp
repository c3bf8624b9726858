#pragma once
// For the tests that start an app under the MPI launcher (mpiexec -n N app ...) and check what it
// did: run a command, capture its output and exit code, and a scratch folder.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "tally_test_mpiexec.hpp"

namespace tally::test {

struct CommandResult {
  int rc = -1;
  std::string output;  ///< stdout and stderr
};

/// Runs `command` through the shell; a command that does not end by itself in `timeout_s` is killed
/// (exit 124): a hang fails the test instead of stalling the suite.
inline CommandResult run_command(const std::string& command, int timeout_s = 60) {
  CommandResult r;
  const std::string full = "timeout -k 5 " + std::to_string(timeout_s) + " " + command + " 2>&1";
  FILE* p = popen(full.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) r.output.append(buf, n);
  const int status = pclose(p);
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

/// `program args` on `ranks` ranks under the launcher; ranks = 0: the plain process, no launcher.
inline std::string on_ranks(int ranks, const std::string& program_and_args) {
  if (ranks == 0) return program_and_args;
  return std::string(TALLY_TEST_MPIEXEC) + " " + std::to_string(ranks) + " " + program_and_args;
}

inline constexpr bool have_mpi = TALLY_TEST_HAS_MPI != 0;

/// Occurrences of `what` in `text`.
inline int count_of(const std::string& text, const std::string& what) {
  int n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

struct ScratchDir {
  std::filesystem::path path;
  explicit ScratchDir(const std::string& tag)
      : path(std::filesystem::temp_directory_path() / ("tally-" + tag + "-" + std::to_string(getpid()))) {
    std::filesystem::create_directories(path);
  }
  ~ScratchDir() { std::filesystem::remove_all(path); }
  [[nodiscard]] std::string file(const std::string& name) const { return (path / name).string(); }
  /// Whether any file of the folder starts with `prefix` (a finished file or a temporary one).
  [[nodiscard]] bool any_starting_with(const std::string& prefix) const {
    for (const auto& e : std::filesystem::directory_iterator(path))
      if (e.path().filename().string().rfind(prefix, 0) == 0) return true;
    return false;
  }
};

}  // namespace tally::test
