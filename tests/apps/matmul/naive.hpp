#pragma once
// An independent reference for the matmul tests: the textbook triple loop in long double (64-bit
// significand on x86), and the componentwise error measure max |c - ref| / (|A||B|).
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <map>
#include <span>
#include <sstream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace tally::test {

struct NaiveProduct {
  std::vector<long double> c, abs;
};

template <class T>
NaiveProduct naive_product(std::span<const T> a, std::span<const T> b, std::int64_t m, std::int64_t n, std::int64_t k) {
  NaiveProduct p{std::vector<long double>(static_cast<std::size_t>(m * n)),
                 std::vector<long double>(static_cast<std::size_t>(m * n))};
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      long double s = 0, s_abs = 0;
      for (std::int64_t q = 0; q < k; ++q) {
        const long double x = a[static_cast<std::size_t>(i * k + q)], y = b[static_cast<std::size_t>(q * n + j)];
        s += x * y;
        s_abs += std::fabs(x * y);
      }
      p.c[static_cast<std::size_t>(i * n + j)] = s;
      p.abs[static_cast<std::size_t>(i * n + j)] = s_abs;
    }
  return p;
}

/// max_ij |c - ref| / abs (NaN anywhere: infinity).
template <class T>
double max_scaled_error(std::span<const T> c, const NaiveProduct& ref) {
  double worst = 0;
  for (std::size_t i = 0; i < c.size(); ++i) {
    const long double d = std::fabs(static_cast<long double>(c[i]) - ref.c[i]);
    if (!(d == d)) return std::numeric_limits<double>::infinity();
    const double e =
        ref.abs[i] > 0 ? static_cast<double>(d / ref.abs[i]) : (d > 0 ? std::numeric_limits<double>::infinity() : 0.0);
    if (e > worst) worst = e;
  }
  return worst;
}

/// IEEE's special values of the product: where the long-double product is NaN or an infinity (the
/// same in any summation order), c must hold exactly that; elsewhere a number within tol of it on
/// the scale of |A||B|. The number of elements that fail.
template <class T>
std::int64_t ieee_mismatches(std::span<const T> c, const NaiveProduct& ref, double tol) {
  std::int64_t bad = 0;
  for (std::size_t i = 0; i < c.size(); ++i) {
    const long double want = ref.c[i], x = c[i];
    if (std::isnan(want)) bad += !std::isnan(x);
    else if (std::isinf(want)) bad += !(x == want);
    else if (!std::isfinite(x)) ++bad;
    else bad += std::fabs(x - want) > tol * ref.abs[i];
  }
  return bad;
}

/// Elements of the long-double product that are NaN, and that are infinite.
inline std::pair<std::int64_t, std::int64_t> special_counts(const NaiveProduct& ref) {
  std::int64_t nan = 0, inf = 0;
  for (const long double x : ref.c) nan += std::isnan(x), inf += std::isinf(x);
  return {nan, inf};
}

/// data/matmul_expected.csv: exact products of the generated inputs (data/matmul_expected_gen.py).
struct ExpectedCase {
  std::string precision;
  std::int64_t m = 0, n = 0, k = 0;
  std::uint64_t seed = 0;
  std::vector<double> c;  ///< row-major M x N
};

inline std::vector<ExpectedCase> read_expected(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path);
  std::map<std::tuple<std::string, std::int64_t, std::int64_t, std::int64_t, std::uint64_t>, ExpectedCase> cases;
  std::vector<std::tuple<std::string, std::int64_t, std::int64_t, std::int64_t, std::uint64_t>> order;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#' || line.rfind("precision,", 0) == 0) continue;
    std::stringstream ss(line);
    std::string f[8];
    for (auto& x : f) std::getline(ss, x, ',');
    const auto key = std::make_tuple(f[0], std::stoll(f[1]), std::stoll(f[2]), std::stoll(f[3]), std::stoull(f[4]));
    auto& c = cases[key];
    if (c.c.empty()) {
      c = {f[0],
           std::get<1>(key),
           std::get<2>(key),
           std::get<3>(key),
           std::get<4>(key),
           std::vector<double>(static_cast<std::size_t>(std::get<1>(key) * std::get<2>(key)), std::nan(""))};
      order.push_back(key);
    }
    c.c[static_cast<std::size_t>(std::stoll(f[5]) * c.n + std::stoll(f[6]))] = std::strtod(f[7].c_str(), nullptr);
  }
  std::vector<ExpectedCase> out;
  for (const auto& k : order) out.push_back(cases[k]);
  return out;
}

}  // namespace tally::test
