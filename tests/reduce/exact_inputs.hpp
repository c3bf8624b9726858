#pragma once
// Inputs of the exact-sum tests (exact_checks.hpp on each backend, test_exact_bins.cpp).

#include <cmath>
#include <cstdint>
#include <random>
#include <type_traits>
#include <vector>

#include "test_support.hpp"

namespace tally::test::exact_inputs {

template <class T>
inline constexpr int wide_emax = std::is_same_v<T, float> ? 127 : 1000;

/// Values of every sign and of exponents across T's whole range, subnormals and zeros of both signs
/// included, and some exact negations of earlier values (cancellation), exponents up to `emax`. By
/// default doubles stay below 2^1000, so that an fsum reference's partials cannot overflow.
template <class T>
std::vector<T> wide_values(std::size_t n, std::uint64_t salt, int emax = wide_emax<T>) {
  auto g = tally::test::rng(salt);
  constexpr int emin = std::is_same_v<T, float> ? -149 : -1074;
  std::uniform_int_distribution<int> kind(0, 15), ex(emin, emax), narrow(-30, 30);
  std::uniform_real_distribution<double> m(1.0, 2.0);
  std::vector<T> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    const int k = kind(g);
    double x;
    if (k == 0) x = (g() & 1) ? 0.0 : -0.0;
    else if (k <= 2 && i > 0) x = -static_cast<double>(v[g() % i]);  // cancels an earlier value
    else if (k <= 8) x = std::ldexp(m(g), narrow(g));                // a cluster near 1
    else x = std::ldexp(m(g), ex(g));                                // anywhere, subnormals included
    if (g() & 1) x = -x;
    v[i] = static_cast<T>(x);
  }
  return v;
}

}  // namespace tally::test::exact_inputs
