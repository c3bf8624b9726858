#pragma once
// What Chebyshev and PPCG take from the CG steps before them (host code, shared by both engines so
// that their coefficients are the same bits): the extreme eigenvalues of the Lanczos matrix of the
// CG alphas and betas, TeaLeaf's widened bounds, the Chebyshev coefficients and TeaLeaf's estimate
// of the iterations Chebyshev needs.

#include <cstdint>
#include <span>
#include <vector>

namespace tally::heat2d::implicit {

struct Eigenvalues {
  double min = 0.0, max = 0.0;  ///< after TeaLeaf's widening: 0.95 min, 1.05 max
};

/// The extreme eigenvalues of the symmetric tridiagonal Lanczos matrix of k CG steps, whose
/// diagonal is 1/alpha_i + beta_{i-1}/alpha_{i-1} and off-diagonal sqrt(beta_i)/alpha_i (TeaLeaf's
/// eigenvalue_driver), found by bisection on Sturm counts (LDL^T pivots) to the last bit, then
/// widened to [0.95 min, 1.05 max]. Throws tally::Error for no steps, a negative eigenvalue or a
/// non-finite coefficient (the CG steps broke down).
Eigenvalues lanczos_eigenvalues(std::span<const double> alphas, std::span<const double> betas);

/// The Chebyshev iteration's coefficients for n steps on [min, max] (TeaLeaf's cheby_coef):
/// theta = (max + min)/2, delta = (max - min)/2, sigma = theta/delta, rho_0 = 1/sigma,
/// rho_{k+1} = 1/(2 sigma - rho_k), alpha_k = rho_{k+1} rho_k, beta_k = 2 rho_{k+1} / delta.
struct ChebyCoefficients {
  double theta = 0.0;
  std::vector<double> alpha, beta;
};
ChebyCoefficients cheby_coefficients(const Eigenvalues& e, std::int64_t n);

/// TeaLeaf's estimate of the Chebyshev iterations to converge: round(log(eps_mach bb / (4 error)) /
/// (2 log gamma)), gamma = (sqrt(cn) - 1)/(sqrt(cn) + 1), cn = max/min; bb = |u0|^2, error = |r|^2
/// after the first Chebyshev step. Clamped to [0, 2^31).
std::int64_t cheby_estimated_iterations(const Eigenvalues& e, double bb, double error);

}  // namespace tally::heat2d::implicit
