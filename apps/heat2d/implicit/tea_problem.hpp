#pragma once
// The problem a deck defines, as TeaLeaf sets it up: the grid, the states painted onto the cells
// (density, energy), the time steps, and the face coefficients of (I + K) u_new = u for a step.
// Fields use cell_ops.hpp's layout: this rank's rows plus a halo of one cell all around.

#include <cstdint>
#include <span>
#include <vector>

#include "deck.hpp"
#include "decomposition.hpp"

namespace tally::heat2d::implicit {

/// This rank's part of the grid: the interior rows [row0, row0 + rows) of nx x ny cells.
struct Grid {
  std::int64_t nx = 0, ny = 0;
  std::int64_t row0 = 0, rows = 0;
  double xmin = 0.0, ymin = 0.0, dx = 0.0, dy = 0.0;

  [[nodiscard]] std::int64_t stride() const { return nx + 2; }
  [[nodiscard]] std::int64_t size() const { return (rows + 2) * stride(); }  ///< doubles in a field
  /// Index of global interior cell (column i, row j) in a field; j may be row0 - 1 or row0 + rows (halo).
  [[nodiscard]] std::int64_t at(std::int64_t j, std::int64_t i) const { return (j - row0 + 1) * stride() + i + 1; }
  /// The first and one-past-the-last index of the interior rows, halo columns included: the span a
  /// dot product runs over (the halo columns hold zeros in at least one operand).
  [[nodiscard]] std::int64_t rows_begin() const { return stride(); }
  [[nodiscard]] std::int64_t rows_end() const { return (rows + 1) * stride(); }
  [[nodiscard]] bool first() const { return row0 == 0; }
  [[nodiscard]] bool last() const { return row0 + rows == ny; }
};

/// Rows a jac_block solve couples (TeaLeaf_ref's jac_block_size): blocks of 4 rows from global row 0.
inline constexpr std::int64_t kJacBlock = 4;

/// The deck's cell rows split over `ranks` ranks in blocks of kJacBlock rows (so that no jac_block
/// block straddles two ranks), as rank `rank` sees it; one rank: all of them. Throws
/// tally::InputError when a rank would get no block.
Decomposition decompose(const Deck& d, int ranks = 1, int rank = 0);

/// This rank's part of the grid (its rows of `dec`, decompose()).
Grid make_grid(const Deck& d, const Decomposition& dec);
/// The whole grid on one rank.
inline Grid make_grid(const Deck& d) { return make_grid(d, decompose(d)); }

/// The time steps TeaLeaf takes: dt = initial_timestep until step == end_step or time + 1e-16 >
/// end_time, time advancing by dt after each step (TeaLeaf_ref's diffuse).
std::int64_t step_count(const Deck& d);
/// Whether the field summary follows step `step` (1-based) of `steps`: every summary_frequency
/// steps (0: never) and after the last.
bool summary_due(const Deck& d, std::int64_t step, std::int64_t steps);

/// Density and energy of every cell of this rank's rows and of its halo rows that lie inside the
/// domain (a neighbour's rows: the faces between ranks need them); the domain's halo cells are zero.
/// TeaLeaf's rules (set_chunk_state): state 1 everywhere, then each later state where its geometry
/// covers the cell: a rectangle when the cell's vertices satisfy x_{i+1} >= xmin' and x_i < xmax'
/// (and the same in y), xmin' = xmin + dx/100 and xmax' = xmax - dx/100; a circle when the cell
/// centre lies within `radius` of (xmin', ymin'); a point when the cell's lower-left vertex is
/// (xmin', ymin'). Vertices x_i = xmin + dx i, centres 0.5 (x_i + x_{i+1}).
struct State0 {
  std::vector<double> density, energy;
};
State0 initial_state(const Deck& d, const Grid& g);

/// The face coefficients for a step of `dt` (TeaLeaf's cg_init): w = density or 1 / density per
/// the deck's coefficient, kx = face(dt / dx^2, w_left, w), ky = face(dt / dy^2, w_below, w), and
/// zero on the domain's boundary faces. kx, ky: fields of the grid.
void face_coefficients(const Deck& d, const Grid& g, double dt, std::span<const double> density, std::span<double> kx,
                       std::span<double> ky);

/// The preconditioners' coefficients (TeaLeaf_ref's tea_diag_init, tea_block_init), fields of the
/// grid: jac_diag: mi = 1 / diag; jac_block, for each block of kJacBlock rows (the last may be
/// shorter) and each column, the forward sweep's cp_k = -ky_{k+1} bfp_k and reciprocal pivots
/// bfp_k = 1 / (diag_k + ky_k cp_{k-1}) (cp_0 = -ky_1 / diag_0). Both engines take them from here.
/// Throws tally::Error for jac_block when the grid's first row is not a block's first.
struct PreconditionerCoefficients {
  std::vector<double> mi, cp, bfp;
};
PreconditionerCoefficients preconditioner_coefficients(const Grid& g, Preconditioner p, std::span<const double> kx,
                                                       std::span<const double> ky);

/// A cell's volume, dx dy (TeaLeaf's volume), and the domain's: the sum of the cells' volumes, all
/// equal, so the exact sum rounded once is one product, nx ny vol.
[[nodiscard]] inline double cell_volume(const Grid& g) { return g.dx * g.dy; }
[[nodiscard]] inline double total_volume(const Grid& g) { return static_cast<double>(g.nx * g.ny) * cell_volume(g); }

/// The field summary (TeaLeaf's field_summary): volume, mass = sum of cell mass m = vol density,
/// density = mass / volume, energy = sum of m e, temperature = sum of m u, each an exact sum rounded
/// once (the products m e and m u exact too; m itself is rounded, as TeaLeaf's cell_mass).
struct Summary {
  double volume = 0.0, mass = 0.0, density = 0.0, energy = 0.0, temperature = 0.0;
};

}  // namespace tally::heat2d::implicit
