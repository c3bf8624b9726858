// heat2d on the GPU: the CUDA backend against the CPU backend (fields and residual histories, with
// and without convergence, several check intervals and grid shapes), the expected table, divergence
// and a grid too large for the device.
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>

#include "heat2d_test_support.hpp"

using namespace heat2d_test;
using tally::reduce::Backend;

namespace {

template <class T>
SolveResult run_on(Backend b, const Problem& p, const std::vector<T>& u0, const StopRule& rule, std::vector<T>& out,
                   const std::string& kernel = "async") {
  SolverOptions so;
  so.cuda_kernel = kernel;
  return solve_from(b, p, u0, rule, out, so);
}

template <class T>
void compare_results(const Problem& p, const std::vector<T>& u0, const StopRule& rule, const SolveResult& rc,
                     const std::vector<T>& uc, const SolveResult& rg, const std::vector<T>& ug, const char* kernel) {
  const double tol = rounding_tolerance<T>(rc.iterations, max_abs<T>(u0));
  const double diff = max_abs_diff<T>(uc, ug);
  INFO("kernel " << kernel << ": " << p.nx << "x" << p.ny << " " << to_string(p.mode) << " r=" << p.r()
                 << " check-every " << rule.check_every << ": cpu " << rc.iterations << " sweeps ("
                 << to_string(rc.status) << "), cuda " << rg.iterations << " (" << to_string(rg.status)
                 << "), max diff " << diff << " (tol " << tol << ")");
  CHECK(rg.status == rc.status);
  CHECK(rg.iterations == rc.iterations);
  CHECK(diff <= tol);
  REQUIRE(rg.check_iteration == rc.check_iteration);
  REQUIRE(rg.check_residual.size() == rc.check_residual.size());
  for (std::size_t c = 0; c < rc.check_residual.size(); ++c)
    CHECK(std::abs(rg.check_residual[c] - rc.check_residual[c]) <= tol);
  if (diff == 0.0)
    std::printf("heat2d gpu: %s %lldx%lld bitwise equal to the cpu\n", kernel, static_cast<long long>(p.nx),
                static_cast<long long>(p.ny));
}

template <class T>
void compare_backends(const Problem& p, const std::vector<T>& u0, const StopRule& rule) {
  std::vector<T> uc;
  const auto rc = run_on<T>(Backend::cpu, p, u0, rule, uc);
  for (const char* kernel : {"async", "registers", "persistent"}) {
    std::vector<T> ug;
    const auto rg = run_on<T>(Backend::cuda, p, u0, rule, ug, kernel);
    compare_results<T>(p, u0, rule, rc, uc, rg, ug, kernel);
  }
}

}  // namespace

TEMPLATE_TEST_CASE("cuda matches the cpu backend on random fields (fixed sweeps)", "[heat2d][gpu]", float, double) {
  using T = TestType;
  auto g = tally::test::rng(11);
  // Odd widths (padding, partial vectors), narrow and tall grids, and a wide one whose warps'
  // strips are long (the async kernel's shared-memory ring wraps many times).
  const std::vector<std::pair<std::int64_t, std::int64_t>> shapes = {{3, 3},    {5, 70},    {37, 29},
                                                                     {130, 67}, {257, 250}, {4100, 1500}};
  int trial = 0;
  for (auto [nx, ny] : shapes) {
    for (Mode m : {Mode::steady, Mode::transient}) {
      Problem p;
      p.nx = nx;
      p.ny = ny;
      p.mode = m;
      p.dt = (0.05 + 0.2 * static_cast<double>(g() % 1000) / 1000.0) * p.h() * p.h();
      finalize(p);
      const auto u0 = random_field<T>(p, 200 + static_cast<std::uint64_t>(trial++));
      StopRule rule;
      rule.tol = -1.0;
      rule.last = nx * ny > 1'000'000 ? 20 : 120;
      rule.check_every = 1 + static_cast<std::int64_t>(g() % 13);
      compare_backends<T>(p, u0, rule);
    }
  }
}

TEMPLATE_TEST_CASE("cuda stops at the same sweep as the cpu (device-side stop flag)", "[heat2d][gpu]", float, double) {
  using T = TestType;
  for (std::int64_t ce : {1, 3, 64}) {
    Problem p;
    p.nx = 45;
    p.ny = 38;
    finalize(p);
    compare_backends<T>(p, initial_field<T>(p), make_stop_rule(p, sizeof(T) == 4 ? 1e-5 : 1e-9, 100000, ce));
  }
}

TEMPLATE_TEST_CASE(
    "persistent kernel: a stop on the device at any sweep of a launch, on grids of many blocks both ways",
    "[heat2d][gpu][persistent]", float, double) {
  // The persistent kernel runs 32 sweeps a launch with no barrier between them, and a stop at k lets
  // sweep k + 1 run on the other buffer. The tolerance is set to the cpu's residual at a chosen
  // check, so the run must stop exactly there: at the first sweeps of a launch, its last, in the
  // middle, and on the second and third launches; the field, bit for bit, and the whole history
  // must be the cpu's.
  using T = TestType;
  auto g = tally::test::rng(47);
  const std::vector<std::pair<std::int64_t, std::int64_t>> shapes = {{1300, 900}, {700, 41}, {4100, 300}};
  int trial = 0;
  for (auto [nx, ny] : shapes)
    for (std::int64_t ce : {std::int64_t{1}, std::int64_t{3}}) {
      Problem p;
      p.nx = nx;
      p.ny = ny;
      p.mode = trial % 2 ? Mode::transient : Mode::steady;
      p.dt = 0.2 * p.h() * p.h();
      finalize(p);
      const auto u0 = random_field<T>(p, 470 + static_cast<std::uint64_t>(trial++));
      StopRule probe;
      probe.tol = -1.0;
      probe.check_every = ce;
      probe.last = 99;
      std::vector<T> scratch;
      const SolveResult hist = run_on<T>(Backend::cpu, p, u0, probe, scratch);
      for (std::int64_t want :
           {std::int64_t{1 + static_cast<std::int64_t>(g() % 2)}, std::int64_t{31}, std::int64_t{32}, std::int64_t{33},
            std::int64_t{64}, std::int64_t{65 + static_cast<std::int64_t>(g() % 30)}}) {
        // The check at or after `want` whose residual is below every earlier one: the stop.
        std::size_t c = 0;
        while (c < hist.check_iteration.size() && hist.check_iteration[c] < want) ++c;
        double best = 1e300;
        for (std::size_t e = 0; e < c; ++e) best = std::min(best, hist.check_residual[e]);
        while (c < hist.check_iteration.size() && !(hist.check_residual[c] < best)) ++c;
        if (c == hist.check_iteration.size()) continue;
        StopRule rule = probe;
        rule.tol = hist.check_residual[c];
        rule.last = 200;
        std::vector<T> uc, ug;
        const SolveResult rc = run_on<T>(Backend::cpu, p, u0, rule, uc);
        const SolveResult rg = run_on<T>(Backend::cuda, p, u0, rule, ug, "persistent");
        INFO(nx << "x" << ny << " " << to_string(p.mode) << " check every " << ce << ", stop wanted at "
                << hist.check_iteration[c] << ": cpu " << rc.iterations << ", cuda " << rg.iterations);
        REQUIRE(rc.iterations == hist.check_iteration[c]);
        REQUIRE(rc.status == Status::converged);
        CHECK(rg.status == Status::converged);
        CHECK(rg.iterations == rc.iterations);
        CHECK(rg.check_iteration == rc.check_iteration);
        CHECK(rg.check_residual == rc.check_residual);
        CHECK(std::memcmp(ug.data(), uc.data(), uc.size() * sizeof(T)) == 0);
      }
    }
}

TEST_CASE("expected table on the cuda backend", "[heat2d][gpu][expected]") {
  for (const auto& e : read_expected(HEAT2D_EXPECTED)) {
    if (e.precision == "float") check_expected<float>(e, Backend::cuda);
    else check_expected<double>(e, Backend::cuda);
  }
}

TEMPLATE_TEST_CASE("cuda reports NaN and r > 1/4 as diverged", "[heat2d][gpu][diverged]", float, double) {
  using T = TestType;
  Problem p;
  p.nx = p.ny = 40;
  p.init = parse_spec("nan", "--init");
  finalize(p);
  RunOptions o;
  o.backend = Backend::cuda;
  for (std::int64_t ce : {1, 6}) {
    const auto rep = run_problem<T>(p, make_stop_rule(p, 1e-6, 1000, ce), o);
    CHECK(rep.result.status == Status::diverged);
    CHECK(rep.result.iterations == ce);
    CHECK(std::isnan(rep.result.final_residual));
  }
  Problem q;
  q.nx = q.ny = 24;
  q.mode = Mode::transient;
  finalize(q);
  q.dt = 0.3 * q.h() * q.h() / q.alpha;  // forced past the stability limit
  const auto u0 = random_field<T>(q, 9);
  std::vector<T> uc, ug;
  const StopRule rule = make_stop_rule(q, 1e-12, 100000, 1);
  const auto rc = run_on<T>(Backend::cpu, q, u0, rule, uc);
  const auto rg = run_on<T>(Backend::cuda, q, u0, rule, ug);
  CHECK(rg.status == Status::diverged);
  CHECK(rg.iterations == rc.iterations);
}

TEST_CASE("a grid larger than the device memory exits 2 and writes nothing", "[heat2d][gpu][input]") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("heat2d_gpu_" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::string text;
  const int rc = run_command(std::string(HEAT2D_EXE) + " --quiet --backend cuda --nx 1000000 --ny 60000 --out " +
                                 (dir / "big.h5").string() + " 2>&1",
                             &text);
  INFO(text);
  CHECK(rc == 2);
  CHECK(text.find("device memory") != std::string::npos);
  CHECK(fs::is_empty(dir));
  fs::remove_all(dir);
}

TEMPLATE_TEST_CASE("cuda: a stop request ends at the next checked sweep queued; a restart continues bit for bit",
                   "[heat2d][gpu][interrupt]", float, double) {
  using T = TestType;
  auto g = tally::test::rng(32);
  for (const char* kernel : {"async", "registers", "persistent"})
    for (Mode m : {Mode::steady, Mode::transient}) {
      Problem p;
      p.nx = 30 + static_cast<std::int64_t>(g() % 200);
      p.ny = 30 + static_cast<std::int64_t>(g() % 200);
      p.mode = m;
      finalize(p);
      const auto u0 = random_field<T>(p, 320 + static_cast<std::uint64_t>(m));
      const std::int64_t ce = 1 + static_cast<std::int64_t>(g() % 9), total = 300;
      stop_polls = 0;
      stop_after_polls = 5 + static_cast<int>(g() % 100);
      INFO(kernel << " " << p.nx << "x" << p.ny << " " << to_string(m) << ", check every " << ce << ", stop at poll "
                  << stop_after_polls + 1);
      StopRule rule;
      rule.tol = -1.0;
      rule.check_every = ce;
      rule.last = total;
      rule.stop_requested = stop_after_some_polls;
      std::vector<T> partial;
      const SolveResult ri = run_on<T>(Backend::cuda, p, u0, rule, partial, kernel);
      // Polled before each sweep is queued: the request seen before sweep k ends at the first check >= k.
      const std::int64_t k = stop_after_polls + 1;
      CHECK(ri.status == Status::interrupted);
      CHECK(ri.iterations == (k + ce - 1) / ce * ce);
      // The field is the state after that sweep: the cpu's, as in the tests above.
      StopRule upto = rule;
      upto.stop_requested = nullptr;
      upto.last = ri.iterations;
      std::vector<T> ref;
      const SolveResult rr = run_on<T>(Backend::cpu, p, u0, upto, ref);
      SolveResult ri_as_ref = ri;  // compared but for the status
      ri_as_ref.status = rr.status;
      compare_results<T>(p, u0, upto, rr, ref, ri_as_ref, partial, kernel);
      // Continued on the GPU to `total` = one GPU run of `total`, bitwise (the same kernels).
      StopRule rest = upto;
      rest.first = ri.iterations;
      rest.last = total;
      std::vector<T> continued, whole;
      const SolveResult rc = run_on<T>(Backend::cuda, p, partial, rest, continued, kernel);
      upto.last = total;
      const SolveResult rw = run_on<T>(Backend::cuda, p, u0, upto, whole, kernel);
      CHECK(rc.iterations == total);
      CHECK(rc.status == Status::max_iter);
      CHECK(std::memcmp(continued.data(), whole.data(), whole.size() * sizeof(T)) == 0);
      std::vector<std::int64_t> its = ri.check_iteration;
      its.insert(its.end(), rc.check_iteration.begin(), rc.check_iteration.end());
      CHECK(its == rw.check_iteration);
    }
}
