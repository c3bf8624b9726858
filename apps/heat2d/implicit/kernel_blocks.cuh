#pragma once
// The CUDA engine's building blocks, shared by kernels.cuh's kernels: the work's layout over
// threads, the stencil and the preconditioners on a strip of rows, the reductions' thread shares
// and their finish in the last block, and the convergence test.

#include <cmath>
#include <cstdint>

#include "cell_ops.hpp"
#include "tally/reduce/device/exact.cuh"
#include "tally/reduce/device/gang.cuh"
#include "tally/reduce/exact.hpp"
#include "tea_problem.hpp"
#include "tuning.hpp"

namespace tally::heat2d::implicit::gpu {

namespace dev = tally::reduce::device;
using Products = reduce::exact::DoubleProducts;

// A block: kTileX x kWarps threads, each a column of a strip of kStrip rows (tuning.hpp).
inline constexpr int kTileX = tuning::implicit_tile_x, kWarps = tuning::implicit_warps, kStrip = tuning::implicit_strip;
inline constexpr int kTileY = kWarps * kStrip;
static_assert(kStrip == kJacBlock, "a strip is one jac_block block (kJacBlock rows)");

enum Prec : int { kNone = 0, kDiag = 1, kBlock = 2 };

/// The solve's scalars on the device.
struct DeviceState {
  double rro, alpha, beta;
  double err;          ///< Jacobi's sum of updates, waiting for its residual's r.r (every 50th iteration)
  double rr;           ///< the last r.r a Chebyshev step measured (TeaLeaf's estimate needs the first)
  double scalar;       ///< a plain dot's result (bb, the residual check, the summary's sums)
  long long k_halt;    ///< the iteration whose test stopped the solve
  long long k_switch;  ///< CG steps done when the switch to Chebyshev / PPCG became due
  int halt;            ///< 0 running, 1 converged, 2 diverged
  int cg_over;         ///< the CG phase is over (Chebyshev, PPCG)
};

/// What the tests need (by value): SolverKind, EpsNorm as ints, eps, the switch's rule.
struct TestParams {
  int cg_solver;  ///< the solver is CG (its l2 test takes sqrt|error|)
  int max_norm;   ///< eps_norm max
  int switching;  ///< Chebyshev or PPCG: test the switch after each CG step
  int error_switch;
  double eps, eps_lim;
  long long presteps;
};

/// The reductions' scratch: per-block partials and tickets (zero at rest: the last block re-arms).
struct Scratch {
  reduce::exact::Accumulator<Products>* dot_partials;
  unsigned* dot_ticket;
  reduce::exact::Accumulator<double>* sum_partials;
  unsigned* sum_ticket;
  double* plain_partials;
  unsigned* plain_ticket;
  unsigned long long* max_cell;  ///< the bits of the largest |x| so far (0 at rest)
  unsigned* max_ticket;
};

struct Layout {
  long long nx, rows, stride;
};

/// f(c0, n) for this thread's strips: c0 the strip's first cell, n in 1..4 its rows.
template <class F>
__device__ __forceinline__ void for_strips(const Layout& g, F&& f) {
  const long long tiles_x = (g.nx + kTileX - 1) / kTileX, tiles = tiles_x * ((g.rows + kTileY - 1) / kTileY);
  for (long long t = blockIdx.x; t < tiles; t += gridDim.x) {
    const long long i = (t % tiles_x) * kTileX + threadIdx.x;
    const long long j0 = (t / tiles_x) * kTileY + threadIdx.y * kStrip;  // 0-based local interior row
    if (i >= g.nx || j0 >= g.rows) continue;
    const long long n = g.rows - j0 < kStrip ? g.rows - j0 : kStrip;
    f((j0 + 1) * g.stride + i + 1, static_cast<int>(n));
  }
}

/// f(j, c) for the cells of a strip of n rows from c0: row j, cell c = c0 + j s (unrolled).
template <class F>
__device__ __forceinline__ void strip_cells(long long c0, long long s, int n, F&& f) {
#pragma unroll
  for (int j = 0; j < kStrip; ++j)
    if (j < n) f(j, c0 + j * s);
}

__device__ __forceinline__ double ld(const double* p, long long c) { return __ldg(p + c); }

/// (I + K) a at cell c (a read through the caches).
__device__ __forceinline__ double smvp(const double* __restrict__ kx, const double* __restrict__ ky, const double* a,
                                       long long c, long long s) {
  return ops::smvp(ld(kx, c), ld(kx, c + 1), ld(ky, c), ld(ky, c + s), a[c], a[c - 1], a[c + 1], a[c - s], a[c + s]);
}
__device__ __forceinline__ double diag_at(const double* __restrict__ kx, const double* __restrict__ ky, long long c,
                                          long long s) {
  return ops::diagonal(ld(kx, c), ld(kx, c + 1), ld(ky, c), ld(ky, c + s));
}

struct Coeffs {
  const double* kx;
  const double* ky;
};

/// A strip's residual r = u0 - A u (rv: its n values).
__device__ __forceinline__ void strip_residual(const Coeffs& k, const double* __restrict__ u0, const double* u,
                                               long long c0, long long s, int n, double (&rv)[kStrip]) {
  strip_cells(c0, s, n, [&](int j, long long c) { rv[j] = ops::sub(ld(u0, c), smvp(k.kx, k.ky, u, c, s)); });
}
/// A strip's r -= alpha w (rv: the new r) and, with U, u += alpha p (CG defers its u to cg_w).
template <bool U>
__device__ __forceinline__ void strip_update(double* __restrict__ u, const double* __restrict__ p,
                                             double* __restrict__ r, const double* __restrict__ w, double alpha,
                                             long long c0, long long s, int n, double (&rv)[kStrip]) {
  strip_cells(c0, s, n, [&](int j, long long c) {
    if constexpr (U) u[c] = ops::axpy(u[c], alpha, ld(p, c));
    rv[j] = ops::axmy(r[c], alpha, ld(w, c));
    r[c] = rv[j];
  });
}
/// A strip of a field into registers.
__device__ __forceinline__ void strip_load(const double* __restrict__ a, long long c0, long long s, int n,
                                           double (&v)[kStrip]) {
  strip_cells(c0, s, n, [&](int j, long long c) { v[j] = ld(a, c); });
}

/// The preconditioner's coefficients on the device.
struct PrecArrays {
  const double* mi;
  const double* cp;
  const double* bfp;
};

/// z = M^-1 r on a strip (r, z: its n values, top to bottom), the CPU engine's operations.
template <int P>
__device__ __forceinline__ void precondition(const PrecArrays& pa, const double* __restrict__ kx,
                                             const double* __restrict__ ky, long long c0, long long s, int n,
                                             const double (&r)[kStrip], double (&z)[kStrip]) {
  if constexpr (P == kNone) {
#pragma unroll
    for (int k = 0; k < kStrip; ++k) z[k] = r[k];
  } else if constexpr (P == kDiag) {
    strip_cells(c0, s, n, [&](int k, long long c) { z[k] = ops::mul(ld(pa.mi, c), r[k]); });
  } else {
    z[0] = ops::div(r[0], diag_at(kx, ky, c0, s));
#pragma unroll
    for (int k = 1; k < kStrip; ++k)
      if (k < n) z[k] = ops::mul(ops::add(r[k], ops::mul(ld(ky, c0 + k * s), z[k - 1])), ld(pa.bfp, c0 + k * s));
#pragma unroll
    for (int k = kStrip - 2; k >= 0; --k)
      if (k < n - 1) z[k] = ops::sub(z[k], ops::mul(ld(pa.cp, c0 + k * s), z[k + 1]));
  }
}

/// A strip's residual r = u0 - A u and z = M^-1 r.
template <int P>
__device__ __forceinline__ void strip_residual_z(const Coeffs& k, const PrecArrays& pa, const double* __restrict__ u0,
                                                 const double* u, long long c0, long long s, int n,
                                                 double (&rv)[kStrip], double (&zv)[kStrip]) {
  strip_residual(k, u0, u, c0, s, n, rv);
  precondition<P>(pa, k.kx, k.ky, c0, s, n, rv, zv);
}

// ---- reductions: a thread's share, then the grid's, in the last block ----------------------------

/// A dot product's thread share: exact (the library's filter, products exact) or an ordinary sum.
template <bool Exact>
struct DotShare;
template <>
struct DotShare<true> {
  dev::ExactThread<Products> t;
  __device__ explicit DotShare(dev::ExactStorage<Products>& s) : t(s) {}
  __device__ __forceinline__ void add(double a, double b) { t.add_product(a, b); }
};
template <>
struct DotShare<false> {
  double sum = 0.0;
  __device__ explicit DotShare(dev::ExactStorage<Products>&) {}
  __device__ __forceinline__ void add(double a, double b) { sum += a * b; }
};

struct ReduceStorage {
  dev::ExactStorage<Products> exact;
  dev::GangStorage<double> plain;
  unsigned long long max_bits;
  bool last;
};

/// The grid's dot (and, with Max, the largest |x| the threads saw: `max_bits` their bits, which
/// order non-negative doubles and NaN above them); true in every thread of the last block, whose
/// thread 0 holds the results. All threads call.
/// The block's largest max_bits into s.max_bits and, on a grid of several blocks, joined into the
/// scratch's cell (an atomic: the order of the blocks cannot matter). All threads call.
__device__ __forceinline__ void join_max(unsigned long long max_bits, const Scratch& sc, ReduceStorage& s) {
  if (dev::block_thread_rank() == 0) s.max_bits = 0;
  __syncthreads();
  for (int o = 16; o > 0; o /= 2) {
    const unsigned long long other = __shfl_xor_sync(0xffffffffu, max_bits, o);
    max_bits = other > max_bits ? other : max_bits;
  }
  if ((dev::block_thread_rank() & 31) == 0) atomicMax(&s.max_bits, max_bits);
  __syncthreads();
  if (dev::block_thread_rank() == 0 && gridDim.x > 1) atomicMax(sc.max_cell, s.max_bits);
}

template <bool Exact, bool Max>
__device__ __forceinline__ bool finish(DotShare<Exact>& d, unsigned long long max_bits, const Scratch& sc,
                                       ReduceStorage& s, double& dot, double& maxv) {
  if constexpr (Max) join_max(max_bits, sc, s);
  bool last;
  if constexpr (Exact) {
    last = dev::exact_gang_sum(d.t, sc.dot_partials, sc.dot_ticket, dot, s.exact);
  } else {
    last = dev::gang_reduce<reduce::Sum>(d.sum, sc.plain_partials, sc.plain_ticket, dot, s.plain);
  }
  if constexpr (Max) {
    if (last && dev::block_thread_rank() == 0) {
      const unsigned long long b = gridDim.x > 1 ? atomicExch(sc.max_cell, 0ull) : s.max_bits;
      maxv = __longlong_as_double(static_cast<long long>(b));
    }
  }
  return last;
}
__device__ __forceinline__ unsigned long long abs_bits(double x) {
  return static_cast<unsigned long long>(__double_as_longlong(fabs(x)));
}

/// A strip's z (stored when there is a preconditioner: without one, z is r), its r.z into the dot
/// and its max |r| into max_bits.
template <int P, bool Max, bool Exact>
__device__ __forceinline__ void strip_rz(double* __restrict__ z, long long c0, long long s, int n,
                                         const double (&rv)[kStrip], const double (&zv)[kStrip], DotShare<Exact>& d,
                                         unsigned long long& max_bits) {
  strip_cells(c0, s, n, [&](int j, long long c) {
    if constexpr (P != kNone) z[c] = zv[j];
    d.add(rv[j], zv[j]);
    if constexpr (Max) max_bits = max(max_bits, abs_bits(rv[j]));
  });
}

/// Records the tested value of iteration k and stops the solve on convergence or a non-finite error.
__device__ __forceinline__ void test(DeviceState* st, const TestParams& tp, double* hist, long long k, double error) {
  const double v = tp.cg_solver && !tp.max_norm ? __dsqrt_rn(fabs(error)) : fabs(error);
  hist[k] = v;
  if (!isfinite(v)) st->halt = 2, st->k_halt = k;
  else if (v < tp.eps) st->halt = 1, st->k_halt = k;
}

/// The grid's maximum of the threads' max_bits (every thread calls; the last block's thread 0 gets
/// it), for the reductions without a dot: block maxima joined by atomics, then a ticket.
__device__ __forceinline__ bool finish_max(unsigned long long max_bits, const Scratch& sc, ReduceStorage& s,
                                           double& maxv) {
  join_max(max_bits, sc, s);
  if (gridDim.x == 1) {
    if (dev::block_thread_rank() == 0) maxv = __longlong_as_double(static_cast<long long>(s.max_bits));
    return true;
  }
  if (!dev::gang_arrive(sc.max_ticket, gridDim.x, s.last)) return false;
  if (dev::block_thread_rank() == 0) maxv = __longlong_as_double(static_cast<long long>(atomicExch(sc.max_cell, 0ull)));
  return true;
}

__device__ __forceinline__ bool thread0() { return threadIdx.x == 0 && threadIdx.y == 0; }

}  // namespace tally::heat2d::implicit::gpu
