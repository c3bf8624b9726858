// heat2d's implicit mode: options, the run, the result file and the lines it prints (cli.hpp).
#include "cli.hpp"

#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "output.hpp"
#include "ranks.hpp"
#include "run.hpp"
#include "tally/common/cli.hpp"
#include "tally/common/device_info.hpp"
#include "tally/common/error.hpp"
#include "tally/common/h5.hpp"
#include "tally/common/interrupt.hpp"
#include "tally/common/progress.hpp"
#include "tally/common/provenance.hpp"
#include "tally/common/timing.hpp"
#include "tally/ranks/session.hpp"
#include "tally/reduce/backend.hpp"

namespace tally::heat2d::implicit {

bool wants(int argc, char** argv) {
  for (int k = 1; k < argc; ++k) {
    const std::string_view a = argv[k];
    if (a == "--deck" || a == "--set" || a.rfind("--deck=", 0) == 0 || a.rfind("--set=", 0) == 0) return true;
  }
  return false;
}

namespace {

struct Options {
  cli::CommonOptions common;
  std::string deck;
  std::vector<std::string> set;
  std::string solver, preconditioner, eps_norm = "l2", reproducible = "on";
  double eps = 0.0;  // 0: the deck's
  std::int64_t max_iters = 0;
  bool xdmf = false;
};

std::string fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

int run(int argc, char** argv, const ranks::Comm& comm) {
  HostTimer total;
  Options o;
  o.common.out = "results/heat2d.h5";
  CLI::App app{
      "heat2d --deck: implicit heat conduction as TeaLeaf runs it (backward Euler steps, CG, Chebyshev,\n"
      "PPCG or Jacobi), every dot product exact: the same bits on any machine and thread count.",
      "heat2d"};
  cli::add_common_options(app, o.common, false);
  app.add_option("--deck", o.deck, "TeaLeaf input deck (tea.in format)")->check(CLI::ExistingFile);
  app.add_option("--set", o.set, "A deck line, read after the deck's own (repeatable): --set 'x_cells 64'");
  app.add_option("--solver", o.solver, "Override the deck's solver")
      ->check(CLI::IsMember({"cg", "cheby", "ppcg", "jacobi"}));
  cli::add_number(app, "--eps", o.eps, "Override the deck's eps", cli::positive);
  app.add_option(
         "--eps-norm", o.eps_norm,
         "What is tested against eps: l2 (TeaLeaf's: |r|_2 for CG, |r|_2^2 for Chebyshev and PPCG, Jacobi's summed "
         "updates) or max (max |r_i|; Jacobi: max |u_new - u|)")
      ->check(CLI::IsMember({"l2", "max"}))
      ->capture_default_str();
  cli::add_number(app, "--max-iters", o.max_iters, "Override the deck's max_iters", cli::in_range(1, 2147483648.0));
  app.add_option("--preconditioner", o.preconditioner, "Override the deck's preconditioner")
      ->check(CLI::IsMember({"none", "jac_diag", "jac_block"}));
  app.add_option("--reproducible", o.reproducible,
                 "on: every dot product and norm exact, rounded once (the same bits everywhere); off: ordinary sums")
      ->check(CLI::IsMember({"on", "off"}))
      ->capture_default_str();
  app.add_flag("--xdmf", o.xdmf, "Write an XDMF sidecar (<out> with .xmf); also when the deck sets visit_frequency");
  // The same command line on every rank: the same verdict; rank 0 alone prints it.
  if (const auto rc = cli::parse(app, argc, argv, comm.is_root())) return *rc;

  // Everything the user gave is checked before anything is computed or written; a failure on any
  // rank stops every rank, rank 0 naming it.
  const bool root = comm.is_root();
  Deck deck;
  RunOptions ro;
  Decomposition dec;  // the cell rows over the ranks: made here, once, and handed down
  bool fell_back = false;
  std::exception_ptr failed;
  try {
    std::vector<std::string> lines = o.set;
    if (!o.solver.empty()) lines.push_back(o.solver == "cheby" ? "use_chebyshev" : "use_" + o.solver);
    if (o.eps > 0.0) lines.push_back("eps " + fmt("%.17g", o.eps));
    if (o.max_iters > 0) lines.push_back("max_iters " + std::to_string(o.max_iters));
    if (!o.preconditioner.empty()) lines.push_back("preconditioner_type " + o.preconditioner);
    deck = o.deck.empty() ? parse_deck("", "--set", lines) : read_deck(o.deck, lines);
    ro.backend = reduce::resolve_backend(o.common.backend, &fell_back);
    if (comm.size() > 1) {
      if (ro.backend == reduce::Backend::cuda && o.common.backend == "cuda")
        throw InputError("--backend cuda: heat2d --deck on several ranks runs on the CPU backend");
      ro.backend = reduce::Backend::cpu, fell_back = false;
    }
    dec = decompose(deck, comm.size(), comm.rank());
    if (root) {
      // Probe --out now (its folder created, the empty temporary dropped): a bad path fails before the run.
      const std::filesystem::path out(o.common.out);
      if (out.has_parent_path()) {
        std::error_code ec;
        std::filesystem::create_directories(out.parent_path(), ec);
        if (ec) throw InputError("--out " + o.common.out + ": cannot create its folder (" + ec.message() + ")");
      }
      (void)h5::File::create(o.common.out);
    }
  } catch (...) {
    if (comm.size() == 1) throw;
    failed = std::current_exception();
  }
  if (comm.size() > 1) comm.agree(failed);
  if (fell_back) std::fprintf(stderr, "heat2d: no usable CUDA device, running on the CPU backend\n");
  ro.device = o.common.device;
  ro.solve = solve_options(deck);
  ro.solve.norm = o.eps_norm == "max" ? EpsNorm::max : EpsNorm::l2;
  ro.solve.reproducible = o.reproducible == "on";
  const std::unique_ptr<RankLink> link = make_rank_link(comm);
  ro.link = link.get();
  ro.decomposition = &dec;
  if (root && deck.preconditioner != Preconditioner::none && deck.solver == SolverKind::jacobi)
    std::fprintf(stderr, "heat2d: note: Jacobi takes no preconditioner (%s not applied)\n",
                 to_string(deck.preconditioner).c_str());

  Progress progress(o.common.quiet || o.common.json || !root);
  ro.on_step = [&](std::int64_t step, std::int64_t steps, const SolveStats& s) {
    interrupt::check("after step " + std::to_string(step));
    if (!progress.due()) return;
    char line[200];
    std::snprintf(line, sizeof line, "heat2d: step %lld/%lld  %lld iterations  error %.3e",
                  static_cast<long long>(step), static_cast<long long>(steps), static_cast<long long>(s.iterations),
                  s.error);
    progress.update(line);
  };
  const RunReport rep = run_deck(deck, ro);
  progress.finish();
  // Every rank holds the same status (the tests see the same exact sums): the same exit code.
  const int code = rep.status == SolveStatus::converged ? exit_ok : exit_failure;
  if (!root) return code;

  OutputRecord rec;
  rec.deck_file = o.deck;
  rec.backend = reduce::to_string(ro.backend);
  rec.ranks = comm.size();
  HostTimer tw;
  const std::optional<DeviceInfo> dev =
      ro.backend == reduce::Backend::cuda ? std::optional<DeviceInfo>(query_device(ro.device)) : std::nullopt;
  {
    h5::File f = h5::File::create(o.common.out);
    rec.total_s = total.seconds();
    write_result(f, rep, rec, collect_provenance(cli::command_line(argc, argv), dev), dev);
    f.commit();
  }
  if (o.xdmf || deck.visit_frequency > 0) write_xdmf(o.common.out, rep);
  rec.write_s = tw.seconds();
  rec.total_s = total.seconds();

  const Summary& s = rep.final_summary();
  if (o.common.json) {
    std::printf("%s\n", json_summary(rep, rec, o.common.out).c_str());
  } else if (!o.common.quiet) {
    std::printf(
        "heat2d: %s %lldx%lld, %lld steps, %s%s on %s (%s dots): %lld iterations, %s; temperature %.15e "
        "(volume %.6g, mass %.6g, energy %.6g); solve %.3g s\n",
        o.deck.empty() ? "--set deck" : o.deck.c_str(), static_cast<long long>(deck.x_cells),
        static_cast<long long>(deck.y_cells), static_cast<long long>(rep.steps_done),
        to_string(ro.solve.solver).c_str(),
        ro.solve.preconditioner == Preconditioner::none ? "" : ("+" + to_string(ro.solve.preconditioner)).c_str(),
        rec.backend.c_str(), ro.solve.reproducible ? "exact" : "ordinary", static_cast<long long>(rep.iterations()),
        to_string(rep.status).c_str(), s.temperature, s.volume, s.mass, s.energy, rep.solve_s);
  }
  if (rep.status != SolveStatus::converged) {
    const SolveStats& last = rep.solves.back();
    std::fprintf(stderr,
                 "heat2d: %s at step %lld after %lld iterations (error %g, eps %g); the field it reached was written "
                 "to %s (status %s)\n",
                 rep.status == SolveStatus::max_iters ? "NOT converged: max_iters reached" : "DIVERGED",
                 static_cast<long long>(rep.steps_done), static_cast<long long>(last.iterations), last.error,
                 ro.solve.eps, o.common.out.c_str(), to_string(rep.status).c_str());
  }
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  return ranks::run_ranks("heat2d", argc, argv, [&](ranks::Comm& comm) { return run(argc, argv, comm); });
}

}  // namespace tally::heat2d::implicit
