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
double tolerance(ErrorBound bound, int ranks) {
  const double u = std::numeric_limits<T>::epsilon() / 2;  // unit roundoff
  const ErrorBound b = across_ranks(bound, ranks);
  const double nu = static_cast<double>(b.depth) * u;
  if (nu >= 0.5) return std::numeric_limits<double>::infinity();  // no bound: gamma needs n u < 1
  // gamma_n = n u / (1 - n u), rounded upwards: each operation's rounding is below 2^-52 relative,
  // a few of them below 2^-40, far below the factor 1 + 2^-20 applied at the end.
  const double gamma = nu / (1 - nu) * (1 + 0x1p-40);
  const double ref = (ranks + 1) * 0x1p-53;
  return (gamma + b.extra_u * u * (1 + gamma) + ref) * (1 + 0x1p-20);
}

template <class T>
Comparison compare(std::span<const T> c, const Reference& ref, Allowance allowance) {
  if (c.size() != ref.c.size() || ref.abs.size() != ref.c.size()) throw Error("compare: size mismatch");
  const auto n = static_cast<std::int64_t>(c.size());
  const double top = static_cast<double>(std::numeric_limits<T>::max());
  double worst = 0.0;
  std::int64_t ref_nan = 0, ref_inf = 0, nan_extra = 0, nan_missing = 0, inf_wrong = 0, beyond = 0, overflow = 0;
#pragma omp parallel for reduction(max : worst) \
    reduction(+ : ref_nan, ref_inf, nan_extra, nan_missing, inf_wrong, beyond, overflow) schedule(static)
  for (std::int64_t i = 0; i < n; ++i) {
    const auto j = static_cast<std::size_t>(i);
    const double x = static_cast<double>(c[j]), r = ref.c[j];
    const double want = static_cast<double>(static_cast<T>(r));  // the reference rounded to T
    // Both numbers: the error against the unrounded reference, on the scale of |A||B|.
    const auto judge_number = [&] {
      const double d = std::fabs(x - r);
      worst = std::max(worst, ref.abs[j] > 0 ? d / ref.abs[j] : d > 0 ? std::numeric_limits<double>::infinity() : 0.0);
      if (!(d <= allowance.rel * ref.abs[j] + allowance.abs)) ++beyond;
    };
    // An infinity of a sign (NaN: both) that a partial sum may reach in some order, the reference a
    // number: its products of that sign add up to more than half T's largest value (a sum of them,
    // rounded, stays below twice their exact sum while gamma < 1).
    const auto overflow_may_give = [&](double v) {
      const double pos = (ref.abs[j] + r) / 2, neg = (ref.abs[j] - r) / 2;
      if (std::isnan(v)) return pos > top / 2 && neg > top / 2;
      return v > 0 ? pos > top / 2 : neg > top / 2;
    };
    if (std::isnan(r)) {
      ++ref_nan;
      if (!std::isnan(x)) ++nan_missing;
    } else if (std::isinf(r)) {
      ++ref_inf;
      if (x == r) continue;
      if (std::isnan(x)) ++nan_extra;
      else ++inf_wrong;
    } else if (std::isnan(x) || std::isinf(x)) {
      if (std::isinf(want)) ++ref_inf;  // a number beyond T's range: an infinity of its sign
      if (x == want) continue;
      if (overflow_may_give(x)) ++overflow;
      else if (std::isnan(x)) ++nan_extra;
      else ++inf_wrong;
    } else {
      if (std::isinf(want)) ++ref_inf;  // C a number at the top of T's range: within the tolerance or not
      judge_number();
    }
  }
  Comparison out;
  out.ref_nan = ref_nan, out.ref_inf = ref_inf, out.nan_extra = nan_extra, out.nan_missing = nan_missing,
  out.inf_wrong = inf_wrong, out.beyond = beyond, out.overflow = overflow;
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
  template double tolerance<T>(ErrorBound, int);                                                                   \
  template Comparison compare<T>(std::span<const T>, const Reference&, Allowance);                                 \
  template double relative_error<T>(std::span<const T>, const Reference&);                                         \
  template Reference reference_cpu<T>(std::span<const T>, std::span<const T>, Shape);
TALLY_MATMUL_INSTANTIATE(float)
TALLY_MATMUL_INSTANTIATE(double)

}  // namespace tally::matmul
