#pragma once
// The input deck of heat2d's implicit mode: TeaLeaf's `tea.in` keyword format, as its reference
// (UK-MAC/TeaLeaf_ref) and its C++ port (UoB-HPC/TeaLeaf) read it.
//
//   *tea
//   state 1 density=100.0 energy=0.0001
//   state 2 density=0.1 energy=25.0 geometry=rectangle xmin=0.0 xmax=1.0 ymin=1.0 ymax=2.0
//   x_cells=10
//   y_cells 10
//   tl_use_cg
//   eps 1.0e-15
//   *endtea
//
// One keyword a line, with or without the `tl_` prefix, its value after `=` or blanks; `!` and `#`
// start a comment; keywords are case-insensitive. Lines before `*tea` and after `*endtea` may hold
// only comments (a deck without the markers is all one block). Every keyword, its default and what
// it does is in README.md (this folder's); the defaults are the C++ port's.
//
// Bad input throws tally::InputError naming the deck and the line ("deck tea.in:7: ..."): an unknown
// keyword, a missing or malformed value, a value out of range, a state defined twice or missing, a
// state outside the domain, a non-positive density.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tally::heat2d::implicit {

enum class SolverKind { cg, chebyshev, ppcg, jacobi, pipecg };
enum class Preconditioner { none, jac_diag, jac_block };
/// The conductivity of a cell: its density (TeaLeaf's CONDUCTIVITY) or its inverse.
enum class Coefficient { density, inverse_density };
enum class Geometry { rectangle, circle, point };

std::string to_string(SolverKind s);      ///< "cg", "cheby", "ppcg", "jacobi", "pipecg" (the --solver names)
std::string to_string(Preconditioner p);  ///< "none", "jac_diag", "jac_block"
std::string to_string(Coefficient c);     ///< "density", "inverse_density"
std::string to_string(Geometry g);        ///< "rectangle", "circle", "point"

/// A material state. State 1 is the background; state k > 1 overwrites the cells its geometry
/// covers, in the order of k. Coordinates are as written (TeaLeaf's shift by a hundredth of a cell
/// is applied where the cells are assigned, tea_problem.cpp).
struct State {
  double density = 0.0, energy = 0.0;
  Geometry geometry = Geometry::rectangle;
  double xmin = 0.0, xmax = 0.0, ymin = 0.0, ymax = 0.0;  ///< circle and point: (xmin, ymin) is the centre
  double radius = 0.0;
  int line = 0;  ///< the deck line that defined it (0: an override, --set)
};

struct Deck {
  std::string name;  ///< the file (or "<options>") the messages name
  double xmin = 0.0, xmax = 100.0, ymin = 0.0, ymax = 100.0;
  std::int64_t x_cells = 10, y_cells = 10;
  double initial_timestep = 0.1, end_time = 10.0;
  std::int64_t end_step = 2147483647;
  std::int64_t max_iters = 10000;
  double eps = 1.0e-15;
  SolverKind solver = SolverKind::cg;
  std::int64_t ppcg_inner_steps = 10;
  std::int64_t presteps = 30;  ///< CG steps before Chebyshev/PPCG take over (without errswitch)
  bool error_switch = false;   ///< switch when the CG error is below epslim (after 20 steps) instead
  double eps_lim = 1.0e-5;
  Preconditioner preconditioner = Preconditioner::none;
  Coefficient coefficient = Coefficient::density;
  std::int64_t summary_frequency = 10;  ///< 0: only the first and the last summary
  bool check_result = true;
  std::int64_t halo_depth = 2;       ///< accepted and checked; tally's halo is one cell (no effect)
  std::int64_t visit_frequency = 0;  ///< > 0: an XDMF sidecar for the result file
  std::int64_t test_problem = 0;     ///< recorded only
  std::vector<State> states;         ///< states[0] is state 1
  /// Lines that TeaLeaf takes and that do not apply to tally (profiler_on, use_c_kernels, ...):
  /// "line 12: profiler_on".
  std::vector<std::string> not_applied;

  /// dx, dy as TeaLeaf computes them: (max - min) / cells.
  [[nodiscard]] double dx() const { return (xmax - xmin) / static_cast<double>(x_cells); }
  [[nodiscard]] double dy() const { return (ymax - ymin) / static_cast<double>(y_cells); }
};

/// Parses a deck's text; `name` is what the messages call it; then the `overrides`, lines in the
/// same format read after the deck's own (heat2d's --set: a later keyword replaces an earlier one, as
/// in the deck itself). Throws tally::InputError.
Deck parse_deck(std::string_view text, const std::string& name, const std::vector<std::string>& overrides = {});
/// Reads and parses a deck file (InputError when it cannot be read).
Deck read_deck(const std::string& path, const std::vector<std::string>& overrides = {});

/// The deck as text that parse_deck reads back to the same deck (every keyword written out): what
/// the result file records.
std::string deck_text(const Deck& d);

}  // namespace tally::heat2d::implicit
