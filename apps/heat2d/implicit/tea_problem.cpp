// The problem's set-up on the host (tea_problem.hpp): grid, steps, states, coefficients.
#include "tea_problem.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "cell_ops.hpp"
#include "tally/common/error.hpp"

namespace tally::heat2d::implicit {

Decomposition decompose(const Deck& d, int ranks, int rank) {
  const std::int64_t blocks = (d.y_cells + kJacBlock - 1) / kJacBlock;
  if (blocks < ranks)
    throw InputError("y_cells " + std::to_string(d.y_cells) + " gives " + std::to_string(blocks) + " blocks of " +
                     std::to_string(kJacBlock) + " rows, fewer than the " + std::to_string(ranks) +
                     " ranks: each rank needs one");
  return Decomposition::split(d.x_cells, d.y_cells, 0, d.y_cells, ranks, rank, kJacBlock);
}

Grid make_grid(const Deck& d, const Decomposition& dec) {
  if (dec.nx() != d.x_cells || dec.ny() != d.y_cells) throw Error("heat2d --deck: the decomposition of another grid");
  Grid g;
  g.nx = d.x_cells;
  g.ny = d.y_cells;
  g.row0 = dec.rows().begin;
  g.rows = dec.rows().size();
  g.xmin = d.xmin;
  g.ymin = d.ymin;
  g.dx = d.dx();
  g.dy = d.dy();
  return g;
}

std::int64_t step_count(const Deck& d) {
  constexpr double g_small = 1.0e-16;  // TeaLeaf_ref's end-time slack
  double time = 0.0;
  for (std::int64_t step = 1;; ++step) {
    time += d.initial_timestep;
    if (time + g_small > d.end_time || step >= d.end_step) return step;
  }
}

bool summary_due(const Deck& d, std::int64_t step, std::int64_t steps) {
  return step == steps || (d.summary_frequency > 0 && step % d.summary_frequency == 0);
}

State0 initial_state(const Deck& d, const Grid& g) {
  State0 s{std::vector<double>(static_cast<std::size_t>(g.size()), 0.0),
           std::vector<double>(static_cast<std::size_t>(g.size()), 0.0)};
  const double dx = g.dx, dy = g.dy;
  const auto vx = [&](std::int64_t i) { return d.xmin + dx * static_cast<double>(i); };
  const auto vy = [&](std::int64_t j) { return d.ymin + dy * static_cast<double>(j); };
  const std::int64_t j0 = g.row0 > 0 ? g.row0 - 1 : 0, j1 = g.row0 + g.rows < g.ny ? g.row0 + g.rows + 1 : g.ny;
#pragma omp parallel for schedule(static)
  for (std::int64_t j = j0; j < j1; ++j) {
    for (std::int64_t i = 0; i < g.nx; ++i) {
      double rho = d.states[0].density, e = d.states[0].energy;
      for (std::size_t k = 1; k < d.states.size(); ++k) {
        const State& st = d.states[k];
        // TeaLeaf moves each boundary a hundredth of a cell inwards, so that a boundary on a cell
        // edge cannot land in the neighbouring cell by rounding.
        const double xmin = st.xmin + dx / 100.0, ymin = st.ymin + dy / 100.0;
        bool in = false;
        switch (st.geometry) {
          case Geometry::rectangle: {
            const double xmax = st.xmax - dx / 100.0, ymax = st.ymax - dy / 100.0;
            in = vx(i + 1) >= xmin && vx(i) < xmax && vy(j + 1) >= ymin && vy(j) < ymax;
            break;
          }
          case Geometry::circle: {
            const double cx = 0.5 * (vx(i) + vx(i + 1)) - xmin, cy = 0.5 * (vy(j) + vy(j + 1)) - ymin;
            in = std::sqrt(cx * cx + cy * cy) <= st.radius;
            break;
          }
          case Geometry::point: in = vx(i) == xmin && vy(j) == ymin; break;
        }
        if (in) rho = st.density, e = st.energy;
      }
      const auto c = static_cast<std::size_t>(g.at(j, i));
      s.density[c] = rho;
      s.energy[c] = e;
    }
  }
  return s;
}

void face_coefficients(const Deck& d, const Grid& g, double dt, std::span<const double> density, std::span<double> kx,
                       std::span<double> ky) {
  const double rx = dt / (g.dx * g.dx), ry = dt / (g.dy * g.dy);
  const bool inverse = d.coefficient == Coefficient::inverse_density;
  const auto w = [&](std::int64_t c) {
    return inverse ? 1.0 / density[static_cast<std::size_t>(c)] : density[static_cast<std::size_t>(c)];
  };
  const std::int64_t s = g.stride();
#pragma omp parallel for schedule(static)
  for (std::int64_t j = g.row0; j < g.row0 + g.rows; ++j) {
    for (std::int64_t i = 0; i < g.nx; ++i) {
      const std::int64_t c = g.at(j, i);
      const auto k = static_cast<std::size_t>(c);
      kx[k] = i == 0 ? 0.0 : ops::face(rx, w(c - 1), w(c));
      ky[k] = j == 0 ? 0.0 : ops::face(ry, w(c - s), w(c));
    }
    // The right face of the last column, on the boundary.
    kx[static_cast<std::size_t>(g.at(j, g.nx))] = 0.0;
  }
  // The faces above this rank's last row: the boundary's (zero) or those shared with the next rank.
  const std::int64_t j = g.row0 + g.rows;
  for (std::int64_t i = 0; i < g.nx; ++i) {
    const std::int64_t c = g.at(j, i);
    ky[static_cast<std::size_t>(c)] = j == g.ny ? 0.0 : ops::face(ry, w(c - s), w(c));
  }
}

PreconditionerCoefficients preconditioner_coefficients(const Grid& g, Preconditioner p, std::span<const double> kx,
                                                       std::span<const double> ky) {
  PreconditionerCoefficients pc;
  if (p == Preconditioner::none) return pc;
  const std::int64_t st = g.stride();
  const auto s = static_cast<std::size_t>(st);
  const auto diag = [&](std::size_t c) { return ops::diagonal(kx[c], kx[c + 1], ky[c], ky[c + s]); };
  if (p == Preconditioner::jac_diag) {
    pc.mi.assign(static_cast<std::size_t>(g.size()), 0.0);
#pragma omp parallel for schedule(static)
    for (std::int64_t j = 1; j <= g.rows; ++j)
      for (std::int64_t i = 1; i <= g.nx; ++i) {
        const auto c = static_cast<std::size_t>(j * st + i);
        pc.mi[c] = ops::div(1.0, diag(c));
      }
    return pc;
  }
  if (g.row0 % kJacBlock != 0)
    throw Error("jac_block: a rank's rows must start at a multiple of " + std::to_string(kJacBlock));
  pc.cp.assign(static_cast<std::size_t>(g.size()), 0.0);
  pc.bfp.assign(pc.cp.size(), 0.0);
  const std::int64_t blocks = (g.rows + kJacBlock - 1) / kJacBlock;
#pragma omp parallel for schedule(static)
  for (std::int64_t b = 0; b < blocks; ++b) {
    const std::int64_t n = std::min(kJacBlock, g.rows - b * kJacBlock);
    for (std::int64_t i = 1; i <= g.nx; ++i) {
      const auto c0 = static_cast<std::size_t>((1 + b * kJacBlock) * st + i);
      pc.cp[c0] = ops::div(-ky[c0 + s], diag(c0));
      for (std::int64_t k = 1; k < n; ++k) {
        const std::size_t c = c0 + static_cast<std::size_t>(k) * s;
        pc.bfp[c] = ops::div(1.0, ops::add(diag(c), ops::mul(ky[c], pc.cp[c - s])));
        pc.cp[c] = ops::mul(-ky[c + s], pc.bfp[c]);
      }
    }
  }
  return pc;
}

}  // namespace tally::heat2d::implicit
