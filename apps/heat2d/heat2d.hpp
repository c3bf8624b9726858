#pragma once
// heat2d: the 2-D heat equation on a rectangle of nx x ny grid points (boundary included), spacing
// h = 1/(nx-1), so x in [0, 1] and y in [0, Ly], Ly = (ny-1) h (the unit square when nx == ny).
// Row j = 0 is the bottom edge (y = 0), column i = 0 the left edge (x = 0); fields are row-major
// (ny, nx). Dirichlet values on the four edges; the corners take the top/bottom value (they never
// enter the 5-point stencil).
//
//   steady:    u_new = ((uW + uE) + (uS + uN)) * 1/4                 Jacobi for Laplace
//   transient: u_new = u + r * (((uW + uE) + (uS + uN)) - 4 u)        explicit, r = alpha dt / h^2 <= 1/4
//
// Every backend evaluates exactly these operations in this order (no fused multiply-add), so the
// CPU, CUDA and Eigen results agree to the last bit in practice. The residual of a sweep is
// max |u_new - u| over the interior; NaN propagates (tally::reduce::Max).

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tally::heat2d {

enum class Mode { steady, transient };

/// A Dirichlet edge value or an initial condition: a constant, or the sine mode.
struct Spec {
  std::string text = "0";  ///< as given ("0", "1.5", "sin")
  bool is_sin = false;
  double value = 0.0;
};
/// Parses "sin" or a number (nan/inf included, so a divergence can be injected on purpose).
/// Throws tally::InputError naming `option` otherwise.
Spec parse_spec(std::string_view text, std::string_view option);

struct Problem {
  std::int64_t nx = 128, ny = 128;
  Mode mode = Mode::steady;
  double alpha = 1.0;
  double dt = 0.0;     ///< transient: the step used (after fitting t_end); 0 in steady mode
  double t_end = 0.0;  ///< transient: 0 = run to steady state (or --max-iter)
  Spec top{"sin", true, 0.0}, bottom, left, right, init;

  [[nodiscard]] double h() const { return 1.0 / static_cast<double>(nx - 1); }
  [[nodiscard]] double ly() const { return static_cast<double>(ny - 1) * h(); }
  [[nodiscard]] double r() const { return mode == Mode::transient ? alpha * dt / (h() * h()) : 0.0; }
  /// Number of time steps to reach t_end (0 when there is no t_end).
  [[nodiscard]] std::int64_t steps() const;
};

/// The largest dt with r <= 1/4.
double max_stable_dt(const Problem& p);

/// Checks sizes and parameters; in transient mode fills dt (when 0: r = 0.2) and shrinks it so that
/// a whole number of steps reaches t_end. Throws tally::InputError with a message naming the option.
void finalize(Problem& p);

/// interrupted: a signal stopped the run at a checked sweep before `last` (RunOptions::keep_partial).
enum class Status { converged, diverged, max_iter, t_end, interrupted };
std::string to_string(Status s);  ///< "converged", "diverged", "max-iter", "t-end", "interrupted"
std::string to_string(Mode m);

/// When to check and stop. Sweep k (1-based, counted from the very first sweep of the run, also
/// across a restart) is checked when k % check_every == 0 or k == last.
struct StopRule {
  double tol = 1e-9;
  std::int64_t check_every = 1;
  std::int64_t first = 0;             ///< sweeps already done (a restart): solve() runs first+1..last
  std::int64_t last = 1;              ///< the last sweep to run (min(max_iter, steps))
  Status at_last = Status::max_iter;  ///< the status when `last` is reached without stopping
  /// Polled by the solver (one rank only) at checked sweeps, or before enqueueing each sweep on the
  /// GPU: true asks it to stop at the next checked sweep, as on convergence but with status
  /// interrupted (nullptr: never). Across ranks it is not polled (a signal ends the job there).
  bool (*stop_requested)() = nullptr;
  [[nodiscard]] bool wants_stop() const { return stop_requested && stop_requested(); }
  [[nodiscard]] bool is_check(std::int64_t k) const { return k % check_every == 0 || k == last; }
  /// converged (r <= tol), diverged (NaN or Inf), or nothing yet (returns false).
  [[nodiscard]] bool judge(double residual, Status& s) const;
};
StopRule make_stop_rule(const Problem& p, double tol, std::int64_t max_iter, std::int64_t check_every);

/// Update coefficients: steady (Jacobi) or transient with r.
template <class T>
struct Coeffs {
  bool steady = true;
  T r = T(0);
};
template <class T>
Coeffs<T> coeffs(const Problem& p) {
  return {p.mode == Mode::steady, static_cast<T>(p.r())};
}

/// The initial field (ny * nx, row-major): the edges set, the interior from `init`; or only its
/// rows [row0, row0 + rows) (a rank's block).
template <class T>
std::vector<T> initial_field(const Problem& p, std::int64_t row0 = 0, std::int64_t rows = -1);

/// Whether an analytic solution applies: steady with top = sin and the other edges 0, or transient
/// with init = sin and all edges 0.
bool has_analytic(const Problem& p);
/// The analytic solution at (x, y) and time t (transient) or the steady state.
double analytic(const Problem& p, double x, double y, double t);

struct ErrorNorms {
  double max = 0.0;  ///< max |u - exact| over the grid
  double l2 = 0.0;   ///< sqrt(mean (u - exact)^2) over the grid (the discrete L2 norm on the unit area)
};
template <class T>
ErrorNorms analytic_error(const Problem& p, std::span<const T> field, double t);
/// analytic_error in parts, for a field split by rows: over the global rows [row0, row0 + rows.size() / nx)
/// held in `rows`, the largest |u - exact| and each row's sum of squared differences (along the row).
struct ErrorParts {
  double max = 0.0;
  std::vector<double> row_sum2;
};
template <class T>
ErrorParts analytic_error_rows(const Problem& p, std::span<const T> rows, std::int64_t row0, double t);
/// The norms from the largest difference and the ny rows' sums in row order (added in that order):
/// the same bits however the rows were split across ranks.
ErrorNorms error_norms(const Problem& p, double max, std::span<const double> row_sum2);

/// The bound on |a - b| for two evaluations of `sweeps` sweeps that could differ by a rounding of
/// the update in each: the update is non-expansive in the max norm for r <= 1/4, so differences
/// add up at most linearly: 2 * (sweeps + 1) * eps(T) * max|u0|.
template <class T>
double rounding_tolerance(std::int64_t sweeps, double max_abs_u);

/// max |a - b| (NaN when either holds a NaN where the other does not hold the same).
template <class T>
double max_abs_diff(std::span<const T> a, std::span<const T> b);
template <class T>
double max_abs(std::span<const T> a);

}  // namespace tally::heat2d
