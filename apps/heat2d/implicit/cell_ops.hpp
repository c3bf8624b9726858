#pragma once
// The per-cell arithmetic of the implicit mode, shared by the CPU engine and the CUDA kernels so that
// both evaluate the same operations in the same order, each rounded once: on the device through the
// _rn intrinsics (which nvcc never contracts into a fused multiply-add), on the host as plain
// operators in files compiled with -ffp-contract=off (implicit/CMakeLists.txt). Together with exact
// dot products this makes the CPU and GPU fields the same bits.
//
// The grid: every field is (rows + 2) x (nx + 2) doubles, row-major, a halo of one cell around this
// rank's rows of the nx x ny interior. kx at cell c is the coefficient of the face between c - 1
// and c (x), ky the face between c - stride and c (y). The faces on the domain's boundary have zero
// coefficients: no flux leaves the domain, which is the reflective boundary TeaLeaf's mirrored halo
// gives (its boundary terms kx (u_c - u_halo) vanish with u_halo = u_c), so the domain's halo cells
// stay zero and never enter a result.

#include "tally/reduce/config.hpp"

namespace tally::heat2d::implicit::ops {

#if defined(__CUDA_ARCH__)
TALLY_HD double add(double a, double b) { return __dadd_rn(a, b); }
TALLY_HD double sub(double a, double b) { return __dsub_rn(a, b); }
TALLY_HD double mul(double a, double b) { return __dmul_rn(a, b); }
TALLY_HD double div(double a, double b) { return __ddiv_rn(a, b); }
#else
TALLY_HD double add(double a, double b) { return a + b; }
TALLY_HD double sub(double a, double b) { return a - b; }
TALLY_HD double mul(double a, double b) { return a * b; }
TALLY_HD double div(double a, double b) { return a / b; }
#endif

/// A face's coefficient between cells of conductivity wl and wc, scaled by r = dt / h^2 (TeaLeaf's
/// cg_init): r (wl + wc) / (2 wl wc).
TALLY_HD double face(double r, double wl, double wc) { return div(mul(r, add(wl, wc)), mul(mul(2.0, wl), wc)); }

/// The diagonal of (I + K) at a cell from its four faces (left, right, bottom, top).
TALLY_HD double diagonal(double kxl, double kxr, double kyb, double kyt) {
  return add(add(1.0, add(kxr, kxl)), add(kyt, kyb));
}

/// (I + K) a at a cell (TeaLeaf's SMVP): diag a_c - (kxr a_r + kxl a_l) - (kyt a_t + kyb a_b).
TALLY_HD double smvp(double kxl, double kxr, double kyb, double kyt, double ac, double al, double ar, double ab,
                     double at) {
  const double d = mul(diagonal(kxl, kxr, kyb, kyt), ac);
  return sub(sub(d, add(mul(kxr, ar), mul(kxl, al))), add(mul(kyt, at), mul(kyb, ab)));
}

/// One Jacobi update of a cell (TeaLeaf's jacobi_iterate) from the old values around it:
/// (u0 + (kxr ur + kxl ul) + (kyt ut + kyb ub)) / diag.
TALLY_HD double jacobi(double u0, double kxl, double kxr, double kyb, double kyt, double ul, double ur, double ub,
                       double ut) {
  const double num = add(add(u0, add(mul(kxr, ur), mul(kxl, ul))), add(mul(kyt, ut), mul(kyb, ub)));
  return div(num, diagonal(kxl, kxr, kyb, kyt));
}

/// a + s b and a - s b (the vector updates: u += alpha p, r -= alpha w), s b + a (p = beta p + r).
TALLY_HD double axpy(double a, double s, double b) { return add(a, mul(s, b)); }
TALLY_HD double axmy(double a, double s, double b) { return sub(a, mul(s, b)); }
/// s a + t b (Chebyshev's p = alpha p + beta r).
TALLY_HD double lin2(double s, double a, double t, double b) { return add(mul(s, a), mul(t, b)); }

}  // namespace tally::heat2d::implicit::ops
