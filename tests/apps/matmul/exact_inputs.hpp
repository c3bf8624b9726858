#pragma once
// matmul --exact's test inputs and oracle: A and B whose products span a wide exponent range (for
// doubles beyond a double's range both ways) with exactly cancelling pairs of columns of A / rows of
// B, and the big-integer exact dot product (tests/reduce/dot_reference.hpp) per element.
#include <cmath>
#include <random>
#include <vector>

#include "../../reduce/dot_reference.hpp"
#include "matmul.hpp"
#include "test_support.hpp"

namespace tally::test {

template <class T>
std::pair<std::vector<T>, std::vector<T>> exact_matmul_inputs(tally::matmul::Shape s, std::uint64_t salt) {
  auto g = rng(salt);
  const int span = std::is_same_v<T, float> ? 40 : 520;  // products up to 2^80 / 2^1040
  std::uniform_int_distribution<int> ex(-span, span), kind(0, 7);
  std::uniform_real_distribution<double> m(1.0, 2.0);
  const auto val = [&] { return static_cast<T>(std::ldexp(m(g), ex(g)) * ((g() & 1) ? 1 : -1)); };
  std::vector<T> a(static_cast<std::size_t>(s.m * s.k)), b(static_cast<std::size_t>(s.k * s.n));
  for (auto& x : a) x = kind(g) == 0 ? T(0) : val();
  for (auto& x : b) x = val();
  // Column k + 1 of A = -column k, row k + 1 of B = row k: the big products cancel exactly.
  for (std::int64_t k = 0; k + 1 < s.k; k += 5) {
    for (std::int64_t i = 0; i < s.m; ++i)
      a[static_cast<std::size_t>(i * s.k + k + 1)] = -a[static_cast<std::size_t>(i * s.k + k)];
    for (std::int64_t j = 0; j < s.n; ++j)
      b[static_cast<std::size_t>((k + 1) * s.n + j)] = b[static_cast<std::size_t>(k * s.n + j)];
  }
  return {a, b};
}

/// The correctly rounded C by big-integer arithmetic.
template <class T>
std::vector<T> exact_matmul_oracle(const std::vector<T>& a, const std::vector<T>& b, tally::matmul::Shape s) {
  std::vector<T> c(static_cast<std::size_t>(s.m * s.n));
  for (std::int64_t i = 0; i < s.m; ++i)
    for (std::int64_t j = 0; j < s.n; ++j) {
      ExactDotReference r;
      for (std::int64_t k = 0; k < s.k; ++k)
        r.add_product(a[static_cast<std::size_t>(i * s.k + k)], b[static_cast<std::size_t>(k * s.n + j)]);
      c[static_cast<std::size_t>(i * s.n + j)] = r.round<T>();
    }
  return c;
}

/// Elements whose bits differ.
template <class T>
std::int64_t bit_mismatches(const std::vector<T>& x, const std::vector<T>& y) {
  std::int64_t bad = 0;
  for (std::size_t e = 0; e < x.size(); ++e) bad += std::memcmp(&x[e], &y[e], sizeof(T)) != 0;
  return bad + static_cast<std::int64_t>(x.size() != y.size());
}

}  // namespace tally::test
