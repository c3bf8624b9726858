#include "tally/common/cli.hpp"

#include <cstdio>

#include "tally/common/error.hpp"
#include "tally_version.hpp"

namespace tally::cli {

void add_common_options(CLI::App& app, CommonOptions& o, bool with_precision) {
  app.add_option("--backend", o.backend, "Where to run: auto (GPU when usable, else CPU), cuda or cpu")
      ->check(CLI::IsMember({"auto", "cuda", "cpu"}))
      ->capture_default_str();
  app.add_option("--device", o.device, "CUDA device index")->check(CLI::NonNegativeNumber)->capture_default_str();
  if (with_precision) {
    app.add_option("--precision", o.precision, "Floating-point type: float or double")
        ->check(CLI::IsMember({"float", "double"}))
        ->capture_default_str();
  }
  app.add_option("--seed", o.seed, "Seed of the random inputs")->capture_default_str();
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
