#pragma once
// The CPU engine's exact sums over a rank's cells as accumulator words, to be added across ranks as
// integers and rounded once (engine_cpu.cpp): tally's exact filter and superaccumulator per thread.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <vector>

#include "tea_problem.hpp"
// GCC cannot see that Accumulator::round_window fills the limbs it reads (-Wmaybe-uninitialized
// where round_words inlines it).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include "tally/reduce/exact.hpp"
#pragma GCC diagnostic pop

namespace tally::heat2d::implicit {

/// The N exact sums over this rank's cells of what term(filters, sinks, c) adds to each filter k and
/// sink k (products a b or values): each thread's filters and accumulators, the threads' merged and
/// normalised; their words one after the other (for RankLink::add_words, then round_words).
template <class T, std::size_t N, class Term>
std::vector<std::int64_t> exact_cell_words(const Grid& g, Term&& term) {
  using Acc = reduce::exact::Accumulator<T>;
  struct Sink {
    Acc acc;
    std::int64_t adds = 0;
    void touch() {
      if (++adds == (std::int64_t{1} << 28)) acc.normalize(), adds = 0;  // far within the limbs' headroom
    }
    void add(double r) { touch(), acc.add(r); }
    void special(double x) { touch(), acc.special(x); }
    void product(double x, double y) { touch(), acc.product(x, y); }
  };
  std::array<Acc, N> total;
  for (Acc& t : total) t.clear();
  const std::int64_t s = g.stride(), nx = g.nx, rows = g.rows;
#pragma omp parallel
  {
    std::array<Sink, N> sink;
    for (Sink& k : sink) k.acc.clear();
    std::array<reduce::exact::Filter, N> f;
    bool seen = false;
#pragma omp for schedule(static)
    for (std::int64_t j = 1; j <= rows; ++j)
      for (std::int64_t i = 1; i <= nx; ++i) term(f, sink, static_cast<std::size_t>(j * s + i)), seen = true;
    for (std::size_t k = 0; k < N; ++k) f[k].flush_into(sink[k].acc, seen), sink[k].acc.normalize();
#pragma omp critical
    for (std::size_t k = 0; k < N; ++k) total[k].merge(sink[k].acc);
  }
  std::vector<std::int64_t> words(N * Acc::words);
  for (std::size_t k = 0; k < N; ++k) {
    total[k].normalize();
    std::copy(std::begin(total[k].w), std::end(total[k].w),
              words.begin() + static_cast<std::ptrdiff_t>(k * Acc::words));
  }
  return words;
}

/// The N accumulators of `words` (every rank's added) rounded.
template <class T, std::size_t N>
std::array<double, N> round_words(const std::vector<std::int64_t>& words) {
  using Acc = reduce::exact::Accumulator<T>;
  std::array<double, N> r;
  Acc a;
  for (std::size_t k = 0; k < N; ++k) {
    std::copy_n(words.begin() + static_cast<std::ptrdiff_t>(k * Acc::words), Acc::words, std::begin(a.w));
    r[k] = a.template round<double>();
  }
  return r;
}

}  // namespace tally::heat2d::implicit
