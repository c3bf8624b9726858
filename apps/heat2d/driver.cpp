#include "driver.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <memory>

#include "tally/common/interrupt.hpp"
#include "tally/common/progress.hpp"
#include "tally/ranks/split.hpp"
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

namespace {

struct BenchCase {
  std::int64_t check_every;
  int t;
};

template <class T>
void bench_size(BenchTable& table, const RunOptions& o, std::int64_t n, const std::string& kernel,
                const std::vector<BenchCase>& cases) {
  Problem p;
  p.nx = p.ny = n;
  p.init = parse_spec("sin", "--init");
  finalize(p);
  const double field_bytes = static_cast<double>(n * n) * sizeof(T);
  // About 20 ms per timed repeat at the copy bandwidth (t = 1), a multiple of 8 sweeps.
  const auto sweeps =
      static_cast<std::int64_t>(std::clamp(0.02 * table.copy_gb_per_s * 1e9 / (2.0 * field_bytes), 24.0, 20000.0)) / 8 *
      8;
  const std::vector<T> u0 = initial_field<T>(p);
  for (const BenchCase& bc : cases) {
    auto solver = make_solver<T>(o.backend, p, {o.device, kernel, nullptr, nullptr, bc.t});
    solver->set_field(u0);
    StopRule rule;
    rule.tol = -1.0;  // never converges: every repeat runs all its sweeps
    rule.check_every = bc.check_every;
    rule.last = sweeps;
    (void)solver->solve(rule);  // warm-up
    std::vector<double> t;
    for (int rep = 0; rep < table.repeats; ++rep)
      t.push_back(solver->solve(rule).solve_s / static_cast<double>(sweeps));
    std::sort(t.begin(), t.end());
    BenchRow row;
    row.kernel = o.backend == reduce::Backend::cuda ? (bc.t > 1 ? "blocked" : kernel) : "cpu";
    row.precision = sizeof(T) == 4 ? "float" : "double";
    row.n = n;
    row.check_every = bc.check_every;
    row.sweeps_per_pass = bc.t;
    row.sweeps = sweeps;
    row.per_sweep_s = t[t.size() / 2];
    row.gb_per_s = 2.0 * field_bytes / static_cast<double>(bc.t) / row.per_sweep_s / 1e9;
    row.fraction_of_copy = row.gb_per_s / table.copy_gb_per_s;
    row.equivalent_fraction_of_copy = 2.0 * field_bytes / row.per_sweep_s / 1e9 / table.copy_gb_per_s;
    table.rows.push_back(row);
  }
}

/// The median per-sweep time of `repeats` runs of `sweeps` sweeps checked every sweep (after one
/// warm-up); across ranks the slowest rank's time of each run.
template <class T>
double time_sweeps(const Problem& p, const RunOptions& o, const ranks::Comm* comm, std::int64_t sweeps, int repeats) {
  const Decomposition dec = comm ? decompose(p, comm->size(), comm->rank()) : decompose(p);  // this problem's
  auto solver = make_solver<T>(o.backend, p, {o.device, o.cuda_kernel, comm, &dec});
  const Block b = local_block(dec);
  solver->set_field(initial_field<T>(p, b.row0, b.rows));
  StopRule rule;
  rule.tol = -1.0;  // never converges: every repeat runs all its sweeps
  rule.last = sweeps;
  (void)solver->solve(rule);  // warm-up
  std::vector<double> t;
  for (int rep = 0; rep < repeats; ++rep) {
    const double s = solver->solve(rule).solve_s / static_cast<double>(sweeps);
    t.push_back(comm ? comm->stats(s).max : s);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

template <class T>
ScalingRow scaling_row(const RunOptions& o, std::int64_t n, std::int64_t sweeps, int repeats) {
  const ranks::Comm& comm = *o.comm;
  Problem p;
  p.nx = p.ny = n;
  p.init = parse_spec("sin", "--init");
  finalize(p);
  ScalingRow row;
  row.precision = sizeof(T) == 4 ? "float" : "double";
  row.n = n;
  row.sweeps = sweeps;
  std::vector<double> one{0.0};
  if (comm.is_root()) one[0] = time_sweeps<T>(p, o, nullptr, sweeps, repeats);  // rank 0 alone
  comm.broadcast<double>(one);
  row.one_rank_s = one[0];
  row.strong_s = time_sweeps<T>(p, o, &comm, sweeps, repeats);
  p.ny = static_cast<std::int64_t>(comm.size()) * (n - 2) + 2;
  finalize(p);
  row.weak_s = time_sweeps<T>(p, o, &comm, sweeps, repeats);
  return row;
}

}  // namespace

ScalingTable run_scaling(const RunOptions& o, const std::vector<std::int64_t>& sizes, bool quiet) {
  ScalingTable table;
  table.ranks = o.comm->size();
  table.repeats = o.backend == reduce::Backend::cuda ? 11 : 3;
  for (auto n : sizes) {
    if (!quiet && o.comm->is_root())
      std::fprintf(stderr, "heat2d bench: %lld^2 on 1 and %d ranks ...\n", static_cast<long long>(n), table.ranks);
    // About 20 ms per timed repeat on one rank at a nominal 1 TB/s (GPU; at least 50 sweeps, more
    // than the host's lookahead) or 10 GB/s (CPU).
    const bool gpu = o.backend == reduce::Backend::cuda;
    const auto sweeps = static_cast<std::int64_t>(std::clamp(
        0.02 * (gpu ? 1e12 : 1e10) / (2.0 * static_cast<double>(n * n) * sizeof(double)), gpu ? 50.0 : 10.0, 20000.0));
    table.rows.push_back(scaling_row<float>(o, n, sweeps, table.repeats));
    table.rows.push_back(scaling_row<double>(o, n, sweeps, table.repeats));
  }
  return table;
}

BenchTable run_bench(const RunOptions& o, const std::vector<std::int64_t>& sizes, bool quiet) {
  BenchTable table;
  const bool gpu = o.backend == reduce::Backend::cuda;
  table.copy_bytes = gpu ? std::int64_t{1} << 30 : std::int64_t{256} << 20;
  table.repeats = gpu ? 11 : 3;
  table.copy_gb_per_s = copy_bandwidth_gbs(o.backend, table.copy_bytes, gpu ? 20 : 5, o.device);
  const std::vector<std::string> kernels =
      gpu ? std::vector<std::string>{"async", "registers", "persistent"} : std::vector<std::string>{"cpu"};
  // Every kernel checked every sweep and every 100; then, the registers kernel, checked every 8
  // sweeps with 1, 2, 4 and 8 sweeps a pass (temporal blocking against t = 1 in the same run), and
  // the persistent kernel checked every 8 (t = 1).
  const std::vector<BenchCase> plain = {{1, 1}, {100, 1}}, blocked = {{8, 1}, {8, 2}, {8, 4}, {8, 8}};
  for (const auto& kernel : kernels)
    for (auto n : sizes) {
      interrupt::check("between benchmark cases");
      if (!quiet) std::fprintf(stderr, "heat2d bench: %s %lld^2 ...\n", kernel.c_str(), static_cast<long long>(n));
      std::vector<BenchCase> cases = plain;
      if (kernel == "registers" || kernel == "cpu") cases.insert(cases.end(), blocked.begin(), blocked.end());
      if (kernel == "persistent") cases.push_back({8, 1});
      bench_size<float>(table, o, n, kernel, cases);
      bench_size<double>(table, o, n, kernel, cases);
    }
  return table;
}

}  // namespace tally::heat2d
