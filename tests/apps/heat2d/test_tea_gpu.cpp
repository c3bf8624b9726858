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
              EpsNorm norm = EpsNorm::l2, bool reproducible = true) {
  const Deck d = read_deck(TEA_DATA_DIR "/" + deck, set);
  RunOptions o;
  o.backend = b;
  o.solve = solve_options(d);
  o.solve.norm = norm;
  o.solve.reproducible = reproducible;
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

void check_same(const RunReport& c, const RunReport& g) {
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
    CHECK(same_bits(a.history_error, b.history_error));
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
