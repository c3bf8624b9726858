#pragma once
// Helpers shared by the tests: seeded random inputs (the seed is printed so a failure can be
// repeated with TALLY_TEST_SEED=<seed>) and tolerances derived from the arithmetic.

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

namespace tally::test {

inline constexpr int skip_code = 77;  ///< CTest SKIP_RETURN_CODE of the GPU test executables

/// A fresh seed per process unless TALLY_TEST_SEED is set; printed once.
inline std::uint64_t seed() {
  static const std::uint64_t s = [] {
    std::uint64_t v;
    if (const char* e = std::getenv("TALLY_TEST_SEED")) v = std::strtoull(e, nullptr, 10);
    else v = (std::uint64_t{std::random_device{}()} << 32) ^ std::random_device{}();
    std::printf("random seed: %llu (repeat with TALLY_TEST_SEED=%llu)\n", static_cast<unsigned long long>(v),
                static_cast<unsigned long long>(v));
    return v;
  }();
  return s;
}

/// A generator seeded from seed() and a per-use salt, so independent inputs differ.
inline std::mt19937_64 rng(std::uint64_t salt = 0) { return std::mt19937_64(seed() ^ (salt * 0x9E3779B97F4A7C15ull)); }

/// n values uniform in [lo, hi] (integers: inclusive), never all zero.
template <class T>
std::vector<T> random_vector(std::size_t n, T lo, T hi, std::uint64_t salt = 0) {
  auto g = rng(salt);
  std::vector<T> v(n);
  if constexpr (std::is_integral_v<T>) {
    std::uniform_int_distribution<T> d(lo, hi);
    for (auto& x : v) x = d(g);
  } else {
    std::uniform_real_distribution<T> d(lo, hi);
    for (auto& x : v) x = d(g);
  }
  return v;
}

/// Error bound of a floating-point sum of n terms in precision T whatever the order:
/// (n + 1) * eps(T) * sum |x_i|.
template <class T>
double sum_tolerance(std::int64_t n, double sum_abs) {
  return static_cast<double>(n + 1) * std::numeric_limits<T>::epsilon() * sum_abs;
}

}  // namespace tally::test
