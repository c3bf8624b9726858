#include "driver.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "tally/common/progress.hpp"
#include "tally/common/interrupt.hpp"

namespace tally::heat2d {

template <class T>
Report<T> run_problem(const Problem& p, const StopRule& rule, const RunOptions& o) {
  Report<T> rep;
  HostTimer t;
  auto solver = make_solver<T>(o.backend, p, {o.device, o.cuda_kernel});
  const std::vector<T> u0 = initial_field<T>(p);
  rep.timings.set("setup", t.seconds());

  t.restart();
  solver->set_field(u0);
  rep.timings.set("h2d", t.seconds());

  Progress progress(!o.progress);
  char line[160];
  rep.result = solver->solve(rule, [&](std::int64_t k, double r, double s) {
    interrupt::check("at sweep " + std::to_string(k));  // a safe point: each checked sweep
    if (!progress.due()) return;
    std::snprintf(line, sizeof line, "heat2d: sweep %lld  residual %.3e  %.3g sweeps/s", static_cast<long long>(k), r,
                  s > 0 ? static_cast<double>(k) / s : 0.0);
    progress.update(line);
  });
  progress.finish();
  const auto& res = rep.result;
  rep.timings.set("solve", res.solve_s);
  rep.timings.set("per_sweep", res.solve_s / static_cast<double>(std::max<std::int64_t>(res.iterations, 1)));

  t.restart();
  rep.field.resize(u0.size());
  solver->get_field(rep.field);
  rep.timings.set("d2h", t.seconds());

  rep.sim_time = static_cast<double>(res.iterations) * p.dt;
  if (has_analytic(p) && res.status != Status::diverged)
    rep.analytic = analytic_error<T>(p, std::span<const T>(rep.field), rep.sim_time);
  if (o.validate) {
    const std::vector<T> ref = eigen_sweeps<T>(p, u0, res.iterations);
    rep.eigen_max_abs_diff = max_abs_diff<T>(rep.field, ref);
    rep.eigen_tolerance = rounding_tolerance<T>(res.iterations, max_abs<T>(u0));
    rep.validation_passed = *rep.eigen_max_abs_diff <= rep.eigen_tolerance;
  }
  return rep;
}
template Report<float> run_problem<float>(const Problem&, const StopRule&, const RunOptions&);
template Report<double> run_problem<double>(const Problem&, const StopRule&, const RunOptions&);

namespace {

template <class T>
void bench_size(BenchTable& table, const RunOptions& o, std::int64_t n, const std::string& kernel) {
  Problem p;
  p.nx = p.ny = n;
  p.init = parse_spec("sin", "--init");
  finalize(p);
  auto solver = make_solver<T>(o.backend, p, {o.device, kernel});
  solver->set_field(initial_field<T>(p));
  const double field_bytes = static_cast<double>(n * n) * sizeof(T);
  // About 20 ms per timed repeat at the copy bandwidth.
  const auto sweeps = static_cast<std::int64_t>(
      std::clamp(0.02 * table.copy_gb_per_s * 1e9 / (2.0 * field_bytes), 20.0, 20000.0));
  for (std::int64_t ce : {std::int64_t{1}, std::int64_t{100}}) {
    StopRule rule;
    rule.tol = -1.0;  // never converges: every repeat runs all its sweeps
    rule.check_every = ce;
    rule.last = sweeps;
    (void)solver->solve(rule);  // warm-up
    std::vector<double> t;
    for (int rep = 0; rep < table.repeats; ++rep) t.push_back(solver->solve(rule).solve_s / static_cast<double>(sweeps));
    std::sort(t.begin(), t.end());
    BenchRow row;
    row.kernel = o.backend == reduce::Backend::cuda ? kernel : "cpu";
    row.precision = sizeof(T) == 4 ? "float" : "double";
    row.n = n;
    row.check_every = ce;
    row.sweeps = sweeps;
    row.per_sweep_s = t[t.size() / 2];
    row.gb_per_s = 2.0 * field_bytes / row.per_sweep_s / 1e9;
    row.fraction_of_copy = row.gb_per_s / table.copy_gb_per_s;
    table.rows.push_back(row);
  }
}

}  // namespace

BenchTable run_bench(const RunOptions& o, const std::vector<std::int64_t>& sizes, bool quiet) {
  BenchTable table;
  const bool gpu = o.backend == reduce::Backend::cuda;
  table.copy_bytes = gpu ? std::int64_t{1} << 30 : std::int64_t{256} << 20;
  table.repeats = gpu ? 11 : 3;
  table.copy_gb_per_s = copy_bandwidth_gbs(o.backend, table.copy_bytes, gpu ? 20 : 5, o.device);
  const std::vector<std::string> kernels =
      gpu ? std::vector<std::string>{"async", "registers"} : std::vector<std::string>{"cpu"};
  for (const auto& kernel : kernels)
    for (auto n : sizes) {
      interrupt::check("between benchmark cases");
      if (!quiet) std::fprintf(stderr, "heat2d bench: %s %lld^2 ...\n", kernel.c_str(), static_cast<long long>(n));
      bench_size<float>(table, o, n, kernel);
      bench_size<double>(table, o, n, kernel);
    }
  return table;
}

}  // namespace tally::heat2d
