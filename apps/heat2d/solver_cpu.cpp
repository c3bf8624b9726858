// CPU backend: OpenMP threads over rows, the residual folded into the same pass. Across ranks each
// sweep updates the block's first and last rows, starts their exchange (MPI), updates the rows
// between while they travel, and waits; checked sweeps then take the Max over ranks. Passes of t > 1
// sweeps (blocked_pass) hold t halo rows a side and exchange them after each pass.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>
#include <vector>

#include "solver.hpp"
#include "tally/common/timing.hpp"
#include "tally/reduce/ops.hpp"
#include "tally/reduce/ranks.hpp"

namespace tally::heat2d {
namespace {

using reduce::Max;

/// Row m of the next sweep from rows m - 1, m, m + 1 (us, uc, un) into vr, interior columns only;
/// returns max |vr - uc| when Check (NaN propagates). The one place the CPU evaluates the update.
template <class T, bool Check>
inline T update_row(const T* us, const T* uc, const T* un, T* vr, std::int64_t nx, Coeffs<T> c) {
  T local = Max::identity<T>();
  for (std::int64_t i = 1; i < nx - 1; ++i) {
    const T s = (uc[i - 1] + uc[i + 1]) + (us[i] + un[i]);
    const T nv = c.steady ? s * T(0.25) : uc[i] + c.r * (s - T(4) * uc[i]);
    vr[i] = nv;
    if constexpr (Check) local = Max::combine(local, std::abs(nv - uc[i]));
  }
  return local;
}

/// One sweep u -> v over rows [j0, j1) (1 <= j0, j1 <= ny - 1, ny the rows held); returns
/// max |v - u| when Check (NaN propagates).
template <class T, bool Check>
T sweep(const T* u, T* v, std::int64_t nx, std::int64_t j0, std::int64_t j1, Coeffs<T> c) {
  T res = Max::identity<T>();
#pragma omp parallel if (nx * (j1 - j0) > tuning::cpu_parallel_points)
  {
    T local = Max::identity<T>();
#pragma omp for schedule(static)
    for (std::int64_t j = j0; j < j1; ++j)
      local =
          Max::combine(local, update_row<T, Check>(u + (j - 1) * nx, u + j * nx, u + (j + 1) * nx, v + j * nx, nx, c));
    if constexpr (Check) {
#pragma omp critical(heat2d_residual)
      res = Max::combine(res, local);
    }
  }
  return res;
}

/// `t` sweeps u -> v of rows [j0, j1) in one pass over memory (ny rows held; rows j0 - t .. j1 + t - 1
/// must hold the state, or be edge rows): each thread streams down a band of rows, sweep level l computing row n - l
/// when row n is read, and keeps each intermediate level's last three rows in a ring (cache-resident), so u is read and
/// v written once per pass. The band's levels reach t - l rows beyond it (recomputed by the neighbouring band too).
/// Returns max |v - u_{t-1}| of the last sweep when Check. The same update_row as sweep(): the same bits.
template <class T, bool Check>
T blocked_pass(const T* u, T* v, std::int64_t nx, std::int64_t ny, std::int64_t j0, std::int64_t j1, int t,
               Coeffs<T> c) {
  T res = Max::identity<T>();
#pragma omp parallel if (nx * (j1 - j0) > tuning::cpu_parallel_points)
  {
    const std::int64_t nt = omp_get_num_threads(), id = omp_get_thread_num();
    const std::int64_t js = j0 + (j1 - j0) * id / nt, je = j0 + (j1 - j0) * (id + 1) / nt;  // this band's rows
    std::vector<T> ring(static_cast<std::size_t>((t - 1) * 3 * nx));
    auto held = [&](int lev, std::int64_t m) { return ring.data() + ((lev - 1) * 3 + m % 3) * nx; };  // levels 1..t-1
    auto row = [&](int lev, std::int64_t m) -> const T* { return lev == 0 ? u + m * nx : held(lev, m); };
    T local = Max::identity<T>();
    for (std::int64_t n = std::max<std::int64_t>(js - t + 1, 0) + 1; js < je && n <= je - 1 + t; ++n) {
      for (int lev = 1; lev <= t; ++lev) {
        const std::int64_t m = n - lev;  // level lev's rows m - 1.. m + 1 of level lev - 1 are there
        if (m < std::max<std::int64_t>(js - t + lev, 0) || m >= std::min<std::int64_t>(je + t - lev, ny)) continue;
        const T* uc = row(lev - 1, m);
        if (lev == t) {  // m in [js, je): interior rows; v's edge columns are set and never change
          const T r = update_row<T, Check>(row(lev - 1, m - 1), uc, row(lev - 1, m + 1), v + m * nx, nx, c);
          if constexpr (Check) local = Max::combine(local, r);
          continue;
        }
        T* vr = held(lev, m);
        if (m == 0 || m == ny - 1) {  // edge rows stay as they are (across ranks: beyond what counts)
          std::copy(uc, uc + nx, vr);
          continue;
        }
        (void)update_row<T, false>(row(lev - 1, m - 1), uc, row(lev - 1, m + 1), vr, nx, c);
        vr[0] = uc[0];
        vr[nx - 1] = uc[nx - 1];
      }
    }
    if constexpr (Check) {
#pragma omp critical(heat2d_residual)
      res = Max::combine(res, local);
    }
  }
  return res;
}

template <class T>
class CpuSolver final : public Solver<T> {
 public:
  CpuSolver(const Problem& p, const SolverOptions& o)
      : p_(p), c_(coeffs<T>(p)), dec_(solver_decomposition(p, o)), comm_(dec_.several() ? o.comm : nullptr),
        t_(o.sweeps_per_pass), deepest_(deepest_pass(dec_)),
        // Across ranks the halos are as deep as the deepest pass this solver may run (t = 1: one row).
        lay_(halo_layout(dec_, t_ == 1 || !comm_ ? 1 : deepest_)), rows_(lay_.rows()),
        u_(static_cast<std::size_t>(p.nx * rows_)), v_(u_.size()) {
    (void)resolve_sweeps_per_pass(t_, std::max(t_, 1), reduce::Backend::cpu, deepest_);  // the range and the ranks
  }

  void set_field(std::span<const T> u) override {
    const auto at = static_cast<std::ptrdiff_t>((lay_.first() - 1) * p_.nx);  // the Block's rows
    std::copy(u.begin(), u.end(), u_.begin() + at);
    std::copy(u.begin(), u.end(), v_.begin() + at);  // both buffers carry the edges
  }

  void get_field(std::span<T> u) override {
    const auto at = static_cast<std::ptrdiff_t>((lay_.first() - 1) * p_.nx);
    std::copy(u_.begin() + at, u_.begin() + at + static_cast<std::ptrdiff_t>(u.size()), u.begin());
  }

  SolveResult solve(const StopRule& rule, const ProgressFn& progress) override {
    SolveResult r;
    r.iterations = rule.first;
    HostTimer clock;
    const int t = resolve_sweeps_per_pass(t_, rule.check_every, reduce::Backend::cpu, deepest_);
    if (comm_ && t > 1) exchange(u_, t);  // set_field filled one halo row a side
    for (std::int64_t k0 = rule.first + 1; k0 <= rule.last;) {
      const std::int64_t k = k0 + pass_length(k0, rule.last, t) - 1;  // this pass's last sweep
      if (rule.is_check(k)) {  // only a pass's last sweep can be (t divides check_every)
        double res = static_cast<double>(pass<true>(k - k0 + 1, t));
        // The same bits on every rank (Max is exact): every rank judges alike and stops together.
        if (comm_)
          reduce::allreduce<Max, double>(*comm_, std::span<const double>(&res, 1), std::span<double>(&res, 1),
                                         ranks::Memory::host);
        r.iterations = k;
        r.check_iteration.push_back(k);
        r.check_residual.push_back(res);
        r.final_residual = res;
        if (progress) progress(k, res, clock.seconds());
        if (rule.judge(res, r.status)) {
          r.solve_s = clock.seconds();
          return r;
        }
        if (!comm_ && k < rule.last && rule.wants_stop()) {  // the field is the state after sweep k
          r.status = Status::interrupted;
          r.solve_s = clock.seconds();
          return r;
        }
      } else {
        pass<false>(k - k0 + 1, t);
        r.iterations = k;
      }
      k0 = k + 1;
    }
    r.status = rule.at_last;
    r.solve_s = clock.seconds();
    return r;
  }

 private:
  /// `len` sweeps (passes of up to t), the last one's residual when Check: one sweep, or one
  /// blocked pass whose t halo rows a side are then exchanged (the next pass may be t long).
  template <bool Check>
  T pass(std::int64_t len, int t) {
    if (t == 1) return step<Check>();
    const T res =
        blocked_pass<T, Check>(u_.data(), v_.data(), p_.nx, rows_, lay_.first(), lay_.end(), static_cast<int>(len), c_);
    if (comm_) exchange(v_, t);
    std::swap(u_, v_);
    return res;
  }

  /// Several ranks: the `n` own rows next to each neighbour to it, its `n` into the halo rows.
  void exchange(std::vector<T>& b, std::int64_t n) {
    const std::int64_t nx = p_.nx, js = lay_.first(), je = lay_.end();
    const bool prev = dec_.below() >= 0, next = dec_.above() >= 0;
    auto rows = [&](bool there, std::int64_t j) {  // rows j..j+n-1, or none toward a missing neighbour
      return there ? std::span<T>(b.data() + j * nx, static_cast<std::size_t>(n * nx)) : std::span<T>();
    };
    auto halo = comm_->start_exchange<T>(rows(prev, js), rows(prev, js - n), rows(next, je - n), rows(next, je),
                                         ranks::Memory::host);
    halo.wait();
  }

  /// One sweep u -> v, then swaps them; returns this rank's residual when Check.
  template <bool Check>
  T step() {
    const std::int64_t nx = p_.nx, first = lay_.first(), last = lay_.end() - 1;  // the own rows: first..last
    T res;
    if (!comm_) {
      res = sweep<T, Check>(u_.data(), v_.data(), nx, 1, rows_ - 1, c_);
    } else {
      // Boundary rows first, their exchange in flight while the rows between are updated.
      res = sweep<T, Check>(u_.data(), v_.data(), nx, first, first + 1, c_);
      if (last > first) res = Max::combine(res, sweep<T, Check>(u_.data(), v_.data(), nx, last, last + 1, c_));
      auto row = [&](std::int64_t j) { return std::span<T>(v_.data() + j * nx, static_cast<std::size_t>(nx)); };
      auto halo = comm_->start_exchange<T>(row(first), row(first - 1), row(last), row(last + 1), ranks::Memory::host);
      if (last > first + 1) res = Max::combine(res, sweep<T, Check>(u_.data(), v_.data(), nx, first + 1, last, c_));
      halo.wait();
    }
    std::swap(u_, v_);
    return res;
  }

  Problem p_;
  Coeffs<T> c_;
  Decomposition dec_;        // this rank's rows and neighbours
  const ranks::Comm* comm_;  // nullptr: one rank, no exchange
  int t_;                    // sweeps a pass asked for (0: auto)
  int deepest_;              // the deepest pass the ranks' blocks allow
  HaloLayout lay_;           // the rows held: own rows and halos (one rank: the whole field)
  std::int64_t rows_;        // = lay_.rows()
  std::vector<T> u_, v_;
};

}  // namespace

template <class T>
std::unique_ptr<Solver<T>> make_cpu_solver(const Problem& p, const SolverOptions& o) {
  return std::make_unique<CpuSolver<T>>(p, o);
}
template std::unique_ptr<Solver<float>> make_cpu_solver<float>(const Problem&, const SolverOptions&);
template std::unique_ptr<Solver<double>> make_cpu_solver<double>(const Problem&, const SolverOptions&);

double cpu_copy_bandwidth_gbs(std::int64_t bytes, int repeats) {
  const auto n = static_cast<std::size_t>(bytes / 8);
  std::vector<double> a(n), b(n);
#pragma omp parallel for schedule(static)
  for (std::size_t k = 0; k < n; ++k) a[k] = static_cast<double>(k % 1000) + 0.5, b[k] = 0.0;  // first touch
  std::vector<double> t;
  for (int rep = 0; rep < repeats + 1; ++rep) {
    HostTimer clock;
#pragma omp parallel
    {
      const auto nt = static_cast<std::size_t>(omp_get_num_threads()),
                 id = static_cast<std::size_t>(omp_get_thread_num());
      const std::size_t lo = n * id / nt, hi = n * (id + 1) / nt;
      std::memcpy(b.data() + lo, a.data() + lo, (hi - lo) * sizeof(double));
    }
    if (rep > 0) t.push_back(clock.seconds());  // the first copy is the warm-up
  }
  std::sort(t.begin(), t.end());
  return 2.0 * static_cast<double>(n * sizeof(double)) / t[t.size() / 2] / 1e9;
}

}  // namespace tally::heat2d
