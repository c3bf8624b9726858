// Eigenvalue bounds and Chebyshev coefficients (chebyshev.hpp).
#include "chebyshev.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <string>

#include "tally/common/error.hpp"

namespace tally::heat2d::implicit {

namespace {

/// How many eigenvalues of the tridiagonal (d, e) lie below x: the negative pivots of the LDL^T
/// factorisation of T - x I (Sturm's theorem). A zero pivot is moved off zero by a tiny amount.
std::int64_t count_below(const std::vector<double>& d, const std::vector<double>& e2, double x, double tiny) {
  std::int64_t n = 0;
  double q = 1.0;
  for (std::size_t i = 0; i < d.size(); ++i) {
    q = d[i] - x - (i > 0 ? e2[i - 1] / q : 0.0);
    if (q == 0.0) q = -tiny;
    if (q < 0.0) ++n;
  }
  return n;
}

/// The k-th smallest eigenvalue (0-based) by bisection on [lo, hi] until the interval cannot shrink.
double kth(const std::vector<double>& d, const std::vector<double>& e2, std::int64_t k, double lo, double hi,
           double tiny) {
  for (int it = 0; it < 2200; ++it) {
    const double mid = 0.5 * (lo + hi);
    if (!(mid > lo && mid < hi)) break;
    if (count_below(d, e2, mid, tiny) > k) hi = mid;
    else lo = mid;
  }
  return 0.5 * (lo + hi);
}

}  // namespace

Eigenvalues lanczos_eigenvalues(std::span<const double> alphas, std::span<const double> betas) {
  const std::size_t n = alphas.size();
  if (n == 0 || betas.size() < n) throw Error("chebyshev: no CG steps to estimate the eigenvalues from");
  std::vector<double> d(n), e(n > 1 ? n - 1 : 0), e2(e.size());
  for (std::size_t i = 0; i < n; ++i) {
    d[i] = 1.0 / alphas[i] + (i > 0 ? betas[i - 1] / alphas[i - 1] : 0.0);
    if (i + 1 < n) e[i] = std::sqrt(betas[i]) / alphas[i], e2[i] = e[i] * e[i];
  }
  // Gershgorin's disc bounds every eigenvalue.
  double lo = d[0], hi = d[0];
  for (std::size_t i = 0; i < n; ++i) {
    const double rad = (i > 0 ? std::fabs(e[i - 1]) : 0.0) + (i + 1 < n ? std::fabs(e[i]) : 0.0);
    lo = std::min(lo, d[i] - rad);
    hi = std::max(hi, d[i] + rad);
  }
  if (!std::isfinite(lo) || !std::isfinite(hi))
    throw Error("chebyshev: the CG steps' coefficients are not finite (alpha or beta of " + std::to_string(n) +
                " steps)");
  const double tiny = DBL_MIN * std::max(1.0, std::max(std::fabs(lo), std::fabs(hi)));
  const double margin = DBL_EPSILON * std::max(std::fabs(lo), std::fabs(hi)) + DBL_MIN;
  lo -= margin, hi += margin;
  Eigenvalues r;
  r.min = kth(d, e2, 0, lo, hi, tiny);
  r.max = kth(d, e2, static_cast<std::int64_t>(n) - 1, lo, hi, tiny);
  if (r.min < 0.0 || r.max < 0.0)
    throw Error("chebyshev: negative eigenvalue estimate (" + std::to_string(r.min) + ") from " + std::to_string(n) +
                " CG steps");
  r.min *= 0.95;
  r.max *= 1.05;
  return r;
}

ChebyCoefficients cheby_coefficients(const Eigenvalues& e, std::int64_t n) {
  ChebyCoefficients c;
  c.theta = (e.max + e.min) / 2.0;
  const double delta = (e.max - e.min) / 2.0;
  const double sigma = c.theta / delta;
  double rho_old = 1.0 / sigma;
  c.alpha.resize(static_cast<std::size_t>(std::max<std::int64_t>(n, 0)));
  c.beta.resize(c.alpha.size());
  for (std::size_t k = 0; k < c.alpha.size(); ++k) {
    const double rho_new = 1.0 / (2.0 * sigma - rho_old);
    c.alpha[k] = rho_new * rho_old;
    c.beta[k] = 2.0 * rho_new / delta;
    rho_old = rho_new;
  }
  return c;
}

std::int64_t cheby_estimated_iterations(const Eigenvalues& e, double bb, double error) {
  const double cn = e.max / e.min;
  const double it_alpha = DBL_EPSILON * bb / (4.0 * error);
  const double gamma = (std::sqrt(cn) - 1.0) / (std::sqrt(cn) + 1.0);
  const double est = std::round(std::log(it_alpha) / (2.0 * std::log(gamma)));
  if (!(est > 0.0)) return 0;  // NaN (a zero error) or nothing to estimate
  return est < 2147483647.0 ? static_cast<std::int64_t>(est) : 2147483647;
}

}  // namespace tally::heat2d::implicit
