#pragma once
// The options every app shares, on CLI11 (2.1 to 2.4):
//   --backend auto|cuda|cpu, --device N, --precision float|double, --seed, --out FILE, --quiet,
//   --json, --version, --config FILE.
// Errors name the option and the allowed values and give exit code 2 (tally::exit_bad_input).

#include <cstdint>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

namespace tally::cli {

struct CommonOptions {
  std::string backend = "auto";
  int device = 0;
  std::string precision = "double";
  std::uint64_t seed = 20260101;
  std::string out;  ///< defaults to results/<app>.h5 when the app sets it
  bool quiet = false;
  bool json = false;
};

/// Adds the shared options; --precision only when the app has one.
void add_common_options(CLI::App& app, CommonOptions& opts, bool with_precision = true);

/// Parses argv. Returns an exit code when the program should stop now (0 for --help/--version,
/// exit_bad_input with the message printed for bad input), std::nullopt to go on.
std::optional<int> parse(CLI::App& app, int argc, char** argv);
/// The same; with report = false nothing is printed (the ranks of a job other than rank 0: one
/// message, not N).
std::optional<int> parse(CLI::App& app, int argc, char** argv, bool report);

/// The command line as one string (for provenance).
std::string command_line(int argc, char** argv);

}  // namespace tally::cli
