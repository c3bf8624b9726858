#pragma once
// Error-free binning in front of the exact sum's filter (detail/exact.hpp): the CUDA flat kernel's hot loop.
// ExBLAS's filter costs a float->double conversion and 6-9 FP64 operations per float, which bounds
// the exact sum below the memory bandwidth of a GPU with few FP64 units per byte; binning (Demmel and Nguyen,
// ReproBLAS) takes a value in six additions of its own type and two integer additions, and is exact, so the result is
// unchanged: the exact sum correctly rounded, the same bits as every other path.
//
// A thread keeps a window exponent p (raised, never lowered, when a value at or above 2^(p-2)
// arrives) and, with u = 2^(p-m) (m: T's fraction bits) and M = 1.5 2^p (a T):
//   y = RN(x + M), k = bits(y) - bits(M), r = x - (y - M)     (|x| < 2^(p-2))
// Exactness: x + M lies in [1.25, 1.75] 2^p, so y does too (both ends are T's; RN is monotone): y is
// in M's binade, whose T's are M + j u, and y = M + k u with k the integer nearest x / u (bits(y)
// - bits(M) = k: the encoding is linear inside a binade). y - M = k u is exact (Sterbenz), and
// r = x - k u is exact: k = 0 gives r = x; otherwise |x| >= u/2 >= |r| and r is a multiple of ulp(x)
// (u is a power of two at least ulp(x): |x| < 2^(p-2), and p - m >= T's least exponent), so r needs
// no more bits than x. |r| <= u/2 = 2^((p-m+1)-2): r is binned again in the window p' = p - m + 1
// the same way (u' = 2^(p-2m+1)), leaving r' exact with x = k u + k' u' + r'. r' is zero for every
// x with ulp(x) >= u', i.e. |x| >= 2^(p-m+1): all but values tiny against the thread's largest;
// a non-zero r' goes to the filter (a T, exact). So the thread's inputs sum exactly to
//   S u + S' u' + (what went to the filter)        S = sum of k, S' = sum of k'.
// Counts: |k|, |k'| <= 2^(m-2). A batch of B values adds bits(y) modulo 2^bits and subtracts
// B bits(M) once: the true sum is below B 2^(m-2) < 2^(bits-1) (float: B <= 2^9; double: B <= 2^12),
// so the wrapped difference read as signed is the sum exactly. S, S' are int64 kept within 2^62
// (flushed into the filter beyond: |S| <= 2^62 + B 2^50 cannot wrap).
// Windows: M' = 1.5 2^(p-m+1) must be a normal T and u' at least T's smallest subnormal: p >= pmin
// (float -104, double -971; both limits coincide); M finite: p <= 127 (float); for doubles also
// S u < 2^(63+p-52) finite: p <= 1009. A value at or above 2^(pmax-2), Inf or NaN skips the bins
// and goes to the filter (which counts specials). Every flushed piece is a multiple of u' >= T's
// least subnormal, as the accumulator requires.
// Zeros: r' is -0 exactly when x is -0 (y - M is +0, and -0 - +0 = -0; any other x gives a +0 or
// non-zero r'); ANDing r''s bits keeps the sign bit while every binned value was -0, and finish()
// makes an all -0 filter +0 otherwise, so IEEE's sign of an exact zero sum is kept.

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "tally/reduce/detail/exact.hpp"

namespace tally::reduce::exact {

template <class T>
struct BinFormat;
template <>
struct BinFormat<float> {
  using Bits = std::uint32_t;
  static constexpr int mant = 23, bias = 127, pmin = -104, pmax = 127;
};
template <>
struct BinFormat<double> {
  using Bits = std::uint64_t;
  static constexpr int mant = 52, bias = 1023, pmin = -971, pmax = 1009;
};

/// The bits of 1.5 2^e (e a normal exponent of T): a bin's M (here and in the CPU backend's binning).
template <class T>
TALLY_HD constexpr typename BinFormat<T>::Bits bin_m_bits(int e) {
  using F = BinFormat<T>;
  using Bits = typename F::Bits;
  return (Bits(e + F::bias) << F::mant) | (Bits{1} << (F::mant - 1));
}

/// 2^e as a double, e in [-1074, 1023].
TALLY_HD double pow2(int e) {
  const std::uint64_t b = e >= -1022 ? std::uint64_t(e + 1023) << 52 : std::uint64_t{1} << (e + 1074);
  double d;
  std::memcpy(&d, &b, sizeof d);
  return d;
}

/// Whether a level's count may leave [-2^62, 2^62) (then it is flushed: a batch adds below 2^51).
template <int L>
TALLY_HD bool counts_near_limit(const std::int64_t (&s)[L]) {
  constexpr std::uint64_t lim = std::uint64_t{1} << 62;
  std::uint64_t any = 0;
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int j = 0; j < L; ++j) any |= static_cast<std::uint64_t>(s[j]) + lim;
  return any >= 2 * lim;
}

/// Moves every level's S_j u_j (u_j = 2^B::level_exp(p, j), B the bins type) into the filter in exact pieces of
/// below 2^32 units, leaving the counts zero. The counts are copied out first (static indices): the
/// rolled loop's dynamic index then touches the copy, and the counts stay in registers.
template <class B, int L, class Sink>
TALLY_HD void flush_counts(std::int64_t (&s)[L], int p, Filter& f, Sink& sink) {
  std::int64_t c[L];
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int j = 0; j < L; ++j) c[j] = s[j], s[j] = 0;
#if defined(__CUDA_ARCH__)
#pragma unroll 1
#endif
  for (int j = 0; j < 2 * L; ++j) {
    const std::int64_t v = j & 1 ? c[j >> 1] >> 32 : c[j >> 1] & 0xffffffff;
    if (v != 0) f.add(static_cast<double>(v) * pow2(B::level_exp(p, j >> 1) + (j & 1) * 32), sink);
  }
}

/// A thread's bins (see above): take batches of B values with try_add (false: nothing taken, add
/// them one by one with add), then finish() into the filter before it is flushed.
template <class T>
struct Bins {
  using F = BinFormat<T>;
  using Bits = typename F::Bits;
  using Int = std::make_signed_t<Bits>;
  static constexpr Bits sign = Bits{1} << (8 * sizeof(T) - 1);
  static constexpr int shift = F::mant - 1;  // the second window's exponent is p - shift
  static constexpr int levels = 2;

  T m1, m2, bound;  // 1.5 2^p, 1.5 2^(p - shift), 2^(p-2)
  int p;
  std::int64_t s[levels] = {0, 0};  // S and S' (the counts of u and u')
  Bits zero = sign;                 // AND of the remainders' bits: the sign bit stays while all were -0

  TALLY_HD Bins() { set_window(F::pmin); }

  /// The exponent of level j's unit in window q: u = 2^(q-m) (j = 0), u' = 2^(q-shift-m) (j = 1).
  TALLY_HD static constexpr int level_exp(int q, int j) { return q - F::mant - j * shift; }

  TALLY_HD static T from_bits(Bits b) {
    T x;
    std::memcpy(&x, &b, sizeof x);
    return x;
  }
  TALLY_HD static Bits to_bits(T x) {
    Bits b;
    std::memcpy(&b, &x, sizeof b);
    return b;
  }
  TALLY_HD void set_window(int q) {
    p = q;
    m1 = from_bits(bin_m_bits<T>(q));
    m2 = from_bits(bin_m_bits<T>(q - shift));
    bound = from_bits(Bits(q - 2 + F::bias) << F::mant);
  }

  /// Values from 2^(pmax-2) up (and Inf, NaN) never enter the bins.
  TALLY_HD static T top() { return from_bits(Bits(F::pmax - 2 + F::bias) << F::mant); }
  /// The least window holding x (|x| < top()): |x| in [2^e, 2^(e+1)) fits 2^(e+3)'s bound 2^(e+1).
  TALLY_HD static int window_for(T x) {
    const int e =
        static_cast<int>((to_bits(x) >> F::mant) & ((Bits{1} << (8 * sizeof(T) - 1 - F::mant)) - 1)) - F::bias;
    return e + 3 > F::pmin ? e + 3 : F::pmin;
  }

  /// The bits of the batch's largest |value| below top() (NaN, Inf and larger ones are add()'s),
  /// 0 if none: a key that orders like the magnitude, so that a warp can take its maximum as an
  /// integer (device/exact.cuh: one window for the whole warp).
  template <int B>
  TALLY_HD static Bits batch_key(const T (&x)[B]) {
    T m = 0;
    const T t = top();
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (int i = 0; i < B; ++i) {
      const T a = abs(x[i]);
      m = a < t && a > m ? a : m;
    }
    return to_bits(m);
  }
  /// Raises the window to hold the magnitude with bits `key` (batch_key's, below top()) if the
  /// window is lower; true if it moved.
  template <class Sink>
  TALLY_HD bool widen_to(Bits key, Filter& f, Sink& sink) {
    const T m = from_bits(key);
    if (!(m >= bound)) return false;
    flush(f, sink);
    set_window(window_for(m));
    return true;
  }
  /// Raises the window to hold the batch's largest value below top(); true if it moved, so that
  /// try_add may now take the batch (a thread's first batch).
  template <int B, class Sink>
  TALLY_HD bool widen(const T (&x)[B], Filter& f, Sink& sink) {
    return widen_to(batch_key(x), f, sink);
  }

  /// Takes the batch x if every value fits the window and leaves no second remainder (the common
  /// case: no branch per value); otherwise changes nothing and returns false.
  template <int B, class Sink>
  TALLY_HD bool try_add(const T (&x)[B], Filter& f, Sink& sink) {
    static_assert(B >= 1 && B <= (std::is_same_v<T, float> ? 512 : 4096),
                  "Bins::try_add: the batch's count sum must fit");
    Bits a1 = 0, a2 = 0, any = 0, all = sign;
    bool out = false;
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (int i = 0; i < B; ++i) {
      out |= !(abs(x[i]) < bound);  // NaN, Inf and too large too
      const T y1 = x[i] + m1, r1 = x[i] - (y1 - m1);
      const T y2 = r1 + m2, r2 = r1 - (y2 - m2);
      a1 += to_bits(y1), a2 += to_bits(y2);
      const Bits b = to_bits(r2);
      any |= b, all &= b;
    }
    if (out || (any & ~sign) != 0) return false;
    count(static_cast<Int>(a1 - Bits(B) * to_bits(m1)), static_cast<Int>(a2 - Bits(B) * to_bits(m2)), f, sink);
    zero &= all;
    return true;
  }

  /// Takes one value of any kind: rewindows for a larger finite one, hands NaN, Inf and values
  /// beyond the highest window to the filter, and a non-zero second remainder too.
  template <class Sink>
  TALLY_HD void add(T x, Filter& f, Sink& sink) {
    T rest = x;
    bool take = true;
    if (abs(x) < top()) {
      if (!(abs(x) < bound)) {
        flush(f, sink);
        set_window(window_for(x));
      }
      const T y1 = x + m1, r1 = x - (y1 - m1);
      const T y2 = r1 + m2, r2 = r1 - (y2 - m2);
      count(static_cast<Int>(to_bits(y1) - to_bits(m1)), static_cast<Int>(to_bits(y2) - to_bits(m2)), f, sink);
      const Bits b = to_bits(r2);
      zero &= b;
      rest = r2, take = (b & ~sign) != 0;
    }
    if (take) f.add(rest, sink);
  }

  /// Moves S u and S' u' into the filter (exact pieces, each below 2^32 units), leaving them zero.
  template <class Sink>
  TALLY_HD void flush(Filter& f, Sink& sink) {
    flush_counts<Bins>(s, p, f, sink);
  }

  /// Everything into the filter, and the filter's zero sign corrected for binned values that were
  /// not -0. Call before the filter is flushed; the bins are empty after.
  template <class Sink>
  TALLY_HD void finish(Filter& f, Sink& sink) {
    flush(f, sink);
    settle_zero(f);
  }
  /// The zero-sign half of finish(): an all -0 filter made +0 if a binned value was not -0.
  TALLY_HD void settle_zero(Filter& f) {
    if ((zero & sign) == 0 && f.all_negative_zero()) f.hi = 0.0;
    zero = sign;
  }

 private:
  template <class Sink>
  TALLY_HD void count(Int k1, Int k2, Filter& f, Sink& sink) {
    s[0] += k1, s[1] += k2;
    if (counts_near_limit(s)) flush(f, sink);
  }
};

/// Bins for exact dot products of doubles: a b = p + e (p = RN(a b), e = fma(a, b, -p), both exact)
/// in three levels of Bins<double>'s arithmetic, units u_j = 2^(q - 52 - 51 j) in window q: p takes
/// levels 0 and 1, e levels 1 and 2, with no remainder whenever 2^(q-47) <= |p| < 2^(q-2):
///  - p's remainder after level 0 is a multiple of u_1: p is a multiple of ulp(p) >= 2^(q-99).
///  - e: A = a 2^-alpha and B = b 2^-beta are integers below 2^53 (alpha, beta >= -1074), so a b
///    is a multiple of 2^(alpha+beta) and below 2^(alpha+beta+106); with p rounded up to the next
///    power of two at worst, alpha + beta >= E - 106 (E = p's exponent >= q - 47). e = a b - p is
///    then a multiple of 2^(q-153), hence of u_2 = 2^(q-154), and |e| <= ulp(p)/2 < 2^(q-55) lies
///    under level 1's bound 2^(q-53); its remainder after level 1 (at most u_1/2) under level 2's.
/// An exact zero product (a zero factor) is taken as its sign alone. Any other product outside that
/// range (smaller: its e may have bits below u_2; larger: the window rises; one that underflows to
/// zero, NaN, Inf) goes to the filter as Filter::add_product takes it. Windows: 1.5 2^(q-102) is a
/// normal double and u_2 >= 2^-1074 for q >= -920 (then |p| >= 2^-967, where e is exact); q <= 1009
/// as Bins<double>. A window holds products spanning 2^45 in magnitude; the rest go to the filter.
struct ProductBins {
  using F = BinFormat<double>;
  using Bits = std::uint64_t;
  static constexpr int shift = F::mant - 1, levels = 3, pmin = -920, pmax = F::pmax;

  double m[levels], bound, low;  // 1.5 2^(q - shift j); 2^(q-2); 2^(q-47)
  int p;
  std::int64_t s[levels] = {0, 0, 0};
  bool nonneg = false;  // a product taken was not -0: the sum is not an all -0 one

  TALLY_HD ProductBins() { set_window(pmin); }

  TALLY_HD static constexpr int level_exp(int q, int j) { return q - F::mant - j * shift; }
  TALLY_HD void set_window(int q) {
    p = q;
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (int j = 0; j < levels; ++j) m[j] = Bins<double>::from_bits(bin_m_bits<double>(q - j * shift));
    bound = pow2(q - 2), low = pow2(q - 47);
  }
  /// Products from 2^(pmax-2) up (and Inf, NaN) never enter the bins.
  TALLY_HD static double top() { return pow2(pmax - 2); }
  /// A key ordering like |p| (p below top(), else 0): the warp's largest sets one window for all.
  TALLY_HD static Bits key_of(double prod) {
    const double a = abs(prod);
    return Bins<double>::to_bits(a < top() ? a : 0.0);
  }
  /// Raises the window to hold the product magnitude with bits `key` if the window is lower; true
  /// if it moved.
  template <class Sink>
  TALLY_HD bool widen_to(Bits key, Filter& f, Sink& sink) {
    const double a = Bins<double>::from_bits(key);
    if (!(a >= bound)) return false;
    flush(f, sink);
    const int w = Bins<double>::window_for(a);
    set_window(w > pmin ? w : pmin);
    return true;
  }

  /// Takes the product a b if |RN(a b)| lies in [low, bound) (every piece exact, see above);
  /// otherwise changes nothing and returns false.
  template <class Sink>
  TALLY_HD bool try_add(double a, double b, Filter& f, Sink& sink) {
#if defined(__CUDA_ARCH__)
    const double pr = __dmul_rn(a, b);  // never contracted into the additions below
#else
    const double pr = a * b;
#endif
    const double ap = abs(pr);
    if (!(ap >= low && ap < bound)) {  // NaN too
      if (ap != 0 || (a != 0 && b != 0)) return false;
      nonneg = nonneg || !(bits_of(pr) >> 63);  // an exact zero (the other factor finite: else NaN)
      return true;
    }
#if defined(__CUDA_ARCH__)
    const double e = ::fma(a, b, -pr);
#else
    const double e = __builtin_fma(a, b, -pr);
#endif
    const double y0 = pr + m[0], r0 = pr - (y0 - m[0]);
    const double y1 = r0 + m[1];  // no remainder: r0 is a multiple of u_1
    const double z1 = e + m[1], q1 = e - (z1 - m[1]);
    const double z2 = q1 + m[2];  // no remainder: q1 is a multiple of u_2
    using B = Bins<double>;
    const auto k = [](double y, double mm) { return static_cast<std::int64_t>(B::to_bits(y) - B::to_bits(mm)); };
    s[0] += k(y0, m[0]), s[1] += k(y1, m[1]) + k(z1, m[1]), s[2] += k(z2, m[2]);
    nonneg = true;
    if (counts_near_limit(s)) flush(f, sink);
    return true;
  }

  /// Moves the counts into the filter (exact pieces), leaving them zero.
  template <class Sink>
  TALLY_HD void flush(Filter& f, Sink& sink) {
    flush_counts<ProductBins>(s, p, f, sink);
  }
  template <class Sink>
  TALLY_HD void finish(Filter& f, Sink& sink) {
    flush(f, sink);
    settle_zero(f);
  }
  /// An all -0 filter made +0 if a product taken was not -0.
  TALLY_HD void settle_zero(Filter& f) {
    if (nonneg && f.all_negative_zero()) f.hi = 0.0;
    nonneg = false;
  }
};

}  // namespace tally::reduce::exact
