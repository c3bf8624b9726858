// mcpi: Monte Carlo estimate of pi with cuRAND (GPU) and a bit-identical CPU backend. This file is
// the command line: the options parsed on every rank of the launcher's job (one rank without one),
// then the driver (driver.hpp) runs the job. See README.md.
#include <string>

#include <CLI/CLI.hpp>

#include "driver.hpp"
#include "tally/common/cli.hpp"
#include "tally/ranks/session.hpp"

namespace {

using namespace tally;
using mcpi::Options;

int run(int argc, char** argv, ranks::Comm& comm) {
  // Every rank must run the same job: a rank with other options would count other samples or wait
  // in another collective. Checked before parsing, so every rank parses the same text.
  std::string args;
  for (int i = 1; i < argc; ++i) args += std::string(i > 1 ? " " : "") + argv[i];
  comm.require_same(args, "the command line (mcpi's options)");

  CLI::App app{"mcpi: Monte Carlo estimate of pi with cuRAND (GPU) and a bit-identical CPU backend", "mcpi"};
  Options o;
  o.common.out = "results/mcpi.h5";
  cli::add_common_options(app, o.common, /*with_precision=*/false);
  app.add_option("--n,-n", o.n, "Samples (points): an integer, 1e8 or 2^30; up to 2^62")->capture_default_str();
  app.add_option("--generator,-g", o.generator, "philox, xorwow, mrg32k3a, sobol or scrambled-sobol")
      ->capture_default_str();
  app.add_option("--api", o.api, "device (fused kernel, cuRAND device API) or host (curandGenerateUniform + count)")
      ->capture_default_str();
  app.add_option("--offset", o.offset, "Index of the first sample in the stream (continue a run: previous offset + n)")
      ->capture_default_str();
  app.add_option("--batch", o.batch, "Samples per batch (one launch, one per-batch estimate)")->capture_default_str();
  app.add_flag("--bench", o.bench,
               "Run the performance table (generators x APIs, and a hand-written reference kernel)");
  cli::add_number(app, "--repeats", o.repeats, "Timed repeats per benchmark row (median)", cli::in_range(1, 100))
      ->capture_default_str();
  if (auto rc = cli::parse(app, argc, argv, comm.is_root())) return *rc;  // the same on every rank: rank 0 prints
  o.command = cli::command_line(argc, argv);
  return mcpi::run(o, comm);
}

}  // namespace

int main(int argc, char** argv) {
  return tally::ranks::run_ranks("mcpi", argc, argv, [&](tally::ranks::Comm& comm) { return run(argc, argv, comm); });
}
