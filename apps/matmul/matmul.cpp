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
    case Level::ozaki: return "ozaki";
  }
  return "?";
}

Level parse_level(std::string_view s) {
  for (Level l : cuda_levels)
    if (to_string(l) == s) return l;
  throw InputError("--level: unknown level '" + std::string(s) +
                   "' (allowed: vector, worker, worker+vector, gang, tiled, tiled-tc, ozaki, all)");
}

std::string Shape::str() const { return std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k); }

template <class T>
void generate_host(std::uint64_t seed, int which, std::span<T> out) {
  const auto n = static_cast<std::int64_t>(out.size());
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < n; ++i)
    out[static_cast<std::size_t>(i)] = input_value<T>(seed, which, static_cast<std::uint64_t>(i));
}

template <class T>
void generate_block_host(std::uint64_t seed, int which, std::span<T> out, std::int64_t cols, std::int64_t row0,
                         std::int64_t col0, std::int64_t ld) {
  const auto n = static_cast<std::int64_t>(out.size());
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < n; ++i)
    out[static_cast<std::size_t>(i)] =
        input_value<T>(seed, which, static_cast<std::uint64_t>((row0 + i / cols) * ld + col0 + i % cols));
}

template <class T>
double tolerance(std::int64_t k) {
  const double u = std::numeric_limits<T>::epsilon() / 2;  // unit roundoff
  const double kk = static_cast<double>(k);
  return u * (1.0 + std::min(kk, 10.0 * std::sqrt(kk)));
}

template <class T>
Comparison compare(std::span<const T> c, const Reference& ref) {
  if (c.size() != ref.c.size() || ref.abs.size() != ref.c.size()) throw Error("compare: size mismatch");
  const auto n = static_cast<std::int64_t>(c.size());
  double worst = 0.0;
  std::int64_t ref_nan = 0, ref_inf = 0, nan_extra = 0, nan_missing = 0, inf_wrong = 0;
#pragma omp parallel for reduction(max : worst) reduction(+ : ref_nan, ref_inf, nan_extra, nan_missing, inf_wrong) schedule(static)
  for (std::int64_t i = 0; i < n; ++i) {
    const auto j = static_cast<std::size_t>(i);
    const double x = static_cast<double>(c[j]), r = ref.c[j];
    const double want = static_cast<double>(static_cast<T>(r));  // the reference rounded to T
    // Both numbers: the error against the unrounded reference, on the scale of |A||B|.
    const auto judge_number = [&] {
      const double d = std::fabs(x - r);
      worst = std::max(worst, ref.abs[j] > 0 ? d / ref.abs[j] : d > 0 ? std::numeric_limits<double>::infinity() : 0.0);
    };
    if (std::isnan(r)) {
      ++ref_nan;
      if (!std::isnan(x)) ++nan_missing;
    } else if (std::isinf(want)) {  // an infinite reference, or a number beyond T's range
      ++ref_inf;
      if (x == want) continue;
      if (std::isnan(x)) ++nan_extra;
      else if (std::isinf(r) || std::isinf(x)) ++inf_wrong;
      else judge_number();  // C a number at the top of T's range: within the tolerance or not
    } else if (std::isnan(x)) {
      ++nan_extra;
    } else if (std::isinf(x)) {
      ++inf_wrong;
    } else {
      judge_number();
    }
  }
  Comparison out;
  out.ref_nan = ref_nan, out.ref_inf = ref_inf, out.nan_extra = nan_extra, out.nan_missing = nan_missing,
  out.inf_wrong = inf_wrong;
  out.rel_error = out.mismatches() > 0 ? std::numeric_limits<double>::infinity() : worst;
  return out;
}

template <class T>
double relative_error(std::span<const T> c, const Reference& ref) {
  return compare<T>(c, ref).rel_error;
}

template <class T>
Reference reference_cpu(std::span<const T> a, std::span<const T> b, Shape s) {
  Reference r;
  const auto mn = static_cast<std::size_t>(s.m * s.n);
  r.c.resize(mn);
  r.abs.resize(mn);
#pragma omp parallel for collapse(2) schedule(static)
  for (std::int64_t i = 0; i < s.m; ++i)
    for (std::int64_t j = 0; j < s.n; ++j) {
      RefSum acc;
      for (std::int64_t k = 0; k < s.k; ++k)
        acc.add_product(a[static_cast<std::size_t>(i * s.k + k)], b[static_cast<std::size_t>(k * s.n + j)]);
      r.c[static_cast<std::size_t>(i * s.n + j)] = acc.value();
      r.abs[static_cast<std::size_t>(i * s.n + j)] = acc.abs;
    }
  return r;
}

#define TALLY_MATMUL_INSTANTIATE(T)                                                                                \
  template void generate_host<T>(std::uint64_t, int, std::span<T>);                                                \
  template void generate_block_host<T>(std::uint64_t, int, std::span<T>, std::int64_t, std::int64_t, std::int64_t, \
                                       std::int64_t);                                                              \
  template double tolerance<T>(std::int64_t);                                                                      \
  template Comparison compare<T>(std::span<const T>, const Reference&);                                            \
  template double relative_error<T>(std::span<const T>, const Reference&);                                         \
  template Reference reference_cpu<T>(std::span<const T>, std::span<const T>, Shape);
TALLY_MATMUL_INSTANTIATE(float)
TALLY_MATMUL_INSTANTIATE(double)

}  // namespace tally::matmul
