#pragma once
// Chebyshev's steps temporally blocked: one pass over memory advances up to T steps, bitwise the
// result of as many launches of kernels.cuh's `cheby` (and so of the CPU engine).
//
// A block takes regions of kCbX x kCbY cells (a halo of T cells around its output tile of
// (kCbX - 2T) x (kCbY - 2T) cells; grid-stride over the tiles). It loads u, kx into shared memory and
// each thread keeps its cells' p, u0, M^-1 (jac_diag) and ky in registers: thread (x, y) owns columns
// x and x + 32 of rows y R .. y R + R - 1 (R = kCbRows), so ky's upper face and u's vertical
// neighbours inside the strip are its own registers, and only u's horizontal neighbours, the strip's
// end rows and kx's right face come from shared memory. Step s (1..n) updates the region's interior
// cells at least s cells from its edge, from step s - 1's values (each step's new u staged in
// registers, then written to the one shared copy between two barriers); after step n <= T the output
// tile is exact. Cells outside the domain keep what the unblocked kernel reads there: the grid's halo
// (u, kx, ky zero: cell_ops.hpp) loaded as it is, and never updated. Each step's arithmetic is
// cheby_cell, `cheby`'s operations in its order. Shared memory rather than 2.5-D register streaming
// (sweep_blocked): a Chebyshev step carries two fields (u, p) and reads three more (u0, kx, ky), which
// a register ring of t levels cannot hold; a tile holds them once and keeps the kernel simple.
//
// p is read from p_in and written to p_out (another buffer): a block's halo reads its neighbours'
// output cells, which must still hold the pass's first values. Only the last step of a pass may be
// tested (its r.r or max |r| reduced as `cheby` does, over the output tiles, each interior cell once);
// the engine ends a pass at every tested step (engine_cuda.cu, cheby_phase).
//
// Bytes a cell a pass: u, p, u0, kx, ky (+ mi) in over the region, u, p out over the tile; a tile's
// share of the region is (64 - 2T)(32 - 2T) / 2048: 82 % for T = 2, 58 % for T = 5, so a step moves
// (40 / share + 16) / T bytes counting the halo's re-reads (which mostly hit L2) and (40 + 16) / T
// from memory: 32.4 / 28 for t = 2, 17.0 / 11.2 for t = 5, against `cheby`'s 56.

#include "kernel_blocks.cuh"

namespace tally::heat2d::implicit::gpu {

/// The deepest pass (--cheby-steps-per-pass at most this).
inline constexpr int kChebyDepthMax = 5;
/// A thread's cells: kCbCols columns (32 apart) of kCbRows rows; a region: kCbX x kCbY cells.
inline constexpr int kCbCols = 2, kCbRows = tuning::implicit_cheby_rows;
inline constexpr int kCbX = kTileX * kCbCols, kCbY = kWarps * kCbRows;
/// A pass of depth T writes output tiles of kCbOutX<T> x kCbOutY<T> cells (its region less a halo of T).
template <int T>
inline constexpr int kCbOutX = kCbX - 2 * T;
template <int T>
inline constexpr int kCbOutY = kCbY - 2 * T;

/// A pass's steps: step s (from 0) takes p = a[s] p + b[s] M^-1 r; n steps (1..T).
struct ChebySteps {
  double a[kChebyDepthMax], b[kChebyDepthMax];
  int n;
};

/// One Chebyshev step at a cell, `cheby`'s operations in its order (strip_residual_z, lin2, add):
/// r = u0 - A u, z = M^-1 r (P none or jac_diag: mi z), p = a p + b z; returns u + p.
template <int P>
__device__ __forceinline__ double cheby_cell(double u0, double mi, double kxl, double kxr, double kyb, double kyt,
                                             double uc, double ul, double ur, double ub, double ut, double a, double b,
                                             double& p, double& r) {
  static_assert(P == kNone || P == kDiag, "a blocked step takes a pointwise preconditioner");
  r = ops::sub(u0, ops::smvp(kxl, kxr, kyb, kyt, uc, ul, ur, ub, ut));
  const double z = P == kDiag ? ops::mul(mi, r) : r;
  p = ops::lin2(a, p, b, z);
  return ops::add(uc, p);
}

/// f(h, j, lx, ly) for this thread's cells: its column h (0, 1) and row j of its strip, at (lx, ly) in
/// the region.
template <class F>
__device__ __forceinline__ void for_cells(F&& f) {
  const int tx = static_cast<int>(threadIdx.x), y0 = static_cast<int>(threadIdx.y) * kCbRows;
#pragma unroll
  for (int h = 0; h < kCbCols; ++h)
#pragma unroll
    for (int j = 0; j < kCbRows; ++j) f(h, j, tx + kTileX * h, y0 + j);
}

/// cs.n Chebyshev steps in one pass: u_out, p_out from u_in, p_in; Tested: the last step's r.r into
/// rr and the test of iteration `it` (r.r, or max |r| with Max), as `cheby` does.
template <bool Exact, int P, bool Tested, bool Max, int T>
__global__ void __launch_bounds__(kTileX* kWarps, tuning::implicit_cheby_blocks_sm)
    cheby_blocked(Layout g, Coeffs k, PrecArrays pa, const double* __restrict__ u_in, double* __restrict__ u_out,
                  const double* __restrict__ u0, const double* __restrict__ p_in, double* __restrict__ p_out,
                  ChebySteps cs, Scratch sc, DeviceState* st, TestParams tp, double* hist, long long it) {
  static_assert(T >= 1 && T <= kChebyDepthMax && 2 * T < kCbX && 2 * T < kCbY, "the halo leaves an output tile");
  static_assert(P == kNone || P == kDiag, "jac_block couples 4 rows: its steps are not blocked");
  if (st->halt) return;
  constexpr int OX = kCbOutX<T>, OY = kCbOutY<T>;  // a tile's output cells
  __shared__ double su[kCbY][kCbX], skx[kCbY][kCbX];
  __shared__ ReduceStorage s;
  DotShare<Exact> d(s.exact);
  unsigned long long mb = 0;
  const long long S = g.stride, rows_h = g.rows + 2, cols_h = g.nx + 2;  // the grid, halo included
  const long long tiles_x = (g.nx + OX - 1) / OX, tiles = tiles_x * ((g.rows + OY - 1) / OY);
  for (long long t = blockIdx.x; t < tiles; t += gridDim.x) {
    // The region's first grid column and row (the tile's first interior cell is T cells in).
    const long long gc0 = 1 + (t % tiles_x) * OX - T, gr0 = 1 + (t / tiles_x) * OY - T;
    const auto cell = [&](int lx, int ly) { return (gr0 + ly) * S + gc0 + lx; };
    const auto in_grid = [&](int lx, int ly) {
      const long long r = gr0 + ly, c = gc0 + lx;
      return r >= 0 && r < rows_h && c >= 0 && c < cols_h;
    };
    const auto interior = [&](int lx, int ly) {
      const long long r = gr0 + ly, c = gc0 + lx;
      return r >= 1 && r <= g.rows && c >= 1 && c <= g.nx;
    };
    double uv[kCbCols][kCbRows], pv[kCbCols][kCbRows], u0v[kCbCols][kCbRows], miv[kCbCols][kCbRows];
    double kyv[kCbCols][kCbRows + 1];  // ky of the strip's rows and of the row above it (its top face)
    __syncthreads();                   // the previous tile's reads of su, skx are done
    for_cells([&](int h, int j, int lx, int ly) {
      const bool ing = in_grid(lx, ly), inr = interior(lx, ly);
      const long long c = cell(lx, ly);
      uv[h][j] = ing ? ld(u_in, c) : 0.0;
      su[ly][lx] = uv[h][j];
      skx[ly][lx] = ing ? ld(k.kx, c) : 0.0;
      kyv[h][j] = ing ? ld(k.ky, c) : 0.0;
      pv[h][j] = inr ? ld(p_in, c) : 0.0;
      u0v[h][j] = inr ? ld(u0, c) : 0.0;
      miv[h][j] = P == kDiag && inr ? ld(pa.mi, c) : 0.0;
      if (j == kCbRows - 1) kyv[h][kCbRows] = in_grid(lx, ly + 1) ? ld(k.ky, cell(lx, ly + 1)) : 0.0;
    });
    __syncthreads();
#pragma unroll
    for (int lev = 1; lev <= T; ++lev) {  // unrolled: cs's coefficients and the cells' arrays in registers
      if (lev > cs.n) break;
      const double a = cs.a[lev - 1], b = cs.b[lev - 1];
      const bool last = lev == cs.n;
      double un[kCbCols][kCbRows];
      for_cells([&](int h, int j, int lx, int ly) {
        un[h][j] = uv[h][j];
        // Step lev is exact on the cells at least lev from the region's edge; the domain's halo stays.
        if (!interior(lx, ly) || lx < lev || lx >= kCbX - lev || ly < lev || ly >= kCbY - lev) return;
        const double ub = j > 0 ? uv[h][j - 1] : su[ly - 1][lx];
        const double ut = j < kCbRows - 1 ? uv[h][j + 1] : su[ly + 1][lx];
        double r;
        un[h][j] = cheby_cell<P>(u0v[h][j], miv[h][j], skx[ly][lx], skx[ly][lx + 1], kyv[h][j], kyv[h][j + 1], uv[h][j],
                                 su[ly][lx - 1], su[ly][lx + 1], ub, ut, a, b, pv[h][j], r);
        if (last && lx >= T && lx < kCbX - T && ly >= T && ly < kCbY - T) {  // the output tile
          const long long c = cell(lx, ly);
          u_out[c] = un[h][j];
          p_out[c] = pv[h][j];
          if constexpr (Tested) d.add(r, r);
          if constexpr (Max) mb = max(mb, abs_bits(r));
        }
      });
      if (last) break;
      __syncthreads();  // every thread has read step lev - 1's u
      for_cells([&](int h, int j, int lx, int ly) { uv[h][j] = su[ly][lx] = un[h][j]; });
      __syncthreads();
    }
  }
  if constexpr (Tested) {
    double dot = 0.0, mx = 0.0;
    if (finish<Exact, Max>(d, mb, sc, s, dot, mx) && thread0()) {
      st->rr = dot;
      test(st, tp, hist, it, Max ? mx : dot);
    }
  }
}

}  // namespace tally::heat2d::implicit::gpu
