#pragma once
// The CUDA engine's kernels (engine_cuda.cu launches them; kernel_blocks.cuh has what they share).
// Every cell's arithmetic is cell_ops.hpp's (the _rn intrinsics: no contraction), every dot product
// the library's exact device block (ExactThread<DoubleProducts>::add_product, exact_gang_sum: exact
// partial sums in the kernel, combined exactly and rounded once by the last block): the CPU
// engine's bits. With Exact false the dots are ordinary sums (a block tree and the blocks in order:
// deterministic for one launch shape).
//
// Work: a block of 32 x 8 threads takes tiles of 32 columns x 32 rows (grid-stride over tiles); a
// thread takes a strip of up to 4 rows of one column (a jac_block block: the strips start at rows
// that are multiples of 4 of the global grid). Scalars (alpha, beta, rro, the error) live in
// DeviceState; the last block of a reduction computes them. Every iteration's kernels first read
// `halt` (a solve that converged or diverged: the iterations enqueued after it do nothing) and, for
// CG's, `cg_over` (the switch to Chebyshev or PPCG is due).
//
// A CG step is two passes over memory: cg_w (the search direction, w = A p and p.w, and the step
// before's u += alpha p) and cg_ur (r -= alpha w, M^-1 r, r.z); cg_u applies the last step's u
// update where the CG steps end. The bytes each kernel moves: traffic.hpp.

#include "kernel_blocks.cuh"

namespace tally::heat2d::implicit::gpu {

// ---- the kernels --------------------------------------------------------------------------------
// Pointers: fields of the grid (cell_ops.hpp's layout); `in`/`out` pairs never alias (a stencil
// reads its neighbours' old values).

/// u = energy density, u0 = u.
__global__ void set_u(Layout g, const double* __restrict__ energy, const double* __restrict__ density,
                      double* __restrict__ u, double* __restrict__ u0) {
  for_strips(g, [&](long long c0, int n) {
    strip_cells(c0, g.stride, n, [&](int, long long c) { u[c] = u0[c] = ops::mul(ld(energy, c), ld(density, c)); });
  });
}

/// energy = u / density.
__global__ void set_energy(Layout g, const double* __restrict__ u, const double* __restrict__ density,
                           double* __restrict__ energy) {
  for_strips(g, [&](long long c0, int n) {
    strip_cells(c0, g.stride, n, [&](int, long long c) { energy[c] = ops::div(ld(u, c), ld(density, c)); });
  });
}

/// CG's start: r = u0 - A u, z = M^-1 r, p = z, rro = r.z.
template <bool Exact, int P>
__global__ void __launch_bounds__(kTileX* kWarps)
    cg_init(Layout g, Coeffs k, PrecArrays pa, const double* __restrict__ u, const double* __restrict__ u0,
            double* __restrict__ r, double* __restrict__ z, double* __restrict__ p, Scratch sc, DeviceState* st) {
  __shared__ ReduceStorage s;
  DotShare<Exact> d(s.exact);
  const long long S = g.stride;
  for_strips(g, [&](long long c0, int n) {
    double rv[kStrip] = {}, zv[kStrip] = {};
    strip_residual_z<P>(k, pa, u0, u, c0, S, n, rv, zv);
    strip_cells(c0, S, n, [&](int j, long long c) {
      r[c] = rv[j];
      if constexpr (P != kNone) z[c] = zv[j];
      p[c] = zv[j];
      d.add(rv[j], zv[j]);
    });
  });
  double dot = 0.0, mx = 0.0;
  if (finish<Exact, false>(d, 0, sc, s, dot, mx) && thread0()) st->rro = dot;
}

/// CG's (and PPCG's: Cg false) w = A p, pw = p.w and alpha = rro / pw (alphas[it] too). Update:
/// p = beta p_in + z first (the previous iteration's search direction, fused in: computed for the
/// neighbours too, written to p_out); else p_in as it is. Cg with Update: the previous CG step's
/// u += alpha p too (alpha = alphas[it - 1], p = p_in, which this pass reads anyway): CG's second
/// pass (cg_ur) leaves u alone, and cg_u applies the last step's where the CG steps end.
template <bool Exact, bool Update, bool Cg>
__global__ void __launch_bounds__(kTileX* kWarps)
    cg_w(Layout g, Coeffs k, const double* p_in, double* __restrict__ p_out, const double* __restrict__ z,
         double* __restrict__ w, double* __restrict__ u, Scratch sc, DeviceState* st, double* alphas, long long it) {
  if (st->halt || (Cg && st->cg_over)) return;
  const double beta = Update ? st->beta : 0.0;
  const double alpha_prev = Cg && Update ? alphas[it - 1] : 0.0;
  __shared__ ReduceStorage s;
  DotShare<Exact> d(s.exact);
  const long long S = g.stride;
  const auto pv = [&](long long c) { return Update ? ops::axpy(ld(z, c), beta, ld(p_in, c)) : ld(p_in, c); };
  for_strips(g, [&](long long c0, int n) {
    strip_cells(c0, S, n, [&](int, long long c) {
      const double pin = ld(p_in, c);
      if constexpr (Cg && Update) u[c] = ops::axpy(u[c], alpha_prev, pin);
      const double pc = Update ? ops::axpy(ld(z, c), beta, pin) : pin;
      if constexpr (Update) p_out[c] = pc;
      const double wc = ops::smvp(ld(k.kx, c), ld(k.kx, c + 1), ld(k.ky, c), ld(k.ky, c + S), pc, pv(c - 1), pv(c + 1),
                                  pv(c - S), pv(c + S));
      w[c] = wc;
      d.add(pc, wc);
    });
  });
  double dot = 0.0, mx = 0.0;
  if (finish<Exact, false>(d, 0, sc, s, dot, mx) && thread0()) {
    const double alpha = st->rro / dot;
    st->alpha = alpha;
    alphas[it] = alpha;
  }
}

/// CG's r -= alpha w, z = M^-1 r, rrn = r.z, beta = rrn / rro (betas[it]), the test of iteration
/// `it` and, for Chebyshev / PPCG, whether the switch is due at it + 1. Its u += alpha p waits for
/// the next cg_w (or cg_u).
template <bool Exact, int P, bool Max>
__global__ void __launch_bounds__(kTileX* kWarps)
    cg_ur(Layout g, Coeffs k, PrecArrays pa, double* __restrict__ r, const double* __restrict__ w,
          double* __restrict__ z, Scratch sc, DeviceState* st, TestParams tp, double* betas, double* hist,
          long long it) {
  if (st->halt || st->cg_over) return;
  const double alpha = st->alpha;
  __shared__ ReduceStorage s;
  DotShare<Exact> d(s.exact);
  unsigned long long mb = 0;
  const long long S = g.stride;
  for_strips(g, [&](long long c0, int n) {
    double rv[kStrip] = {}, zv[kStrip] = {};
    strip_update<false>(nullptr, nullptr, r, w, alpha, c0, S, n, rv);
    precondition<P>(pa, k.kx, k.ky, c0, S, n, rv, zv);
    strip_rz<P, Max>(z, c0, S, n, rv, zv, d, mb);
  });
  double dot = 0.0, mx = 0.0;
  if (finish<Exact, Max>(d, mb, sc, s, dot, mx) && thread0()) {
    const double beta = dot / st->rro;
    st->beta = beta;
    betas[it] = beta;
    st->rro = dot;
    const double error = Max ? mx : dot;
    test(st, tp, hist, it, error);
    const long long next = it + 1;
    if (tp.switching && !st->halt &&
        (tp.error_switch ? error < tp.eps_lim && next > 20 : next > tp.presteps && error < 1.0))
      st->cg_over = 1, st->k_switch = next;
  }
}

/// u += alpha p (alpha: *alpha): the last CG step's update of u, which no later cg_w applied (the
/// solve stopped, reached max_iters or switched to Chebyshev / PPCG). The host launches it once.
__global__ void cg_u(Layout g, double* __restrict__ u, const double* __restrict__ p, const double* alpha) {
  const double a = *alpha;
  for_strips(g, [&](long long c0, int n) {
    strip_cells(c0, g.stride, n, [&](int, long long c) { u[c] = ops::axpy(u[c], a, ld(p, c)); });
  });
}

/// p_out = beta p_in + z: the last CG step's search direction, written out before PPCG replaces r.
__global__ void set_p(Layout g, const double* __restrict__ p_in, const double* __restrict__ z,
                      double* __restrict__ p_out, const DeviceState* st) {
  const double beta = st->beta;
  for_strips(g, [&](long long c0, int n) {
    strip_cells(c0, g.stride, n, [&](int, long long c) { p_out[c] = ops::axpy(ld(z, c), beta, ld(p_in, c)); });
  });
}

/// r = u0 - A u (written when r is given) and, with Dot, r.r into *out.
template <bool Exact, bool Dot>
__global__ void __launch_bounds__(kTileX* kWarps)
    residual(Layout g, Coeffs k, const double* __restrict__ u, const double* __restrict__ u0, double* __restrict__ r,
             Scratch sc, double* out) {
  __shared__ ReduceStorage s;
  DotShare<Exact> d(s.exact);
  const long long S = g.stride;
  for_strips(g, [&](long long c0, int n) {
    strip_cells(c0, S, n, [&](int, long long c) {
      const double rc = ops::sub(ld(u0, c), smvp(k.kx, k.ky, u, c, S));
      if (r) r[c] = rc;
      if constexpr (Dot) d.add(rc, rc);
    });
  });
  if constexpr (Dot) {
    double dot = 0.0, mx = 0.0;
    if (finish<Exact, false>(d, 0, sc, s, dot, mx) && thread0()) *out = dot;
  }
}

/// a.b into *out.
template <bool Exact>
__global__ void __launch_bounds__(kTileX* kWarps)
    dot(Layout g, const double* __restrict__ a, const double* __restrict__ b, Scratch sc, double* out) {
  __shared__ ReduceStorage s;
  DotShare<Exact> d(s.exact);
  for_strips(g, [&](long long c0, int n) {
    strip_cells(c0, g.stride, n, [&](int, long long c) { d.add(ld(a, c), ld(b, c)); });
  });
  double v = 0.0, mx = 0.0;
  if (finish<Exact, false>(d, 0, sc, s, v, mx) && thread0()) *out = v;
}

/// Chebyshev's first half-step: r = u0 - A u_in, p = M^-1 r / theta, u_out = u_in + p.
template <int P>
__global__ void __launch_bounds__(kTileX* kWarps)
    cheby_init(Layout g, Coeffs k, PrecArrays pa, const double* u_in, double* __restrict__ u_out,
               const double* __restrict__ u0, double* __restrict__ p, double theta) {
  const long long S = g.stride;
  for_strips(g, [&](long long c0, int n) {
    double rv[kStrip] = {}, zv[kStrip] = {};
    strip_residual_z<P>(k, pa, u0, u_in, c0, S, n, rv, zv);
    strip_cells(c0, S, n, [&](int j, long long c) {
      const double pc = ops::div(zv[j], theta);
      p[c] = pc;
      u_out[c] = ops::add(ld(u_in, c), pc);
    });
  });
}

/// Chebyshev step: r = u0 - A u_in, p = a p + b M^-1 r, u_out = u_in + p; Tested: r.r (into rr) and
/// the test of iteration `it` (the error r.r, or max |r| with Max).
template <bool Exact, int P, bool Tested, bool Max>
__global__ void __launch_bounds__(kTileX* kWarps)
    cheby(Layout g, Coeffs k, PrecArrays pa, const double* u_in, double* __restrict__ u_out,
          const double* __restrict__ u0, double* __restrict__ p, double a, double b, Scratch sc, DeviceState* st,
          TestParams tp, double* hist, long long it) {
  if (st->halt) return;
  __shared__ ReduceStorage s;
  DotShare<Exact> d(s.exact);
  unsigned long long mb = 0;
  const long long S = g.stride;
  for_strips(g, [&](long long c0, int n) {
    double rv[kStrip] = {}, zv[kStrip] = {};
    strip_residual_z<P>(k, pa, u0, u_in, c0, S, n, rv, zv);
    strip_cells(c0, S, n, [&](int j, long long c) {
      const double pc = ops::lin2(a, p[c], b, zv[j]);
      p[c] = pc;
      u_out[c] = ops::add(ld(u_in, c), pc);
      if constexpr (Tested) d.add(rv[j], rv[j]);
      if constexpr (Max) mb = max(mb, abs_bits(rv[j]));
    });
  });
  if constexpr (Tested) {
    double dot = 0.0, mx = 0.0;
    if (finish<Exact, Max>(d, mb, sc, s, dot, mx) && thread0()) {
      st->rr = dot;
      test(st, tp, hist, it, Max ? mx : dot);
    }
  }
}

/// PPCG's u += alpha p, r -= alpha w, sd = M^-1 r / theta.
template <int P>
__global__ void __launch_bounds__(kTileX* kWarps)
    ppcg_ur(Layout g, Coeffs k, PrecArrays pa, double* __restrict__ u, const double* __restrict__ p,
            double* __restrict__ r, const double* __restrict__ w, double* __restrict__ sd, double theta,
            const DeviceState* st) {
  if (st->halt) return;
  const double alpha = st->alpha;
  const long long S = g.stride;
  for_strips(g, [&](long long c0, int n) {
    double rv[kStrip] = {}, zv[kStrip] = {};
    strip_update<true>(u, p, r, w, alpha, c0, S, n, rv);
    precondition<P>(pa, k.kx, k.ky, c0, S, n, rv, zv);
    strip_cells(c0, S, n, [&](int j, long long c) { sd[c] = ops::div(zv[j], theta); });
  });
}

/// PPCG's inner step, first half: r -= A sd, u += sd.
__global__ void __launch_bounds__(kTileX* kWarps)
    ppcg_inner(Layout g, Coeffs k, double* __restrict__ u, double* __restrict__ r, const double* sd,
               const DeviceState* st) {
  if (st->halt) return;
  const long long S = g.stride;
  for_strips(g, [&](long long c0, int n) {
    strip_cells(c0, S, n, [&](int, long long c) {
      r[c] = ops::sub(r[c], smvp(k.kx, k.ky, sd, c, S));
      u[c] = ops::add(u[c], ld(sd, c));
    });
  });
}

/// PPCG's inner step, second half: sd = a sd + b M^-1 r.
template <int P>
__global__ void __launch_bounds__(kTileX* kWarps)
    ppcg_sd(Layout g, Coeffs k, PrecArrays pa, const double* __restrict__ r, double* __restrict__ sd, double a,
            double b, const DeviceState* st) {
  if (st->halt) return;
  const long long S = g.stride;
  for_strips(g, [&](long long c0, int n) {
    double rv[kStrip] = {}, zv[kStrip] = {};
    strip_load(r, c0, S, n, rv);
    precondition<P>(pa, k.kx, k.ky, c0, S, n, rv, zv);
    strip_cells(c0, S, n, [&](int j, long long c) { sd[c] = ops::lin2(a, sd[c], b, zv[j]); });
  });
}

/// PPCG's outer step's end: z = M^-1 r, rrn = r.z, beta = rrn / rro, the test of iteration `it`.
template <bool Exact, int P, bool Max>
__global__ void __launch_bounds__(kTileX* kWarps)
    ppcg_end(Layout g, Coeffs k, PrecArrays pa, const double* __restrict__ r, double* __restrict__ z, Scratch sc,
             DeviceState* st, TestParams tp, double* hist, long long it) {
  if (st->halt) return;
  __shared__ ReduceStorage s;
  DotShare<Exact> d(s.exact);
  unsigned long long mb = 0;
  const long long S = g.stride;
  for_strips(g, [&](long long c0, int n) {
    double rv[kStrip] = {}, zv[kStrip] = {};
    strip_load(r, c0, S, n, rv);
    precondition<P>(pa, k.kx, k.ky, c0, S, n, rv, zv);
    strip_rz<P, Max>(z, c0, S, n, rv, zv, d, mb);
  });
  double dot = 0.0, mx = 0.0;
  if (finish<Exact, Max>(d, mb, sc, s, dot, mx) && thread0()) {
    st->beta = dot / st->rro;
    st->rro = dot;
    test(st, tp, hist, it, Max ? mx : dot);
  }
}

/// A sum's thread share (Jacobi's sum of |updates|, the summary's mass): exact or ordinary.
template <bool Exact>
struct SumShare;
template <>
struct SumShare<true> {
  dev::ExactThread<double> t;
  __device__ explicit SumShare(dev::ExactStorage<double>& s) : t(s) {}
  __device__ __forceinline__ void add(double x) { t.add(x); }
  __device__ __forceinline__ bool finish(const Scratch& sc, double& r, dev::ExactStorage<double>& s,
                                         dev::GangStorage<double>&) {
    return dev::exact_gang_sum(t, sc.sum_partials, sc.sum_ticket, r, s);
  }
};
template <>
struct SumShare<false> {
  double sum = 0.0;
  __device__ explicit SumShare(dev::ExactStorage<double>&) {}
  __device__ __forceinline__ void add(double x) { sum += x; }
  __device__ __forceinline__ bool finish(const Scratch& sc, double& r, dev::ExactStorage<double>&,
                                         dev::GangStorage<double>& gs) {
    return dev::gang_reduce<reduce::Sum>(sum, sc.plain_partials, sc.plain_ticket, r, gs);
  }
};

/// Jacobi's sweep k: u_out = (u0 + kx, ky terms of u_in) / diag; the error: the sum of |u_out - u_in|
/// (max with Max). Residual: every 50th iteration under l2, whose test waits for r.r (jacobi_residual).
template <bool Exact, bool Max, bool Residual>
__global__ void __launch_bounds__(kTileX* kWarps)
    jacobi(Layout g, Coeffs k, const double* u_in, double* __restrict__ u_out, const double* __restrict__ u0,
           Scratch sc, DeviceState* st, TestParams tp, double* hist, long long it) {
  if (st->halt) return;
  __shared__ dev::ExactStorage<double> es;
  __shared__ ReduceStorage s;
  SumShare<Exact> sum(es);
  unsigned long long mb = 0;
  const long long S = g.stride;
  for_strips(g, [&](long long c0, int n) {
    strip_cells(c0, S, n, [&](int, long long c) {
      const double un = ops::jacobi(ld(u0, c), ld(k.kx, c), ld(k.kx, c + 1), ld(k.ky, c), ld(k.ky, c + S), u_in[c - 1],
                                    u_in[c + 1], u_in[c - S], u_in[c + S]);
      u_out[c] = un;
      const double diff = fabs(ops::sub(un, u_in[c]));
      if constexpr (Max) mb = max(mb, abs_bits(diff));
      else sum.add(diff);
    });
  });
  double err = 0.0;
  bool last;
  if constexpr (Max) last = finish_max(mb, sc, s, err);
  else last = sum.finish(sc, err, es, s.plain);
  if (last && thread0()) {
    if constexpr (Residual) st->err = err;
    else test(st, tp, hist, it, err);
  }
}

/// Jacobi's every 50th iteration: error = (sum of |updates|) + r.r of r = u0 - A u, then the test.
template <bool Exact>
__global__ void __launch_bounds__(kTileX* kWarps)
    jacobi_residual(Layout g, Coeffs k, const double* __restrict__ u, const double* __restrict__ u0, Scratch sc,
                    DeviceState* st, TestParams tp, double* hist, long long it) {
  if (st->halt) return;
  __shared__ ReduceStorage s;
  DotShare<Exact> d(s.exact);
  const long long S = g.stride;
  for_strips(g, [&](long long c0, int n) {
    strip_cells(c0, S, n, [&](int, long long c) {
      const double rc = ops::sub(ld(u0, c), smvp(k.kx, k.ky, u, c, S));
      d.add(rc, rc);
    });
  });
  double dot = 0.0, mx = 0.0;
  if (finish<Exact, false>(d, 0, sc, s, dot, mx) && thread0()) test(st, tp, hist, it, ops::add(st->err, dot));
}

/// The summary's sums over cells of mass m = vol density: m itself (x null), or m x.
template <bool Exact>
__global__ void __launch_bounds__(kTileX* kWarps) mass_sum(Layout g, const double* __restrict__ density, double vol,
                                                           const double* __restrict__ x, Scratch sc, double* out) {
  __shared__ dev::ExactStorage<double> es;
  __shared__ ReduceStorage s;
  SumShare<Exact> sum(es);
  DotShare<Exact> d(s.exact);
  for_strips(g, [&](long long c0, int n) {
    strip_cells(c0, g.stride, n, [&](int, long long c) {
      const double m = ops::mul(vol, ld(density, c));
      if (x) d.add(m, ld(x, c));
      else sum.add(m);
    });
  });
  double v = 0.0, mx = 0.0;
  bool last;
  if (x) last = finish<Exact, false>(d, 0, sc, s, v, mx);
  else last = sum.finish(sc, v, es, s.plain);
  if (last && thread0()) *out = v;
}

}  // namespace tally::heat2d::implicit::gpu
