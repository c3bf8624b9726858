#pragma once
// The bytes a cell that the CUDA engine's kernels (kernels.cuh) move: each field a kernel streams
// counts 8 bytes a cell once (the neighbours' loads hit the caches), and a field read in part of a
// jac_block strip's rows counts for that part (kx in its first row, cp and bfp in three of four).
// heat2d --bench divides them by the measured time per iteration and sets them against the copy
// bandwidth of the same run.
//
//   cg_w       CG: p, z (r without a preconditioner), kx, ky, u in; p, w, u out    64  (u: the step before's)
//              PPCG's outer step: the same without u                              48
//   cg_ur      r, w in; r out                                                      24  -> a CG step: 88
//   cheby      u, u0, p, kx, ky in; u, p out                                       56  (r, z in registers)
//   ppcg_ur    u, p, r, w in; u, r, sd out                                         56
//   ppcg_inner sd, r, u, kx, ky in; r, u out                                       56
//   ppcg_sd    r, sd in; sd out                                                    24
//   ppcg_end   r in                                                                 8
//   jacobi     u, u0, kx, ky in; u out                                             40  (+ 32 every 50th: r.r)
//   pipecg     (the CPU engine's passes: r.z and w.z; n = A w; t, s, p, u, r, w)  152  (M: z, m, q too: 216)
// A preconditioner adds its coefficients where M^-1 r is formed (jac_diag: mi, 8; jac_block: kx a
// quarter, ky, cp and bfp three quarters, 22) and z out (8) where z is stored (cg_ur, ppcg_end).

#include <cstdint>

#include "deck.hpp"

namespace tally::heat2d::implicit {

/// Bytes a cell of M^-1 r's coefficients (`stencil`: the kernel streams kx and ky already).
constexpr double precondition_bytes(Preconditioner p, bool stencil) {
  switch (p) {
    case Preconditioner::none: return 0.0;
    case Preconditioner::jac_diag: return 8.0;
    case Preconditioner::jac_block: return stencil ? 12.0 : 22.0;
  }
  return 0.0;
}

/// Bytes a cell of one steady iteration of `solver` (PPCG: an outer step with its `inner` steps;
/// Jacobi: its residual every 50th iteration spread over the 50).
constexpr double bytes_per_cell(SolverKind solver, Preconditioner p, std::int64_t inner = 10) {
  const double m = precondition_bytes(p, false), z = p == Preconditioner::none ? 0.0 : 8.0;
  switch (solver) {
    case SolverKind::cg: return 64.0 + 24.0 + m + z;
    case SolverKind::chebyshev: return 56.0 + precondition_bytes(p, true);
    case SolverKind::ppcg: return 48.0 + (56.0 + m) + static_cast<double>(inner) * (56.0 + 24.0 + m) + (8.0 + m + z);
    case SolverKind::jacobi: return 40.0 + 32.0 / 50.0;
    case SolverKind::pipecg: return p == Preconditioner::none ? 152.0 : 216.0 + m;  // the CPU engine's passes
  }
  return 0.0;
}

/// Bytes a cell of a solve of `cg_steps` CG steps and `steps` iterations in all (Chebyshev and PPCG
/// take over after the CG steps), its start and end left out.
constexpr double solve_bytes_per_cell(SolverKind solver, Preconditioner p, std::int64_t inner, std::int64_t cg_steps,
                                      std::int64_t steps) {
  if (solver == SolverKind::jacobi) return static_cast<double>(steps) * bytes_per_cell(solver, p, inner);
  return static_cast<double>(cg_steps) * bytes_per_cell(SolverKind::cg, p, inner) +
         static_cast<double>(steps - cg_steps) * bytes_per_cell(solver, p, inner);
}

}  // namespace tally::heat2d::implicit
