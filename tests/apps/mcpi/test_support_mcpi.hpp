#pragma once
// Shared by the mcpi tests: the expected-value table data/mcpi_expected.csv, and the bound on an
// estimate's error that a correct count does not exceed.

#include <bit>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "mcpi.hpp"

namespace mcpi_test {

/// The |4 hits/n - pi| that n independent uniform points exceed with probability below delta.
/// Bernstein's inequality for the hit fraction (terms in [0, 1], variance p(1-p), p = pi/4):
/// P(|hits/n - p| >= t) <= 2 exp(-n t^2 / (2 p(1-p) + 2t/3)), solved for t with the right side delta;
/// about 10 sigma for large n. A test making k such checks fails a sound generator with probability
/// below k delta (union bound): 1e-18 for a hundred checks.
inline double pseudo_random_bound(std::int64_t n, double delta = 1e-20) {
  const double p = std::acos(-1.0) / 4, lg = std::log(2 / delta), nn = static_cast<double>(n);
  return 4 * (lg / 3 + std::sqrt(lg * lg / 9 + 2 * nn * lg * p * (1 - p))) / nn;
}

/// The |4 hits/n - pi| that points offset .. offset+n-1 of the 2-D Sobol sequence (scrambled or not)
/// never exceed. Dimensions 0 and 1 of Sobol's sequence form a (0,2)-sequence in base 2 (the digital
/// scramble keeps that): each aligned block of 2^m points is a (0,m,2)-net, one point in each cell of a
/// 2^ceil(m/2) x 2^floor(m/2) grid. The hit set is a down-set of the square (the float conversion and
/// the test x*x + y*y <= 1 are monotone), whose boundary crosses at most 2^ceil(m/2) + 2^floor(m/2) - 1
/// cells; each crossed cell is off by at most one point, the others by none. The range splits into at
/// most two aligned blocks of each size. The hit set's area differs from pi/4 by the band the float
/// rounding blurs (r^2 within 6.02 * 2^-24 of 1): (pi/2) 6.02 2^-24 < 6e-7.
inline double sobol_bound(std::int64_t offset, std::int64_t n) {
  double miss = 0;
  const auto end = static_cast<std::uint64_t>(offset + n);
  for (auto a = static_cast<std::uint64_t>(offset); a < end;) {
    int m = a ? std::countr_zero(a) : std::bit_width(end);  // the largest aligned block at a ...
    while (a + (std::uint64_t{1} << m) > end) --m;          // ... inside the range
    miss += static_cast<double>((std::uint64_t{1} << ((m + 1) / 2)) + (std::uint64_t{1} << (m / 2)) - 1);
    a += std::uint64_t{1} << m;
  }
  return 4 * (miss + 6e-7 * static_cast<double>(n)) / static_cast<double>(n);
}

/// The bound on |4 hits/n - pi| for generator g (see the two above).
inline double pi_error_bound(tally::mcpi::Generator g, std::int64_t offset, std::int64_t n) {
  using tally::mcpi::Generator;
  return g == Generator::sobol || g == Generator::scrambled_sobol ? sobol_bound(offset, n) : pseudo_random_bound(n);
}

struct Expected {
  tally::mcpi::Generator generator;
  tally::mcpi::Api api;
  std::uint64_t seed;
  std::int64_t offset, n, hits;
};

/// Columns: generator,api,seed,offset,n,hits ('#' lines are comments).
inline std::vector<Expected> read_expected(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw std::runtime_error("cannot open " + path);
  std::vector<Expected> rows;
  std::string line;
  bool header = true;
  while (std::getline(f, line)) {
    if (line.empty() || line[0] == '#') continue;
    if (header) {
      header = false;
      continue;
    }
    std::stringstream ss(line);
    std::string g, a, seed, off, n, hits;
    std::getline(ss, g, ',');
    std::getline(ss, a, ',');
    std::getline(ss, seed, ',');
    std::getline(ss, off, ',');
    std::getline(ss, n, ',');
    std::getline(ss, hits, ',');
    rows.push_back({tally::mcpi::parse_generator(g), tally::mcpi::parse_api(a), std::stoull(seed), std::stoll(off),
                    std::stoll(n), std::stoll(hits)});
  }
  return rows;
}

}  // namespace mcpi_test
