// heat2d's implicit mode on the CPU: TeaLeaf's published temperatures (data/tealeaf/expected.csv) to
// 1e-9 relative with CG, Chebyshev, PPCG and pipelined CG; the initial field summary against its
// analytic value; the same bits for any thread count; which engine a run gets.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "catch.hpp"
#include "implicit/deck.hpp"
#include "implicit/run.hpp"
#include "tally/common/error.hpp"

namespace {

using namespace tally::heat2d::implicit;
using tally::test::contains;

/// The published temperature of (x_cells, y_cells, steps) from expected.csv (source `source`).
double expected_temperature(std::int64_t nx, std::int64_t ny, std::int64_t steps, const std::string& source) {
  std::ifstream f(TEA_DATA_DIR "/expected.csv");
  REQUIRE(f.good());
  std::string line;
  while (std::getline(f, line)) {
    if (line.empty() || line[0] == '#' || line.rfind("deck,", 0) == 0) continue;
    std::vector<std::string> c;
    std::stringstream ss(line);
    for (std::string cell; std::getline(ss, cell, ',');) c.push_back(cell);
    REQUIRE(c.size() == 6);
    if (std::stoll(c[1]) == nx && std::stoll(c[2]) == ny && std::stoll(c[3]) == steps && c[5] == source)
      return std::stod(c[4]);
  }
  FAIL("no published temperature for " << nx << "x" << ny << " after " << steps << " steps (" << source << ")");
  return 0.0;
}

RunReport run(const std::string& deck, const std::vector<std::string>& set = {}, bool reproducible = true) {
  const Deck d = read_deck(TEA_DATA_DIR "/" + deck, set);
  RunOptions o;
  o.solve = solve_options(d);
  o.solve.reproducible = reproducible;
  return run_deck(d, o);
}

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

/// |cm|_2 of a deck's cells, cm = vol density (the weights of the temperature).
double cell_mass_norm(const RunReport& r) {
  const double vol = r.grid.dx * r.grid.dy;
  double s = 0.0;
  for (double rho : r.density) s += (vol * rho) * (vol * rho);
  return std::sqrt(s);
}

/// How far the computed temperature can lie from the exact one: each step's solve leaves the true
/// residual r_k = u_k - A u_{k+1}; A = I + K with K symmetric positive semi-definite, so |A^-1|_2 <= 1
/// and the errors of the steps add up at most as sum |r_k|_2 in u; the temperature is cm.u, off by at
/// most |cm|_2 times that. Plus the roundings of u = energy density and energy = u / density (one
/// relative u each a step) and of the exact sum (relative 2^-53).
double temperature_bound(const RunReport& r) {
  double res = 0.0;
  for (const SolveStats& s : r.solves) res += s.residual;
  const double t = r.final_summary().temperature;
  return cell_mass_norm(r) * res * (1.0 + 1e-12) + (2.0 * static_cast<double>(r.steps_done) + 1.0) * 0x1p-52 * t;
}

/// A solve to the published temperature: the a-posteriori bound shows the solve was tight enough
/// for 1e-9 (half of it, the rest left to the published value's own error), and the temperature
/// lies within 1e-9 of the published one.
void check_published(const std::string& deck, const std::vector<std::string>& set, std::int64_t nx, std::int64_t steps,
                     const std::string& source) {
  const double expected = expected_temperature(nx, nx, steps, source);
  const RunReport r = run(deck, set);
  REQUIRE(r.status == SolveStatus::converged);
  REQUIRE(r.steps_done == steps);
  const double t = r.final_summary().temperature;
  CHECK(temperature_bound(r) <= 0.5e-9 * expected);
  CHECK(std::fabs(t - expected) <= 1e-9 * expected);
}

}  // namespace

// CG stops on sqrt(r.r) < eps (the decks' 1e-15); Chebyshev and PPCG stop on r.r < eps (TeaLeaf's
// drivers), so the decks' eps leaves them |r| < 3e-8, too loose for 1e-9: they run with 1e-24.
// Jacobi stops on the sum of its updates < eps, at the decks' eps already far below what 1e-9 needs
// (the bound checks it). presteps 5 lets the 10 x 10 problem switch from CG to Chebyshev / PPCG
// before CG converges.
TEST_CASE("tea solve: tea_bm_1 reaches the published temperature", "[tea][solve]") {
  check_published("tea_bm_1.in", {"use_cg"}, 10, 10, "ref");
  check_published("tea_bm_1.in", {"use_chebyshev", "eps 1e-24", "presteps 5"}, 10, 10, "ref");
  check_published("tea_bm_1.in", {"use_ppcg", "eps 1e-24", "presteps 5"}, 10, 10, "ref");
  check_published("tea_bm_1.in", {"use_jacobi"}, 10, 10, "ref");
  check_published("tea_bm_1.in", {"use_pipecg"}, 10, 10, "ref");
}

TEST_CASE("tea solve: the 64 x 64 one-step problem reaches the published temperature", "[tea][solve]") {
  for (const char* p : {"none", "jac_diag", "jac_block"}) {
    INFO(p);
    const std::string prec = std::string("preconditioner_type ") + p;
    check_published("tea_64_1.in", {"use_cg", prec}, 64, 1, "port");
    check_published("tea_64_1.in", {"use_chebyshev", "eps 1e-24", prec}, 64, 1, "port");
    check_published("tea_64_1.in", {"use_ppcg", "eps 1e-24", prec}, 64, 1, "port");
    check_published("tea_64_1.in", {"use_pipecg", prec}, 64, 1, "port");
  }
  check_published("tea_64_1.in", {"use_jacobi"}, 64, 1, "port");
}

TEST_CASE("tea solve: Chebyshev and PPCG switch from CG as TeaLeaf does", "[tea][solve]") {
  const RunReport ch = run("tea_64_1.in", {"use_chebyshev", "eps 1e-24"});
  const SolveStats& c = ch.solves.at(0);
  // Switch after k > presteps (30) CG steps with r.r < 1: the 31st step's index is 30, so 31 steps.
  CHECK(c.cg_iterations == 31);
  CHECK(c.iterations > c.cg_iterations);
  CHECK(c.eigenvalues.min > 0.0);
  CHECK(c.eigenvalues.max > c.eigenvalues.min);
  // Chebyshev measures r.r at its first step, then only on steps k with k + 1 divisible by 10.
  for (std::size_t i = 0; i < c.history_iteration.size(); ++i)
    if (c.history_iteration[i] > c.cg_iterations) CHECK((c.history_iteration[i] + 1) % 10 == 0);
  const RunReport pp = run("tea_64_1.in", {"use_ppcg", "eps 1e-24", "ppcg_inner_steps 7"});
  const SolveStats& q = pp.solves.at(0);
  CHECK(q.cg_iterations == 31);
  CHECK(q.inner_iterations == 7 * (q.iterations - q.cg_iterations));
}

// Pipelined CG has CG's iterates in exact arithmetic and tests the same r.z against eps, so it stops
// where CG does, give or take the step on which rounding moves the crossing of eps; its residuals are
// recurrences, which the recomputed w = A z keeps from drifting: its true residual stays at CG's
// (the published-temperature checks above bound it). Ghysels and Vanroose's form, without the
// recomputation, stalls on these decks near 1e-14 and runs to max_iters: this test fails for it.
TEST_CASE("tea solve: pipelined CG stops where CG does", "[tea][solve][pipecg]") {
  for (const char* p : {"none", "jac_diag", "jac_block"}) {
    INFO(p);
    const std::string prec = std::string("preconditioner_type ") + p;
    const RunReport cg = run("tea_64_1.in", {"use_cg", prec});
    const RunReport pipe = run("tea_64_1.in", {"use_pipecg", prec});
    REQUIRE(pipe.status == SolveStatus::converged);
    const SolveStats &a = cg.solves.at(0), &b = pipe.solves.at(0);
    CHECK(std::llabs(a.iterations - b.iterations) <= 1);
    CHECK(b.cg_iterations == b.iterations);
    CHECK(b.history_iteration.size() == static_cast<std::size_t>(b.iterations));  // every step tested, as CG's
    CHECK(b.residual <= 4.0 * a.residual);
  }
}

TEST_CASE("tea run: the CUDA engine runs one rank and no pipelined CG; --backend cuda asks for it", "[tea][backend]") {
  using tally::reduce::Backend;
  CHECK(engine_backend(Backend::cuda, "auto", SolverKind::cg, 1) == Backend::cuda);
  CHECK(engine_backend(Backend::cuda, "auto", SolverKind::pipecg, 1) == Backend::cpu);
  CHECK(engine_backend(Backend::cuda, "auto", SolverKind::cg, 2) == Backend::cpu);
  CHECK(engine_backend(Backend::cpu, "cpu", SolverKind::pipecg, 3) == Backend::cpu);
  bool fell_back = true;  // no usable GPU: nothing to say for a run that takes the CPU anyway
  CHECK(engine_backend(Backend::cpu, "auto", SolverKind::cg, 2, &fell_back) == Backend::cpu);
  CHECK(!fell_back);
  fell_back = true;
  CHECK(engine_backend(Backend::cpu, "auto", SolverKind::cg, 1, &fell_back) == Backend::cpu);
  CHECK(fell_back);
  CHECK_THROWS_AS(engine_backend(Backend::cuda, "cuda", SolverKind::pipecg, 1), tally::InputError);
  CHECK_THROWS_WITH(engine_backend(Backend::cuda, "cuda", SolverKind::pipecg, 1), contains("--solver pipecg"));
  CHECK_THROWS_WITH(engine_backend(Backend::cuda, "cuda", SolverKind::cg, 2), contains("several ranks"));
}

TEST_CASE("tea solve: the initial summary is the analytic one, summed exactly", "[tea][summary]") {
  // The five states cover areas 84 (density 100, energy 1e-4), 1 (density 0.1, energy 25) and 15
  // (density 0.1, energy 0.1) of the 10 x 10 domain, on cell edges for these grids: volume 100,
  // mass 8401.6, energy 3.49, temperature 84.265. Each cell's terms carry at most 8 roundings
  // (dx, dy, vol, the constants, the products), all of one sign: the exact sums lie within 10 u of
  // the analytic values (u = 2^-53); TeaLeaf's ordinary sums miss that by orders of magnitude (mass
  // 8401.5999999931973 at 250^2).
  for (std::int64_t n : {10, 250, 500}) {
    INFO(n);
    const Deck d =
        read_deck(TEA_DATA_DIR "/tea_bm_1.in", {"x_cells " + std::to_string(n), "y_cells " + std::to_string(n)});
    const Grid g = make_grid(d);
    auto e = make_cpu_engine(d, g);
    const State0 s0 = initial_state(d, g);
    e->set_state(s0.density, s0.energy);
    const Summary s = e->summary(true);
    const double u = 0x1p-53;
    CHECK(std::fabs(s.volume - 100.0) <= 10 * u * 100.0);
    CHECK(std::fabs(s.mass - 8401.6) <= 10 * u * 8401.6);
    CHECK(std::fabs(s.density - 84.016) <= 12 * u * 84.016);
    CHECK(std::fabs(s.energy - 3.49) <= 10 * u * 3.49);
    CHECK(std::fabs(s.temperature - 84.265) <= 10 * u * 84.265);
  }
}

TEST_CASE("tea solve: the same bits for any thread count", "[tea][solve][threads]") {
  const int threads = omp_get_max_threads();
  for (const std::vector<std::string>& set :
       std::vector<std::vector<std::string>>{{"use_cg", "preconditioner_type jac_block"},
                                             {"use_chebyshev", "eps 1e-24"},
                                             {"use_ppcg", "eps 1e-24", "preconditioner_type jac_diag"},
                                             {"use_jacobi"},
                                             {"use_pipecg", "preconditioner_type jac_block"}}) {
    INFO(set[0]);
    omp_set_num_threads(1);
    const RunReport a = run("tea_64_1.in", set);
    omp_set_num_threads(3);
    const RunReport b = run("tea_64_1.in", set);
    omp_set_num_threads(threads);
    REQUIRE(a.solves.size() == b.solves.size());
    CHECK(a.solves[0].iterations == b.solves[0].iterations);
    CHECK(a.solves[0].history_error.size() == b.solves[0].history_error.size());
    bool history = a.solves[0].history_error.size() == b.solves[0].history_error.size();
    for (std::size_t i = 0; history && i < a.solves[0].history_error.size(); ++i)
      history = same_bits(a.solves[0].history_error[i], b.solves[0].history_error[i]);
    CHECK(history);
    CHECK(same_bits(a.final_summary().temperature, b.final_summary().temperature));
    CHECK(same_bits(a.final_summary().energy, b.final_summary().energy));
    CHECK(std::memcmp(a.u.data(), b.u.data(), a.u.size() * sizeof(double)) == 0);
  }
}

TEST_CASE("tea solve: ordinary sums (reproducible off) reach the same temperature", "[tea][solve]") {
  const double expected = expected_temperature(10, 10, 10, "ref");
  const RunReport r = run("tea_bm_1.in", {"use_cg"}, false);
  REQUIRE(r.status == SolveStatus::converged);
  CHECK(std::fabs(r.final_summary().temperature - expected) <= 1e-9 * expected);
}

TEST_CASE("tea solve: a solve that does not converge stops the run", "[tea][solve]") {
  const RunReport r = run("tea_bm_1.in", {"use_cg", "max_iters 3"});
  CHECK(r.status == SolveStatus::max_iters);
  CHECK(r.steps_done == 1);
  CHECK(r.solves.at(0).iterations == 3);
  CHECK(r.summaries.back().first == 1);
}

TEST_CASE("tea decomposition: whole blocks of 4 rows per rank, in order, balanced; too many ranks refused",
          "[tea][ranks]") {
  for (std::int64_t ny : {4, 5, 13, 64, 250}) {
    const Deck d = read_deck(TEA_DATA_DIR "/tea_bm_1.in", {"y_cells " + std::to_string(ny)});
    const std::int64_t blocks = (ny + kJacBlock - 1) / kJacBlock;
    for (int n = 1; n <= blocks && n <= 7; ++n) {
      std::int64_t next = 0, most = 0, least = blocks;
      for (int r = 0; r < n; ++r) {
        const tally::heat2d::Decomposition dec = decompose(d, n, r);
        CHECK(dec.nx() == d.x_cells);
        CHECK(dec.ny() == ny);
        CHECK(dec.below() == (r > 0 ? r - 1 : -1));
        CHECK(dec.above() == (r + 1 < n ? r + 1 : -1));
        const auto rows = dec.rows();
        CHECK(rows.begin == next);  // follows the previous rank's rows
        CHECK(rows.begin % kJacBlock == 0);
        CHECK((rows.size() % kJacBlock == 0 || rows.end == ny));  // whole blocks, but the grid's last
        const Grid g = make_grid(d, dec);
        CHECK(g.row0 == rows.begin);
        CHECK(g.rows == rows.size());
        next = rows.end;
        const std::int64_t mine = (rows.size() + kJacBlock - 1) / kJacBlock;
        most = std::max(most, mine), least = std::min(least, mine);
      }
      CHECK(next == ny);
      CHECK(most - least <= 1);
    }
    CHECK_THROWS_AS(decompose(d, static_cast<int>(blocks + 1), 0), tally::InputError);
  }
}
