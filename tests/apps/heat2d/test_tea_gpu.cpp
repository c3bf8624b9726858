// heat2d's implicit mode on CUDA against the CPU engine: with exact dots every iteration count,
// residual history, summary and field is the same bits (GPU test: skipped without a usable GPU);
// with ordinary sums the published temperature is still reached.
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <string>
#include <vector>

#include "catch.hpp"
#include "implicit/deck.hpp"
#include "implicit/run.hpp"

namespace {

using namespace tally::heat2d::implicit;

RunReport run(const std::string& deck, const std::vector<std::string>& set, tally::reduce::Backend b,
              EpsNorm norm = EpsNorm::l2, bool reproducible = true, int cheby_steps = 0) {
  const Deck d = read_deck(TEA_DATA_DIR "/" + deck, set);
  RunOptions o;
  o.backend = b;
  o.solve = solve_options(d);
  o.solve.norm = norm;
  o.solve.reproducible = reproducible;
  o.solve.cheby_steps_per_pass = cheby_steps;
  return run_deck(d, o);
}

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}
bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }
bool same_bits(std::initializer_list<double> a, std::initializer_list<double> b) {
  return same_bits(std::vector<double>(a), std::vector<double>(b));
}

/// c and g the same bits; with history_rel > 0 the tested values only within that relative distance.
void check_same(const RunReport& c, const RunReport& g, double history_rel = 0.0) {
  CHECK(c.status == g.status);
  REQUIRE(c.solves.size() == g.solves.size());
  for (std::size_t k = 0; k < c.solves.size(); ++k) {
    INFO("step " << k + 1);
    const SolveStats& a = c.solves[k];
    const SolveStats& b = g.solves[k];
    CHECK(a.status == b.status);
    CHECK(a.iterations == b.iterations);
    CHECK(a.cg_iterations == b.cg_iterations);
    CHECK(a.inner_iterations == b.inner_iterations);
    CHECK(a.cheby_estimate == b.cheby_estimate);
    CHECK(same_bits(a.eigenvalues.min, b.eigenvalues.min));
    CHECK(same_bits(a.eigenvalues.max, b.eigenvalues.max));
    CHECK(a.history_iteration == b.history_iteration);
    if (history_rel == 0.0) {
      CHECK(same_bits(a.history_error, b.history_error));
    } else {
      REQUIRE(a.history_error.size() == b.history_error.size());
      for (std::size_t i = 0; i < a.history_error.size(); ++i) {
        const double x = a.history_error[i], y = b.history_error[i];
        INFO("tested value " << i << ": " << x << " " << y);
        CHECK(std::fabs(x - y) <= history_rel * std::fmax(std::fabs(x), std::fabs(y)));
      }
    }
    CHECK(same_bits(a.residual, b.residual));
  }
  REQUIRE(c.summaries.size() == g.summaries.size());
  for (std::size_t k = 0; k < c.summaries.size(); ++k) {
    const Summary& a = c.summaries[k].second;
    const Summary& b = g.summaries[k].second;
    CHECK(same_bits({a.volume, a.mass, a.density, a.energy, a.temperature},
                    {b.volume, b.mass, b.density, b.energy, b.temperature}));
  }
  CHECK(same_bits(c.u, g.u));
  CHECK(same_bits(c.energy, g.energy));
}

}  // namespace

TEST_CASE("tea gpu: CPU and CUDA give the same bits", "[tea][gpu]") {
  using tally::reduce::Backend;
  const std::vector<std::vector<std::string>> cases = {
      {"use_cg"},
      {"use_cg", "preconditioner_type jac_diag"},
      {"use_cg", "preconditioner_type jac_block"},
      {"use_chebyshev", "eps 1e-24"},
      {"use_chebyshev", "eps 1e-24", "preconditioner_type jac_block"},
      {"use_ppcg", "eps 1e-24"},
      {"use_ppcg", "eps 1e-24", "preconditioner_type jac_diag", "ppcg_inner_steps 7"},
      {"use_jacobi"},
      {"use_cg", "max_iters 40"},  // stops at max_iters: the field reached, the same bits
  };
  for (const std::string deck : {"tea_bm_1.in", "tea_64_1.in"})
    for (const auto& set : cases) {
      INFO(deck << " " << set[0] << (set.size() > 1 ? " " + set[1] : "") << (set.size() > 2 ? " " + set[2] : ""));
      std::vector<std::string> s = set;
      if (deck == "tea_bm_1.in" && set[0] != "use_cg" && set[0] != "use_jacobi") s.push_back("presteps 5");
      check_same(run(deck, s, Backend::cpu), run(deck, s, Backend::cuda));
    }
  // The max norm: CG and Chebyshev tested on max |r|, Jacobi on max |u_new - u|.
  for (const std::vector<std::string>& set : std::vector<std::vector<std::string>>{{"use_cg", "eps 1e-13"},
                                                                                   {"use_chebyshev", "eps 1e-12"},
                                                                                   {"use_ppcg", "eps 1e-12"},
                                                                                   {"use_jacobi", "eps 1e-14"}}) {
    INFO("max norm, " << set[0]);
    check_same(run("tea_64_1.in", set, Backend::cpu, EpsNorm::max),
               run("tea_64_1.in", set, Backend::cuda, EpsNorm::max));
  }
}

TEST_CASE("tea gpu: where the CG steps end, u has each update once", "[tea][gpu]") {
  // A CG step's u += alpha p rides on the next step's first pass; the last one is applied where the
  // CG steps end: converged and max_iters (above), the switch to PPCG / Chebyshev after 21 steps
  // (errswitch with an epslim every error passes), and a switch due exactly at max_iters.
  using tally::reduce::Backend;
  for (const std::vector<std::string>& set : std::vector<std::vector<std::string>>{
           {"use_ppcg", "errswitch", "epslim 1e300", "max_iters 21"},
           {"use_ppcg", "errswitch", "epslim 1e300", "max_iters 22"},
           {"use_chebyshev", "errswitch", "epslim 1e300", "max_iters 22"},
           {"use_chebyshev", "errswitch", "epslim 1e300", "max_iters 21", "preconditioner_type jac_diag"}}) {
    INFO(set[0] << " " << set[3]);
    check_same(run("tea_64_1.in", set, Backend::cpu), run("tea_64_1.in", set, Backend::cuda));
  }
}

TEST_CASE("tea gpu: a grid of more tiles than resident blocks, partial tiles and strips", "[tea][gpu]") {
  // 1500 x 1030 cells: 47 x 33 tiles of 32 x 32, more than 8 blocks on each of an H100's 132 SMs (the
  // kernels stride over tiles), the last tile column 28 wide, the last tile 6 rows (a strip of 2).
  using tally::reduce::Backend;
  const std::vector<std::string> grid = {"x_cells 1500", "y_cells 1030"};
  for (std::vector<std::string> set : std::vector<std::vector<std::string>>{
           {"use_cg", "max_iters 60"},
           {"use_cg", "max_iters 60", "preconditioner_type jac_block"},
           {"use_chebyshev", "errswitch", "epslim 1e8", "max_iters 60", "preconditioner_type jac_diag"},
           {"use_ppcg", "errswitch", "epslim 1e8", "max_iters 30", "preconditioner_type jac_block"},
           {"use_jacobi", "max_iters 120"}}) {
    INFO(set[0] << " " << set.back());
    set.insert(set.begin(), grid.begin(), grid.end());
    check_same(run("tea_64_1.in", set, Backend::cpu), run("tea_64_1.in", set, Backend::cuda));
  }
  INFO("max norm, CG");
  const std::vector<std::string> set = {"x_cells 1500", "y_cells 1030", "use_cg", "max_iters 60"};
  check_same(run("tea_64_1.in", set, Backend::cpu, EpsNorm::max), run("tea_64_1.in", set, Backend::cuda, EpsNorm::max));
}

TEST_CASE("tea gpu: ordinary sums reach the published temperature", "[tea][gpu]") {
  // tea_bm_1's published temperature (data/tealeaf/expected.csv, TeaLeaf_ref); CG to eps 1e-15 leaves
  // it far closer than 1e-9 (test_tea_solve.cpp bounds the error).
  const double expected = 157.55084183279294;
  const RunReport r = run("tea_bm_1.in", {"use_cg"}, tally::reduce::Backend::cuda, EpsNorm::l2, false);
  REQUIRE(r.status == SolveStatus::converged);
  CHECK(std::fabs(r.final_summary().temperature - expected) <= 1e-9 * expected);
}

TEST_CASE("tea gpu: Chebyshev's blocked passes give the bits of one step a pass", "[tea][gpu]") {
  // --cheby-steps-per-pass 2 and 5 (cheby_blocked.cuh) against 1 (`cheby`, a launch a step) and the
  // CPU engine: grids that no output tile ((64 - 2t) x (32 - 2t)) divides, one column, one row, a
  // max_iters inside a pass; the first pass shortened to align with the tests (the CG steps before
  // differ per case), every tested step a pass's end. Exact dots: everything the same bits. Ordinary
  // sums: the CG steps and Chebyshev's first step are the same kernels, so the iterations, fields and
  // summaries are the same bits; a later tested r.r is a sum of n rounded squares in another order,
  // each within gamma_n = n u / (1 - n u) of the exact sum (Higham, Accuracy and Stability, 3.1), so
  // the two within 2 gamma_n / (1 - gamma_n) of each other (relative).
  using tally::reduce::Backend;
  struct Grid {
    std::vector<std::string> set;
    std::string max_eps;  // for the max norm (max |r| against eps: about eps(l2)^(1/2))
  };
  const std::vector<Grid> grids = {
      {{"x_cells 37", "y_cells 29", "eps 1e-24"}, "eps 1e-12"},
      {{"x_cells 300", "y_cells 257", "eps 1e-20"}, "eps 1e-10"},
      {{"x_cells 1", "y_cells 45", "eps 1e-24",
        "state 6 density=0.1 energy=25 geometry=rectangle xmin=0 xmax=10 ymin=3 ymax=4"},
       "eps 1e-12"},
      {{"x_cells 53", "y_cells 1", "eps 1e-24"}, "eps 1e-12"},
      {{"x_cells 37", "y_cells 29", "eps 1e-30", "max_iters 29"}, "eps 1e-15"},  // stops at max_iters, mid-pass
  };
  for (const Grid& grid : grids)
    for (const std::string prec : {"none", "jac_diag"}) {
      std::vector<std::string> set = grid.set;
      set.insert(set.end(), {"use_chebyshev", "presteps 5", "end_step 2", "preconditioner_type " + prec});
      const double cells = std::stod(set[0].substr(8)) * std::stod(set[1].substr(8));
      const double gamma = cells * 0x1p-53 / (1.0 - cells * 0x1p-53);
      for (const bool exact : {true, false}) {
        INFO(set[0] << " " << set[1] << " " << set[2] << " " << prec << (exact ? " exact" : " ordinary"));
        const RunReport one = run("tea_bm_1.in", set, Backend::cuda, EpsNorm::l2, exact, 1);
        CHECK(one.solve.cheby_steps_per_pass == 1);
        if (exact) check_same(run("tea_bm_1.in", set, Backend::cpu), one);
        for (const int t : {2, 5}) {
          INFO("steps a pass " << t);
          const RunReport r = run("tea_bm_1.in", set, Backend::cuda, EpsNorm::l2, exact, t);
          CHECK(r.solve.cheby_steps_per_pass == t);
          check_same(one, r, exact ? 0.0 : 2 * gamma / (1 - gamma));
        }
      }
      // The max norm: max |r| is exact in any order, so ordinary sums give the bits of t = 1 too.
      set.push_back(grid.max_eps);
      INFO(set[0] << " " << set[1] << " " << prec << " max norm");
      check_same(run("tea_bm_1.in", set, Backend::cpu, EpsNorm::max),
                 run("tea_bm_1.in", set, Backend::cuda, EpsNorm::max, true, 5));
      const RunReport one = run("tea_bm_1.in", set, Backend::cuda, EpsNorm::max, false, 1);
      check_same(one, run("tea_bm_1.in", set, Backend::cuda, EpsNorm::max, false, 2));
      check_same(one, run("tea_bm_1.in", set, Backend::cuda, EpsNorm::max, false, 5));
    }
  // auto: tuning.hpp's depth on CUDA, the CPU's bits.
  const std::vector<std::string> set = {"use_chebyshev", "presteps 5", "end_step 2",
                                        "eps 1e-24",     "x_cells 37", "y_cells 29"};
  const RunReport a = run("tea_bm_1.in", set, Backend::cuda);
  CHECK(a.solve.cheby_steps_per_pass == 5);
  check_same(run("tea_bm_1.in", set, Backend::cpu), a);
}
