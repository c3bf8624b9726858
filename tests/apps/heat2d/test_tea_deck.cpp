// heat2d's implicit mode: the deck parser (TeaLeaf's tea.in format) against decks written out here,
// TeaLeaf's own keyword spellings, and every kind of bad input naming its line.
#include <string>

#include "catch.hpp"
#include "implicit/deck.hpp"
#include "tally/common/error.hpp"

namespace {

using namespace tally::heat2d::implicit;
using tally::test::contains;

const std::string kFiveStates =
    "state 1 density=100.0 energy=0.0001\n"
    "state 2 density=0.1 energy=25.0 geometry=rectangle xmin=0.0 xmax=1.0 ymin=1.0 ymax=2.0\n"
    "state 3 density=0.1 energy=0.1 geometry=rectangle xmin=1.0 xmax=6.0 ymin=1.0 ymax=2.0\n"
    "state 4 density=0.1 energy=0.1 geometry=rectangle xmin=5.0 xmax=6.0 ymin=1.0 ymax=8.0\n"
    "state 5 density=0.1 energy=0.1 geometry=rectangle xmin=5.0 xmax=10.0 ymin=7.0 ymax=8.0\n";

/// The deck's error message (empty when it parses).
std::string error_of(const std::string& text) {
  try {
    (void)parse_deck(text, "t.in");
  } catch (const tally::InputError& e) {
    return e.what();
  }
  return {};
}

}  // namespace

TEST_CASE("tea deck: TeaLeaf's benchmark deck, both keyword spellings", "[tea][deck]") {
  // tea_bm_1 as the C++ port writes it, and as the reference's .out echoes it (tl_ prefixes).
  const std::string port =
      "*tea\n" + kFiveStates +
      "x_cells=10\ny_cells=10\nxmin=0.0\nymin=0.0\nxmax=10.0\nymax=10.0\ninitial_timestep=0.004\n"
      "end_step=10\nmax_iters=10000\nuse_cg\neps 1.0e-15\ntest_problem 1\nprofiler_on\nuse_c_kernels\n*endtea\n";
  const std::string ref = "*tea\n" + kFiveStates +
                          "x_cells=10\ny_cells=10\nxmin=0.0\nymin=0.0\nxmax=10.0\nymax=10.0\ninitial_timestep=0.004\n"
                          "end_step=10\ntl_max_iters=10000\ntl_use_cg\ntl_eps 1.0e-15\ntest_problem 1\n*endtea\n";
  for (const std::string& text : {port, ref}) {
    const Deck d = parse_deck(text, "tea_bm_1.in");
    CHECK(d.x_cells == 10);
    CHECK(d.y_cells == 10);
    CHECK(d.xmax == 10.0);
    CHECK(d.ymax == 10.0);
    CHECK(d.initial_timestep == 0.004);
    CHECK(d.end_step == 10);
    CHECK(d.max_iters == 10000);
    CHECK(d.eps == 1.0e-15);
    CHECK(d.solver == SolverKind::cg);
    CHECK(d.test_problem == 1);
    REQUIRE(d.states.size() == 5);
    CHECK(d.states[0].density == 100.0);
    CHECK(d.states[0].energy == 0.0001);
    CHECK(d.states[1].geometry == Geometry::rectangle);
    CHECK(d.states[1].energy == 25.0);
    CHECK(d.states[4].xmax == 10.0);
    CHECK(d.states[4].ymin == 7.0);
    CHECK(d.states[4].line == 6);
    CHECK(d.dx() == 1.0);
  }
  CHECK(parse_deck(port, "p").not_applied.size() == 2);  // profiler_on, use_c_kernels
}

TEST_CASE("tea deck: defaults are the C++ port's", "[tea][deck]") {
  const Deck d = parse_deck("state 1 density=1 energy=1\n", "t.in");
  CHECK(d.x_cells == 10);
  CHECK(d.xmax == 100.0);
  CHECK(d.initial_timestep == 0.1);
  CHECK(d.end_time == 10.0);
  CHECK(d.max_iters == 10000);
  CHECK(d.eps == 1.0e-15);
  CHECK(d.presteps == 30);
  CHECK(d.ppcg_inner_steps == 10);
  CHECK(d.eps_lim == 1.0e-5);
  CHECK(d.summary_frequency == 10);
  CHECK(d.halo_depth == 2);
  CHECK(d.solver == SolverKind::cg);
  CHECK(d.preconditioner == Preconditioner::none);
  CHECK(d.coefficient == Coefficient::density);
}

TEST_CASE("tea deck: keywords, values, separators and comments", "[tea][deck]") {
  const Deck d = parse_deck(
      "! a comment line\n"
      "# another\n"
      "*TEA\n"
      "STATE 1 DENSITY = 2.5, ENERGY=1d-3   ! trailing comment\n"
      "state 2 density=1 energy=2 geometry=circular xmin=5 ymin=5 radius=2\n"
      "state 3 density=1 energy=3 geometry=point xmin=1 ymin=1\n"
      "tl_use_chebyshev\n"
      "tl_ch_cg_presteps 12\n"
      "tl_ch_cg_epslim=2e-3\n"
      "errswitch\n"
      "tl_preconditioner_type jac_block\n"
      "tl_coefficient_inverse_density\n"
      "ppcg_inner_steps = +7\n"
      "summary_frequency 0\n"
      "visit_frequency 5\n"
      "halo_depth 1\n"
      "end_time 0.5\n"
      "reflective_boundary\n"
      "num_chunks_per_rank 4\n"
      "*endtea\n"
      "! after the block, comments only\n",
      "t.in");
  CHECK(d.states[0].density == 2.5);
  CHECK(d.states[0].energy == 1e-3);
  CHECK(d.states[1].geometry == Geometry::circle);
  CHECK(d.states[1].radius == 2.0);
  CHECK(d.states[2].geometry == Geometry::point);
  CHECK(d.solver == SolverKind::chebyshev);
  CHECK(d.presteps == 12);
  CHECK(d.eps_lim == 2e-3);
  CHECK(d.error_switch);
  CHECK(d.preconditioner == Preconditioner::jac_block);
  CHECK(d.coefficient == Coefficient::inverse_density);
  CHECK(d.ppcg_inner_steps == 7);
  CHECK(d.summary_frequency == 0);
  CHECK(d.visit_frequency == 5);
  CHECK(d.end_time == 0.5);
  CHECK(d.not_applied.size() == 2);
  // A later line replaces an earlier one; preconditioner_on means jac_diag unless a type is named.
  CHECK(parse_deck("state 1 density=1 energy=1\neps 1e-3\neps 1e-9\n", "t").eps == 1e-9);
  CHECK(parse_deck("state 1 density=1 energy=1\npreconditioner_on\n", "t").preconditioner == Preconditioner::jac_diag);
  CHECK(parse_deck("state 1 density=1 energy=1\npreconditioner_on\npreconditioner_type none\n", "t").preconditioner ==
        Preconditioner::none);
}

TEST_CASE("tea deck: --set lines override the deck", "[tea][deck]") {
  const Deck d = parse_deck(
      "state 1 density=1 energy=1\nx_cells 10\n", "t.in",
      {"x_cells 64", "use_ppcg", "state 2 density=3 energy=4 geometry=rectangle xmin=1 xmax=2 ymin=1 ymax=2"});
  CHECK(d.x_cells == 64);
  CHECK(d.solver == SolverKind::ppcg);
  CHECK(parse_deck("state 1 density=1 energy=1\n", "t.in", {"use_pipecg"}).solver == SolverKind::pipecg);
  REQUIRE(d.states.size() == 2);
  CHECK(d.states[1].density == 3.0);
  CHECK_THROWS_WITH(parse_deck("state 1 density=1 energy=1\n", "t.in", {"bogus 1"}),
                    contains("--set 'bogus 1': unknown keyword"));
}

TEST_CASE("tea deck: deck_text reads back to the same deck", "[tea][deck]") {
  const Deck a = parse_deck(
      "*tea\n" + kFiveStates +
          "state 6 density=0.3 energy=1e-7 geometry=circle xmin=3 ymin=4 radius=0.125\n"
          "x_cells 17\ny_cells 9\nxmax 10\nymax 10\ntl_use_ppcg\neps 1e-12\ntl_preconditioner_type jac_diag\n"
          "coefficient_inverse_density\nerrswitch\ninitial_timestep 0.1234567890123\n*endtea\n",
      "a");
  const Deck b = parse_deck(deck_text(a), "b");
  CHECK(deck_text(b) == deck_text(a));
  CHECK(b.states.size() == 6);
  CHECK(b.states[5].radius == 0.125);
  CHECK(b.initial_timestep == a.initial_timestep);
  CHECK(b.preconditioner == Preconditioner::jac_diag);
  CHECK(b.error_switch);
}

TEST_CASE("tea deck: bad input names the line", "[tea][deck]") {
  const std::string s1 = "state 1 density=1 energy=1\n";
  CHECK_THAT(error_of(s1 + "x_cellz 10\n"), contains("t.in:2: unknown keyword 'x_cellz'"));
  CHECK_THAT(error_of(s1 + "x_cells\n"), contains("t.in:2: x_cells: expected one value, got 0"));
  CHECK_THAT(error_of(s1 + "x_cells 10 20\n"), contains("t.in:2: x_cells: expected one value, got 2"));
  CHECK_THAT(error_of(s1 + "x_cells ten\n"), contains("t.in:2: x_cells: expected an integer, got 'ten'"));
  CHECK_THAT(error_of(s1 + "x_cells 1.5\n"), contains("expected an integer, got '1.5'"));
  CHECK_THAT(error_of(s1 + "eps 1e-3x\n"), contains("t.in:2: eps: expected a finite number, got '1e-3x'"));
  CHECK_THAT(error_of(s1 + "eps nan\n"), contains("expected a finite number"));
  CHECK_THAT(error_of(s1 + "eps 1e999\n"), contains("expected a finite number"));
  CHECK_THAT(error_of(s1 + "use_cg yes\n"), contains("t.in:2: use_cg: takes no value"));
  CHECK_THAT(error_of(s1 + "preconditioner_type ilu\n"), contains("expected none, jac_diag or jac_block, got 'ilu'"));
  CHECK_THAT(error_of(s1 + "x_cells 0\n"), contains("x_cells and y_cells must be at least 1"));
  CHECK_THAT(error_of(s1 + "y_cells -4\n"), contains("x_cells and y_cells must be at least 1"));
  CHECK_THAT(error_of(s1 + "x_cells 2000000000\n"), contains("too large"));
  CHECK_THAT(error_of(s1 + "xmax -1\n"), contains("needs xmin < xmax"));
  CHECK_THAT(error_of(s1 + "eps 0\n"), contains("eps must be > 0"));
  CHECK_THAT(error_of(s1 + "max_iters 0\n"), contains("max_iters must be in"));
  CHECK_THAT(error_of(s1 + "initial_timestep -0.1\n"), contains("initial_timestep must be > 0"));
  CHECK_THAT(error_of(s1 + "end_step 0\n"), contains("end_step must be at least 1"));
  CHECK_THAT(error_of(s1 + "halo_depth 0\n"), contains("halo_depth must be at least 1"));
  CHECK_THAT(error_of(s1 + "ppcg_inner_steps 0\n"), contains("ppcg_inner_steps must be in"));
  CHECK_THAT(error_of(s1 + "num_chunks_per_rank 0\n"), contains("must be at least 1"));
  // States.
  CHECK_THAT(error_of("x_cells 4\n"), contains("no states"));
  CHECK_THAT(error_of(s1 + s1), contains("t.in:2: state 1 defined twice (first on line 1)"));
  CHECK_THAT(error_of(s1 + "state 3 density=1 energy=1 geometry=point xmin=1 ymin=1\n"),
             contains("state 2 is missing"));
  CHECK_THAT(error_of("state 1 energy=1\n"), contains("t.in:1: state 1: density is missing"));
  CHECK_THAT(error_of("state 1 density=1\n"), contains("state 1: energy is missing"));
  CHECK_THAT(error_of("state 1 density=0 energy=1\n"), contains("state 1: density must be > 0"));
  CHECK_THAT(error_of("state 1 density=-2 energy=1\n"), contains("density must be > 0"));
  CHECK_THAT(error_of("state 1 density=1 energy=1 geometry=point\n"), contains("state 1 is the background"));
  CHECK_THAT(error_of("state 0 density=1 energy=1\n"), contains("state: the number must be in [1, 1000]"));
  CHECK_THAT(error_of("state\n"), contains("state: expected its number"));
  CHECK_THAT(error_of(s1 + "state 2 density=1 energy=1 xmin=1 ymin=1 xmax=2 ymax=2\n"),
             contains("state 2: geometry is missing"));
  CHECK_THAT(error_of(s1 + "state 2 density=1 energy=1 geometry=square\n"),
             contains("geometry must be rectangle, circle or point"));
  CHECK_THAT(error_of(s1 + "state 2 density=1 energy=1 geometry=rectangle xmin=1 ymin=1 xmax=2\n"),
             contains("a rectangle needs ymax"));
  CHECK_THAT(error_of(s1 + "state 2 density=1 energy=1 geometry=circle xmin=1 ymin=1\n"),
             contains("a circle needs radius"));
  CHECK_THAT(error_of(s1 + "state 2 density=1 energy=1 geometry=circle xmin=1 ymin=1 radius=0\n"),
             contains("radius must be > 0"));
  CHECK_THAT(error_of(s1 + "state 2 density=1 energy=1 geometry=point xmin=1 ymin=1 radius=1\n"),
             contains("a point takes no radius"));
  CHECK_THAT(error_of(s1 + "state 2 density=1 energy=1 geometry=rectangle xmin=3 xmax=2 ymin=1 ymax=2\n"),
             contains("needs xmin < xmax"));
  CHECK_THAT(error_of(s1 + "state 2 density=1 energy=1 density=2\n"), contains("state 2: density given twice"));
  CHECK_THAT(error_of(s1 + "state 2 density=1 energy\n"), contains("state 2: 'energy' has no value"));
  CHECK_THAT(error_of(s1 + "state 2 density=1 energy=1 colour=red\n"), contains("state 2: unknown key 'colour'"));
  CHECK_THAT(error_of(s1 + "state 2 density=1 energy=1 geometry=rectangle xmin=50 xmax=150 ymin=1 ymax=2\n"),
             contains("t.in:2: state 2 lies outside the domain"));
  CHECK_THAT(error_of(s1 + "state 2 density=1 energy=1 geometry=circle xmin=-5 ymin=1 radius=1\n"),
             contains("outside the domain"));
  // The *tea block.
  CHECK_THAT(error_of("x_cells 4\n*tea\n" + s1 + "*endtea\n"), contains("t.in:1: outside *tea ... *endtea"));
  CHECK_THAT(error_of("*tea\n" + s1 + "*endtea\nx_cells 4\n"), contains("t.in:4: outside *tea ... *endtea"));
  CHECK_THAT(error_of("*tea\n" + s1), contains("*tea without *endtea"));
  CHECK_THAT(error_of(s1 + "*endtea\n"), contains("t.in:2: *endtea without *tea"));
  CHECK_THAT(error_of("*tea\n*tea\n" + s1 + "*endtea\n"), contains("t.in:2: a second *tea"));
  CHECK_THAT(error_of("*tea extra\n" + s1 + "*endtea\n"), contains("nothing may follow it"));
  // Bytes that are no text at all are quoted printably.
  CHECK_THAT(error_of(s1 + std::string("x\x01\xff", 3) + "\n"), contains("unknown keyword 'x?"
                                                                         "?'"));
  CHECK(error_of("*tea\n" + s1 + "*endtea\n").empty());
}

TEST_CASE("tea deck: a deck file that cannot be read", "[tea][deck]") {
  CHECK_THROWS_WITH(read_deck("/nonexistent/tea.in"), contains("--deck /nonexistent/tea.in: cannot be read"));
}
