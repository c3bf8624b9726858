// The CPU engine (engine.hpp): OpenMP over rows, each cell's arithmetic from cell_ops.hpp, dot
// products exact (tally's exact dot, rounded once) so that the bits do not depend on the thread
// count, or ordinary OpenMP sums with reproducible off.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <memory>
#include <utility>

#include "cell_ops.hpp"
#include "engine.hpp"
#include "tally/common/error.hpp"
#include "tally/common/interrupt.hpp"
#include "tally/common/timing.hpp"
#include "tally/reduce/dot.hpp"
#include "exact_cells.hpp"
#include "tally/reduce/reduce.hpp"

namespace tally::heat2d::implicit {

std::string to_string(EpsNorm n) { return n == EpsNorm::l2 ? "l2" : "max"; }
std::string to_string(SolveStatus s) {
  switch (s) {
    case SolveStatus::converged: return "converged";
    case SolveStatus::max_iters: return "max-iters";
    case SolveStatus::diverged: return "diverged";
  }
  return "?";
}

SolveOptions solve_options(const Deck& d) {
  SolveOptions o;
  o.solver = d.solver;
  o.preconditioner = d.solver == SolverKind::jacobi ? Preconditioner::none : d.preconditioner;
  o.eps = d.eps;
  o.max_iters = d.max_iters;
  o.presteps = d.presteps;
  o.error_switch = d.error_switch;
  o.eps_lim = d.eps_lim;
  o.inner_steps = d.ppcg_inner_steps;
  o.check_result = d.check_result;
  return o;
}

namespace {

using Field = std::vector<double>;
constexpr std::int64_t kPoll = 64;  // iterations between two looks for SIGINT / SIGTERM

class CpuEngine final : public Engine {
 public:
  CpuEngine(const Deck& d, const Grid& g, const RankLink* link)
      : d_(d), g_(g), link_(link && link->size() > 1 ? link : nullptr), ws_(reduce::Backend::cpu) {
    const auto n = static_cast<std::size_t>(g.size());
    for (Field* f : {&density_, &energy_, &u_, &u0_, &p_, &r_, &w_, &z_, &sd_, &kx_, &ky_, &cm_}) f->assign(n, 0.0);
  }

  void set_state(std::span<const double> density, std::span<const double> energy) override {
    std::copy(density.begin(), density.end(), density_.begin());
    std::copy(energy.begin(), energy.end(), energy_.begin());
    const double vol = cell_volume(g_);
    cells([&](std::size_t c) {
      u_[c] = ops::mul(energy_[c], density_[c]);
      cm_[c] = ops::mul(vol, density_[c]);
    });
    dt_ = -1.0;
  }

  SolveStats step(double dt, const SolveOptions& o) override {
    if (dt != dt_) {
      face_coefficients(d_, g_, dt, density_, kx_, ky_);
      dt_ = dt;
      prec_ = Preconditioner::none;  // its coefficients follow kx, ky
    }
    if (o.preconditioner != prec_) setup_preconditioner(o.preconditioner);
    o_ = o;
    exact_ = o.reproducible;
    HostTimer t;
    SolveStats s;
    cells([&](std::size_t c) { u_[c] = ops::mul(energy_[c], density_[c]); });
    switch (o.solver) {
      case SolverKind::cg:
      case SolverKind::chebyshev:
      case SolverKind::ppcg: krylov(s); break;
      case SolverKind::jacobi: jacobi(s); break;
      case SolverKind::pipecg: pipecg(s); break;
    }
    if (o.check_result) {
      residual(u_, r_);
      s.residual = std::sqrt(dot(r_, r_));
    }
    cells([&](std::size_t c) { energy_[c] = ops::div(u_[c], density_[c]); });
    s.solve_s = t.seconds();
    return s;
  }

  Summary summary(bool reproducible) override {
    exact_ = reproducible;
    Summary s;
    s.volume = total_volume(g_);
    s.mass = sum(cm_);
    s.density = s.mass / s.volume;
    s.energy = dot(cm_, energy_);
    s.temperature = dot(cm_, u_);
    return s;
  }

  void fields(std::span<double> u, std::span<double> energy) override {
    std::copy(u_.begin(), u_.end(), u.begin());
    std::copy(energy_.begin(), energy_.end(), energy.begin());
  }

 private:
  /// f(c) for every interior cell c of this rank.
  template <class F>
  void cells(F&& f) {
    const std::int64_t s = g_.stride(), nx = g_.nx, rows = g_.rows;
#pragma omp parallel for schedule(static)
    for (std::int64_t j = 1; j <= rows; ++j)
      for (std::int64_t i = 1; i <= nx; ++i) f(static_cast<std::size_t>(j * s + i));
  }

  [[nodiscard]] double smvp(const Field& a, std::size_t c) const {
    const std::size_t s = static_cast<std::size_t>(g_.stride());
    return ops::smvp(kx_[c], kx_[c + 1], ky_[c], ky_[c + s], a[c], a[c - 1], a[c + 1], a[c - s], a[c + s]);
  }
  /// out = u0 - A a
  void residual(Field& a, Field& out) {
    halo(a);
    cells([&](std::size_t c) { out[c] = ops::sub(u0_[c], smvp(a, c)); });
  }
  /// The halo rows of f from the neighbouring ranks (before a stencil reads them).
  void halo(Field& f) {
    if (link_) link_->exchange_rows(f, g_.stride(), g_.rows);
  }

  double plain_sum(const Field& a) {
    double sum = 0.0;
    const std::int64_t s = g_.stride(), nx = g_.nx, rows = g_.rows;
#pragma omp parallel for schedule(static) reduction(+ : sum)
    for (std::int64_t j = 1; j <= rows; ++j)
      for (std::int64_t i = 1; i <= nx; ++i) sum += a[static_cast<std::size_t>(j * s + i)];
    return link_ ? link_->sum(sum) : sum;
  }

  /// The N exact sums over every rank's cells of what term(filters, sinks, c) adds to each filter k
  /// and sink k (products a b or values), each rounded once: each thread's filters and accumulators
  /// (tally's exact.hpp), the threads' accumulators merged (exact_cell_words), the ranks' added as
  /// integers, all N in one RankLink::add_words, then rounded (exact_cells.hpp).
  template <class T, std::size_t N, class Term>
  std::array<double, N> exact_over_ranks(Term&& term) {
    std::vector<std::int64_t> words = exact_cell_words<T, N>(g_, term);
    link_->add_words(words);
    return round_words<T, N>(words);
  }
  /// a.b over this rank's cells: exact (rounded once) or an ordinary sum. The exact one splits each
  /// product a b = p + e exactly (p = a b, e = fma(a, b, -p), exact while p is finite and |p| >=
  /// 2^-969 or a b = 0) and takes the exact sum of the 2n pieces (the library's binned ExactSum,
  /// an order of magnitude faster on the CPU than its exact dot's filters); any product outside that
  /// window (NaN, Inf, underflow: a diverging run) sends the whole dot to the library's exact dot.
  /// Both are the exact value rounded once: the same bits.
  double dot(const Field& a, const Field& b) {
    const std::int64_t s = g_.stride(), nx = g_.nx, rows = g_.rows;
    if (!exact_) {
      const double sum = plain_dot(a, b);
      return link_ ? link_->sum(sum) : sum;
    }
    if (link_)
      return exact_over_ranks<reduce::exact::DoubleProducts, 1>(
          [&](auto& f, auto& sink, std::size_t c) { f[0].add_product(a[c], b[c], sink[0]); })[0];
    if (pieces_.empty()) pieces_.assign(2 * u_.size(), 0.0);
    constexpr double kSafe = 0x1p-969;
    bool unsafe = false;
#pragma omp parallel for schedule(static) reduction(|| : unsafe)
    for (std::int64_t j = 1; j <= rows; ++j)
      for (std::int64_t i = 1; i <= nx; ++i) {
        const auto c = static_cast<std::size_t>(j * s + i);
        const double p = a[c] * b[c];
        const double e = std::fma(a[c], b[c], -p);
        const double m = std::fabs(p);
        if (!(m >= kSafe && m <= std::numeric_limits<double>::max()) && !(p == 0.0 && (a[c] == 0.0 || b[c] == 0.0)))
          unsafe = true;
        pieces_[c] = p;  // the products and the errors apart: each run binned at its own scale
        pieces_[u_.size() + c] = e;
      }
    const auto b0 = static_cast<std::size_t>(g_.rows_begin()),
               n = static_cast<std::size_t>(g_.rows_end() - g_.rows_begin());
    if (unsafe)
      return reduce::exact_dot_to_host<double, double>(reduce::Backend::cpu, std::span<const double>(a.data() + b0, n),
                                                       std::span<const double>(b.data() + b0, n), ws_);
    // Rows [rows_begin, rows_end) of both halves: one gang of two slabs.
    double r = 0.0;
    reduce::reduce<reduce::ExactSum, double, double>(
        reduce::Backend::cpu,
        reduce::View<const double>::strided(pieces_.data() + b0, {2, 1, static_cast<std::int64_t>(n)},
                                            static_cast<std::int64_t>(n), static_cast<std::int64_t>(u_.size())),
        reduce::Levels::all(), std::span<double>(&r, 1), ws_);
    return r;
  }
  /// a.b over this rank's cells, an ordinary OpenMP sum (reproducible off).
  double plain_dot(const Field& a, const Field& b) {
    double sum = 0.0;
    const std::int64_t s = g_.stride(), nx = g_.nx, rows = g_.rows;
#pragma omp parallel for schedule(static) reduction(+ : sum)
    for (std::int64_t j = 1; j <= rows; ++j)
      for (std::int64_t i = 1; i <= nx; ++i) {
        const auto c = static_cast<std::size_t>(j * s + i);
        sum += a[c] * b[c];
      }
    return sum;
  }
  /// The N dots a_k.b_k over every rank's cells with one reduction across ranks for all of them
  /// (pipelined CG's); the same values as N dot() calls. start_dots begins them and finish_dots
  /// reads them: across ranks the exact accumulators' words are summed in between, while the caller
  /// computes (ordinary sums and one rank have their values at once).
  using DotPair = std::pair<const Field*, const Field*>;
  template <std::size_t N>
  struct DotsInFlight {
    std::array<double, N> value{};
    std::vector<std::int64_t> words;
    std::unique_ptr<RankLink::Pending> pending;
  };
  template <std::size_t N>
  DotsInFlight<N> start_dots(const std::array<DotPair, N>& v) {
    DotsInFlight<N> d;
    if (!link_) {
      for (std::size_t k = 0; k < N; ++k) d.value[k] = dot(*v[k].first, *v[k].second);
    } else if (!exact_) {
      for (std::size_t k = 0; k < N; ++k) d.value[k] = plain_dot(*v[k].first, *v[k].second);
      link_->sums(d.value);  // one reduction across ranks for the N
    } else {
      d.words = exact_cell_words<reduce::exact::DoubleProducts, N>(g_, [&](auto& f, auto& sink, std::size_t c) {
        for (std::size_t k = 0; k < N; ++k) f[k].add_product((*v[k].first)[c], (*v[k].second)[c], sink[k]);
      });
      d.pending = link_->start_add_words(d.words);
    }
    return d;
  }
  template <std::size_t N>
  std::array<double, N> finish_dots(DotsInFlight<N>& d) {
    if (!d.pending) return d.value;
    d.pending->wait();
    d.pending.reset();
    return round_words<reduce::exact::DoubleProducts, N>(d.words);
  }
  template <std::size_t N>
  std::array<double, N> dots(const std::array<DotPair, N>& v) {
    DotsInFlight<N> d = start_dots(v);
    return finish_dots(d);
  }
  /// max |a| over this rank's cells; NaN when any is NaN.
  double max_abs(const Field& a) {
    double m = 0.0;
    bool nan = false;
    const std::int64_t s = g_.stride(), nx = g_.nx, rows = g_.rows;
#pragma omp parallel for schedule(static) reduction(max : m) reduction(|| : nan)
    for (std::int64_t j = 1; j <= rows; ++j)
      for (std::int64_t i = 1; i <= nx; ++i) {
        const double v = std::fabs(a[static_cast<std::size_t>(j * s + i)]);
        if (v != v) nan = true;
        else m = std::max(m, v);
      }
    const double v = nan ? std::numeric_limits<double>::quiet_NaN() : m;
    return link_ ? link_->max(v) : v;
  }

  // ---- preconditioners (TeaLeaf_ref's tea_diag_solve / tea_block_solve) ------------------------
  void setup_preconditioner(Preconditioner p) {
    prec_ = p;
    PreconditionerCoefficients pc = preconditioner_coefficients(g_, p, kx_, ky_);
    mi_ = std::move(pc.mi), cp_ = std::move(pc.cp), bfp_ = std::move(pc.bfp);
  }
  [[nodiscard]] double diag_at(std::size_t c) const {
    const std::size_t s = static_cast<std::size_t>(g_.stride());
    return ops::diagonal(kx_[c], kx_[c + 1], ky_[c], ky_[c + s]);
  }
  /// f(first cell, rows) for every column of every block of kJacBlock rows.
  template <class F>
  void block_columns(F&& f) {
    const std::int64_t s = g_.stride();
    const std::int64_t blocks = (g_.rows + kJacBlock - 1) / kJacBlock;
#pragma omp parallel for schedule(static)
    for (std::int64_t b = 0; b < blocks; ++b) {
      const std::int64_t j0 = 1 + b * kJacBlock, n = std::min(kJacBlock, g_.rows - b * kJacBlock);
      for (std::int64_t i = 1; i <= g_.nx; ++i) f(static_cast<std::size_t>(j0 * s + i), n);
    }
  }
  /// z = M^-1 r (the preconditioner in use); returns the vector that plays z (r itself without one).
  const Field& precondition(const Field& r) {
    if (prec_ == Preconditioner::none) return r;
    apply_preconditioner(r, z_);
    return z_;
  }
  /// z = M^-1 r for a preconditioner other than none.
  void apply_preconditioner(const Field& r, Field& z) {
    switch (prec_) {
      case Preconditioner::none: break;
      case Preconditioner::jac_diag: cells([&](std::size_t c) { z[c] = ops::mul(mi_[c], r[c]); }); break;
      case Preconditioner::jac_block: {
        const std::size_t s = static_cast<std::size_t>(g_.stride());
        block_columns([&](std::size_t c0, std::int64_t n) {
          // Forward: dp_k = (r_k + ky_k dp_{k-1}) bfp_k (dp_0 = r_0 / D_0), kept in z; back: z_k = dp_k - cp_k z_{k+1}.
          z[c0] = ops::div(r[c0], diag_at(c0));
          for (std::int64_t k = 1; k < n; ++k) {
            const std::size_t c = c0 + static_cast<std::size_t>(k) * s;
            z[c] = ops::mul(ops::add(r[c], ops::mul(ky_[c], z[c - s])), bfp_[c]);
          }
          for (std::int64_t k = n - 2; k >= 0; --k) {
            const std::size_t c = c0 + static_cast<std::size_t>(k) * s;
            z[c] = ops::sub(z[c], ops::mul(cp_[c], z[c + s]));
          }
        });
        break;
      }
    }
  }

  /// The error a step measures of r (l2: rr, given; max: max |r|).
  double measure(const Field& r, double rr) { return o_.norm == EpsNorm::l2 ? rr : max_abs(r); }

  /// Records the tested value; true when the solve stops (converged, or diverged on NaN/Inf).
  bool test(SolveStats& s, std::int64_t k, double error) {
    const double v = tested_value(o_.solver, o_.norm, error);
    s.error = v;
    s.history_iteration.push_back(k);
    s.history_error.push_back(v);
    if (!std::isfinite(v)) {
      s.status = SolveStatus::diverged;
      return true;
    }
    if (v < o_.eps) {
      s.status = SolveStatus::converged;
      return true;
    }
    return false;
  }

  // ---- CG, Chebyshev, PPCG --------------------------------------------------------------------
  void cg_init(double& rro) {
    std::copy(u_.begin(), u_.end(), u0_.begin());
    residual(u_, r_);  // r = u - A u (u0 = u)
    const Field& z = precondition(r_);
    cells([&](std::size_t c) { p_[c] = z[c]; });
    rro = dot(r_, z);
  }

  /// CG's (and PPCG's) w = A p, alpha = rro / p.w, u += alpha p, r -= alpha w; returns alpha.
  double advance(double rro) {
    halo(p_);
    cells([&](std::size_t c) { w_[c] = smvp(p_, c); });
    const double alpha = rro / dot(p_, w_);
    cells([&](std::size_t c) {
      u_[c] = ops::axpy(u_[c], alpha, p_[c]);
      r_[c] = ops::axmy(r_[c], alpha, w_[c]);
    });
    return alpha;
  }

  /// One CG step (k: the iteration); returns the error it measures.
  double cg_step(double& rro, std::vector<double>& alphas, std::vector<double>& betas) {
    const double alpha = advance(rro);
    const Field& z = precondition(r_);
    const double rrn = dot(r_, z);
    const double beta = rrn / rro;
    cells([&](std::size_t c) { p_[c] = ops::axpy(z[c], beta, p_[c]); });
    alphas.push_back(alpha);
    betas.push_back(beta);
    rro = rrn;
    return measure(r_, rrn);
  }

  [[nodiscard]] bool switch_due(std::int64_t k, double error) const {
    return o_.error_switch ? error < o_.eps_lim && k > 20 : k > o_.presteps && error < 1.0;
  }

  void krylov(SolveStats& s) {
    double rro = 0.0;
    cg_init(rro);
    std::vector<double> alphas, betas;
    double error = 1e10;  // TeaLeaf's error before the first step
    std::int64_t n = 0;   // Chebyshev / PPCG steps so far
    ChebyCoefficients cc;
    s.status = SolveStatus::max_iters;
    for (std::int64_t k = 0; k < o_.max_iters; ++k) {
      if (k % kPoll == 0) interrupt::check("at iteration " + std::to_string(k) + " of a solve");
      const bool cg = o_.solver == SolverKind::cg || (n == 0 && !switch_due(k, error));
      bool tested = true;
      if (cg) {
        error = cg_step(rro, alphas, betas);
        ++s.cg_iterations;
      } else if (o_.solver == SolverKind::chebyshev) {
        ++n;
        if (n == 1) {
          s.eigenvalues = lanczos_eigenvalues(alphas, betas);
          cc = cheby_coefficients(s.eigenvalues, o_.max_iters - k + 1);  // steps n = 1 .. max_iters - k
          const double bb = dot(u0_, u0_);
          residual(u_, r_);
          const Field& z = precondition(r_);
          cells([&](std::size_t c) {
            p_[c] = ops::div(z[c], cc.theta);
            u_[c] = ops::add(u_[c], p_[c]);
          });
          const double rr = cheby_step(cc, 1);
          error = measure(r_, rr);
          s.cheby_estimate = cheby_estimated_iterations(s.eigenvalues, bb, rr);
        } else {
          tested = n >= s.cheby_estimate && (k + 1) % 10 == 0;
          const double rr = cheby_step(cc, n, tested && o_.norm == EpsNorm::l2);
          if (tested) error = measure(r_, rr);
        }
      } else {
        ++n;
        if (n == 1) {
          s.eigenvalues = lanczos_eigenvalues(alphas, betas);
          cc = cheby_coefficients(s.eigenvalues, o_.inner_steps);
          residual(u_, r_);
        }
        error = ppcg_step(cc, rro);
        s.inner_iterations += o_.inner_steps;
      }
      ++s.iterations;
      if (tested && test(s, k, error)) return;
    }
    if (!s.history_error.empty()) s.error = s.history_error.back();
  }

  /// Chebyshev step n: w = A u, r = u0 - w, p = alpha_n p + beta_n M^-1 r, u += p; returns r.r
  /// when asked (0 otherwise).
  double cheby_step(const ChebyCoefficients& cc, std::int64_t n, bool rr = true) {
    residual(u_, r_);
    const Field& z = precondition(r_);
    const double a = cc.alpha[static_cast<std::size_t>(n)], b = cc.beta[static_cast<std::size_t>(n)];
    cells([&](std::size_t c) {
      p_[c] = ops::lin2(a, p_[c], b, z[c]);
      u_[c] = ops::add(u_[c], p_[c]);
    });
    return rr ? dot(r_, r_) : 0.0;
  }

  double ppcg_step(const ChebyCoefficients& cc, double& rro) {
    (void)advance(rro);
    {
      const Field& z = precondition(r_);
      cells([&](std::size_t c) { sd_[c] = ops::div(z[c], cc.theta); });
    }
    for (std::int64_t i = 0; i < o_.inner_steps; ++i) {
      halo(sd_);
      cells([&](std::size_t c) {
        r_[c] = ops::sub(r_[c], smvp(sd_, c));
        u_[c] = ops::add(u_[c], sd_[c]);
      });
      const Field& z = precondition(r_);
      const double a = cc.alpha[static_cast<std::size_t>(i)], b = cc.beta[static_cast<std::size_t>(i)];
      cells([&](std::size_t c) { sd_[c] = ops::lin2(a, sd_[c], b, z[c]); });
    }
    const Field& z = precondition(r_);
    const double rrn = dot(r_, z);
    const double beta = rrn / rro;
    cells([&](std::size_t c) { p_[c] = ops::axpy(z[c], beta, p_[c]); });
    rro = rrn;
    return measure(r_, rrn);
  }

  // ---- pipelined CG (Chen and Carson's predict-and-recompute variant; engine.hpp) ---------------
  void pipecg(SolveStats& s) {
    for (Field* f : {&ps_, &pst_, &pu_, &put_, &pwt_})
      if (f->size() != u_.size()) f->assign(u_.size(), 0.0);
    const bool pre = prec_ != Preconditioner::none;
    Field& rt = pre ? z_ : r_;     // M^-1 r
    Field& wt = pre ? pwt_ : w_;   // M^-1 w
    Field& st = pre ? pst_ : ps_;  // M^-1 s (ut = M^-1 u: put_, used through a_then_m and the update)
    // out = A in, out_m = M^-1 out: w and wt from rt, u and ut from st.
    const auto a_then_m = [&](Field& in, Field& out, Field& out_m) {
      halo(in);
      cells([&](std::size_t c) { out[c] = smvp(in, c); });
      if (pre) apply_preconditioner(out, out_m);
    };
    std::copy(u_.begin(), u_.end(), u0_.begin());
    residual(u_, r_);  // r = u - A u (u0 = u)
    if (pre) apply_preconditioner(r_, z_);
    a_then_m(rt, w_, pwt_);
    cells([&](std::size_t c) { p_[c] = rt[c], ps_[c] = w_[c], pst_[c] = wt[c]; });
    a_then_m(st, pu_, put_);
    // nu = r.z (CG's rro), mu = p.A p, delta = (A p).z, gamma = (A p).M^-1 (A p).
    const std::array<DotPair, 4> pairs = {{{&rt, &r_}, {&p_, &ps_}, {&ps_, &rt}, {&ps_, &st}}};
    std::array<double, 4> d = dots(pairs);
    s.status = SolveStatus::max_iters;
    for (std::int64_t k = 0; k < o_.max_iters; ++k) {
      if (k % kPoll == 0) interrupt::check("at iteration " + std::to_string(k) + " of a solve");
      const double nu = d[0], alpha = nu / d[1];
      const double beta = (nu - 2.0 * alpha * d[2] + alpha * alpha * d[3]) / nu;  // r.z predicted / r.z
      cells([&](std::size_t c) {
        u_[c] = ops::axpy(u_[c], alpha, p_[c]);
        r_[c] = ops::axmy(r_[c], alpha, ps_[c]);
        if (pre) z_[c] = ops::axmy(z_[c], alpha, pst_[c]);
        w_[c] = ops::axmy(w_[c], alpha, pu_[c]);
        if (pre) pwt_[c] = ops::axmy(pwt_[c], alpha, put_[c]);
        p_[c] = ops::axpy(rt[c], beta, p_[c]);
        ps_[c] = ops::axpy(w_[c], beta, ps_[c]);
        if (pre) pst_[c] = ops::axpy(pwt_[c], beta, pst_[c]);
      });
      // The step's one reduction across ranks (four exact dots: their integer words summed by a
      // non-blocking all-reduce) overlaps the two products, which do not depend on it.
      DotsInFlight<4> inflight = start_dots(pairs);
      a_then_m(st, pu_, put_);  // u = A st
      a_then_m(rt, w_, pwt_);   // w = A rt recomputed (its recurrence above was the prediction)
      d = finish_dots(inflight);
      ++s.iterations, ++s.cg_iterations;
      if (test(s, k, measure(r_, d[0]))) return;
    }
  }

  // ---- Jacobi -------------------------------------------------------------------------------
  void jacobi(SolveStats& s) {
    std::copy(u_.begin(), u_.end(), u0_.begin());
    const std::size_t st = static_cast<std::size_t>(g_.stride());
    s.status = SolveStatus::max_iters;
    for (std::int64_t k = 0; k < o_.max_iters; ++k) {
      if (k % kPoll == 0) interrupt::check("at iteration " + std::to_string(k) + " of a solve");
      std::swap(u_, r_);  // r: the old values (halo included)
      halo(r_);
      cells([&](std::size_t c) {
        u_[c] =
            ops::jacobi(u0_[c], kx_[c], kx_[c + 1], ky_[c], ky_[c + st], r_[c - 1], r_[c + 1], r_[c - st], r_[c + st]);
        w_[c] = std::fabs(ops::sub(u_[c], r_[c]));
      });
      double error = o_.norm == EpsNorm::max ? max_abs(w_) : sum(w_);
      if (o_.norm == EpsNorm::l2 && k % 50 == 0) {
        residual(u_, r_);
        error = error + dot(r_, r_);
      }
      ++s.iterations;
      if (test(s, k, error)) return;
    }
  }
  /// The sum of a over this rank's cells: exact, or ordinary.
  double sum(const Field& a) {
    if (!exact_) return plain_sum(a);
    if (link_)
      return exact_over_ranks<double, 1>([&](auto& f, auto& sink, std::size_t c) { f[0].add(a[c], sink[0]); })[0];
    double m = 0.0;
    const std::int64_t st = g_.stride();
    reduce::reduce<reduce::ExactSum, double, double>(
        reduce::Backend::cpu,
        reduce::View<const double>::strided(a.data() + st + 1, {1, g_.rows, g_.nx}, st, g_.rows * st),
        reduce::Levels::all(), std::span<double>(&m, 1), ws_);
    return m;
  }

  Deck d_;
  Grid g_;
  const RankLink* link_;  ///< several ranks (else nullptr)
  reduce::Workspace ws_;
  SolveOptions o_;
  bool exact_ = true;  ///< dot products and sums exact (SolveOptions::reproducible)
  double dt_ = -1.0;
  Preconditioner prec_ = Preconditioner::none;
  Field density_, energy_, u_, u0_, p_, r_, w_, z_, sd_, kx_, ky_, cm_, mi_, cp_, bfp_;
  Field ps_, pst_, pu_, put_, pwt_;  ///< pipelined CG's s = A p, st = M^-1 s, u = A st, ut = M^-1 u, wt = M^-1 w
  Field pieces_;  ///< the exact dot's product pieces: the products, then their errors (zero on the halo)
};

}  // namespace

std::unique_ptr<Engine> make_cpu_engine(const Deck& d, const Grid& g, const RankLink* link) {
  return std::make_unique<CpuEngine>(d, g, link);
}

}  // namespace tally::heat2d::implicit
