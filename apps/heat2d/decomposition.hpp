#pragma once
// heat2d's decomposition of a grid over the ranks of a job, in both modes: which global rows each
// rank updates, who its neighbours are, and the grid's extents. It is made once where the ranks are
// known (the driver, the Python module, a test: decompose() in solver.hpp for the explicit mode,
// implicit/tea_problem.hpp for the implicit one) and handed down as one value to the solver, the
// output writer and the implicit mode's engine alike, as NVIDIA's multi-GPU Jacobi computes its row
// range once in main.
//
// The rows [lo, hi) that are split (explicit: the interior grid rows 1..ny-2; implicit: every cell
// row) go to the ranks in order, in units of `unit` rows (implicit: jac_block's blocks of 4), as
// evenly as they go: the first ranks one unit more (ranks::split_range over the units).

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "tally/common/error.hpp"
#include "tally/ranks/split.hpp"

namespace tally::heat2d {

class Decomposition {
 public:
  using Rows = tally::ranks::Range;  ///< global rows [begin, end)

  /// Rows [lo, hi) of an nx x ny grid split over `size` ranks in units of `unit` rows; this is rank
  /// `rank`'s value. Throws tally::Error when a rank would get no row (the callers check first,
  /// naming the option that sets the rows).
  static Decomposition split(std::int64_t nx, std::int64_t ny, std::int64_t lo, std::int64_t hi, int size, int rank,
                             std::int64_t unit = 1) {
    const std::int64_t units = (hi - lo + unit - 1) / unit;
    if (size < 1 || rank < 0 || rank >= size || unit < 1 || units < size)
      throw Error("heat2d: cannot split " + std::to_string(hi - lo) + " rows in units of " + std::to_string(unit) +
                  " over " + std::to_string(size) + " ranks");
    Decomposition d;
    d.nx_ = nx, d.ny_ = ny, d.size_ = size, d.rank_ = rank;
    for (int r = 0; r < size; ++r) {
      const Rows u = tally::ranks::split_range(units, size, r);
      d.rows_.push_back({lo + u.begin * unit, std::min(lo + u.end * unit, hi)});
    }
    return d;
  }

  [[nodiscard]] std::int64_t nx() const { return nx_; }  ///< the whole grid's columns
  [[nodiscard]] std::int64_t ny() const { return ny_; }  ///< and rows
  [[nodiscard]] int size() const { return size_; }       ///< the ranks
  [[nodiscard]] int rank() const { return rank_; }       ///< this one
  [[nodiscard]] bool several() const { return size_ > 1; }
  [[nodiscard]] Rows rows() const { return rows_of(rank_); }  ///< the rows this rank updates
  [[nodiscard]] Rows rows_of(int r) const { return rows_[static_cast<std::size_t>(r)]; }
  /// The neighbours holding the rows below and above this rank's (-1: none, the grid's edge).
  [[nodiscard]] int below() const { return rank_ > 0 ? rank_ - 1 : -1; }
  [[nodiscard]] int above() const { return rank_ + 1 < size_ ? rank_ + 1 : -1; }
  /// The fewest rows any rank updates.
  [[nodiscard]] std::int64_t fewest_rows() const {
    std::int64_t m = rows_.front().size();
    for (const Rows& r : rows_) m = std::min(m, r.size());
    return m;
  }

 private:
  std::int64_t nx_ = 0, ny_ = 0;
  int size_ = 1, rank_ = 0;
  std::vector<Rows> rows_;
};

}  // namespace tally::heat2d
