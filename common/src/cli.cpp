#include "tally/common/cli.hpp"

#include <cmath>
#include <cstdio>

#include "tally/common/error.hpp"
#include "tally_version.hpp"

namespace tally::cli {

namespace detail {

namespace {
std::string bound(double v, bool integer) {
  char b[64];
  if (integer) std::snprintf(b, sizeof b, "%lld", static_cast<long long>(v));
  else std::snprintf(b, sizeof b, "%g", v);
  return b;
}
}  // namespace

std::string describe(const Limits& l, bool integer) {
  using K = Limits::Kind;
  switch (l.kind) {
    case K::positive: return integer ? "a positive integer" : "a number > 0";
    case K::non_negative: return integer ? "a non-negative integer" : "a number >= 0";
    case K::at_least: return (integer ? "an integer >= " : "a number >= ") + bound(l.lo, integer);
    case K::in_range:
      return (integer ? "an integer in [" : "a number in [") + bound(l.lo, integer) + ", " + bound(l.hi, integer) + "]";
  }
  return {};
}

std::string describe_short(const Limits& l, bool integer) {
  using K = Limits::Kind;
  switch (l.kind) {
    case K::positive: return "positive";
    case K::non_negative: return "non-negative";
    case K::at_least: return ">= " + bound(l.lo, integer);
    case K::in_range: return "in [" + bound(l.lo, integer) + ", " + bound(l.hi, integer) + "]";
  }
  return {};
}

bool within(const Limits& l, long double v, bool integer) {
  using K = Limits::Kind;
  if (!integer && !std::isfinite(v)) return false;
  switch (l.kind) {
    case K::positive: return integer ? v >= 1 : v > 0;
    case K::non_negative: return v >= 0;
    case K::at_least: return v >= l.lo;
    case K::in_range: return v >= l.lo && v <= l.hi;
  }
  return false;
}

std::string must_be(const std::string& what, const std::string& text) {
  return "must be " + what + " (got " + text + ")";
}

}  // namespace detail

void add_common_options(CLI::App& app, CommonOptions& o, bool with_precision) {
  app.add_option("--backend", o.backend, "Where to run: auto (GPU when usable, else CPU), cuda or cpu")
      ->check(CLI::IsMember({"auto", "cuda", "cpu"}))
      ->capture_default_str();
  add_number(app, "--device", o.device, "CUDA device index", non_negative)->capture_default_str();
  if (with_precision) {
    app.add_option("--precision", o.precision, "Floating-point type: float or double")
        ->check(CLI::IsMember({"float", "double"}))
        ->capture_default_str();
  }
  add_number(app, "--seed", o.seed, "Seed of the random inputs", non_negative)->capture_default_str();
  app.add_option("--out", o.out, "HDF5 output file (written under a temporary name, renamed when complete)")
      ->capture_default_str();
  app.add_flag("--quiet,-q", o.quiet, "No progress line");
  app.add_flag("--json", o.json, "Print one machine-readable summary line on stdout");
  app.set_version_flag("--version", std::string(TALLY_VERSION_STRING) + " (" + TALLY_GIT_REVISION + ")");
  app.set_config("--config", "", "Read options from a TOML/INI config file (CLI11 format)");
}

std::optional<int> parse(CLI::App& app, int argc, char** argv, bool report) {
  if (report) return parse(app, argc, argv);
  try {
    app.parse(argc, argv);
  } catch (const CLI::Error& e) {  // --help, --version (code 0) or a parse error
    return e.get_exit_code() == 0 ? exit_ok : exit_bad_input;
  }
  return std::nullopt;
}

std::optional<int> parse(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "%s: error: %s\nRun with --help for the options and their allowed values.\n",
                 app.get_name().c_str(), e.what());
    return exit_bad_input;
  }
  return std::nullopt;
}

std::string command_line(int argc, char** argv) {
  std::string s;
  for (int i = 0; i < argc; ++i) {
    if (i) s += ' ';
    s += argv[i];
  }
  return s;
}

}  // namespace tally::cli
