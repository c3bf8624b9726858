#pragma once
// A line's (row of A, column of B) statistics and the tiles' merged sides, on the host: the CPU
// engine's, and the tests' view of what the GPU computes (the same integers: ozaki_cuda.cu).
#include <cmath>
#include <cstdint>
#include <vector>

#include "ozaki_arith.hpp"

namespace tally::matmul::ozaki {

/// The statistics of x[0], x[stride], ... x[(k - 1) stride]: its kind, the largest element's
/// scale exponent for Q and s, the bins of its nonzero elements' ratios to it.
template <class T>
LineStats line_stats(const T* x, std::int64_t stride, std::int64_t k, std::uint64_t q) {
  LineStats l;
  T amax = 0;
  for (std::int64_t i = 0; i < k; ++i) {
    const T v = x[i * stride];
    if (!std::isfinite(v)) {
      l.kind = kLineSpecial;
      return l;
    }
    amax = std::fabs(v) > amax ? std::fabs(v) : amax;
  }
  if (amax == 0) {
    l.kind = kLineZero;
    return l;
  }
  const Decomposed top = decompose(amax);
  l.scale = scale_exponent(top, q);
  l.s = line_s(top, l.scale);
  const double inv = div_rn(1.0, static_cast<double>(top.mant));
  for (std::int64_t i = 0; i < k; ++i)
    if (x[i * stride] != 0) ++l.count[bin_of(decompose(x[i * stride]), top, inv)];
  return l;
}

/// The tiles' sides: lines [kTile t, kTile (t + 1)) merged.
inline std::vector<TileSide> tile_sides(const std::vector<LineStats>& lines) {
  std::vector<TileSide> out((lines.size() + kTile - 1) / kTile);
  for (std::size_t i = 0; i < lines.size(); ++i) tile_add(out[i / kTile], lines[i]);
  return out;
}

}  // namespace tally::matmul::ozaki
