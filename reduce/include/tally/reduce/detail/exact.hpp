#pragma once
// Exact summation, the machinery behind tally/reduce/exact.hpp: the sum of float or double inputs
// computed exactly and rounded once, to nearest even, to the output type. Host and device (no CUDA
// headers): the CPU backend, the CUDA kernels and the device building blocks (device/exact.cuh) share
// this code, so they agree bit for bit.
//
// Algorithm (Collange, Defour, Graillat, Iakymchuk, "Full-speed deterministic bit-accurate parallel
// floating-point summation", ExBLAS; Neal's xsum): every thread (CPU lane, GPU thread) runs a
// floating-point expansion filter of two doubles (hi, lo): x is added to hi and then the error to lo
// with TwoSum, both error-free, so hi + lo + (what was flushed) is always the exact sum. Only when
// lo cannot hold the second error either is that residual flushed into a superaccumulator: a
// fixed-point number of 32-bit chunks kept in 64-bit integer limbs (31 bits of carry headroom)
// covering the whole range of the input type (float: 2^-149 .. 2^235; double: 2^-1074 .. 2^1070).
// Adding and merging limbs are integer additions: exact, associative, commutative, so the result
// cannot depend on the order, the threads, the blocks or the ranks. At the end the limbs are
// normalised (carries propagated) and rounded once to nearest even (subnormal results and overflow
// to infinity as IEEE would round the exact value). Inf and NaN are counted aside: any NaN, or +Inf
// together with -Inf, gives NaN; otherwise an Inf wins. An exact zero is +0 unless every input was -0.
//
// Accumulator<T>'s layout and merging: tally/reduce/exact.hpp.
//
// Bounds: fewer than 2^31 flushes into one accumulator between normalize() calls (the backends
// normalise well before that), and fewer than 2^50 terms per output (lo must not overflow).

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "tally/reduce/ops.hpp"

#if !defined(__CUDACC__)
#include <cmath>
#endif

// The rounding runs once per output: out of line on the device, so that the kernels' hot loops do
// not share registers with its copy of the limbs.
#if defined(__CUDACC__)
#define TALLY_EXACT_COLD __host__ __device__ __noinline__
#else
#define TALLY_EXACT_COLD
#endif
// round_with(): the rounding inline, its scratch given by the caller (exactgpu: device/exact.cuh
// passes shared memory, so that a kernel keeps no stack frame and makes no call for it).
#if defined(__CUDACC__)
#define TALLY_EXACT_INLINE __host__ __device__ __forceinline__
#else
#define TALLY_EXACT_INLINE inline
#endif

namespace tally::reduce {

namespace exact {

/// The superaccumulator's span for inputs of type T: limb k holds bits [32k, 32k + 32) above 2^emin.
template <class T>
struct Range;
template <>
struct Range<float> {
  static constexpr int emin = -149, limbs = 12;
};  // 2^-149 .. 2^235
template <>
struct Range<double> {
  static constexpr int emin = -1074, limbs = 67;
};  // 2^-1074 .. 2^1070
/// Products of two floats (the exact dot product): each is exact in a double (48 significant bits).
struct FloatProducts {};
template <>
struct Range<FloatProducts> {
  static constexpr int emin = -298, limbs = 21;
};  // 2^-298 .. 2^374
/// Products of two doubles: a * b = p + e exactly (FMA splitting), both multiples of 2^-2148, and
/// |a b| < 2^2048; a product outside a double's safe range is split on scaled significands instead.
struct DoubleProducts {};
template <>
struct Range<DoubleProducts> {
  static constexpr int emin = -2148, limbs = 134;
};  // 2^-2148 .. 2^2140
/// The accumulator's tag for dot products of T.
template <class T>
struct ProductsOf;
template <>
struct ProductsOf<float> {
  using type = FloatProducts;
};
template <>
struct ProductsOf<double> {
  using type = DoubleProducts;
};
template <class T>
using products_of = typename ProductsOf<T>::type;

inline constexpr int limb_bits = 32;
/// |hi| must stay below this (2^1021) so that no intermediate of TwoSum can overflow.
inline constexpr double kBig = 2.2471164185778949e307;

TALLY_HD double abs(double x) {
#if defined(__CUDA_ARCH__)
  return ::fabs(x);
#else
  return __builtin_fabs(x);
#endif
}

TALLY_HD float abs(float x) {
#if defined(__CUDA_ARCH__)
  return ::fabsf(x);
#else
  return __builtin_fabsf(x);
#endif
}

TALLY_HD std::uint64_t bits_of(double x) {
  std::uint64_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}

/// The three 32-bit chunks of x 2^scale (x a finite double; x 2^scale a multiple of 2^emin), and
/// the index of the lowest: x 2^scale = sign * (c0 + c1 2^32 + c2 2^64) 2^(emin + 32 i). Returns
/// false for x == 0. `scale` is non-zero only for the double products' scaled pieces.
template <int emin>
TALLY_HD bool split(double x, int& i, std::uint64_t (&c)[3], bool& neg, int scale = 0) {
  const std::uint64_t u = bits_of(x);
  neg = (u >> 63) != 0;
  int e = static_cast<int>((u >> 52) & 0x7ff);
  std::uint64_t m = u & ((std::uint64_t{1} << 52) - 1);
  if (e == 0) {
    if (m == 0) return false;
    e = 1;
  } else {
    m |= std::uint64_t{1} << 52;
  }
  int p = e - 1075 - emin + scale;  // x 2^scale = m 2^(e - 1075 + scale): m's lowest bit sits p bits above 2^emin
  // Below 2^emin only zero bits go (x 2^scale is a multiple of 2^emin): floats' range, and the scaled
  // pieces of a product of doubles (product_pieces), whose significand reaches below 2^-2148 while
  // its set bits do not. A double alone never gets here (p >= 0 for emin = -1074).
  if (p < 0) m = -p < 64 ? m >> -p : 0, p = 0;
  i = p >> 5;
  const int s = p & 31;
  const std::uint64_t t = m >> (32 - s);  // s == 0: m >> 32
  c[0] = (m << s) & 0xffffffffu;
  c[1] = t & 0xffffffffu;
  c[2] = t >> 32;
  return true;
}

/// The exact product a b of two finite doubles as pieces (p + e) 2^scale: p = RN(ma mb), e = the FMA's
/// exact error, on the significands ma, mb in [1, 2) (subnormals normalised), so that nothing
/// overflows or underflows whatever the exponents. Calls piece(p, scale) and piece(e, scale) (e != 0).
template <class Piece>
TALLY_HD void product_pieces(double a, double b, Piece&& piece) {
  const auto unpack = [](double x, int& ex) {  // x = m 2^ex, 1 <= |m| < 2
    std::uint64_t u = bits_of(x);
    ex = static_cast<int>((u >> 52) & 0x7ff);
    if (ex == 0) {  // subnormal: scale up by 2^64 first (exact)
      const double y = x * 18446744073709551616.0;
      u = bits_of(y);
      ex = static_cast<int>((u >> 52) & 0x7ff) - 64;
    }
    ex -= 1023;
    u = (u & ~(std::uint64_t{0x7ff} << 52)) | (std::uint64_t{1023} << 52);
    double m;
    std::memcpy(&m, &u, sizeof m);
    return m;
  };
  int ea, eb;
  const double ma = unpack(a, ea), mb = unpack(b, eb);
  const double p = ma * mb;
#if defined(__CUDA_ARCH__)
  const double e = ::fma(ma, mb, -p);
#else
  const double e = __builtin_fma(ma, mb, -p);
#endif
  piece(p, ea + eb);
  if (e != 0) piece(e, ea + eb);
}

template <class T>
struct Accumulator {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, FloatProducts> ||
                    std::is_same_v<T, DoubleProducts>,
                "exact::Accumulator: float or double inputs, or products of floats or doubles");
  static constexpr int limbs = Range<T>::limbs, emin = Range<T>::emin;
  static constexpr int nan_word = limbs, pos_inf_word = limbs + 1, neg_inf_word = limbs + 2, nonneg_word = limbs + 3,
                       seen_word = limbs + 4;
  static constexpr int words = limbs + 5;
  /// limbs, then counts of NaN, +Inf, -Inf inputs, of contributors that saw anything but -0, and of
  /// contributors that saw any input at all (an empty sum is +0, a sum of -0s is -0).
  std::int64_t w[words];

  TALLY_HD void clear() {
    for (int k = 0; k < words; ++k) w[k] = 0;
  }
  /// Adds a finite double that is a multiple of 2^emin (every input, every TwoSum error is).
  TALLY_HD void add(double x, int scale = 0) {
    int i;
    std::uint64_t c[3];
    bool neg;
    if (!split<emin>(x, i, c, neg, scale)) return;
    for (int k = 0; k < 3; ++k) {
      const auto v = static_cast<std::int64_t>(c[k]);
      w[i + k] += neg ? -v : v;
    }
  }
  /// An input the filter cannot take: NaN, +-Inf, or a finite value too large for it (added here).
  TALLY_HD void special(double x) {
    if (x != x) ++w[nan_word];
    else if (x > 1.7976931348623157e308) ++w[pos_inf_word];
    else if (x < -1.7976931348623157e308) ++w[neg_inf_word];
    else add(x);
    ++w[nonneg_word];
  }
  /// A product of two doubles that the filter cannot take exactly (non-finite, or beyond a double's
  /// safe range): NaN and Inf as IEEE multiplies (Inf * 0 is NaN), finite ones exactly, by pieces.
  /// (Only Accumulator<DoubleProducts> has the range for every piece.)
  TALLY_HD void product(double a, double b) {
    if (!(abs(a) <= 1.7976931348623157e308) || !(abs(b) <= 1.7976931348623157e308)) return special(a * b);
    product_pieces(a, b, [this](double x, int scale) { add(x, scale); });
    ++w[nonneg_word];
  }
  TALLY_HD void merge(const Accumulator& o) {
    for (int k = 0; k < words; ++k) w[k] += o.w[k];
  }
  /// Propagates the carries: limbs 0 .. limbs-2 in [0, 2^32), the top limb signed. Same value.
  TALLY_HD void normalize() {
    for (int k = 0; k + 1 < limbs; ++k) {
      const std::int64_t carry = w[k] >> limb_bits;  // arithmetic: floor division
      w[k] -= carry * (std::int64_t{1} << limb_bits);
      w[k + 1] += carry;
    }
  }

  /// The exact sum rounded to nearest even in Out (float or double). Leaves *this unchanged.
  template <class Out>
  [[nodiscard]] TALLY_EXACT_COLD Out round() const;
  /// round() on the caller's scratch: `a` holds `limbs` int64, `dd` limbs + 1 uint32 (exactgpu).
  template <class Out>
  [[nodiscard]] TALLY_EXACT_INLINE Out round_with(std::int64_t* a, std::uint32_t* dd) const;
  /// round_with() given the window: lo and hi the lowest and the highest non-zero limb (both -1 if
  /// none), found by the caller (device/exact.cuh: by a warp's ballots).
  template <class Out>
  [[nodiscard]] TALLY_EXACT_INLINE Out round_window(int lo, int hi, std::int64_t* a, std::uint32_t* dd) const;

 private:
  /// round_window() for a window of at most kNarrow - 1 limbs (the usual one: binned sums span 3-5),
  /// on limbs in registers with static indices only: no scratch, no dependent memory round trips.
  static constexpr int kNarrow = 8;
  template <class Out>
  [[nodiscard]] TALLY_EXACT_INLINE Out round_narrow(int lo, int hi) const;
};

/// The per-thread expansion filter: hi + lo (+ what it flushed) is the exact sum of what it took.
/// hi starts at -0 so that it stays -0 exactly when every input was -0 (IEEE's sign of a zero sum).
struct Filter {
  double hi = -0.0, lo = 0.0;

  /// Adds x; calls sink.add(r) with the residual that hi and lo cannot hold, sink.special(x) for NaN,
  /// Inf or a value that would take hi out of TwoSum's safe range.
  template <class T, class Sink>
  TALLY_HD void add(T x, Sink& sink) {
    const double v = static_cast<double>(x);
    const double s = hi + v;
    if constexpr (std::is_same_v<T, float>) {
      // A float filter's |hi| stays below 2^178 (< 2^50 terms of at most 2^128), far under kBig: only
      // a non-finite input is special, and that test runs on the float (not the FP64 pipe).
      if (!(abs(x) <= 3.40282347e38f)) {
        sink.special(v);
        return;
      }
    } else if (!(abs(s) < kBig)) {  // NaN, Inf, or too large: the accumulator takes it whole
      sink.special(v);
      return;
    }
    // Fast2Sum on the operands ordered by magnitude (selects, not branches): the same exact error as
    // TwoSum in three floating-point operations instead of six.
    const bool hi_big = abs(hi) >= abs(v);
    const double e1 = (hi_big ? v : hi) - (s - (hi_big ? hi : v));
    hi = s;
    // Float inputs into a double hi mostly leave no error at all: the second sum is then skipped
    // (a branch a warp rarely takes, at about half the floating-point work per element).
    if (e1 == 0) return;
    const double t = lo + e1;
    const bool lo_big = abs(lo) >= abs(e1);
    const double e2 = (lo_big ? e1 : lo) - (t - (lo_big ? lo : e1));
    lo = t;
    if (e2 != 0) sink.add(e2);
  }
  /// Adds the exact product a b (floats: exact in a double; doubles: p = a b and e = fma(a, b, -p),
  /// p + e exact while p is inside [2^-968, 2^1000], else sink.product(a, b) takes it by pieces).
  template <class Sink>
  TALLY_HD void add_product(float a, float b, Sink& sink) {
    add(static_cast<double>(a) * static_cast<double>(b), sink);
  }
  template <class Sink>
  TALLY_HD void add_product(double a, double b, Sink& sink) {
    const double p = a * b, ap = abs(p);
    if (ap >= 0x1p-968 && ap <= 0x1p1000) {  // both pieces exact doubles, far from overflow
#if defined(__CUDA_ARCH__)
      const double e = ::fma(a, b, -p);
#else
      const double e = __builtin_fma(a, b, -p);
#endif
      add(p, sink);
      if (e != 0) add(e, sink);  // e = +0 would turn an all -0 sum into +0
    } else if (p == 0 && (a == 0 || b == 0) && abs(a) <= 1.7976931348623157e308 && abs(b) <= 1.7976931348623157e308) {
      add(p, sink);  // an exact (signed) zero
    } else {
      sink.product(a, b);
    }
  }
  /// Whether every input so far was -0 (and none was special).
  [[nodiscard]] TALLY_HD bool all_negative_zero() const { return hi == 0 && bits_of(hi) != 0 && lo == 0; }
  /// Moves hi and lo into the accumulator (and the zero-sign record; `seen`: whether the filter took
  /// any input), leaving the filter empty.
  template <class Acc>
  TALLY_HD void flush_into(Acc& acc, bool seen = true) {
    if (seen) ++acc.w[Acc::seen_word];
    if (!all_negative_zero()) ++acc.w[Acc::nonneg_word];
    acc.add(hi);
    acc.add(lo);
    hi = -0.0, lo = 0.0;
  }
};

/// The last step of a rounding: the magnitude whose highest set bit is b (bit k weighs 2^(k + emin)),
/// read through d(k) (its 32-bit digit k), rounded to nearest even to Out; sticky_below(i): whether
/// any digit below i is non-zero. Shared by round_window() and round_narrow().
template <class Out, int emin, class Digit, class StickyBelow>
TALLY_EXACT_INLINE Out round_magnitude(int b, bool neg, const Digit& d, const StickyBelow& sticky_below) {
  constexpr int prec = std::is_same_v<Out, float> ? 24 : 53;
  constexpr int qmin = std::is_same_v<Out, float> ? -149 : -1074;               // exponent of Out's smallest subnormal
  const int lsb = (b + emin - prec + 1) > qmin ? (b + emin - prec + 1) : qmin;  // exponent of the last kept bit
  const int k0 = lsb - emin > 0 ? lsb - emin : 0;                               // lowest kept bit of the magnitude
  // Bits [k0, b] (at most prec of them): a 64-bit window from three digits.
  const int i0 = k0 >> 5, s0 = k0 & 31;
  const std::uint64_t lo64 = static_cast<std::uint64_t>(d(i0)) | (static_cast<std::uint64_t>(d(i0 + 1)) << 32);
  std::uint64_t kept = (lo64 >> s0) | (s0 > 0 ? static_cast<std::uint64_t>(d(i0 + 2)) << (64 - s0) : 0);
  // The kept bits [k0, b]; none when the whole magnitude lies below Out's last bit (b < k0: a sum
  // under half of Out's smallest subnormal, which rounds to zero).
  const int width = b - k0 + 1;
  kept = width > 0 ? kept & ((std::uint64_t{1} << width) - 1) : 0;
  if (k0 > 0) {
    const int r = k0 - 1, ir = r >> 5, sr = r & 31;
    const std::uint32_t dr = d(ir);
    if (((dr >> sr) & 1u) != 0) {  // the round bit: to nearest, ties to even
      const bool sticky = (dr & ((std::uint32_t{1} << sr) - 1)) != 0 || sticky_below(ir);
      if (sticky || (kept & 1u) != 0) ++kept;
    }
  }
  // kept 2^(k0 + emin) has at most prec + 1 bits at exponents >= qmin: exact in double (float
  // exponents fit too), and representable in Out unless it is beyond Out's range, where the
  // conversion gives Inf as IEEE rounding of the exact sum would.
#if defined(__CUDACC__)
  const double r = ::ldexp(static_cast<double>(kept), k0 + emin);
#else
  const double r = std::ldexp(static_cast<double>(kept), k0 + emin);
#endif
  const Out o = static_cast<Out>(r);
  return neg ? -o : o;
}

template <class T>
template <class Out>
TALLY_EXACT_COLD Out Accumulator<T>::round() const {
  std::int64_t a[limbs];
  std::uint32_t dd[limbs + 1];
  return round_with<Out>(a, dd);
}

template <class T>
template <class Out>
TALLY_EXACT_INLINE Out Accumulator<T>::round_with(std::int64_t* a, std::uint32_t* dd) const {
  int lo = -1, hi = -1;
  for (int k = 0; k < limbs; ++k)
    if (w[k] != 0) hi = k, lo = lo < 0 ? k : lo;
  return round_window<Out>(lo, hi, a, dd);
}

template <class T>
template <class Out>
TALLY_EXACT_INLINE Out Accumulator<T>::round_window(int lo, int hi, std::int64_t* a, std::uint32_t* dd) const {
  static_assert(std::is_same_v<Out, float> || std::is_same_v<Out, double>, "exact: rounds to float or double");
  using lim = detail::numeric_limits<Out>;
  if (w[nan_word] > 0 || (w[pos_inf_word] > 0 && w[neg_inf_word] > 0)) return lim::quiet_NaN();
  if (w[pos_inf_word] > 0) return lim::infinity();
  if (w[neg_inf_word] > 0) return -lim::infinity();
  // Only the window [lo, top] of limbs can be non-zero (top: one limb above the highest non-zero
  // one, which takes its carries): normalising and reading it instead of every limb is the same
  // value and digits at a fraction of the cost (a double accumulator's 67 limbs are mostly zero).
  if (hi < 0) return w[nonneg_word] == 0 && w[seen_word] > 0 ? Out(-0.0) : Out(0.0);
  if (hi - lo + 2 <= kNarrow) return round_narrow<Out>(lo, hi);
  const int top = hi + 1 < limbs ? hi + 1 : hi;
  for (int k = lo; k <= top; ++k) a[k] = w[k];  // only a[lo .. top] is read below
  const auto carry_up = [&] {                   // limbs lo .. top-1 into [0, 2^32), a[top] signed: the same value
    for (int k = lo; k < top; ++k) {
      const std::int64_t carry = a[k] >> limb_bits;  // arithmetic: floor division
      a[k] -= carry * (std::int64_t{1} << limb_bits);
      a[k + 1] += carry;
    }
  };
  carry_up();
  const bool neg = a[top] < 0;
  if (neg) {
    for (int k = lo; k <= top; ++k) a[k] = -a[k];
    carry_up();  // the magnitude, canonical: every limb non-negative
  }
  // The magnitude as 32-bit digits, zero outside [lo, top + 1] (a[top] may hold more than 32 bits:
  // it spills into digit top + 1).
  for (int k = lo; k <= top; ++k) dd[k] = static_cast<std::uint32_t>(a[k]);
  dd[top + 1] = static_cast<std::uint32_t>(static_cast<std::uint64_t>(a[top]) >> 32);
  const auto d = [&](int k) -> std::uint32_t { return k >= lo && k <= top + 1 ? dd[k] : 0u; };
  int h = top + 1;
  while (h >= lo && d(h) == 0) --h;
  if (h < lo) return w[nonneg_word] == 0 && w[seen_word] > 0 ? Out(-0.0) : Out(0.0);
  int msb = 31;
  while (((d(h) >> msb) & 1u) == 0) --msb;
  const int b = 32 * h + msb;  // the highest set bit: the sum is in [2^(b + emin), 2^(b + emin + 1))
  return round_magnitude<Out, emin>(b, neg, d, [&](int ir) {
    for (int k = lo; k < ir; ++k)
      if (d(k) != 0) return true;
    return false;
  });
}

template <class T>
template <class Out>
TALLY_EXACT_INLINE Out Accumulator<T>::round_narrow(int lo, int hi) const {
  // round_window's steps on limbs lo .. lo + N - 1 (zero above hi): the magnitude |sum| < 2^63
  // 2^(32 hi) (1 + 2^-32 + ...) < 2^(32 (hi + 2)) needs digits up to hi + 1 <= lo + N - 1, and the
  // carries run through them all. Every index below is a compile-time one (loops unrolled, a
  // dynamic digit read is a select over all of them), so the arrays live in registers.
  constexpr int N = kNarrow;
  std::int64_t a[N];
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int j = 0; j < N; ++j) a[j] = j <= hi - lo ? w[lo + j] : 0;
  const auto carry_up = [&] {
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (int j = 0; j + 1 < N; ++j) {
      const std::int64_t carry = a[j] >> limb_bits;  // arithmetic: floor division
      a[j] -= carry * (std::int64_t{1} << limb_bits);
      a[j + 1] += carry;
    }
  };
  carry_up();
  const bool neg = a[N - 1] < 0;
  if (neg) {
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (int j = 0; j < N; ++j) a[j] = -a[j];
    carry_up();
  }
  std::uint32_t dd[N + 1];
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int j = 0; j < N; ++j) dd[j] = static_cast<std::uint32_t>(a[j]);
  dd[N] = static_cast<std::uint32_t>(static_cast<std::uint64_t>(a[N - 1]) >> 32);
  const auto d = [&](int k) {  // absolute digit k, zero outside the window
    std::uint32_t v = 0;
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (int j = 0; j <= N; ++j) v = j == k - lo ? dd[j] : v;
    return v;
  };
  int h = -1;
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int j = 0; j <= N; ++j) h = dd[j] != 0 ? j : h;
  if (h < 0) return w[nonneg_word] == 0 && w[seen_word] > 0 ? Out(-0.0) : Out(0.0);
  const std::uint32_t top_digit = d(lo + h);
#if defined(__CUDA_ARCH__)
  const int msb = 31 - __clz(static_cast<int>(top_digit));
#else
  const int msb = 31 - __builtin_clz(top_digit);
#endif
  const int b = 32 * (lo + h) + msb;  // the highest set bit (as round_window)
  return round_magnitude<Out, emin>(b, neg, d, [&](int ir) {
    bool any = false;
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (int j = 0; j <= N; ++j) any = any || (lo + j < ir && dd[j] != 0);
    return any;
  });
}

/// One rounding of the exact value hi + lo (not both zero) to Out, into `out`; false where that
/// cannot be decided from hi and lo alone (a float midpoint, below).
template <class Out>
TALLY_HD bool round_pair(double hi, double lo, Out& out) {
  const double r = hi + lo;
  if constexpr (std::is_same_v<Out, double>) {
    out = r;  // one rounding of the exact hi + lo
    return true;
  } else {
    // (float) r rounds twice; that differs from one rounding only where r is a float midpoint,
    // which needs a non-zero tail (hi + lo != r) and r not a float.
    const double b = r - hi;
    const double tail = (hi - (r - b)) + (lo - b);  // TwoSum: exact
    out = static_cast<float>(r);
    return tail == 0 || static_cast<double>(out) == r;
  }
}

/// The result of a filter that took at least one input and its accumulator. When the filter never
/// flushed (`flushed` false; the common case for short segments) one rounding of hi + lo is
/// correct unless round_pair cannot decide, and the accumulator is not touched; otherwise the
/// filter is flushed into `acc` and `acc` is rounded.
template <class T, class Out>
TALLY_HD Out finish(Filter& f, Accumulator<T>& acc, bool flushed) {
  if (!flushed) {
    if (f.hi == 0 && f.lo == 0) return f.all_negative_zero() ? Out(-0.0) : Out(0.0);
    Out r;
    if (round_pair(f.hi, f.lo, r)) return r;
    acc.clear();
  }
  f.flush_into(acc);
  return acc.template round<Out>();
}

/// An output: the exact sum rounded to Out (float, double), or, for Out = Accumulator<T> (the rank
/// level's cross-rank step), the accumulator itself, normalised so that ranks can add theirs.
template <class Out, class T>
TALLY_HD Out result_of(Accumulator<T>& a) {
  if constexpr (std::is_same_v<Out, Accumulator<T>>) {
    a.normalize();
    return a;
  } else {
    return a.template round<Out>();
  }
}
/// The same from a filter that took at least one input and its accumulator (`used`: ever touched).
template <class Out, class T>
TALLY_HD Out result_of(Filter& f, Accumulator<T>& acc, bool used) {
  if constexpr (std::is_same_v<Out, Accumulator<T>>) {
    if (!used) acc.clear();
    f.flush_into(acc);
    return result_of<Out>(acc);
  } else {
    return finish<T, Out>(f, acc, used);
  }
}

/// The exact dot product of a and b (n elements of float or double, host memory), rounded once to
/// Out (float or double): the sequential form of the building block (the host API is
/// reduce::exact_dot, dot.hpp; kernels use device::ExactThread<products_of<T>>::add_product).
template <class Out, class T>
Out dot(const T* a, const T* b, std::int64_t n) {
  using P = products_of<T>;
  struct Sink {
    Accumulator<P> acc;
    bool used = false;
    std::int64_t adds = 0;
    void touch() {
      if (!used) acc.clear(), used = true;
      if (++adds == (std::int64_t{1} << 28)) acc.normalize(), adds = 0;
    }
    void add(double r) { touch(), acc.add(r); }
    void special(double x) { touch(), acc.special(x); }
    void product(double x, double y) { touch(), acc.product(x, y); }
  } sink;
  if (n <= 0) return Out(0);  // the empty sum
  Filter f;
  for (std::int64_t i = 0; i < n; ++i) f.add_product(a[i], b[i], sink);
  return finish<P, Out>(f, sink.acc, sink.used);
}

}  // namespace exact
}  // namespace tally::reduce
