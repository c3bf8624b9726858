// heat2d --bench (driver.hpp): on one rank, the per-sweep time of steady sweeps against the
// backend's copy bandwidth for each kernel, size, precision, check interval and sweeps a pass; on
// several, strong and weak scaling against one rank. Rank 0 prints the table and writes the file.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "driver.hpp"
#include "heat2d_output.hpp"
#include "implicit/engine.hpp"
#include "implicit/traffic.hpp"
#include "tally/common/app.hpp"
#include "tally/common/error.hpp"
#include "tally/common/h5.hpp"
#include "tally/common/interrupt.hpp"
#include "tally/common/provenance.hpp"

namespace tally::heat2d {

namespace {

using ranks::Comm;

struct BenchRow {
  std::string kernel;  ///< cuda: async / registers; cpu: cpu
  std::string precision;
  std::int64_t n = 0;  ///< n x n grid
  std::int64_t check_every = 0;
  int sweeps_per_pass = 1;   ///< t: sweeps a pass over memory
  std::int64_t sweeps = 0;   ///< per timed repeat
  double per_sweep_s = 0.0;  ///< median over repeats
  double gb_per_s = 0.0;     ///< 2 x field bytes per pass (the field read and written once per t sweeps)
  double fraction_of_copy = 0.0;
  double equivalent_fraction_of_copy = 0.0;  ///< 2 x field bytes per sweep, against the copy rate
};
struct BenchTable {
  double copy_gb_per_s = 0.0;
  std::int64_t copy_bytes = 0;
  int repeats = 0;
  std::vector<BenchRow> rows;
};
/// Several ranks (RunOptions::comm): the per-sweep time of steady sweeps checked every sweep, for
/// each size n, float and double, on one rank (rank 0 alone, the others waiting) and split over
/// every rank: strong scaling (the same n x n grid) and weak scaling (each rank n - 2 interior rows:
/// n x (N (n - 2) + 2)). The times across ranks are the slowest rank's. Collective.
struct ScalingRow {
  std::string precision;
  std::int64_t n = 0;
  std::int64_t sweeps = 0;
  double one_rank_s = 0.0, strong_s = 0.0, weak_s = 0.0;  ///< per sweep, median over repeats
  [[nodiscard]] double strong_efficiency(int ranks) const { return one_rank_s / (ranks * strong_s); }
  [[nodiscard]] double weak_efficiency() const { return one_rank_s / weak_s; }
};
struct ScalingTable {
  int ranks = 1;
  int repeats = 0;
  std::vector<ScalingRow> rows;
};

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

/// Several ranks: each size's scaling row (ScalingTable). Collective.
ScalingTable scaling_table(const RunOptions& o, const std::vector<std::int64_t>& sizes, bool quiet) {
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

/// Per-sweep time of n x n steady sweeps (init sin, never zeros) for each size, float and double,
/// checked every sweep and every 100 sweeps, against the backend's copy bandwidth measured first;
/// on CUDA for each sweep kernel; then checked every 8 sweeps with t = 1, 2, 4 and 8 sweeps a pass
/// (CUDA: the registers kernel for t = 1, the blocked kernel beyond).
BenchTable bench_table(const RunOptions& o, const std::vector<std::int64_t>& sizes, bool quiet) {
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

/// Several ranks: strong and weak scaling against one rank (scaling_table), a table on rank 0.
int bench_ranks(const Options& o, const RunOptions& ro, const Comm& comm) {
  const ScalingTable t = scaling_table(ro, bench_sizes(o, ro.backend, comm.size()), o.common.quiet || o.common.json);
  if (!comm.is_root()) return exit_ok;
  const auto dev = device_of(ro);
  const int N = t.ranks;
  std::printf("| heat2d scaling on %d ranks of %s (%s), checked every sweep; times per sweep, median of %d |\n", N,
              dev ? dev->name.c_str() : "cpu", transport_of(comm, ro).c_str(), t.repeats);
  std::printf("| %-6s | %-7s | %-11s | %-14s | %-9s | %-14s | %-9s |\n", "type", "n", "1 rank us", "strong n^2 us",
              "strong %", "weak n x Nn us", "weak %");
  std::vector<std::int64_t> n, sweeps;
  std::vector<std::int32_t> bytes;
  std::vector<double> one, strong, weak, se, we;
  for (const auto& r : t.rows) {
    std::printf("| %-6s | %-7lld | %11.2f | %14.2f | %8.1f%% | %14.2f | %8.1f%% |\n", r.precision.c_str(),
                static_cast<long long>(r.n), r.one_rank_s * 1e6, r.strong_s * 1e6, 100.0 * r.strong_efficiency(N),
                r.weak_s * 1e6, 100.0 * r.weak_efficiency());
    n.push_back(r.n), sweeps.push_back(r.sweeps), bytes.push_back(r.precision == "float" ? 4 : 8);
    one.push_back(r.one_rank_s), strong.push_back(r.strong_s), weak.push_back(r.weak_s);
    se.push_back(r.strong_efficiency(N)), we.push_back(r.weak_efficiency());
  }
  auto file = h5::File::create(o.common.out);
  file.attr("app", "heat2d");
  file.attr("backend", reduce::to_string(ro.backend));
  file.attr("status", "bench");
  auto g = file.group("bench/scaling");
  g.attr("ranks", static_cast<std::int64_t>(N));
  g.attr("transport", transport_of(comm, ro));
  g.attr("shares_device", shared_gpu(comm, ro));
  g.attr("repeats", static_cast<std::int64_t>(t.repeats));
  g.write<std::int64_t>("n", n);
  g.write<std::int32_t>("precision_bytes", bytes);
  g.write<std::int64_t>("sweeps", sweeps);
  g.write<double>("one_rank_per_sweep_s", one);
  g.write<double>("strong_per_sweep_s", strong);
  g.write<double>("weak_per_sweep_s", weak);
  g.write<double>("strong_efficiency", se);
  g.write<double>("weak_efficiency", we);
  write_provenance(file, collect_provenance(o.command, dev), dev);
  file.commit();
  return exit_ok;
}

/// The implicit mode's rows (CUDA): one step of TeaLeaf's five-state problem on n x n cells for each
/// solver, to a fixed count of iterations (eps 0; Chebyshev and PPCG take over after 21 CG steps),
/// dots exact and ordinary, Chebyshev at 1, 2 and 5 steps a pass; the time per iteration, and the
/// bytes a one-step-a-pass iteration moves (implicit/traffic.hpp) over the solve's time against the
/// copy bandwidth (for blocked Chebyshev what a one-step kernel would need: it may pass 100%).
struct ImplicitRow {
  implicit::SolverKind solver = implicit::SolverKind::cg;
  bool reproducible = true;
  int steps_per_pass = 1;  ///< Chebyshev steps a pass over memory (1 for the other solvers)
  std::int64_t n = 0, iterations = 0, cg_iterations = 0;
  double per_iteration_s = 0.0;  ///< median over repeats
  double bytes_per_cell = 0.0;   ///< of the solver's own iteration (traffic.hpp)
  double gb_per_s = 0.0;         ///< the solve's modelled bytes over its time
  double fraction_of_copy = 0.0;
};

std::vector<ImplicitRow> implicit_rows(const RunOptions& o, const std::vector<std::int64_t>& sizes, double copy_gbs,
                                       int repeats, bool quiet) {
  namespace im = implicit;
  std::vector<ImplicitRow> rows;
  for (auto n : sizes) {
    const std::string side = std::to_string(n);
    const im::Deck d = im::parse_deck(
        "state 1 density=100.0 energy=0.0001\n"
        "state 2 density=0.1 energy=25.0 geometry=rectangle xmin=0.0 xmax=1.0 ymin=1.0 ymax=2.0\n"
        "state 3 density=0.1 energy=0.1 geometry=rectangle xmin=1.0 xmax=6.0 ymin=1.0 ymax=2.0\n"
        "state 4 density=0.1 energy=0.1 geometry=rectangle xmin=5.0 xmax=6.0 ymin=1.0 ymax=8.0\n"
        "state 5 density=0.1 energy=0.1 geometry=rectangle xmin=5.0 xmax=10.0 ymin=7.0 ymax=8.0\n"
        "x_cells " +
            side + "\ny_cells " + side + "\nxmin 0\nxmax 10\nymin 0\nymax 10\ninitial_timestep 0.004\nend_step 1\n",
        "<bench>");
    const im::Grid g = im::make_grid(d);
    const im::State0 s0 = im::initial_state(d, g);
    for (const im::SolverKind solver :
         {im::SolverKind::cg, im::SolverKind::chebyshev, im::SolverKind::ppcg, im::SolverKind::jacobi})
      for (const int steps : solver == im::SolverKind::chebyshev ? std::vector<int>{1, 2, 5} : std::vector<int>{1})
        for (const bool reproducible : {true, false}) {
          interrupt::check("between benchmark cases");
          if (!quiet)
            std::fprintf(stderr, "heat2d bench: implicit %s %lld^2 ...\n", im::to_string(solver).c_str(),
                         static_cast<long long>(n));
          im::SolveOptions so = im::solve_options(d);
          so.solver = solver;
          so.preconditioner = im::Preconditioner::none;
          so.reproducible = reproducible;
          so.cheby_steps_per_pass = steps;
          so.eps = 0.0;  // never converged: every repeat runs all its iterations
          so.check_result = false;
          so.error_switch = true;  // the switch after 21 CG steps, whatever their error
          so.eps_lim = std::numeric_limits<double>::infinity();
          so.max_iters = solver == im::SolverKind::ppcg ? 21 + 20 : solver == im::SolverKind::cg ? 200 : 221;
          auto e = im::make_cuda_engine(d, g, o.device);
          e->set_state(s0.density, s0.energy);
          (void)e->step(d.initial_timestep, so);  // warm-up
          std::vector<im::SolveStats> runs;
          for (int rep = 0; rep < repeats; ++rep) {
            runs.push_back(e->step(d.initial_timestep, so));
            if (runs.back().status != im::SolveStatus::max_iters)
              throw Error("heat2d bench: the implicit " + im::to_string(solver) + " solve stopped early (" +
                          im::to_string(runs.back().status) + ")");
          }
          std::sort(runs.begin(), runs.end(), [](const auto& a, const auto& b) { return a.solve_s < b.solve_s; });
          const im::SolveStats& m = runs[runs.size() / 2];
          ImplicitRow row;
          row.solver = solver;
          row.reproducible = reproducible;
          row.steps_per_pass = steps;
          row.n = n;
          row.iterations = m.iterations;
          row.cg_iterations = m.cg_iterations;
          row.per_iteration_s = m.solve_s / static_cast<double>(m.iterations);
          row.bytes_per_cell = im::bytes_per_cell(solver, so.preconditioner, so.inner_steps);
          row.gb_per_s =
              static_cast<double>(n * n) *
              im::solve_bytes_per_cell(solver, so.preconditioner, so.inner_steps, m.cg_iterations, m.iterations) /
              m.solve_s / 1e9;
          row.fraction_of_copy = row.gb_per_s / copy_gbs;
          rows.push_back(row);
        }
  }
  return rows;
}

/// The implicit rows as a table and, per solver, a group bench/implicit/<solver> of the result file.
void implicit_table(const std::vector<ImplicitRow>& rows, h5::File& file) {
  // B/cell: one iteration of the solver (PPCG: an outer step with its 10 inner steps); GB/s and
  // % copy: the solve's bytes (its CG steps too) over its time.
  std::printf("| %-10s | %-6s | %-5s | %-11s | %-10s | %-10s | %-8s | %-7s | %-8s |\n", "implicit", "dots", "t", "grid",
              "iterations", "us/iter", "B/cell", "GB/s", "% copy");
  for (const auto& r : rows) {
    const std::string grid = std::to_string(r.n) + "^2";
    std::printf("| %-10s | %-6s | %5d | %-11s | %10lld | %10.2f | %8.1f | %7.0f | %7.1f%% |\n",
                implicit::to_string(r.solver).c_str(), r.reproducible ? "exact" : "plain", r.steps_per_pass,
                grid.c_str(), static_cast<long long>(r.iterations), r.per_iteration_s * 1e6, r.bytes_per_cell,
                r.gb_per_s, 100.0 * r.fraction_of_copy);
  }
  for (const implicit::SolverKind solver : {implicit::SolverKind::cg, implicit::SolverKind::chebyshev,
                                            implicit::SolverKind::ppcg, implicit::SolverKind::jacobi}) {
    std::vector<std::int32_t> exact, steps;
    std::vector<std::int64_t> n, its, cg;
    std::vector<double> per, bpc, gbs, frac;
    for (const auto& r : rows) {
      if (r.solver != solver) continue;
      exact.push_back(r.reproducible ? 1 : 0), steps.push_back(r.steps_per_pass), n.push_back(r.n);
      its.push_back(r.iterations);
      cg.push_back(r.cg_iterations), per.push_back(r.per_iteration_s), bpc.push_back(r.bytes_per_cell);
      gbs.push_back(r.gb_per_s), frac.push_back(r.fraction_of_copy);
    }
    if (n.empty()) continue;
    auto g = file.group("bench/implicit/" + implicit::to_string(solver));
    g.write<std::int32_t>("exact_dots", exact);
    g.write<std::int32_t>("steps_per_pass", steps);
    g.write<std::int64_t>("n", n);
    g.write<std::int64_t>("iterations", its);
    g.write<std::int64_t>("cg_iterations", cg);
    g.write<double>("per_iteration_s", per);
    g.write<double>("bytes_per_cell", bpc);
    g.write<double>("gb_per_s", gbs);
    g.write<double>("fraction_of_copy", frac);
  }
}

int bench_one(const Options& o, const RunOptions& ro) {
  const BenchTable t = bench_table(ro, bench_sizes(o, ro.backend, 1), o.common.quiet || o.common.json);
  const auto dev = device_of(ro);
  std::printf("| heat2d bench on %s: copy bandwidth %.0f GB/s (memcpy of %lld MiB, read + write, median) |\n",
              dev ? dev->name.c_str() : "cpu", t.copy_gb_per_s, static_cast<long long>(t.copy_bytes >> 20));
  // GB/s and % copy: the field read and written once a pass (nominal: the overlap the blocked
  // kernel recomputes is not counted); equivalent % copy: once a sweep, as a t = 1 kernel would need.
  std::printf("| %-10s | %-6s | %-11s | %-11s | %-2s | %-10s | %-7s | %-8s | %-13s |\n", "kernel", "type", "grid",
              "check-every", "t", "us/sweep", "GB/s", "% copy", "equiv. % copy");
  std::vector<std::int64_t> n, ce, sweeps, tpp;
  std::vector<double> per, gbs, frac, equiv;
  std::vector<std::int32_t> bytes, kernel_async, kernel_persistent;
  for (const auto& r : t.rows) {
    const std::string grid = std::to_string(r.n) + "^2";
    std::printf("| %-10s | %-6s | %-11s | %11lld | %2d | %10.2f | %7.0f | %7.1f%% | %12.1f%% |\n", r.kernel.c_str(),
                r.precision.c_str(), grid.c_str(), static_cast<long long>(r.check_every), r.sweeps_per_pass,
                r.per_sweep_s * 1e6, r.gb_per_s, 100.0 * r.fraction_of_copy, 100.0 * r.equivalent_fraction_of_copy);
    n.push_back(r.n), ce.push_back(r.check_every), sweeps.push_back(r.sweeps), tpp.push_back(r.sweeps_per_pass);
    per.push_back(r.per_sweep_s), gbs.push_back(r.gb_per_s), frac.push_back(r.fraction_of_copy);
    equiv.push_back(r.equivalent_fraction_of_copy);
    bytes.push_back(r.precision == "float" ? 4 : 8);
    kernel_async.push_back(r.kernel == "async" ? 1 : 0);
    kernel_persistent.push_back(r.kernel == "persistent" ? 1 : 0);
  }
  const std::vector<ImplicitRow> im =
      ro.backend == reduce::Backend::cuda
          ? implicit_rows(ro, bench_sizes(o, ro.backend, 1), t.copy_gb_per_s, 5, o.common.quiet || o.common.json)
          : std::vector<ImplicitRow>{};
  auto file = h5::File::create(o.common.out);
  file.attr("app", "heat2d");
  file.attr("backend", reduce::to_string(ro.backend));
  file.attr("status", "bench");
  if (!im.empty()) implicit_table(im, file);
  auto g = file.group("bench");
  g.attr("copy_gb_per_s", t.copy_gb_per_s);
  g.attr("copy_bytes", t.copy_bytes);
  g.attr("repeats", static_cast<std::int64_t>(t.repeats));
  g.write<std::int64_t>("n", n);
  g.write<std::int32_t>("precision_bytes", bytes);
  g.write<std::int32_t>("kernel_async", kernel_async);
  g.write<std::int32_t>("kernel_persistent", kernel_persistent);
  g.write<std::int64_t>("check_every", ce);
  g.write<std::int64_t>("sweeps", sweeps);
  g.write<double>("per_sweep_s", per);
  g.write<double>("gb_per_s", gbs);
  g.write<double>("fraction_of_copy", frac);
  g.write<std::int64_t>("sweeps_per_pass", tpp);
  g.write<double>("equivalent_fraction_of_copy", equiv);
  write_provenance(file, collect_provenance(o.command, dev), dev);
  file.commit();
  return exit_ok;
}

}  // namespace

std::vector<std::int64_t> bench_sizes(const Options& o, reduce::Backend b, int ranks) {
  std::vector<std::int64_t> sizes = o.bench_sizes;
  if (sizes.empty()) {
    if (ranks > 1)  // the scaling goals' sizes
      sizes =
          b == reduce::Backend::cuda ? std::vector<std::int64_t>{8192, 16384} : std::vector<std::int64_t>{512, 1024};
    else
      sizes = b == reduce::Backend::cuda ? std::vector<std::int64_t>{1024, 2048, 4096, 8192}
                                         : std::vector<std::int64_t>{256, 512, 1024};
  }
  for (auto n : sizes)
    if (n < 3 || n - 2 < ranks)
      throw InputError("--bench-sizes " + std::to_string(n) + ": needs at least 3 points and an interior row per rank");
  return sizes;
}

int run_bench(const Options& o, const RunOptions& ro, const Comm& comm) {
  return comm.size() > 1 ? bench_ranks(o, ro, comm) : bench_one(o, ro);
}

}  // namespace tally::heat2d
