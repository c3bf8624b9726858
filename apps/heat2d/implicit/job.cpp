// heat2d's implicit mode as a job (job.hpp): set-up agreed over the ranks, the run, the result file
// and the lines it prints.
#include "job.hpp"

#include <cstdio>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "output.hpp"
#include "probe_out.hpp"
#include "ranks.hpp"
#include "tally/common/device_info.hpp"
#include "tally/common/error.hpp"
#include "tally/common/h5.hpp"
#include "tally/common/interrupt.hpp"
#include "tally/common/progress.hpp"
#include "tally/common/provenance.hpp"
#include "tally/common/timing.hpp"
#include "tally/ranks/comm.hpp"
#include "tally/reduce/backend.hpp"

namespace tally::heat2d::implicit {

Deck make_deck(const Options& o) {
  std::vector<std::string> lines = o.set;
  if (!o.solver.empty()) lines.push_back(o.solver == "cheby" ? "use_chebyshev" : "use_" + o.solver);
  if (o.eps > 0.0) {
    char b[40];
    std::snprintf(b, sizeof b, "eps %.17g", o.eps);
    lines.emplace_back(b);
  }
  if (o.max_iters > 0) lines.push_back("max_iters " + std::to_string(o.max_iters));
  if (!o.preconditioner.empty()) lines.push_back("preconditioner_type " + o.preconditioner);
  return o.deck.empty() ? parse_deck("", "--set", lines) : read_deck(o.deck, lines);
}

SolveOptions make_solve_options(const Deck& d, const Options& o) {
  if (o.eps_norm != "l2" && o.eps_norm != "max")
    throw InputError("--eps-norm: '" + o.eps_norm + "' is not one of l2, max");
  if (o.reproducible != "on" && o.reproducible != "off")
    throw InputError("--reproducible: '" + o.reproducible + "' is not one of on, off");
  if (o.cheby_steps != "auto" && o.cheby_steps != "1" && o.cheby_steps != "2" && o.cheby_steps != "5")
    throw InputError("--cheby-steps-per-pass: '" + o.cheby_steps + "' is not one of auto, 1, 2, 5 (they divide 10)");
  SolveOptions s = solve_options(d);
  s.norm = o.eps_norm == "max" ? EpsNorm::max : EpsNorm::l2;
  s.reproducible = o.reproducible == "on";
  s.cheby_steps_per_pass = o.cheby_steps == "auto" ? 0 : std::stoi(o.cheby_steps);
  return s;
}

int run(const Options& o, const cli::CommonOptions& common, const ranks::Comm& comm, const std::string& command) {
  HostTimer total;
  // Everything the user gave is checked before anything is computed or written; a failure on any
  // rank stops every rank, rank 0 naming it.
  const bool root = comm.is_root();
  Deck deck;
  RunOptions ro;
  Decomposition dec;  // the cell rows over the ranks: made here, once, and handed down
  bool fell_back = false;
  std::exception_ptr failed;
  try {
    deck = make_deck(o);
    ro.solve = make_solve_options(deck, o);
    ro.backend = engine_backend(reduce::resolve_backend(common.backend, &fell_back), common.backend, ro.solve.solver,
                                comm.size(), &fell_back);
    dec = decompose(deck, comm.size(), comm.rank());
    if (root) probe_out(common.out);
  } catch (...) {
    if (comm.size() == 1) throw;
    failed = std::current_exception();
  }
  if (comm.size() > 1) comm.agree(failed);
  if (fell_back) std::fprintf(stderr, "heat2d: no usable CUDA device, running on the CPU backend\n");
  ro.device = common.device;
  const std::unique_ptr<RankLink> link = make_rank_link(comm);
  ro.link = link.get();
  ro.decomposition = &dec;
  if (root && deck.preconditioner != Preconditioner::none && deck.solver == SolverKind::jacobi)
    std::fprintf(stderr, "heat2d: note: Jacobi takes no preconditioner (%s not applied)\n",
                 to_string(deck.preconditioner).c_str());

  Progress progress(common.quiet || common.json || !root);
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
    h5::File f = h5::File::create(common.out);
    rec.total_s = total.seconds();
    write_result(f, rep, rec, collect_provenance(command, dev), dev);
    f.commit();
  }
  if (o.xdmf || deck.visit_frequency > 0) write_xdmf(common.out, rep);
  rec.write_s = tw.seconds();
  rec.total_s = total.seconds();
  print_report(rep, rec, common);
  return code;
}

}  // namespace tally::heat2d::implicit
