#pragma once
// What the implicit mode needs from the ranks of a job (ranks.cpp implements it on tally's rank
// runtime): the grid is split by rows (decompose(), tea_problem.hpp), each rank holds its rows and a halo row above and
// below; the halo rows are exchanged before every stencil that reads them; the dot products are
// exact on every rank and added as integers across ranks before one rounding, so the results are
// the same bits for any rank count.

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace tally::ranks {
class Comm;
}

namespace tally::heat2d::implicit {

class RankLink {
 public:
  virtual ~RankLink() = default;
  [[nodiscard]] virtual int size() const = 0;
  [[nodiscard]] virtual int rank() const = 0;
  /// Collective between neighbours: rows 1 and `rows` of `field` (`stride` doubles a row: the grid's
  /// layout) to the ranks before and after this one; theirs into rows 0 and rows + 1 (the rows
  /// toward the domain's edge stay as they are).
  virtual void exchange_rows(std::span<double> field, std::int64_t stride, std::int64_t rows) const = 0;
  /// A start_add_words in flight: wait() completes it (the destructor waits too).
  class Pending {
   public:
    virtual ~Pending() = default;
    virtual void wait() = 0;
  };
  /// Collective: add_words started, not waited for: `words` stay untouched until wait(), and what
  /// the caller computes meanwhile overlaps the reduction (pipelined CG).
  [[nodiscard]] virtual std::unique_ptr<Pending> start_add_words(std::span<std::int64_t> words) const = 0;
  /// Collective: every rank's `words` added word by word (the exact accumulators' integers).
  void add_words(std::span<std::int64_t> words) const { start_add_words(words)->wait(); }
  /// Collective: the largest of every rank's value (NaN when any is NaN).
  [[nodiscard]] virtual double max(double v) const = 0;
  /// Collective: the sum of every rank's value, in rank order (reproducible off's ordinary sums).
  [[nodiscard]] double sum(double v) const {
    sums(std::span<double>(&v, 1));
    return v;
  }
  /// Collective: each of `v` summed over the ranks in rank order, in place (one reduction for all).
  virtual void sums(std::span<double> v) const = 0;
  /// Collective: every rank's `mine` concatenated in rank order, on rank 0 (empty elsewhere).
  [[nodiscard]] virtual std::vector<double> gather(std::span<const double> mine) const = 0;
};

/// The link over a communicator (which must outlive it).
std::unique_ptr<RankLink> make_rank_link(const ranks::Comm& comm);

}  // namespace tally::heat2d::implicit
