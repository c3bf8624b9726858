#pragma once
// The Ozaki level's tests' oracle: per element of C, the exact product rounded once, the exact error
// of a computed C (X - C by big-integer arithmetic, rounded to double) and |A||B| exactly (rounded),
// and the promise each element must keep (ozaki/ozaki.hpp): within u (1 + min(K, 10 sqrt K)) of |A||B|,
// and either the exact product rounded once (the fallback) or within the Ozaki bound
// sigma_i sum_k |B_kj| + sigma_j sum_k |A_ik| + 2 u |C|, with sigma_i = 2^-e_i from the row's
// largest element and Q (computed here by frexp, not by the engine's integer code).
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "../../reduce/dot_reference.hpp"
#include "catch.hpp"
#include "matmul.hpp"
#include "ozaki/ozaki.hpp"
#include "test_support.hpp"

namespace tally::test {

/// Scales row i of the M x K matrix x by 2^rows[i] and column q by 2^cols[q] (empty: none).
template <class T>
void scale_lines(std::vector<T>& x, std::int64_t m, std::int64_t k, const std::vector<int>& rows,
                 const std::vector<int>& cols) {
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t q = 0; q < k; ++q) {
      T& v = x[static_cast<std::size_t>(i * k + q)];
      v = std::ldexp(v, (rows.empty() ? 0 : rows[static_cast<std::size_t>(i)]) +
                            (cols.empty() ? 0 : cols[static_cast<std::size_t>(q)]));
    }
}

/// The adversarial inputs of the Ozaki level's tests (CPU against exact products, GPU against the CPU).
template <class T>
struct OzakiCase {
  std::string name;
  matmul::Shape s;
  std::vector<T> a, b;
  bool int8_only = false;  ///< every element must come from the INT8 products (none exact)
  bool all_exact = false;  ///< every tile's certificate must fail
};

template <class T>
std::vector<OzakiCase<T>> ozaki_cases(std::uint64_t salt) {
  constexpr bool dbl = sizeof(T) == 8;
  const matmul::Shape s{36, 33, 700};
  const auto fresh = [&](const std::string& name) {
    OzakiCase<T> c{name, s, random_vector<T>(static_cast<std::size_t>(s.m * s.k), T(-1), T(1), ++salt),
                   random_vector<T>(static_cast<std::size_t>(s.k * s.n), T(-1), T(1), ++salt)};
    return c;
  };
  std::vector<OzakiCase<T>> out;
  {  // per-line scaling takes any spread between lines
    auto c = fresh(dbl ? "rows of A from 2^-300 to 2^300 (huge next to tiny), columns of B from 2^-200 to 2^200"
                       : "rows of A from 2^-60 to 2^60 (huge next to tiny), columns of B from 2^-40 to 2^40");
    std::vector<int> rows(static_cast<std::size_t>(s.m)), cols(static_cast<std::size_t>(s.n));
    for (std::int64_t i = 0; i < s.m; ++i)
      rows[static_cast<std::size_t>(i)] = (i % 2 ? 1 : -1) * static_cast<int>((dbl ? 15 : 3) * i / 2);
    for (std::int64_t j = 0; j < s.n; ++j)
      cols[static_cast<std::size_t>(j)] = static_cast<int>((dbl ? 400 : 80) * j / (s.n - 1)) - (dbl ? 200 : 40);
    scale_lines(c.a, s.m, s.k, rows, {});
    scale_lines(c.b, s.k, s.n, {}, cols);
    c.int8_only = true;
    out.push_back(std::move(c));
  }
  {
    auto c = fresh("zero rows and columns, and zeros scattered");
    for (std::int64_t q = 0; q < s.k; ++q)
      c.a[static_cast<std::size_t>(3 * s.k + q)] = 0, c.b[static_cast<std::size_t>(q * s.n + 5)] = 0;
    for (std::size_t x = 0; x < c.a.size(); x += 7) c.a[x] = 0;
    c.int8_only = true;
    out.push_back(std::move(c));
  }
  for (int b_scale : {dbl ? 100 : 40, -5}) {  // C normal, or subnormal
    auto c = fresh(std::string("every third row of A subnormal, C ") + (b_scale > 0 ? "normal" : "subnormal"));
    std::vector<int> rows(static_cast<std::size_t>(s.m));
    for (std::int64_t i = 0; i < s.m; i += 3) rows[static_cast<std::size_t>(i)] = dbl ? -1062 : -140;
    scale_lines(c.a, s.m, s.k, rows, {});
    scale_lines(c.b, s.k, s.n, {}, std::vector<int>(static_cast<std::size_t>(s.n), b_scale));
    out.push_back(std::move(c));
  }
  {
    auto c = fresh("results beyond the largest finite value and just below it");
    scale_lines(c.a, s.m, s.k, std::vector<int>(static_cast<std::size_t>(s.m), dbl ? 1000 : 100), {});
    std::vector<int> cols(static_cast<std::size_t>(s.n));
    for (std::int64_t j = 0; j < s.n; ++j)
      cols[static_cast<std::size_t>(j)] = j % 2 ? 40 : (dbl ? 15 : 19);  // |C| ~ 2^(emax + 20), or 2^(emax - 5)
    scale_lines(c.b, s.k, s.n, {}, cols);
    out.push_back(std::move(c));
  }
  {
    auto c = fresh(dbl ? "every row of A from 2^-60 to 2^60" : "every row of A from 2^-30 to 2^30");
    std::vector<int> cols(static_cast<std::size_t>(s.k));
    for (std::int64_t q = 0; q < s.k; ++q)
      cols[static_cast<std::size_t>(q)] = dbl ? static_cast<int>(q % 121) - 60 : static_cast<int>(q % 61) - 30;
    scale_lines(c.a, s.m, s.k, {}, cols);
    c.all_exact = true;
    out.push_back(std::move(c));
  }
  {
    auto c = fresh("Inf and NaN in rows of A and columns of B");
    const T inf = std::numeric_limits<T>::infinity();
    c.a[static_cast<std::size_t>(2 * s.k + 3)] = std::numeric_limits<T>::quiet_NaN();  // row 2: NaN throughout
    c.a[static_cast<std::size_t>(30 * s.k)] = inf;  // row 30: +-Inf, NaN where B's row 0 is 0
    c.b[7] = 0;
    c.b[static_cast<std::size_t>(5 * s.n + 1)] = inf, c.b[static_cast<std::size_t>(6 * s.n + 1)] =
                                                          -inf;  // column 1: Inf - Inf ...
    c.a[5] = T(0.5), c.a[6] = T(0.25);                           // ... in row 0 at least
    c.b[static_cast<std::size_t>(9 * s.n + 30)] = -inf;          // column 30: -+Inf
    out.push_back(std::move(c));
  }
  return out;
}

/// 2^-e for the largest e with amax 2^e <= q (amax finite and nonzero): frexp on both.
inline double ozaki_sigma(double amax, std::uint64_t q) {
  int ea = 0, eq = 0;
  const double fa = std::frexp(amax, &ea), fq = std::frexp(static_cast<double>(q), &eq);
  const int e = fa <= fq ? eq - ea : eq - ea - 1;
  return std::ldexp(1.0, -e);
}

/// sigma of each line (x[l * lstride + k * kstride], k < K): inf for a line holding Inf/NaN (its
/// elements must be exact), 0 for an all-zero line.
template <class T>
std::vector<double> ozaki_sigmas(const std::vector<T>& x, std::int64_t lines, std::int64_t lstride,
                                 std::int64_t kstride, std::int64_t k, std::uint64_t q) {
  std::vector<double> out(static_cast<std::size_t>(lines));
  for (std::int64_t l = 0; l < lines; ++l) {
    double amax = 0;
    bool special = false;
    for (std::int64_t i = 0; i < k; ++i) {
      const double v = x[static_cast<std::size_t>(l * lstride + i * kstride)];
      if (!std::isfinite(v)) special = true;
      else amax = std::max(amax, std::fabs(v));
    }
    out[static_cast<std::size_t>(l)] = special     ? std::numeric_limits<double>::infinity()
                                       : amax == 0 ? 0.0
                                                   : ozaki_sigma(amax, q);
  }
  return out;
}

struct OzakiCheck {
  std::int64_t exact_elements = 0;  ///< elements bitwise the exact product rounded once
  double worst = 0;                 ///< max error / (|A||B|) over finite elements
};

/// Asserts the promise for every element of c = a b (M x K times K x N); returns what it saw.
template <class T>
OzakiCheck check_ozaki_promise(const std::vector<T>& a, const std::vector<T>& b, const std::vector<T>& c,
                               matmul::Shape s, std::uint64_t q) {
  const double u = std::numeric_limits<T>::epsilon() / 2, tol = matmul::ozaki::promise<T>(s.k);
  const double tiny = std::numeric_limits<T>::denorm_min();  // the spacing of subnormal results
  const auto sig_a = ozaki_sigmas(a, s.m, s.k, 1, s.k, q), sig_b = ozaki_sigmas(b, s.n, 1, s.n, s.k, q);
  OzakiCheck out;
  int failures = 0;
  for (std::int64_t i = 0; i < s.m; ++i)
    for (std::int64_t j = 0; j < s.n; ++j) {
      ExactDotReference x, mag;
      long double ra = 0, cb = 0;
      for (std::int64_t k = 0; k < s.k; ++k) {
        const double av = a[static_cast<std::size_t>(i * s.k + k)], bv = b[static_cast<std::size_t>(k * s.n + j)];
        x.add_product(av, bv);
        mag.add_product(std::fabs(av), std::fabs(bv));
        ra += std::fabs(static_cast<long double>(av)), cb += std::fabs(static_cast<long double>(bv));
      }
      const T want = x.round<T>(), got = c[static_cast<std::size_t>(i * s.n + j)];
      const bool same = std::memcmp(&want, &got, sizeof(T)) == 0 || (std::isnan(want) && std::isnan(got));
      out.exact_elements += same;
      std::string why;
      if (!std::isfinite(want) || !std::isfinite(got)) {
        if (!same) why = "non-finite and not the exact product's IEEE result";
      } else {
        ExactDotReference d = x;
        d.add_product(-static_cast<double>(got), 1.0);
        const double err = std::fabs(d.round<double>()) * (1 + 0x1p-52), abs = mag.round<double>() * (1 - 0x1p-52);
        if (abs > 0) out.worst = std::max(out.worst, err / abs);
        if (err > tol * abs + tiny) why = "error beyond the promise";
        const double si = sig_a[static_cast<std::size_t>(i)], sj = sig_b[static_cast<std::size_t>(j)];
        const double bound =
            (1 + 0x1p-30) * static_cast<double>(si * cb + sj * ra) + 2 * u * std::fabs(static_cast<double>(got)) + tiny;
        if (!same && !(err <= bound)) why = "neither exact nor within the Ozaki bound";
        if (!why.empty()) {
          std::ostringstream msg;
          msg << why << " at (" << i << ", " << j << "): got " << got << ", exact " << want << ", |error| " << err
              << ", |A||B| " << abs << ", promise " << tol * abs << ", Ozaki bound " << bound;
          why = msg.str();
        }
      }
      if (!why.empty() && ++failures <= 5) FAIL_CHECK(why);
    }
  CHECK(failures == 0);
  return out;
}

}  // namespace tally::test
