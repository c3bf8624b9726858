// The heat2d driver (driver.hpp): the job's set-up in the explicit mode, agreed over the ranks; its
// solve and result file; the implicit mode handed on; one problem's run, gather and checks.
#include "driver.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <memory>

#include "heat2d_output.hpp"
#include "probe_out.hpp"
#include "restart.hpp"
#include "tally/common/app.hpp"
#include "tally/common/error.hpp"
#include "tally/common/h5.hpp"
#include "tally/common/interrupt.hpp"
#include "tally/common/progress.hpp"
#include "tally/common/provenance.hpp"
#include "tally/reduce/ranks.hpp"

namespace tally::heat2d {

Decomposition::Rows own_rows(const Decomposition& d, int rank) {
  const Decomposition::Rows r = d.rows_of(rank);
  return {rank == 0 ? 0 : r.begin, rank == d.size() - 1 ? d.ny() : r.end};
}

template <class T>
std::vector<T> gather_field(const ranks::Comm& comm, const Decomposition& d, std::span<const T> block,
                            std::int64_t round_bytes) {
  const int n = comm.size();
  if (d.size() != n || d.rank() != comm.rank()) throw Error("heat2d: gather_field: the decomposition of other ranks");
  auto own = [&](int r) { return own_rows(d, r); };  // global rows that rank r contributes
  const std::int64_t nx = d.nx();
  const auto row_bytes = static_cast<std::int64_t>(nx * sizeof(T));
  const std::int64_t chunk = std::max<std::int64_t>(1, round_bytes / (row_bytes * n));
  const std::int64_t most = own(0).size();  // rank 0 holds the most rows (the first ranks' one more, plus the edge)
  const Decomposition::Rows mine = own(comm.rank());
  const std::int64_t mine_off = mine.begin - local_block(d).row0;  // in `block`
  std::vector<T> field(comm.is_root() ? static_cast<std::size_t>(nx * d.ny()) : 0);
  for (std::int64_t c0 = 0; c0 < most; c0 += chunk) {
    const std::int64_t rows = std::clamp<std::int64_t>(mine.size() - c0, 0, chunk);
    const std::vector<T> got = comm.gather<T>(std::span<const T>(
        block.data() + (mine_off + std::min(c0, mine.size())) * nx, static_cast<std::size_t>(rows * nx)));
    if (!comm.is_root()) continue;
    auto from = got.begin();
    for (int r = 0; r < n; ++r) {
      const Decomposition::Rows o = own(r);
      const std::int64_t k = std::clamp<std::int64_t>(o.size() - c0, 0, chunk) * nx;
      std::copy(from, from + k, field.begin() + (o.begin + c0) * nx);
      from += k;
    }
  }
  return field;
}
template std::vector<float> gather_field<float>(const ranks::Comm&, const Decomposition&, std::span<const float>,
                                                std::int64_t);
template std::vector<double> gather_field<double>(const ranks::Comm&, const Decomposition&, std::span<const double>,
                                                  std::int64_t);

template <class T>
Report<T> run_problem(const Problem& p, const StopRule& rule_in, const RunOptions& o, std::span<const T> start) {
  const ranks::Comm* comm = o.comm && o.comm->size() > 1 ? o.comm : nullptr;
  const Decomposition whole_grid = o.decomposition ? Decomposition{} : decompose(p);  // one rank, none given
  const Decomposition& dec = o.decomposition ? *o.decomposition : whole_grid;
  Report<T> rep;
  HostTimer t;
  std::unique_ptr<Solver<T>> solver;
  std::exception_ptr failed;
  try {
    rep.decomposition = dec;
    rep.block = local_block(dec);
    solver = make_solver<T>(o.backend, p, {o.device, o.cuda_kernel, comm, &dec, o.sweeps_per_pass});
  } catch (...) {
    if (!comm) throw;
    failed = std::current_exception();
  }
  if (comm) comm->agree(failed);  // a rank that cannot hold its block stops every rank
  const std::vector<T> u0 =
      start.empty() ? initial_field<T>(p, rep.block.row0, rep.block.rows) : std::vector<T>(start.begin(), start.end());
  if (u0.size() != static_cast<std::size_t>(rep.block.rows * p.nx))
    throw Error("heat2d: the start field holds " + std::to_string(u0.size()) + " values, the block " +
                std::to_string(rep.block.rows * p.nx));
  StopRule rule = rule_in;
  // One rank: a first signal stops the solver at its next checked sweep (several ranks: the signal
  // has already ended the job, see interrupt::set_immediate). A caller's own poll (the Python
  // module's, for Python's signal handlers) is kept.
  if (!rule.stop_requested) rule.stop_requested = [] { return interrupt::requested() != 0; };
  rep.timings.set("setup", t.seconds());

  t.restart();
  solver->set_field(u0);
  rep.timings.set("h2d", t.seconds());

  Progress progress(!o.progress || (comm && !comm->is_root()));
  char line[160];
  rep.result = solver->solve(rule, [&](std::int64_t k, double r, double s) {
    if (!progress.due()) return;
    std::snprintf(line, sizeof line, "heat2d: sweep %lld  residual %.3e  %.3g sweeps/s", static_cast<long long>(k), r,
                  s > 0 ? static_cast<double>(k - rule.first) / s : 0.0);
    progress.update(line);
  });
  progress.finish();
  const auto& res = rep.result;
  const bool interrupted = res.status == Status::interrupted;
  // Also a signal after the last check: the run stops here unless its result is to be written.
  if (const int sig = comm ? 0 : interrupt::requested(); sig != 0 && !o.keep_partial) {
    throw interrupt::Interrupted(sig, "interrupted by " + interrupt::signal_name(sig) + " at sweep " +
                                          std::to_string(res.iterations) +
                                          " (nothing written; --keep-partial writes the field)");
  }
  rep.timings.set("solve", res.solve_s);
  const std::int64_t swept = res.iterations - rule.first;
  rep.timings.set("per_sweep", res.solve_s / static_cast<double>(std::max<std::int64_t>(swept, 1)));

  t.restart();
  std::vector<T> block(u0.size());
  solver->get_field(block);
  rep.sim_time = static_cast<double>(res.iterations) * p.dt;
  // --validate repeats the sweeps of this run from its start (an interrupted run skips it: the
  // user asked to stop).
  const bool validate = o.validate && !interrupted;
  const bool analytic = has_analytic(p) && res.status != Status::diverged;
  if (!comm) {
    rep.field = std::move(block);
  } else if (o.gather || validate) {  // the same on every rank: all or none gather
    rep.field = gather_field<T>(*comm, dec, block);
  }
  rep.timings.set("d2h", t.seconds());
  if (comm && !o.gather) {
    // Not gathered: the analytic error in parts, each rank over its own rows (the max exact in any
    // order, the rows' sums added in row order on rank 0: the bits of one rank).
    if (analytic) {
      const Decomposition::Rows own = own_rows(dec, comm->rank());
      ErrorParts e = analytic_error_rows<T>(p,
                                            std::span<const T>(block.data() + (own.begin - rep.block.row0) * p.nx,
                                                               static_cast<std::size_t>(own.size() * p.nx)),
                                            own.begin, rep.sim_time);
      reduce::allreduce<reduce::Max, double>(*comm, std::span<const double>(&e.max, 1), std::span<double>(&e.max, 1),
                                             ranks::Memory::host);
      const std::vector<double> sums = comm->gather<double>(e.row_sum2);
      if (comm->is_root()) rep.analytic = error_norms(p, e.max, sums);
    }
    rep.block_field = std::move(block);
  }

  std::vector<T> whole;  // the whole start field on rank 0
  if (validate)
    whole = !comm           ? u0
            : start.empty() ? (comm->is_root() ? initial_field<T>(p) : std::vector<T>{})
                            : gather_field<T>(*comm, dec, u0);
  if (!rep.field.empty()) {  // rank 0
    if (analytic && !rep.analytic) rep.analytic = analytic_error<T>(p, std::span<const T>(rep.field), rep.sim_time);
    if (validate) {
      const std::vector<T> ref = eigen_sweeps<T>(p, whole, swept);
      rep.eigen_max_abs_diff = max_abs_diff<T>(rep.field, ref);
      rep.eigen_tolerance = rounding_tolerance<T>(swept, max_abs<T>(whole));
      rep.validation_passed = *rep.eigen_max_abs_diff <= rep.eigen_tolerance;
    }
  }
  if (comm) {
    int passed = rep.validation_passed ? 1 : 0;
    comm->broadcast<int>(std::span<int>(&passed, 1));
    rep.validation_passed = passed != 0;
  }
  if (o.comm)
    for (const auto& [name, s] : rep.timings.entries()) rep.rank_timings.emplace_back(name, o.comm->stats(s));
  return rep;
}
template Report<float> run_problem<float>(const Problem&, const StopRule&, const RunOptions&, std::span<const float>);
template Report<double> run_problem<double>(const Problem&, const StopRule&, const RunOptions&,
                                            std::span<const double>);

int parse_sweeps_per_pass(const std::string& text) {
  if (text == "auto") return 0;
  std::size_t used = 0;
  int t = -1;
  try {
    t = std::stoi(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || text.empty() || t < 1 || t > max_sweeps_per_pass)
    throw InputError("--sweeps-per-pass '" + text + "': expected auto or a number of sweeps (1.." +
                     std::to_string(max_sweeps_per_pass) + ")");
  return t;
}

namespace {

/// The explicit mode's job once set up: this rank's start field (--restart), the solve, the file
/// (gathered to rank 0, or each rank's rows with parallel HDF5) and rank 0's report.
template <class T>
int solve_and_write(const Options& o, const Problem& p, const StopRule& rule, const RunOptions& ro,
                    const ranks::Comm& comm, const HostTimer& total, const Restart& restart) {
  const Decomposition& dec = *ro.decomposition;
  std::vector<T> start;  // --restart: this rank's block of the file's field
  if (!o.restart.empty()) {
    std::exception_ptr failed;
    try {
      const Block b = local_block(dec);
      start = h5::File::open(o.restart).read<T>("field", {static_cast<std::uint64_t>(b.row0), 0},
                                                {static_cast<std::uint64_t>(b.rows), static_cast<std::uint64_t>(p.nx)});
    } catch (...) {
      if (comm.size() == 1) throw;
      failed = std::current_exception();
    }
    comm.agree(failed);
  }
  Report<T> rep = run_problem<T>(p, rule, ro, std::span<const T>(start));
  if (!o.restart.empty()) {  // the history continues the file's
    auto& r = rep.result;
    r.check_iteration.insert(r.check_iteration.begin(), restart.check_iteration.begin(), restart.check_iteration.end());
    r.check_residual.insert(r.check_residual.begin(), restart.check_residual.begin(), restart.check_residual.end());
  }
  const SolveResult& res = rep.result;
  const ranks::RankStats total_s = comm.stats(total.seconds());  // collective: before rank 0 alone writes
  // Every rank exits as rank 0 does: the status and the verdict are the same everywhere.
  const int rank_exit = res.status == Status::diverged || !rep.validation_passed ? exit_failure : exit_ok;
  HostTimer tw;
  // Created only now, with every rank's part in hand: a run that fails or is aborted before this
  // leaves nothing (the early probe in run() found --out writable).
  std::optional<h5::File> parallel;  // rank 0: the file every rank wrote its rows of the field into
  if (!ro.gather) {
    h5::File f = h5::File::create_collective(o.common.out, {comm.mpi_handle(), comm.rank(), comm.size()});
    const Decomposition::Rows own = own_rows(dec, comm.rank());
    const std::span<const T> mine(rep.block_field.data() + (own.begin - rep.block.row0) * p.nx,
                                  static_cast<std::size_t>(own.size() * p.nx));
    f.write_rows<T>("field", mine, {static_cast<std::uint64_t>(p.ny), static_cast<std::uint64_t>(p.nx)},
                    static_cast<std::uint64_t>(own.begin));
    std::exception_ptr failed;
    try {
      f.close_collective();
    } catch (...) {
      failed = std::current_exception();
    }
    comm.agree(failed);  // every rank's rows are on disk: rank 0 finishes the file and renames it
    if (!comm.is_root()) {
      f.abandon();
      return rank_exit;
    }
    parallel = f.reopen();
  }
  if (!comm.is_root()) return rank_exit;

  h5::File file = parallel ? std::move(*parallel) : h5::File::create(o.common.out);
  parallel.reset();
  const auto dev = device_of(ro);
  write_result<T>(file, p, rule, ro, {o.max_iter, o.restart}, rep, comm, total_s, collect_provenance(o.command, dev),
                  dev, tw, total);
  file.commit();
  if (o.xdmf) write_xdmf(o.common.out, p, static_cast<int>(sizeof(T)));
  print_report<T>(o, p, rule, ro, rep, comm);
  if (const int sig = interrupt::requested(); sig != 0) {  // --keep-partial (one rank): written, now stop
    std::fflush(stdout);
    const std::string at = res.status == Status::interrupted
                               ? "at sweep " + std::to_string(res.iterations)
                               : "after the last sweep (" + std::to_string(res.iterations) + ")";
    throw interrupt::Interrupted(sig, "interrupted by " + interrupt::signal_name(sig) + " " + at +
                                          "; the field so far was written to " + o.common.out + " (status " +
                                          to_string(res.status) + ", --restart continues it)");
  }
  if (res.status == Status::diverged)
    std::fprintf(stderr, "heat2d: diverged at sweep %lld (residual %g); the field was written to %s\n",
                 static_cast<long long>(res.iterations), res.final_residual, o.common.out.c_str());
  else if (!rep.validation_passed)
    std::fprintf(stderr, "heat2d: validation failed: max |u - u_eigen| = %g > %g\n", *rep.eigen_max_abs_diff,
                 rep.eigen_tolerance);
  return rank_exit;
}

}  // namespace

int run(const Options& o, ranks::Comm& comm) {
  if (o.implicit_mode) return implicit::run(o.implicit, o.common, comm, o.command);
  HostTimer total;
  // Everything the user gave is checked before anything is computed or written; a failure on any
  // rank stops every rank with rank 0 naming it.
  Problem p = o.p;
  StopRule rule;
  Restart restart;
  RunOptions ro;
  Decomposition dec;  // the grid's rows over the ranks: made here, once, and handed down
  int t = 0;          // --sweeps-per-pass as a number (0: auto)
  bool fell_back = false;
  std::exception_ptr failed;
  try {
    p.ny = o.ny > 0 ? o.ny : p.nx;
    p.mode = o.mode == "transient" ? Mode::transient : Mode::steady;
    p.top = parse_spec(o.bc_top, "--bc-top");
    p.bottom = parse_spec(o.bc_bottom, "--bc-bottom");
    p.left = parse_spec(o.bc_left, "--bc-left");
    p.right = parse_spec(o.bc_right, "--bc-right");
    p.init = parse_spec(o.init, "--init");
    if (!o.bench) {
      finalize(p);
      dec = decompose(p, comm.size(), comm.rank());  // refuses more ranks than interior rows
    } else {
      (void)bench_sizes(o, reduce::Backend::cpu, comm.size());
    }
    rule = make_stop_rule(p, o.tol, o.max_iter, o.check_every);
    t = parse_sweeps_per_pass(o.sweeps_per_pass);
    // Refuses what cannot work (the backend does not matter for that; --bench sets its own t).
    (void)resolve_sweeps_per_pass(t, o.check_every, reduce::Backend::cpu,
                                  o.bench ? max_sweeps_per_pass : deepest_pass(dec));
    if (!o.restart.empty()) {
      if (o.bench) throw InputError("--restart: not with --bench");
      restart = read_restart(o.restart, p, o.common.precision, rule);
    }
    ro.backend = reduce::resolve_backend(o.common.backend, &fell_back);
    if (comm.is_root()) probe_out(o.common.out);
  } catch (...) {
    if (comm.size() == 1) throw;
    failed = std::current_exception();
  }
  comm.agree(failed);
  // --backend auto: the CPU everywhere unless every rank has a GPU (the ranks' transports must match).
  const std::vector<int> on_gpu = comm.allgather<int>(ro.backend == reduce::Backend::cuda ? 1 : 0);
  if (std::find(on_gpu.begin(), on_gpu.end(), 0) != on_gpu.end() && ro.backend == reduce::Backend::cuda) {
    ro.backend = reduce::Backend::cpu;  // only "auto" gets here: "cuda" without a GPU failed above
    fell_back = true;
  }
  if (fell_back && comm.is_root()) std::fprintf(stderr, "heat2d: no usable CUDA device, running on the CPU backend\n");
  ro.device = o.common.device;
  if (ro.backend == reduce::Backend::cuda && comm.size() > 1) {
    ro.device = comm.pick_device(o.common.device);
    comm.use_device(ro.device);  // collective: NCCL, or host staging when ranks share a GPU
  }
  ro.cuda_kernel = o.cuda_kernel;
  ro.sweeps_per_pass = t;
  ro.validate = o.validate;
  ro.progress = !o.common.quiet && !o.common.json;
  ro.keep_partial = o.keep_partial;
  ro.comm = &comm;
  ro.decomposition = o.bench ? nullptr : &dec;            // --bench decomposes each of its problems
  ro.gather = comm.size() == 1 || !h5::parallel_built();  // else each rank writes its rows (parallel HDF5)

  if (o.bench) return run_bench(o, ro, comm);
  if (o.common.precision == "float") return solve_and_write<float>(o, p, rule, ro, comm, total, restart);
  return solve_and_write<double>(o, p, rule, ro, comm, total, restart);
}

}  // namespace tally::heat2d
