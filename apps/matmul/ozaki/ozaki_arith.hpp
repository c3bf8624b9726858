#pragma once
// The Ozaki scheme's arithmetic, shared by the CPU engine (ozaki_cpu.cpp) and the CUDA kernels
// (ozaki_cuda.cu): the same integer and IEEE operations in the same order on both, so that the
// CPU's C is the GPU's bit for bit. Floating-point operations go through mul_rn/add_rn/fma_rn
// (__dmul_rn & co. on the device, which nvcc never contracts; the CPU sources build with
// -ffp-contract=off), so no FMA appears where the other side has none.
//
// The scheme (ozaki.hpp has the whole story): row i of A is scaled by 2^e_i and truncated to
// integers a'_ik = trunc(A_ik 2^e_i), |a'| <= Q; column j of B likewise (2^f_j); C' = A' B' is an
// exact integer product, |C'_ij| <= K Q^2 < P / 2 with P the product of the moduli, recovered from
// its residues by the Chinese remainder theorem and scaled back: C_ij = C'_ij 2^-(e_i + f_j).
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "tally/reduce/config.hpp"

namespace tally::matmul::ozaki {

inline constexpr int kMaxModuli = 20;  ///< moduli in the table (ozaki_plan.cpp)
inline constexpr int kMaxLimbs = 4;    ///< 40-bit limbs: P < 2^160
inline constexpr int kLimbBits = 40;
/// Largest Q (the integers' bound): the GPU's residues by one FP64 FMA stay within one step of
/// the symmetric range up to |v| = 2^52 (ozaki_cuda.cu, residue8).
inline constexpr std::uint64_t kMaxQ = std::uint64_t{1} << 52;
/// Elements of K per INT8 GEMM: |r_a r_b| <= 2^14 for residues in [-128, 127], so K 2^14 < 2^31 keeps
/// the INT32 sums exact; a multiple of 16 so that every chunk starts 16-byte aligned.
inline constexpr std::int64_t kChunkK = ((std::int64_t{1} << 31) - 1) / (std::int64_t{1} << 14) / 16 * 16;
static_assert(kChunkK * (std::int64_t{1} << 14) <= (std::int64_t{1} << 31) - 1 && kChunkK % 16 == 0);
/// The certificate's histograms: quarter-octave bins over 16 octaves (below).
inline constexpr int kOctaves = 16, kSub = 4, kBins = kOctaves * kSub;
/// C's tiles (rows and columns) over which the certificate is taken and the fallback runs.
inline constexpr int kTile = 32;

/// The plan's constants as the kernels take them (one parameter struct; ozaki_plan.cpp fills it).
struct Tables {
  int moduli = 0, limbs = 0;
  int bits = 0;         ///< bit length of P
  std::uint64_t q = 0;  ///< Q
  int m_int[kMaxModuli] = {};
  double m[kMaxModuli] = {}, rm[kMaxModuli] = {}, inv[kMaxModuli] = {};  ///< m_l, fl(1/m_l), (P/m_l)^-1 mod m_l
  double ml[kMaxModuli][kMaxLimbs] = {};  ///< P/m_l in 40-bit limbs (limb k: bits [B-40(k+1), B-40k))
  double p[kMaxLimbs] = {};               ///< P in the same limbs
  double inv_p = 0;                       ///< about 1/P (to 2^-50)
  double theta = 0;                       ///< the certificate's threshold (ozaki_plan.cpp)
};

// ---- IEEE operations, the same on both sides ------------------------------------------------
TALLY_HD double mul_rn(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}
TALLY_HD double add_rn(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}
TALLY_HD double div_rn(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __ddiv_rn(a, b);
#else
  return a / b;
#endif
}
TALLY_HD double fma_rn(double a, double b, double c) {
#if defined(__CUDA_ARCH__)
  return __fma_rn(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}
TALLY_HD double floor_rn(double x) {
#if defined(__CUDA_ARCH__)
  return floor(x);
#else
  return std::floor(x);
#endif
}
TALLY_HD double rint_rn(double x) {  // to nearest, ties to even (the default rounding mode on the host)
#if defined(__CUDA_ARCH__)
  return rint(x);
#else
  return std::nearbyint(x);
#endif
}
TALLY_HD int clz64(std::uint64_t x) {
#if defined(__CUDA_ARCH__)
  return __clzll(static_cast<long long>(x));
#else
  return __builtin_clzll(x);
#endif
}
/// 2^s for s in [-1022, 1023], exactly.
TALLY_HD double pow2(int s) {
  const std::uint64_t bits = static_cast<std::uint64_t>(s + 1023) << 52;
  double r;
  std::memcpy(&r, &bits, sizeof r);
  return r;
}

// ---- inputs as integers --------------------------------------------------------------------
/// x = (neg ? -1 : 1) mant 2^exp with mant an integer below 2^(p) (p = 53 or 24); special: Inf/NaN.
struct Decomposed {
  std::uint64_t mant = 0;
  int exp = 0;
  bool neg = false, special = false;
};
/// The fields of a double or a float: sign, exponent field, fraction (as IEEE 754 lays them out).
template <class T>
TALLY_HD Decomposed decompose(T x) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "decompose: float or double");
  using U = std::conditional_t<sizeof(T) == 8, std::uint64_t, std::uint32_t>;
  constexpr int frac_bits = sizeof(T) == 8 ? 52 : 23, exp_mask = sizeof(T) == 8 ? 0x7FF : 0xFF, bias = exp_mask / 2;
  U b;
  std::memcpy(&b, &x, sizeof b);
  Decomposed d;
  d.neg = (b >> (8 * sizeof(T) - 1)) != 0;
  const int field = static_cast<int>((b >> frac_bits) & static_cast<U>(exp_mask));
  const std::uint64_t frac = b & ((U{1} << frac_bits) - 1);
  d.special = field == exp_mask;
  d.mant = field == 0 ? frac : frac | (std::uint64_t{1} << frac_bits);
  d.exp = (field == 0 ? 1 : field) - bias - frac_bits;
  return d;
}
/// floor(log2 |x|) of a nonzero finite x.
TALLY_HD int ilog2(const Decomposed& d) { return d.exp + 63 - clz64(d.mant); }

/// The scale exponent of a row (column) whose largest magnitude is `amax` (nonzero, finite): the
/// largest e with amax 2^e <= Q. Integer arithmetic: the mantissas aligned at bit 52 and compared.
TALLY_HD int scale_exponent(const Decomposed& amax, std::uint64_t q) {
  const int la = 63 - clz64(amax.mant), lq = 63 - clz64(q);  // both <= 52
  const int e0 = lq - (amax.exp + la);                       // amax 2^e0 in [2^lq, 2^(lq+1))
  return (amax.mant << (52 - la)) <= (q << (52 - lq)) ? e0 : e0 - 1;
}

/// trunc(x 2^e) as a signed integer (|x| <= amax, so |result| <= Q < 2^53: the shifts never overflow).
TALLY_HD std::int64_t scaled_integer(const Decomposed& d, int e) {
  const int s = d.exp + e;
  std::uint64_t v;
  if (s >= 0) v = d.mant << s;
  else if (s > -64) v = d.mant >> -s;
  else v = 0;
  const auto sv = static_cast<std::int64_t>(v);
  return d.neg ? -sv : sv;
}

/// The symmetric residue of v modulo m: in [-128, 127] for m = 256, [-(m-1)/2, (m-1)/2] for odd m
/// (the CPU's; the GPU may take any other representative in [-128, 127], as C' depends only on the
/// residues modulo m).
TALLY_HD int residue(std::int64_t v, int m) {
  int r = static_cast<int>(v % m);  // in (-m, m), the sign of v
  const int hi = (m - 1) / 2, lo = hi - m + 1;
  if (r > hi) r -= m;
  else if (r < lo) r += m;
  return r;
}

/// Any representative of v modulo m_l in [-128, 127], as the GPU writes its residues (C' depends
/// only on the residues modulo m_l): the low byte for 256; otherwise v - m rint(v fl(1/m)), within
/// one m of the symmetric range for |v| <= 2^52 (|v fl(1/m) - v/m| <= |v| 2^-52 / m), brought into
/// [-128, 127]. dv = v as a double (exact).
TALLY_HD int residue_fast(std::int64_t v, double dv, const Tables& t, int l) {
  if (t.m_int[l] == 256) return static_cast<int>(static_cast<std::int8_t>(static_cast<std::uint8_t>(v & 0xFF)));
  const double q = rint_rn(mul_rn(dv, t.rm[l]));
  int r = static_cast<int>(fma_rn(-q, t.m[l], dv));  // exact: an integer of at most m / 2 + 1
  if (r > 127) r -= t.m_int[l];
  else if (r < -128) r += t.m_int[l];
  return r;
}

// ---- the CRT reconstruction ---------------------------------------------------------------------
/// u = (x inv_l) mod m_l in [0, m_l): the CRT digit of modulus l, x the exact sum of its INT32
/// products over K (an integer, |x| < 2^42, so x inv_l < 2^50 is exact). The quotient w / m_l is
/// estimated within one (|w fl(1/m) - w/m| < 2^-8) and u corrected into range: u is exact.
TALLY_HD double crt_digit(double x, const Tables& t, int l) {
  const double w = mul_rn(x, t.inv[l]);
  const double q = floor_rn(mul_rn(w, t.rm[l]));
  double u = fma_rn(-q, t.m[l], w);  // exact: an integer in (-m, 2m)
  if (u < 0) u = add_rn(u, t.m[l]);
  else if (u >= t.m[l]) u = add_rn(u, -t.m[l]);
  return u;
}

/// Adds u M_l into the limb sums S (exact: u < 2^8 times a 40-bit limb, at most 20 terms < 2^53 on
/// each limb's grid). Limbs = t.limbs (the callers dispatch on it: with_limbs).
template <int Limbs>
TALLY_HD void crt_accumulate(double (&s)[Limbs], double u, const Tables& t, int l) {
  for (int k = 0; k < Limbs; ++k) s[k] = fma_rn(u, t.ml[l][k], s[k]);
}

/// Y = sum_l u_l M_l - n P, the integer C' in (-P/2, P/2), rounded to double: n from the top limb
/// (the rest shifts sum/P by < 2^-26, and |Y| <= P (1/2 - 2^-20) by the choice of Q), each limb's
/// difference exact (fma), the limbs summed by TwoSum with their errors added last:
/// |result - Y| <= u |Y| (1 + 2^-50) + 2^(B-130) (ozaki.hpp: the error bound).
template <int Limbs>
TALLY_HD double crt_finish(const double (&s)[Limbs], const Tables& t) {
  const double n = rint_rn(mul_rn(s[0], t.inv_p));
  double sum = fma_rn(-n, t.p[0], s[0]), err = 0;
  for (int k = 1; k < Limbs; ++k) {
    const double d = fma_rn(-n, t.p[k], s[k]);  // exact: |d| < 2^53 on limb k's grid
    const double x = add_rn(sum, d), z = add_rn(x, -sum);
    const double e = add_rn(add_rn(sum, -add_rn(x, -z)), add_rn(d, -z));  // TwoSum: x + e = sum + d exactly
    sum = x;
    err = add_rn(err, e);
  }
  return add_rn(sum, err);
}

/// f(std::integral_constant<int, t.limbs>{}) on the host: the reconstruction for the plan's limb count.
template <class F>
decltype(auto) with_limbs(const Tables& t, F&& f) {
  switch (t.limbs) {
    case 1: return f(std::integral_constant<int, 1>{});
    case 2: return f(std::integral_constant<int, 2>{});
    case 3: return f(std::integral_constant<int, 3>{});
    default: return f(std::integral_constant<int, 4>{});
  }
}

/// y 2^s with at most one rounding (when the result is subnormal or overflows), for y = 0 or
/// 1 <= |y| < 2^160: a first step by 2^-+1000 keeps |y| normal; two steps down leave a result
/// below 2^-1800 that rounds to zero either way.
TALLY_HD double scale_pow2(double y, int s) {
  while (s > 1000) y = mul_rn(y, pow2(1000)), s -= 1000;
  while (s < -1000) y = mul_rn(y, pow2(-1000)), s += 1000;
  return mul_rn(y, pow2(s));
}

// ---- the certificate ----------------------------------------------------------------------------
// Each line (row of A, column of B) is summarised by its elements' ratios r = |x| / max|x| in
// quarter-octave bins below 1 (bin 4 q + 3 - j holds r in [1 + j/4, 1 + (j+1)/4) 2^-(q+1), over 16
// octaves; one more bin holds the rest), so that lines of any magnitude compare alike.

/// Bin of x in a line whose largest element is `top`, with inv = fl(1 / top.mant): the ratio
/// r = |x| / |top| as (x.mant inv) 2^(x.exp - top.exp), two roundings (r in (0, 1 + 2^-51]); r
/// below 2^-16 (or exponents 80 apart): the rest. A ratio rounded across a bin edge moves a bound by
/// 2^-51 of itself, inside the threshold's margin.
TALLY_HD int bin_of(const Decomposed& x, const Decomposed& top, double inv) {
  const int de = x.exp - top.exp;
  if (de < -80) return kBins;
  const double r = mul_rn(mul_rn(static_cast<double>(x.mant), inv), pow2(de));
  if (!(r >= pow2(-kOctaves))) return kBins;
  const Decomposed d = decompose(r);
  const int q = -ilog2(d) - 1;  // r in [2^-(q+1), 2^-q), normal
  if (q < 0) return 0;          // r = 1 (or just above)
  const int j = static_cast<int>((d.mant >> 50) & 3);
  return kSub * q + 3 - j;
}
/// Lower edge of bin b (units of the line's max).
TALLY_HD double bin_low(int b) {
  if (b >= kBins) return 0;
  const int q = b / kSub, j = 3 - b % kSub;
  return mul_rn(pow2(-(q + 1)), 1 + 0.25 * j);
}
/// Upper edge of bin b, kBins for the rest.
TALLY_HD double bin_high(int b) {
  if (b >= kBins) return pow2(-kOctaves);
  const int q = b / kSub, j = 3 - b % kSub;
  return mul_rn(pow2(-(q + 1)), 1.25 + 0.25 * j);
}

/// A line's certificate data (the CPU's line_stats, the GPU's line kernels: the same integers).
struct LineStats {
  int kind = 0;   ///< kLineOk, kLineZero (all zero: its products are exact zeros), kLineSpecial (Inf or NaN)
  int scale = 0;  ///< e: 2^e scales the line to integers <= Q
  double s = 0;   ///< sigma / max = 1 / (max 2^e), rounded: in [1/Q, 2/Q)
  std::uint32_t count[kBins + 1] = {};  ///< elements per bin (zeros in none)
};
inline constexpr int kLineOk = 0, kLineZero = 1, kLineSpecial = 2;

/// s of a line whose largest element is `top` (nonzero, finite) and scale exponent e: max 2^e is
/// exact (top's mantissa times a power of two in [2^-52, 1]).
TALLY_HD double line_s(const Decomposed& top, int e) {
  return div_rn(1.0, mul_rn(static_cast<double>(top.mant), pow2(top.exp + e)));
}

/// rho = sum over the line of |x| / max, bounded above by the bins' upper edges (a fixed order).
TALLY_HD double line_rho(const LineStats& l) {
  double r = 0;
  for (int b = 0; b <= kBins; ++b) r = add_rn(r, mul_rn(static_cast<double>(l.count[b]), bin_high(b)));
  return r;
}

/// A tile's lines merged: cumulative counts n_b = #{r >= lower edge of bin b} (the least over the
/// lines), the largest rho and s, whether any line is ordinary and whether any holds Inf/NaN.
struct TileSide {
  std::uint32_t n[kBins] = {};
  double rho = 0, s = 0;
  bool any = false, special = false;
};
TALLY_HD void tile_add(TileSide& t, const LineStats& l) {
  if (l.kind == kLineSpecial) t.special = true;
  if (l.kind != kLineOk) return;
  std::uint32_t run = 0;
  for (int b = 0; b < kBins; ++b) {
    run += l.count[b];
    t.n[b] = t.any && t.n[b] < run ? t.n[b] : run;
  }
  const double rho = line_rho(l);
  t.rho = t.any && t.rho > rho ? t.rho : rho;
  t.s = t.any && t.s > l.s ? t.s : l.s;
  t.any = true;
}

/// Whether every element of the tile (rows I of A, columns J of B) is certified within the
/// promise (ozaki.hpp). In units of max_i max_j (the row's and the column's largest): the truncation and
/// reconstruction error of C_ij is at most s_i rho_j + s_j rho_i + 2^(B-130) s_i s_j (ozaki.hpp), and
/// |A||B|_ij is at least lambda = sum_{x,y} step_x step_y max(0, nA_x + nB_y - K), step_x = low_x -
/// low_(x+1) (|x| >= max sum_x step_x [r >= low_x], and at least nA_x + nB_y - K indices k have both
/// ratios above their edges). The tile passes when the first is at most theta times the second
/// (ozaki_plan.cpp: theta). Every term of lambda is positive: its rounding is 2^-40 of it at most.
TALLY_HD bool certified(const TileSide& a, const TileSide& b, std::int64_t k, const Tables& t) {
  if (!a.any || !b.any) return true;  // no ordinary line on one side: exact zeros or specials
  double lambda = 0;
  for (int x = 0; x < kBins; ++x) {
    double row = 0;
    for (int y = kBins - 1; y >= 0; --y) {  // nB grows with y: the positive terms are a suffix
      const std::int64_t both = static_cast<std::int64_t>(a.n[x]) + static_cast<std::int64_t>(b.n[y]) - k;
      if (both <= 0) break;
      row = add_rn(row, mul_rn(static_cast<double>(both), add_rn(bin_low(y), -bin_low(y + 1))));
    }
    lambda = add_rn(lambda, mul_rn(row, add_rn(bin_low(x), -bin_low(x + 1))));
  }
  const double err =
      add_rn(add_rn(mul_rn(a.s, b.rho), mul_rn(b.s, a.rho)), mul_rn(mul_rn(a.s, b.s), pow2(t.bits - 130)));
  return err <= mul_rn(t.theta, lambda);
}

/// Tile flags: kTileInt8 (every element from the INT8 products), kTileExact (the certificate
/// fails: every element by an exact dot product), kTileSpecial (certified, but some rows or columns
/// hold Inf/NaN: their elements by exact dot products).
inline constexpr std::uint8_t kTileInt8 = 0, kTileExact = 1, kTileSpecial = 2;
TALLY_HD std::uint8_t tile_flag(const TileSide& a, const TileSide& b, std::int64_t k, const Tables& t) {
  if (!certified(a, b, k, t)) return kTileExact;
  return a.special || b.special ? kTileSpecial : kTileInt8;
}

}  // namespace tally::matmul::ozaki
