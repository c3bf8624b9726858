#pragma once
// The implicit time step on a backend: u = energy density, solve (I + K) u_new = u to eps, energy =
// u_new / density; and the field summary. Two engines: the CPU (engine_cpu.cpp) and CUDA
// (engine_cuda.cu). With reproducible dots (the default) both give the same bits: every dot product
// and norm is exact and rounded once, every other operation is cell_ops.hpp's, in the same order.
//
// The solvers are TeaLeaf's (UoB-HPC/TeaLeaf's drivers; the preconditioners as TeaLeaf_ref applies
// them), with k counting a solve's iterations from 0:
//   init    u0 = u, w = A u, r = u - w, z = M^-1 r, p = z, rro = r.z          (no preconditioner: z = r)
//   CG      w = A p, pw = p.w, alpha = rro/pw, u += alpha p, r -= alpha w, z = M^-1 r, rrn = r.z,
//           beta = rrn/rro, p = beta p + z, error = rrn, rro = rrn; stop when sqrt|error| < eps
//   Cheby   CG until k > presteps and error < 1 (errswitch: k > 20 and error < epslim), then once:
//           eigenvalues of the CG steps' Lanczos matrix, coefficients (chebyshev.hpp), bb = u0.u0,
//           w = A u, r = u0 - w, p = M^-1 r / theta, u += p; and each step n = 1, 2, ...:
//           w = A u, r = u0 - w, p = alpha_n p + beta_n M^-1 r, u += p; error = r.r at n = 1 (which
//           sets TeaLeaf's estimate est) and at k + 1 = 0 mod 10 once n >= est; stop when |error| < eps
//   PPCG    CG as for Chebyshev, then once r = u0 - A u; each step: w = A p, pw = p.w, alpha = rro/pw,
//           u += alpha p, r -= alpha w, sd = M^-1 r / theta, inner steps i: r -= A sd, u += sd,
//           sd = alpha_i sd + beta_i M^-1 r; z = M^-1 r, rrn = r.z, beta = rrn/rro, p = beta p + z,
//           error = rrn, rro = rrn; stop when |error| < eps
//   PipeCG  pipelined CG, Chen and Carson's predict-and-recompute variant (CPU engine): init as
//           CG, then w = A z, p = z, s = w, st = M^-1 s, u = A st; nu = r.z, mu = p.s, delta =
//           s.z, gamma = s.st; each step k: alpha = nu/mu, beta = (nu - 2 alpha delta + alpha^2
//           gamma)/nu (the next r.z predicted), u += alpha p, r -= alpha s, z -= alpha st, w -=
//           alpha u, wt -= alpha M^-1 u, p = z + beta p, s = w + beta s, st = wt + beta st; then
//           the four dots again in one reduction across ranks, u = A st, and w = A z recomputed
//           (wt = M^-1 w); error = nu, as CG's. Two products a step, no dependence between the
//           reduction and them; CG's iterates in exact arithmetic, and its iteration counts on the
//           decks tested (the recomputed w keeps the recurrences from drifting: in Ghysels and
//           Vanroose's pipelined CG, without it, r.z stalls near 1e-14).
//   Jacobi  u_new = (u0 + kx, ky terms of u_old) / diag; error = sum |u_new - u_old|, plus r.r of the
//           true residual every 50th iteration (k = 0 mod 50); stop when |error| < eps
// `eps_norm max` tests max |r| (Jacobi: max |u_new - u_old|, heat2d's rule) against eps instead.
// A solve that reaches max_iters stops with status max_iters; a NaN or infinite error, diverged.

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "chebyshev.hpp"
#include "deck.hpp"
#include "ranks.hpp"
#include "tea_problem.hpp"

namespace tally::heat2d::implicit {

enum class EpsNorm { l2, max };
std::string to_string(EpsNorm n);  ///< "l2", "max"

struct SolveOptions {
  SolverKind solver = SolverKind::cg;
  Preconditioner preconditioner = Preconditioner::none;
  double eps = 1e-15;
  EpsNorm norm = EpsNorm::l2;
  std::int64_t max_iters = 10000;
  std::int64_t presteps = 30;
  bool error_switch = false;
  double eps_lim = 1e-5;
  std::int64_t inner_steps = 10;
  bool check_result = true;      ///< compute the true residual |u0 - A u| after each solve
  bool reproducible = true;      ///< exact dot products; false: ordinary sums (the bits may vary)
  int cheby_steps_per_pass = 0;  ///< Chebyshev steps a pass over memory: 0 auto, 1, 2, 5 (below)
};
SolveOptions solve_options(const Deck& d);

/// The Chebyshev steps one pass over memory advances (--cheby-steps-per-pass): on CUDA, for Chebyshev
/// with no preconditioner or jac_diag, the requested count (auto: tuning.hpp's); otherwise 1 (the CPU
/// engine, jac_block's 4-row solves, the other solvers). Every count gives the same bits.
int cheby_steps_per_pass(const SolveOptions& o, bool cuda);

enum class SolveStatus { converged, max_iters, diverged };
std::string to_string(SolveStatus s);  ///< "converged", "max-iters", "diverged"

/// One time step's solve.
struct SolveStats {
  SolveStatus status = SolveStatus::converged;
  std::int64_t iterations = 0;        ///< outer iterations performed: CG steps plus Chebyshev or PPCG steps
  std::int64_t cg_iterations = 0;     ///< of which CG steps
  std::int64_t inner_iterations = 0;  ///< PPCG's inner steps, all outer steps together
  std::int64_t cheby_estimate = 0;    ///< Chebyshev's estimate of its iterations (TeaLeaf's est_itc)
  double error = 0.0;                 ///< the last value tested against eps (tested_value)
  double residual = -1.0;             ///< |u0 - A u|_2 after the solve (check_result; -1: not computed)
  Eigenvalues eigenvalues;            ///< Chebyshev and PPCG
  /// Every value tested against eps, with the iteration (k, from 0) that produced it.
  std::vector<std::int64_t> history_iteration;
  std::vector<double> history_error;
  double solve_s = 0.0;
};

class Engine {
 public:
  virtual ~Engine() = default;
  /// The fields of this rank's grid (initial_state): density and energy; u = energy density.
  virtual void set_state(std::span<const double> density, std::span<const double> energy) = 0;
  /// One time step of dt (the coefficients are recomputed when dt changes).
  virtual SolveStats step(double dt, const SolveOptions& o) = 0;
  virtual Summary summary(bool reproducible) = 0;
  /// u and energy of this rank's grid, halo included (host memory of Grid::size()).
  virtual void fields(std::span<double> u, std::span<double> energy) = 0;
};

/// `link`: the ranks the grid is split over (nullptr or one rank: this process alone); g is this
/// rank's rows (make_grid of its Decomposition). Collective then: every rank calls every method.
std::unique_ptr<Engine> make_cpu_engine(const Deck& d, const Grid& g, const RankLink* link = nullptr);
/// Throws tally::Error when the build has no CUDA backend or the device cannot be used.
std::unique_ptr<Engine> make_cuda_engine(const Deck& d, const Grid& g, int device);

/// The value a solve tests against eps (and records in its history): TeaLeaf's CG driver takes
/// sqrt|error| under l2 (and so does pipelined CG), every other driver |error| (also in its CG steps).
inline double tested_value(SolverKind s, EpsNorm n, double error) {
  return (s == SolverKind::cg || s == SolverKind::pipecg) && n == EpsNorm::l2 ? __builtin_sqrt(__builtin_fabs(error))
                                                                              : __builtin_fabs(error);
}

}  // namespace tally::heat2d::implicit
