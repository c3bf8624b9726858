#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <numbers>
#include <sstream>

#include "heat2d.hpp"
#include "tally/common/error.hpp"
#include "tally/reduce/ops.hpp"

namespace tally::heat2d {
namespace {
constexpr double pi = std::numbers::pi;
// The largest grid side: the CUDA launch covers ny with gridDim.y <= 65535 tiles of 32 rows.
constexpr std::int64_t max_side = 2'000'000;
constexpr std::int64_t max_points = std::int64_t{1} << 36;

std::string num(double v) {
  std::ostringstream s;
  s.precision(6);
  s << v;
  return s.str();
}
}  // namespace

Spec parse_spec(std::string_view text, std::string_view option) {
  Spec s;
  s.text = std::string(text);
  if (text == "sin") {
    s.is_sin = true;
    return s;
  }
  const std::string str(text);
  char* end = nullptr;
  s.value = std::strtod(str.c_str(), &end);
  if (str.empty() || end != str.c_str() + str.size())
    throw InputError(std::string(option) + " '" + str + "': expected a number or 'sin'");
  return s;
}

std::int64_t Problem::steps() const {
  if (mode != Mode::transient || t_end <= 0.0 || dt <= 0.0) return 0;
  return std::max<std::int64_t>(1, static_cast<std::int64_t>(std::llround(t_end / dt)));
}

double max_stable_dt(const Problem& p) { return 0.25 * p.h() * p.h() / p.alpha; }

void finalize(Problem& p) {
  if (p.nx < 3) throw InputError("--nx " + std::to_string(p.nx) + ": needs at least 3 points (one interior point)");
  if (p.ny < 3) throw InputError("--ny " + std::to_string(p.ny) + ": needs at least 3 points (one interior point)");
  if (p.nx > max_side || p.ny > max_side || p.nx * p.ny > max_points)
    throw InputError("--nx/--ny " + std::to_string(p.nx) + " x " + std::to_string(p.ny) + ": too large (at most " +
                     std::to_string(max_side) + " per side and 2^36 points)");
  if (p.mode == Mode::steady) {
    p.dt = 0.0;
    p.t_end = 0.0;
    return;
  }
  if (!(p.alpha > 0.0) || !std::isfinite(p.alpha)) throw InputError("--alpha " + num(p.alpha) + ": must be positive");
  if (!(p.dt >= 0.0) || !std::isfinite(p.dt))
    throw InputError("--dt " + num(p.dt) + ": must be positive (0: automatic)");
  if (!(p.t_end >= 0.0) || !std::isfinite(p.t_end)) throw InputError("--t-end " + num(p.t_end) + ": must be >= 0");
  const double dt_max = max_stable_dt(p);
  if (p.dt == 0.0) p.dt = 0.8 * dt_max;  // r = 0.2
  const double r = p.alpha * p.dt / (p.h() * p.h());
  if (r > 0.25 * (1.0 + 1e-12))
    throw InputError("--dt " + num(p.dt) + ": r = alpha*dt/h^2 = " + num(r) +
                     " > 1/4, the explicit scheme is unstable; the largest stable dt is " + num(dt_max) +
                     " (h = " + num(p.h()) + ", alpha = " + num(p.alpha) + ")");
  if (p.t_end > 0.0) {
    // A whole number of steps, none larger than asked for: r can only shrink.
    const auto n = static_cast<std::int64_t>(std::ceil(p.t_end / p.dt * (1.0 - 1e-12)));
    p.dt = p.t_end / static_cast<double>(std::max<std::int64_t>(n, 1));
  }
}

std::string to_string(Status s) {
  switch (s) {
    case Status::converged: return "converged";
    case Status::diverged: return "diverged";
    case Status::max_iter: return "max-iter";
    case Status::t_end: return "t-end";
    case Status::interrupted: return "interrupted";
  }
  return "?";
}

std::string to_string(Mode m) { return m == Mode::steady ? "steady" : "transient"; }

bool StopRule::judge(double residual, Status& s) const {
  if (!std::isfinite(residual)) {
    s = Status::diverged;
    return true;
  }
  if (residual <= tol) {
    s = Status::converged;
    return true;
  }
  return false;
}

StopRule make_stop_rule(const Problem& p, double tol, std::int64_t max_iter, std::int64_t check_every) {
  if (!(tol > 0.0)) throw InputError("--tol " + num(tol) + ": must be positive");
  if (max_iter < 1) throw InputError("--max-iter " + std::to_string(max_iter) + ": must be at least 1");
  if (check_every < 1) throw InputError("--check-every " + std::to_string(check_every) + ": must be at least 1");
  StopRule rule;
  rule.tol = tol;
  rule.check_every = check_every;
  const std::int64_t steps = p.steps();
  if (steps > 0 && steps <= max_iter) {
    rule.last = steps;
    rule.at_last = Status::t_end;
  } else {
    rule.last = max_iter;
    rule.at_last = Status::max_iter;
  }
  return rule;
}

namespace {
double edge_value(const Spec& s, double t) { return s.is_sin ? std::sin(pi * t) : s.value; }
}  // namespace

template <class T>
std::vector<T> initial_field(const Problem& p, std::int64_t row0, std::int64_t rows) {
  const std::int64_t nx = p.nx, ny = p.ny;
  if (rows < 0) rows = ny - row0;
  const double h = p.h(), ly = p.ly();
  std::vector<T> u(static_cast<std::size_t>(nx * rows));
  for (std::int64_t j = row0; j < row0 + rows; ++j) {
    const double y = static_cast<double>(j) * h;
    for (std::int64_t i = 0; i < nx; ++i) {
      const double x = static_cast<double>(i) * h;
      double v;
      if (j == 0) v = edge_value(p.bottom, x);
      else if (j == ny - 1) v = edge_value(p.top, x);
      else if (i == 0) v = edge_value(p.left, y / ly);
      else if (i == nx - 1) v = edge_value(p.right, y / ly);
      else v = p.init.is_sin ? std::sin(pi * x) * std::sin(pi * y / ly) : p.init.value;
      u[static_cast<std::size_t>((j - row0) * nx + i)] = static_cast<T>(v);
    }
  }
  return u;
}

namespace {
bool is_zero(const Spec& s) { return !s.is_sin && s.value == 0.0; }
}  // namespace

bool has_analytic(const Problem& p) {
  if (p.mode == Mode::steady) return p.top.is_sin && is_zero(p.bottom) && is_zero(p.left) && is_zero(p.right);
  return p.init.is_sin && is_zero(p.top) && is_zero(p.bottom) && is_zero(p.left) && is_zero(p.right);
}

double analytic(const Problem& p, double x, double y, double t) {
  const double ly = p.ly();
  if (p.mode == Mode::steady) return std::sin(pi * x) * std::sinh(pi * y) / std::sinh(pi * ly);
  // The mode sin(pi x) sin(pi y/Ly) of u_t = alpha (u_xx + u_yy) decays at pi^2 (1 + 1/Ly^2) alpha.
  return std::exp(-pi * pi * (1.0 + 1.0 / (ly * ly)) * p.alpha * t) * std::sin(pi * x) * std::sin(pi * y / ly);
}

template <class T>
ErrorParts analytic_error_rows(const Problem& p, std::span<const T> rows, std::int64_t row0, double t) {
  ErrorParts e;
  const double h = p.h();
  const auto n = static_cast<std::int64_t>(rows.size()) / p.nx;
  e.row_sum2.assign(static_cast<std::size_t>(n), 0.0);
  for (std::int64_t j = 0; j < n; ++j) {
    double sum2 = 0.0;
    for (std::int64_t i = 0; i < p.nx; ++i) {
      const double d = static_cast<double>(rows[static_cast<std::size_t>(j * p.nx + i)]) -
                       analytic(p, static_cast<double>(i) * h, static_cast<double>(row0 + j) * h, t);
      e.max = reduce::Max::combine(e.max, std::abs(d));
      sum2 += d * d;
    }
    e.row_sum2[static_cast<std::size_t>(j)] = sum2;
  }
  return e;
}

ErrorNorms error_norms(const Problem& p, double max, std::span<const double> row_sum2) {
  double sum2 = 0.0;
  for (const double s : row_sum2) sum2 += s;
  return {max, std::sqrt(sum2 / static_cast<double>(p.nx * p.ny))};
}

template <class T>
ErrorNorms analytic_error(const Problem& p, std::span<const T> field, double t) {
  const ErrorParts e = analytic_error_rows<T>(p, field, 0, t);
  return error_norms(p, e.max, e.row_sum2);
}

template <class T>
double rounding_tolerance(std::int64_t sweeps, double max_abs_u) {
  return 2.0 * static_cast<double>(sweeps + 1) * std::numeric_limits<T>::epsilon() * max_abs_u;
}

template <class T>
double max_abs_diff(std::span<const T> a, std::span<const T> b) {
  double m = 0.0;
  for (std::size_t k = 0; k < a.size(); ++k) {
    const double x = static_cast<double>(a[k]), y = static_cast<double>(b[k]);
    if (std::isnan(x) && std::isnan(y)) continue;  // the same NaN on both sides
    m = reduce::Max::combine(m, x == y ? 0.0 : std::abs(x - y));
  }
  return m;
}

template <class T>
double max_abs(std::span<const T> a) {
  double m = 0.0;
  for (const T x : a) m = reduce::Max::combine(m, std::abs(static_cast<double>(x)));
  return m;
}

#define TALLY_HEAT2D_INSTANTIATE(T)                                                                     \
  template std::vector<T> initial_field<T>(const Problem&, std::int64_t, std::int64_t);                 \
  template ErrorNorms analytic_error<T>(const Problem&, std::span<const T>, double);                    \
  template ErrorParts analytic_error_rows<T>(const Problem&, std::span<const T>, std::int64_t, double); \
  template double rounding_tolerance<T>(std::int64_t, double);                                          \
  template double max_abs_diff<T>(std::span<const T>, std::span<const T>);                              \
  template double max_abs<T>(std::span<const T>);
TALLY_HEAT2D_INSTANTIATE(float)
TALLY_HEAT2D_INSTANTIATE(double)

}  // namespace tally::heat2d
