// What both backends share: level names, the input generator on the host, the reference and the check.
#include "matmul.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "tally/common/error.hpp"

namespace tally::matmul {

std::string to_string(Level l) {
  switch (l) {
    case Level::vector: return "vector";
    case Level::worker: return "worker";
    case Level::worker_vector: return "worker+vector";
    case Level::gang: return "gang";
    case Level::tiled: return "tiled";
    case Level::tiled_tc: return "tiled-tc";
  }
  return "?";
}

Level parse_level(std::string_view s) {
  for (Level l : cuda_levels)
    if (to_string(l) == s) return l;
  throw InputError("--level: unknown level '" + std::string(s) + "' (allowed: vector, worker, worker+vector, gang, tiled, tiled-tc, all)");
}

std::string Shape::str() const { return std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k); }

template <class T>
void generate_host(std::uint64_t seed, int which, std::span<T> out) {
  const auto n = static_cast<std::int64_t>(out.size());
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < n; ++i) out[static_cast<std::size_t>(i)] = input_value<T>(seed, which, static_cast<std::uint64_t>(i));
}

template <class T>
void generate_block_host(std::uint64_t seed, int which, std::span<T> out, std::int64_t cols, std::int64_t row0,
                         std::int64_t col0, std::int64_t ld) {
  const auto n = static_cast<std::int64_t>(out.size());
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < n; ++i)
    out[static_cast<std::size_t>(i)] = input_value<T>(seed, which, static_cast<std::uint64_t>((row0 + i / cols) * ld + col0 + i % cols));
}

template <class T>
double tolerance(std::int64_t k) {
  const double u = std::numeric_limits<T>::epsilon() / 2;  // unit roundoff
  const double kk = static_cast<double>(k);
  return u * (1.0 + std::min(kk, 10.0 * std::sqrt(kk)));
}

template <class T>
double relative_error(std::span<const T> c, const Reference& ref) {
  if (c.size() != ref.c.size()) throw Error("relative_error: size mismatch");
  const auto n = static_cast<std::int64_t>(c.size());
  double worst = 0.0;
#pragma omp parallel for reduction(max : worst) schedule(static)
  for (std::int64_t i = 0; i < n; ++i) {
    const auto j = static_cast<std::size_t>(i);
    const double d = std::fabs(static_cast<double>(c[j]) - ref.c[j]);
    double e;
    if (!std::isfinite(d)) e = std::numeric_limits<double>::infinity();  // NaN poison: unwritten or broken
    else if (ref.abs[j] > 0) e = d / ref.abs[j];
    else e = d > 0 ? std::numeric_limits<double>::infinity() : 0.0;
    worst = std::max(worst, e);
  }
  return worst;
}

namespace {
// Error-free transformations (Knuth's TwoSum, FMA TwoProduct): a double-double accumulator.
inline void two_sum(double a, double b, double& s, double& e) {
  s = a + b;
  const double z = s - a;
  e = (a - (s - z)) + (b - z);
}
struct DD {
  double hi = 0, lo = 0;
  void add_product(double a, double b) {
    const double p = a * b;
    const double pe = std::fma(a, b, -p);
    double s, e;
    two_sum(hi, p, s, e);
    e += lo + pe;
    hi = s + e;
    lo = e - (hi - s);
  }
};
}  // namespace

template <class T>
Reference reference_cpu(std::span<const T> a, std::span<const T> b, Shape s) {
  Reference r;
  const auto mn = static_cast<std::size_t>(s.m * s.n);
  r.c.resize(mn);
  r.abs.resize(mn);
#pragma omp parallel for collapse(2) schedule(static)
  for (std::int64_t i = 0; i < s.m; ++i)
    for (std::int64_t j = 0; j < s.n; ++j) {
      DD acc;
      double abs = 0;
      for (std::int64_t k = 0; k < s.k; ++k) {
        const double x = a[static_cast<std::size_t>(i * s.k + k)], y = b[static_cast<std::size_t>(k * s.n + j)];
        acc.add_product(x, y);
        abs += std::fabs(x * y);
      }
      r.c[static_cast<std::size_t>(i * s.n + j)] = acc.hi + acc.lo;
      r.abs[static_cast<std::size_t>(i * s.n + j)] = abs;
    }
  return r;
}

#define TALLY_MATMUL_INSTANTIATE(T)                                                  \
  template void generate_host<T>(std::uint64_t, int, std::span<T>);                 \
  template void generate_block_host<T>(std::uint64_t, int, std::span<T>, std::int64_t, std::int64_t, std::int64_t, std::int64_t); \
  template double tolerance<T>(std::int64_t);                                        \
  template double relative_error<T>(std::span<const T>, const Reference&);           \
  template Reference reference_cpu<T>(std::span<const T>, std::span<const T>, Shape);
TALLY_MATMUL_INSTANTIATE(float)
TALLY_MATMUL_INSTANTIATE(double)

}  // namespace tally::matmul
