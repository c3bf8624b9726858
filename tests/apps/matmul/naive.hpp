#pragma once
// An independent reference for the matmul tests: the textbook triple loop in long double (64-bit
// significand on x86), and the componentwise error measure max |c - ref| / (|A||B|).
#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

namespace tally::test {

struct NaiveProduct {
  std::vector<long double> c, abs;
};

template <class T>
NaiveProduct naive_product(std::span<const T> a, std::span<const T> b, std::int64_t m, std::int64_t n, std::int64_t k) {
  NaiveProduct p{std::vector<long double>(static_cast<std::size_t>(m * n)), std::vector<long double>(static_cast<std::size_t>(m * n))};
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
    const double e = ref.abs[i] > 0 ? static_cast<double>(d / ref.abs[i]) : (d > 0 ? std::numeric_limits<double>::infinity() : 0.0);
    if (e > worst) worst = e;
  }
  return worst;
}

}  // namespace tally::test
