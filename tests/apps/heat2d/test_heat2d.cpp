// heat2d on the CPU backend: against the Eigen iteration, the analytic solutions (order of accuracy),
// the exact discrete decay of the sine mode, the expected table, divergence and bad input.
#include <cmath>
#include <cstring>
#include <numbers>

#include "heat2d_test_support.hpp"
#include "tally/common/error.hpp"

using namespace heat2d_test;
using tally::reduce::Backend;

namespace {

template <class T>
SolveResult run_sweeps(const Problem& p, const std::vector<T>& u0, const StopRule& rule, std::vector<T>& out) {
  auto s = make_solver<T>(Backend::cpu, p);
  s->set_field(u0);
  auto r = s->solve(rule);
  out.resize(u0.size());
  s->get_field(out);
  return r;
}

StopRule fixed_sweeps(std::int64_t n, std::int64_t check_every) {
  StopRule rule;
  rule.tol = -1.0;  // never converges: exactly n sweeps
  rule.check_every = check_every;
  rule.last = n;
  return rule;
}

}  // namespace

TEMPLATE_TEST_CASE("cpu solver matches the Eigen iteration on random fields", "[heat2d]", float, double) {
  using T = TestType;
  auto g = tally::test::rng(1);
  for (int trial = 0; trial < 4; ++trial) {
    Problem p;
    p.nx = 5 + static_cast<std::int64_t>(g() % 60);
    p.ny = 5 + static_cast<std::int64_t>(g() % 60);
    p.mode = trial % 2 ? Mode::transient : Mode::steady;
    p.dt = (0.05 + 0.2 * static_cast<double>(g() % 1000) / 1000.0) * p.h() * p.h();  // r in [0.05, 0.25)
    finalize(p);
    const std::int64_t n = 50 + static_cast<std::int64_t>(g() % 100), ce = 1 + static_cast<std::int64_t>(g() % 9);
    INFO("trial " << trial << ": " << p.nx << "x" << p.ny << " " << to_string(p.mode) << " r=" << p.r() << " sweeps "
                  << n << " check-every " << ce);
    const auto u0 = random_field<T>(p, 100 + static_cast<std::uint64_t>(trial));
    std::vector<T> u;
    const auto r = run_sweeps<T>(p, u0, fixed_sweeps(n, ce), u);
    CHECK(r.status == Status::max_iter);
    CHECK(r.iterations == n);
    const auto ref = eigen_sweeps<T>(p, u0, n);
    const double tol = rounding_tolerance<T>(n, max_abs<T>(u0));
    CHECK(max_abs_diff<T>(u, ref) <= tol);
    // The fused residual is max |u_n - u_{n-1}| of the reference.
    const auto prev = eigen_sweeps<T>(p, u0, n - 1);
    CHECK(r.final_residual == Catch::Approx(max_abs_diff<T>(ref, prev)).margin(tol));
    // Checked sweeps: every ce-th, and the last.
    for (std::size_t c = 0; c < r.check_iteration.size(); ++c) {
      const auto k = r.check_iteration[c];
      CHECK((k % ce == 0 || k == n));
    }
    CHECK(r.check_iteration.size() == static_cast<std::size_t>(n / ce + (n % ce ? 1 : 0)));
  }
}

// The five-point scheme solves both analytic problems exactly in closed form, so each grid's error
// against the analytic solution is known to rounding: the steady one by sin(pi x) sinh(mu y) / sinh(mu)
// with cosh(mu h) = 2 - cos(pi h), the transient mode by g^steps sin(pi x) sin(pi y) with
// g = 1 - 8 r sin^2(pi h/2). What a run reports differs from it by at most the run's own error against
// that solution, bounded as tests/python/test_real_quick.py derives: (residual + 4u) / (2 h^2) + 4u for
// a converged Jacobi run, (steps + 1) 20u for the explicit steps; 1e-12 covers the evaluations.
namespace {
double steady_discrete_error(std::int64_t n) {
  const double pi = std::numbers::pi, h = 1.0 / static_cast<double>(n - 1);
  const double z = 2 * std::pow(std::sin(pi * h / 2), 2), mu = std::log1p(z + std::sqrt(z * (2 + z))) / h;
  double e = 0;
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = 0; i < n; ++i) {
      const double x = static_cast<double>(i) * h, y = static_cast<double>(j) * h;
      e = std::max(
          e, std::abs(std::sin(pi * x) * (std::sinh(mu * y) / std::sinh(mu) - std::sinh(pi * y) / std::sinh(pi))));
    }
  return e;
}
constexpr double u64 = 0x1p-53;
}  // namespace

TEST_CASE("steady analytic error shrinks as h^2", "[heat2d][analytic]") {
  for (std::int64_t n : {17, 33, 65}) {
    Problem p;
    p.nx = p.ny = n;
    finalize(p);
    RunOptions o;
    const auto rep = run_problem<double>(p, make_stop_rule(p, 1e-13, 1'000'000, 1), o);
    REQUIRE(rep.result.status == Status::converged);
    REQUIRE(rep.analytic.has_value());
    const double h = p.h(), exact = steady_discrete_error(n);
    const double run = (rep.result.final_residual * (1 + u64) + 4 * u64) / (2 * h * h) + 4 * u64 + 1e-12;
    INFO("n " << n << ": error " << rep.analytic->max << ", the scheme's " << exact << " +- " << run);
    CHECK(std::abs(rep.analytic->max - exact) <= run);
  }
}

TEST_CASE("transient analytic error shrinks as h^2 at fixed r", "[heat2d][analytic]") {
  // dt = r h^2 / alpha: the time error O(dt) is O(h^2) too, so the whole error falls as h^2.
  for (std::int64_t n : {17, 33, 65}) {
    Problem p;
    p.nx = p.ny = n;
    p.mode = Mode::transient;
    p.top = parse_spec("0", "top");
    p.init = parse_spec("sin", "init");
    p.t_end = 0.02;
    finalize(p);  // r = 0.2, shrunk so that a whole number of steps reaches t_end
    RunOptions o;
    const auto rep = run_problem<double>(p, make_stop_rule(p, 1e-300, 1'000'000, 10), o);
    REQUIRE(rep.result.status == Status::t_end);
    CHECK(rep.sim_time == Catch::Approx(0.02).epsilon(1e-12));
    REQUIRE(rep.analytic.has_value());
    const double pi = std::numbers::pi, g = 1.0 - 8.0 * p.r() * std::pow(std::sin(pi * p.h() / 2), 2);
    const auto steps = static_cast<double>(rep.result.iterations);
    const double exact =
        std::abs(std::pow(g, steps) - std::exp(-2 * pi * pi * p.alpha * rep.sim_time));  // x = y = 1/2 a node
    const double run = (steps + 1) * 20 * u64 + 1e-12;
    INFO("n " << n << ": error " << rep.analytic->max << ", the scheme's " << exact << " +- " << run);
    CHECK(std::abs(rep.analytic->max - exact) <= run);
  }
}

TEMPLATE_TEST_CASE("transient sine mode decays by the discrete factor", "[heat2d][analytic]", float, double) {
  // sin(pi x) sin(pi y/Ly) is an eigenvector of the 5-point Laplacian: each step multiplies it by
  // g = 1 - 4 r (sin^2(pi h/2) + sin^2(pi h/(2 Ly))), up to rounding.
  using T = TestType;
  Problem p;
  p.nx = 41;
  p.ny = 29;
  p.mode = Mode::transient;
  p.top = parse_spec("0", "top");
  p.init = parse_spec("sin", "init");
  p.dt = 0.23 * p.h() * p.h();
  finalize(p);
  const std::int64_t n = 300;
  const auto u0 = initial_field<T>(p);
  std::vector<T> u;
  run_sweeps<T>(p, u0, fixed_sweeps(n, 50), u);
  const double pi = std::numbers::pi, h = p.h();
  const double g =
      1.0 - 4.0 * p.r() * (std::pow(std::sin(pi * h / 2), 2) + std::pow(std::sin(pi * h / (2 * p.ly())), 2));
  std::vector<T> expect(u0.size());
  for (std::size_t k = 0; k < u0.size(); ++k) expect[k] = static_cast<T>(std::pow(g, n) * static_cast<double>(u0[k]));
  // Rounding of each step (and of r and the mode in T): a few eps per step, not amplified.
  const double tol = 4.0 * rounding_tolerance<T>(n, 1.0);
  INFO("g = " << g << ", g^n = " << std::pow(g, n));
  CHECK(max_abs_diff<T>(u, expect) <= tol);
  // Hence the maximum decays by g^n too, to tol and the rounding of expect to T.
  CHECK(std::abs(max_abs<T>(u) - std::pow(g, n) * max_abs<T>(u0)) <= tol + std::numeric_limits<T>::epsilon());
}

TEST_CASE("expected table on the cpu backend", "[heat2d][expected]") {
  for (const auto& e : read_expected(HEAT2D_EXPECTED)) {
    if (e.precision == "float") check_expected<float>(e, Backend::cpu);
    else check_expected<double>(e, Backend::cpu);
  }
}

TEST_CASE("check-every delays the stop to the next checked sweep", "[heat2d]") {
  // Jacobi's max |u_new - u| never grows (the sweep is non-expansive), so with checks every k
  // sweeps the run stops at the first multiple of k at or after the every-sweep stop.
  Problem p;
  p.nx = 40;
  p.ny = 31;
  finalize(p);
  RunOptions o;
  const auto every = run_problem<double>(p, make_stop_rule(p, 1e-8, 100000, 1), o).result;
  const auto seventh = run_problem<double>(p, make_stop_rule(p, 1e-8, 100000, 7), o).result;
  REQUIRE(every.status == Status::converged);
  REQUIRE(seventh.status == Status::converged);
  CHECK(seventh.iterations == (every.iterations + 6) / 7 * 7);
  CHECK(every.check_iteration.size() == static_cast<std::size_t>(every.iterations));
  CHECK(seventh.check_iteration.size() == static_cast<std::size_t>(seventh.iterations / 7));
  for (std::size_t c = 1; c < every.check_residual.size(); ++c)
    CHECK(every.check_residual[c] <= every.check_residual[c - 1]);
}

TEMPLATE_TEST_CASE("a NaN in the field is reported as diverged, never converged", "[heat2d][diverged]", float, double) {
  using T = TestType;
  Problem p;
  p.nx = p.ny = 20;
  p.init = parse_spec("nan", "--init");
  finalize(p);
  RunOptions o;
  for (std::int64_t ce : {1, 5}) {
    const auto rep = run_problem<T>(p, make_stop_rule(p, 1e-6, 1000, ce), o);
    CHECK(rep.result.status == Status::diverged);
    CHECK(rep.result.iterations == ce);  // stops at the first check
    CHECK(std::isnan(rep.result.final_residual));
    CHECK_FALSE(rep.analytic.has_value());
  }
}

TEST_CASE("r above 1/4, forced through the library, diverges", "[heat2d][diverged]") {
  Problem p;
  p.nx = p.ny = 24;
  p.mode = Mode::transient;
  finalize(p);
  p.dt = 0.3 * p.h() * p.h() / p.alpha;  // bypasses finalize()'s refusal: the highest mode grows by |1 - 8r| = 1.4
  const auto u0 = random_field<double>(p, 7);
  std::vector<double> u;
  StopRule rule = make_stop_rule(p, 1e-12, 100000, 1);
  const auto r = run_sweeps<double>(p, u0, rule, u);
  CHECK(r.status == Status::diverged);
  CHECK(r.iterations < 5000);
  CHECK_FALSE(std::isfinite(r.final_residual));
}

TEST_CASE("bad input is refused with a message naming the option", "[heat2d][input]") {
  using tally::InputError;
  CHECK_THROWS_AS(parse_spec("foo", "--bc-top"), InputError);
  CHECK_THROWS_AS(parse_spec("", "--bc-top"), InputError);
  CHECK_THROWS_AS(parse_spec("1.5x", "--init"), InputError);
  CHECK(parse_spec("-2.5e-1", "--init").value == -0.25);
  CHECK(parse_spec("sin", "--init").is_sin);
  Problem p;
  p.nx = 2;
  CHECK_THROWS_AS(finalize(p), InputError);
  p.nx = 10;
  p.ny = 1;
  CHECK_THROWS_AS(finalize(p), InputError);
  Problem q;
  q.mode = Mode::transient;
  q.dt = 1.0;
  try {
    finalize(q);
    FAIL("r > 1/4 accepted");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find("largest stable dt") != std::string::npos);
  }
  Problem ok;
  finalize(ok);
  CHECK_THROWS_AS(make_stop_rule(ok, 0.0, 10, 1), InputError);
  CHECK_THROWS_AS(make_stop_rule(ok, -1.0, 10, 1), InputError);
  CHECK_THROWS_AS(make_stop_rule(ok, 1e-6, 0, 1), InputError);
  CHECK_THROWS_AS(make_stop_rule(ok, 1e-6, 10, 0), InputError);
}

TEST_CASE("transient dt is fitted to t_end and never exceeds the stable limit", "[heat2d][input]") {
  Problem p;
  p.nx = p.ny = 33;
  p.mode = Mode::transient;
  p.t_end = 0.1;
  p.dt = max_stable_dt(p);
  finalize(p);
  CHECK(p.r() <= 0.25 * (1 + 1e-12));
  CHECK(static_cast<double>(p.steps()) * p.dt == Catch::Approx(0.1).epsilon(1e-12));
  const StopRule rule = make_stop_rule(p, 1e-9, 1'000'000, 1);
  CHECK(rule.last == p.steps());
  CHECK(rule.at_last == Status::t_end);
}

TEMPLATE_TEST_CASE("a stop request ends at a checked sweep, and the run continues from it bit for bit",
                   "[heat2d][interrupt]", float, double) {
  using T = TestType;
  auto g = tally::test::rng(31);
  for (Mode m : {Mode::steady, Mode::transient}) {
    Problem p;
    p.nx = 20 + static_cast<std::int64_t>(g() % 30);
    p.ny = 20 + static_cast<std::int64_t>(g() % 30);
    p.mode = m;
    finalize(p);
    const auto u0 = random_field<T>(p, 310 + static_cast<std::uint64_t>(m));
    const std::int64_t ce = 1 + static_cast<std::int64_t>(g() % 9), total = 300;
    stop_polls = 0;
    stop_after_polls = 2 + static_cast<int>(g() % 10);
    INFO(p.nx << "x" << p.ny << " " << to_string(m) << ", check every " << ce << ", stop at poll "
              << stop_after_polls + 1);
    StopRule rule = fixed_sweeps(total, ce);
    rule.stop_requested = stop_after_some_polls;
    std::vector<T> partial;
    const SolveResult ri = run_sweeps<T>(p, u0, rule, partial);
    // Polled at each checked sweep: the request seen at the (stop_after_polls + 1)-th check stops there.
    CHECK(ri.status == Status::interrupted);
    CHECK(ri.iterations == (stop_after_polls + 1) * ce);
    CHECK(ri.check_iteration.back() == ri.iterations);
    // The field is exactly the state after that sweep.
    std::vector<T> ref;
    const SolveResult rr = run_sweeps<T>(p, u0, fixed_sweeps(ri.iterations, ce), ref);
    CHECK(max_abs_diff<T>(partial, ref) == 0.0);
    CHECK(rr.check_residual == ri.check_residual);
    // Continued from there to `total` (global sweep numbers: the same checks) = one run of `total`.
    StopRule rest = fixed_sweeps(total, ce);
    rest.first = ri.iterations;
    std::vector<T> continued, whole;
    const SolveResult rc = run_sweeps<T>(p, partial, rest, continued);
    const SolveResult rw = run_sweeps<T>(p, u0, fixed_sweeps(total, ce), whole);
    CHECK(rc.iterations == total);
    CHECK(rc.status == Status::max_iter);
    CHECK(std::memcmp(continued.data(), whole.data(), whole.size() * sizeof(T)) == 0);
    std::vector<std::int64_t> its = ri.check_iteration;
    std::vector<double> res = ri.check_residual;
    its.insert(its.end(), rc.check_iteration.begin(), rc.check_iteration.end());
    res.insert(res.end(), rc.check_residual.begin(), rc.check_residual.end());
    CHECK(its == rw.check_iteration);
    CHECK(res == rw.check_residual);
  }
}
