// heat2d: the 2-D heat equation, explicitly (Jacobi sweeps or forward Euler steps) or implicitly as
// TeaLeaf runs it (--deck/--set: backward Euler steps, CG, Chebyshev, PPCG, Jacobi). This file is the
// command line of both modes: the options parsed on every rank of the launcher's job (one rank
// without one), then the driver (driver.hpp) runs the job. See README.md.
#include <algorithm>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "driver.hpp"
#include "tally/common/cli.hpp"
#include "tally/ranks/session.hpp"

namespace {

using namespace tally;
using namespace tally::heat2d;

/// The explicit mode's options (the default mode).
CLI::Option_group* add_explicit_options(CLI::App& app, Options& o) {
  CLI::Option_group* g = app.add_option_group("Explicit mode", "Jacobi or explicit steps on the unit square");
  cli::add_number(*g, "--nx", o.p.nx, "Grid points along x, edges included (h = 1/(nx-1))", cli::at_least(3))
      ->capture_default_str();
  cli::add_number(*g, "--ny", o.ny, "Grid points along y, edges included (default: nx)", cli::at_least(3));
  g->add_option("--mode", o.mode, "steady (Jacobi for Laplace) or transient (explicit steps)")
      ->check(CLI::IsMember({"steady", "transient"}))
      ->capture_default_str();
  cli::add_number(*g, "--tol", o.tol, "Stop when max |u_new - u| <= tol", cli::positive)->capture_default_str();
  cli::add_number(*g, "--max-iter", o.max_iter, "Most sweeps", cli::positive)->capture_default_str();
  cli::add_number(*g, "--check-every", o.check_every, "Test the residual every k sweeps (and at the last)",
                  cli::positive)
      ->capture_default_str();
  cli::add_number(*g, "--alpha", o.p.alpha, "Diffusivity (transient)", cli::positive)->capture_default_str();
  cli::add_number(*g, "--dt", o.p.dt, "Time step (transient; default r = alpha dt/h^2 = 0.2; at most r = 1/4)",
                  cli::non_negative);
  cli::add_number(*g, "--t-end", o.p.t_end, "End time (transient; 0: run to steady state or --max-iter)",
                  cli::non_negative)
      ->capture_default_str();
  g->add_option("--bc-top", o.bc_top, "Top edge (y = Ly): a number or sin (sin(pi x))")->capture_default_str();
  g->add_option("--bc-bottom", o.bc_bottom, "Bottom edge (y = 0): a number or sin")->capture_default_str();
  g->add_option("--bc-left", o.bc_left, "Left edge (x = 0): a number or sin (sin(pi y/Ly))")->capture_default_str();
  g->add_option("--bc-right", o.bc_right, "Right edge (x = 1): a number or sin")->capture_default_str();
  g->add_option("--init", o.init, "Initial interior: a number or sin (sin(pi x) sin(pi y/Ly))")->capture_default_str();
  g->add_option("--cuda-kernel", o.cuda_kernel,
                "CUDA sweep kernel: registers (rows queued in registers), async (cp.async ring in shared memory) or "
                "persistent (the registers kernel's sweeps, many a launch, blocks waiting only for their neighbours)")
      ->check(CLI::IsMember({"async", "registers", "persistent"}))
      ->capture_default_str();
  g->add_option("--sweeps-per-pass", o.sweeps_per_pass,
                "Sweeps a pass over memory (temporal blocking): 1.." + std::to_string(max_sweeps_per_pass) +
                    ", dividing --check-every, or auto: the deepest that does, up to " +
                    std::to_string(cuda_preferred_sweeps_per_pass) + " on CUDA and " +
                    std::to_string(cpu_preferred_sweeps_per_pass) + " on the CPU; the same bits for every value")
      ->capture_default_str();
  g->add_flag("--validate", o.validate, "Repeat the iteration on the CPU with Eigen arrays and compare the fields");
  g->add_flag("--bench", o.bench, "Benchmark table: per-sweep time and GB/s against the copy bandwidth");
  g->add_flag("--keep-partial", o.keep_partial,
              "On SIGINT/SIGTERM (one process), write the field reached (status interrupted) before exiting 130/143");
  g->add_option(
      "--restart", o.restart,
      "Continue from a heat2d output of the same problem (its field and sweep count; --max-iter counts all sweeps)");
  cli::add_number(*g, "--bench-sizes", o.bench_sizes,
                  "Grid sides for --bench (default cuda: 1024 2048 4096 8192, cpu: 256 512 1024)", cli::at_least(3))
      ->delimiter(',');
  return g;
}

/// The implicit mode's options: --deck or --set selects it.
CLI::Option_group* add_implicit_options(CLI::App& app, implicit::Options& o) {
  CLI::Option_group* g = app.add_option_group(
      "Implicit mode (--deck or --set)",
      "TeaLeaf's heat conduction: backward Euler steps, every dot product exact (implicit/README.md)");
  g->add_option("--deck", o.deck, "TeaLeaf input deck (tea.in format)")->check(CLI::ExistingFile);
  g->add_option("--set", o.set, "A deck line, read after the deck's own (repeatable): --set 'x_cells 64'");
  g->add_option("--solver", o.solver, "Override the deck's solver (pipecg: pipelined CG, one reduction a step, CPU)")
      ->check(CLI::IsMember({"cg", "cheby", "ppcg", "jacobi", "pipecg"}));
  cli::add_number(*g, "--eps", o.eps, "Override the deck's eps", cli::positive);
  g->add_option("--eps-norm", o.eps_norm,
                "What is tested against eps: l2 (TeaLeaf's: |r|_2 for CG, |r|_2^2 for Chebyshev and PPCG, Jacobi's "
                "summed updates) or max (max |r_i|; Jacobi: max |u_new - u|)")
      ->check(CLI::IsMember({"l2", "max"}))
      ->capture_default_str();
  cli::add_number(*g, "--max-iters", o.max_iters, "Override the deck's max_iters", cli::in_range(1, 2147483648.0));
  g->add_option("--preconditioner", o.preconditioner, "Override the deck's preconditioner")
      ->check(CLI::IsMember({"none", "jac_diag", "jac_block"}));
  g->add_option("--reproducible", o.reproducible,
                "on: every dot product and norm exact, rounded once (the same bits everywhere); off: ordinary sums")
      ->check(CLI::IsMember({"on", "off"}))
      ->capture_default_str();
  g->add_option("--cheby-steps-per-pass", o.cheby_steps,
                "Chebyshev steps a pass over memory on CUDA (temporal blocking; not with jac_block): auto (" +
                    std::to_string(tuning::implicit_cheby_auto_steps) +
                    "), 1, 2 or 5 (dividing the test interval, 10); the CPU takes one a pass; the same bits for "
                    "every value")
      ->check(CLI::IsMember({"auto", "1", "2", "5"}))
      ->capture_default_str();
  return g;
}

/// An option given of the other mode's group: an input error naming it. Every rank holds the same
/// options (checked before), so every rank agrees and rank 0 alone says it.
void refuse_other_mode(const CLI::Option_group& other, const std::string& why) {
  for (const CLI::Option* opt : other.get_options())
    if (opt->count() > 0) throw ranks::AgreedError(opt->get_name() + ": " + why, true);
}

int run(int argc, char** argv, ranks::Comm& comm) {
  Options o;
  o.common.out = "results/heat2d.h5";
  CLI::App app{
      "heat2d: the 2-D heat equation, explicitly (Jacobi for the steady state, or explicit time steps, with a\n"
      "max-residual test inside the sweep) or, with --deck/--set, implicitly as TeaLeaf runs it.",
      "heat2d"};
  cli::add_common_options(app, o.common);
  app.add_flag("--xdmf", o.xdmf, "Write an XDMF sidecar (<out> with .xmf) for ParaView/VisIt");
  const CLI::Option_group* explicit_mode = add_explicit_options(app, o);
  const CLI::Option_group* implicit_mode = add_implicit_options(app, o.implicit);
  {
    // A parse failure on some ranks only (different command lines) must not leave the others
    // waiting in the next collective; --help and --version stop every rank alike.
    const auto rc = cli::parse(app, argc, argv);
    if (comm.size() == 1 && rc) return *rc;
    const std::vector<int> codes = comm.allgather<int>(rc ? *rc : -1);
    for (int r = 0; r < comm.size(); ++r)
      if (codes[static_cast<std::size_t>(r)] > 0)
        throw ranks::AgreedError("rank " + std::to_string(r) + ": bad options (its message above)", true);
    if (rc) return *rc;
  }
  // All options, defaults and config files included, must be the same on every rank (one line, so
  // that the message quotes the difference in place). An agreed input error when they differ.
  std::string config = app.config_to_str(true, false);
  std::replace(config.begin(), config.end(), '\n', ' ');
  comm.require_same(config, "the configuration (all options)");
  // The same options on every rank: each rank comes to the same verdict, rank 0 says it.
  o.implicit_mode = app.count("--deck") > 0 || app.count("--set") > 0;
  if (o.implicit_mode) {
    refuse_other_mode(*explicit_mode, "an option of the explicit mode; with --deck or --set the deck sets the problem");
    if (app.count("--precision") > 0 && o.common.precision != "double")
      throw ranks::AgreedError(
          "--precision " + o.common.precision + ": the implicit mode (--deck, --set) runs in double", true);
  } else {
    refuse_other_mode(*implicit_mode, "an option of the implicit mode, which --deck or --set selects");
  }
  o.implicit.xdmf = o.xdmf;
  o.command = cli::command_line(argc, argv);
  return tally::heat2d::run(o, comm);
}

}  // namespace

int main(int argc, char** argv) {
  return tally::ranks::run_ranks("heat2d", argc, argv, [&](ranks::Comm& comm) { return run(argc, argv, comm); });
}
