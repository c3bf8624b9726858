// heat2d's temporal blocking (--sweeps-per-pass t): on HEAT2D_BLOCKED_BACKEND (the CPU in CI, CUDA
// as a GPU test) every t gives the fields, residual histories, stop sweeps and statuses of the CPU
// backend's one-sweep-a-pass solver (itself checked against Eigen in heat2d_test) bit for bit, on
// random fields with random edges, grids that do not divide into tiles or strips, both modes, float
// and double, a --max-iter that t does not divide, a restart from a sweep t does not divide, and a
// stop request; and t is refused where it cannot work.
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "heat2d_test_support.hpp"
#include "tally/common/error.hpp"

using namespace heat2d_test;
using tally::reduce::Backend;

namespace {

const Backend backend = std::string(HEAT2D_BLOCKED_BACKEND) == "cuda" ? Backend::cuda : Backend::cpu;

template <class T>
SolveResult solve_on(Backend b, int t, const Problem& p, const std::vector<T>& u0, const StopRule& rule,
                     std::vector<T>& out) {
  SolverOptions so;
  so.sweeps_per_pass = t;
  return solve_from(b, p, u0, rule, out, so);
}

/// Solves with t sweeps a pass on the backend under test and with t = 1 on the CPU; everything bitwise.
template <class T>
void compare_to_one_sweep(const Problem& p, const std::vector<T>& u0, const StopRule& rule, int t) {
  std::vector<T> ref, got;
  const SolveResult r1 = solve_on<T>(Backend::cpu, 1, p, u0, rule, ref);
  const SolveResult rt = solve_on<T>(backend, t, p, u0, rule, got);
  INFO(HEAT2D_BLOCKED_BACKEND << " t=" << t << " " << p.nx << "x" << p.ny << " " << to_string(p.mode) << " sweeps "
                              << rule.first << ".." << rule.last << " check-every " << rule.check_every << ": "
                              << rt.iterations << " sweeps (" << to_string(rt.status) << ") against " << r1.iterations
                              << " (" << to_string(r1.status) << "), max diff " << max_abs_diff<T>(ref, got));
  CHECK(rt.status == r1.status);
  CHECK(rt.iterations == r1.iterations);
  CHECK(same_bits(ref, got));
  CHECK(rt.check_iteration == r1.check_iteration);
  CHECK(same_bits(rt.check_residual, r1.check_residual));
  CHECK(same_bits({rt.final_residual}, {r1.final_residual}));
}

StopRule fixed(std::int64_t first, std::int64_t last, std::int64_t check_every) {
  StopRule rule;
  rule.tol = -1.0;  // never converges
  rule.first = first;
  rule.last = last;
  rule.check_every = check_every;
  return rule;
}

}  // namespace

TEMPLATE_TEST_CASE("every t gives t = 1's fields and residuals bit for bit (random fields, fixed sweeps)",
                   "[heat2d][blocked]", float, double) {
  using T = TestType;
  auto g = tally::test::rng(181);
  // Tiny grids (fewer rows than a pass reaches), widths that no tile divides (the CUDA tiles are 48
  // to 120 columns, overlapping), tall and wide ones, and on the GPU one over many tiles and strips.
  std::vector<std::pair<std::int64_t, std::int64_t>> shapes = {{3, 3}, {4, 9}, {37, 29}, {130, 67}, {257, 250}};
  if (backend == Backend::cuda) shapes.push_back({1111, 901});
  int trial = 0;
  for (auto [nx, ny] : shapes)
    for (Mode m : {Mode::steady, Mode::transient}) {
      Problem p;
      p.nx = nx;
      p.ny = ny;
      p.mode = m;
      p.dt = (0.05 + 0.2 * static_cast<double>(g() % 1000) / 1000.0) * p.h() * p.h();
      finalize(p);
      const auto u0 = random_field<T>(p, 1800 + static_cast<std::uint64_t>(trial++));  // random edges too
      for (int t : {2, 3, 4, 5, 8}) {
        // A check interval t divides, a last sweep it does not (a shorter last pass).
        const std::int64_t ce = t * (1 + static_cast<std::int64_t>(g() % 3));
        const std::int64_t last = nx * ny > 500'000 ? 37 : 41 + static_cast<std::int64_t>(g() % 30);
        compare_to_one_sweep<T>(p, u0, fixed(0, last, ce), t);
      }
    }
}

TEMPLATE_TEST_CASE("every t converges at t = 1's sweep with t = 1's history (every boundary condition)",
                   "[heat2d][blocked]", float, double) {
  using T = TestType;
  auto g = tally::test::rng(182);
  const std::vector<std::string> edges = {"sin", "0", "1", "-0.5"};
  for (Mode m : {Mode::steady, Mode::transient}) {
    Problem p;
    p.nx = 45;
    p.ny = 38;
    p.mode = m;
    p.top = parse_spec(edges[g() % 4], "--bc-top");
    p.bottom = parse_spec(edges[g() % 4], "--bc-bottom");
    p.left = parse_spec(edges[g() % 4], "--bc-left");
    p.right = parse_spec(edges[g() % 4], "--bc-right");
    p.init = parse_spec(m == Mode::transient ? "sin" : "0.25", "--init");
    finalize(p);
    const auto u0 = initial_field<T>(p);
    for (std::int64_t ce : {4, 8, 24}) {
      const StopRule rule = make_stop_rule(p, sizeof(T) == 4 ? 1e-5 : 1e-9, 100000, ce);
      for (int t : {0, 2, 4, 8})  // 0: auto
        if (ce % std::max(t, 1) == 0) compare_to_one_sweep<T>(p, u0, rule, t);
    }
  }
}

TEMPLATE_TEST_CASE("t passes continue a restart from a sweep t does not divide, and stop where t = 1 does",
                   "[heat2d][blocked]", float, double) {
  using T = TestType;
  auto g = tally::test::rng(183);
  Problem p;
  p.nx = 70 + static_cast<std::int64_t>(g() % 60);
  p.ny = 40 + static_cast<std::int64_t>(g() % 60);
  p.mode = Mode::transient;
  finalize(p);
  const auto u0 = random_field<T>(p, 1830);
  const int t = 4;
  const std::int64_t first = 13, total = 90, ce = 8;
  // The field at sweep 13 (t = 1), continued to 90 with t = 4: passes 14..16, 17..20, ..., 89..90.
  std::vector<T> at_first, whole;
  (void)solve_on<T>(Backend::cpu, 1, p, u0, fixed(0, first, ce), at_first);
  compare_to_one_sweep<T>(p, at_first, fixed(first, total, ce), t);
  // A stop request seen at a check: the field is that sweep's, as with t = 1.
  for (int tt : {1, t}) {
    stop_polls = 0;
    stop_after_polls = 3;
    StopRule rule = fixed(0, total, ce);
    rule.stop_requested = stop_after_some_polls;
    std::vector<T> partial, ref;
    const SolveResult ri = solve_on<T>(backend, tt, p, u0, rule, partial);
    INFO("t=" << tt << ": stopped at sweep " << ri.iterations);
    CHECK(ri.status == Status::interrupted);
    CHECK(ri.iterations % ce == 0);
    CHECK(ri.check_iteration.back() == ri.iterations);
    (void)solve_on<T>(Backend::cpu, 1, p, u0, fixed(0, ri.iterations, ce), ref);
    CHECK(same_bits(partial, ref));
  }
}

TEMPLATE_TEST_CASE("a NaN diverges at the first check with any t", "[heat2d][blocked][diverged]", float, double) {
  using T = TestType;
  Problem p;
  p.nx = 61;
  p.ny = 33;
  p.init = parse_spec("nan", "--init");
  finalize(p);
  for (int t : {2, 8}) {
    std::vector<T> out;
    const SolveResult r = solve_on<T>(backend, t, p, initial_field<T>(p), make_stop_rule(p, 1e-6, 1000, 16), out);
    CHECK(r.status == Status::diverged);
    CHECK(r.iterations == 16);
    CHECK(std::isnan(r.final_residual));
  }
}

TEST_CASE("sweeps per pass: auto divides the check interval; what cannot work is refused naming the option",
          "[heat2d][blocked][input]") {
  using tally::InputError;
  // auto: the deepest t up to the backend's preference that divides the check interval.
  for (std::int64_t ce : {1, 2, 3, 5, 6, 7, 8, 12, 100, 840}) {
    for (Backend b : {Backend::cpu, Backend::cuda}) {
      const int pref = b == Backend::cuda ? cuda_preferred_sweeps_per_pass : cpu_preferred_sweeps_per_pass;
      auto want = [&](int deepest) {
        int w = 1;
        for (int t = 1; t <= std::min(pref, deepest); ++t)
          if (ce % t == 0) w = t;
        return w;
      };
      CHECK(resolve_sweeps_per_pass(0, ce, b) == want(max_sweeps_per_pass));
      CHECK(resolve_sweeps_per_pass(0, ce, b, 1) == 1);  // ranks whose blocks are one row deep
      CHECK(resolve_sweeps_per_pass(0, ce, b, 3) == want(3));
    }
  }
  CHECK(resolve_sweeps_per_pass(4, 12, Backend::cpu) == 4);
  CHECK(resolve_sweeps_per_pass(4, 12, Backend::cpu, 4) == 4);
  CHECK(resolve_sweeps_per_pass(1, 7, Backend::cuda, 2) == 1);
  // The deepest pass across ranks: the smallest block's rows (the first ranks one row more: (ny - 2) / ranks).
  Problem q;
  q.nx = 10;
  q.ny = 2 + 3 * 5 + 2;  // 17 interior rows on 3 ranks: 6, 6, 5
  finalize(q);
  CHECK(deepest_pass(decompose(q)) == max_sweeps_per_pass);
  for (int r = 0; r < 3; ++r) CHECK(deepest_pass(decompose(q, 3, r)) == 5);  // every rank agrees
  CHECK(deepest_pass(decompose(q, 17, 16)) == 1);
  auto refused = [](int t, std::int64_t ce, int deepest, const char* what) {
    try {
      (void)resolve_sweeps_per_pass(t, ce, Backend::cpu, deepest);
      FAIL("t=" << t << " check-every " << ce << " deepest " << deepest << " was accepted");
    } catch (const InputError& e) {
      const std::string msg = e.what();
      INFO(msg);
      CHECK(msg.find("--sweeps-per-pass") != std::string::npos);
      CHECK(msg.find(what) != std::string::npos);
    }
  };
  refused(4, 10, 8, "--check-every");
  refused(3, 1, 8, "--check-every");
  refused(6, 6, 5, "smallest block has 5 rows");
  refused(9, 9, 8, "1..8");
  refused(-1, 1, 8, "1..8");
  // The solver itself refuses the same (an API caller that skipped the check).
  Problem p;
  p.nx = p.ny = 20;
  finalize(p);
  std::vector<double> out;
  CHECK_THROWS_AS(solve_on<double>(backend, 4, p, initial_field<double>(p), fixed(0, 20, 6), out), InputError);
}
