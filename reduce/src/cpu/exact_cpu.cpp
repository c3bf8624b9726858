// CPU backend of the exact sum (ExactSum, tally/reduce/exact.hpp): OpenMP threads over tasks, SIMD
// inside a task. Each task runs `lanes` expansion filters (hi, lo) side by side, vectorised, flushing
// the rare residual into its own superaccumulator; tasks' accumulators are merged by integer adds.
// The result is the exact sum rounded once, so it does not depend on how the work is cut, on the
// thread count or on the instruction set; the cut below only serves speed.
//
// Compiled once per instruction set like reduce_cpu.cpp (isa.hpp): TALLY_CPU_ISA names the namespace.
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <type_traits>
#include <vector>

#include "isa.hpp"
#include "plan.hpp"
#include "tally/reduce/detail/exact.hpp"
#include "tally/reduce/detail/exact_bins.hpp"
#include "tally/reduce/detail/tuning_cpu.hpp"

#ifndef TALLY_CPU_ISA
#define TALLY_CPU_ISA base
#endif

namespace tally::reduce::detail::TALLY_CPU_ISA {

namespace {

using exact::Accumulator;
using exact::Filter;
using exact::BinFormat;
using exact::Bins;
using exact::bin_m_bits;
using exact::result_of;

#if defined(__AVX512F__)
constexpr int vw = 8;  // doubles per vector register
#else
constexpr int vw = 4;  // AVX2 (the baseline build splits each into SSE2 pairs)
#endif
constexpr std::int64_t renorm_every = std::int64_t{1} << 30;  // flushes between normalisations (limit 2^31)

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

/// A superaccumulator as the filters' sink: counts its flushes to normalise in time.
template <class T>
struct Sink {
  Accumulator<T>* acc;
  std::int64_t adds = 0;
  bool used = false;
  void touch() {
    if (!used) acc->clear(), used = true;
    if (++adds == renorm_every) acc->normalize(), adds = 0;
  }
  void add(double r) { touch(), acc->add(r); }
  void special(double x) { touch(), acc->special(x); }
};

/// W consecutive values, value l into filter l (W <= lanes; a compile-time W for the vectoriser,
/// 0: the runtime w). All lanes' TwoSums at once; when one of them meets a special value, the block
/// is redone lane by lane with the scalar filter (the same arithmetic, so the same result).
template <int W, class T, class SinkOf>
inline void fold_block(const T* __restrict x, int w, double* __restrict hi, double* __restrict lo, SinkOf&& sink_of) {
  const int n = W > 0 ? W : w;
  double nh[ExactCpuPolicy::lanes], nl[ExactCpuPolicy::lanes], res[ExactCpuPolicy::lanes];
  long long bad = 0, nz = 0;
#pragma omp simd reduction(| : bad, nz)
  for (int l = 0; l < n; ++l) {
    const double v = static_cast<double>(x[l]);
    const double s = hi[l] + v;
    bad |= static_cast<long long>(!(exact::abs(s) < exact::kBig));
    const double b1 = s - hi[l];
    const double e1 = (hi[l] - (s - b1)) + (v - b1);
    const double t = lo[l] + e1;
    const double b2 = t - lo[l];
    const double e2 = (lo[l] - (t - b2)) + (e1 - b2);
    nh[l] = s, nl[l] = t, res[l] = e2;
    nz |= static_cast<long long>(e2 != 0);
  }
  if (bad == 0) {
#pragma omp simd
    for (int l = 0; l < n; ++l) hi[l] = nh[l], lo[l] = nl[l];
    if (nz != 0)
      for (int l = 0; l < n; ++l)
        if (res[l] != 0) sink_of(l).add(res[l]);
    return;
  }
  for (int l = 0; l < n; ++l) {
    Filter f{hi[l], lo[l]};
    f.add(x[l], sink_of(l));
    hi[l] = f.hi, lo[l] = f.lo;
  }
}

// ---- error-free binning (Demmel & Nguyen's "binned" sums, ReproBLAS) ----------------------------
//
// Why: the filters above cost two TwoSums in doubles per element, about 10x the ordinary sum's work;
// on all threads a memory-bound ordinary sum leaves no room for that. Binning works in T's own lanes
// (16 floats or 8 doubles per AVX-512 vector): per vector of values, four floating-point and two
// integer operations, and four integer ones for the chunk's largest and least |x|.
//
// Lemma (p = T's significand bits, 24 or 53; RN: IEEE round to nearest even). Let M = 1.5 2^(E+1)
// be a normal T and u = ulp(M) = 2^(E+2-p). For every T x with |x| <= 2^E:
//  (a) x + M lies in [2^(E+1), 2^(E+2)] (1.5 2^(E+1) -+ 2^E are the ends, both T values), so
//      y = RN(x + M) does too; the T values there are the multiples of u (2^(E+2) included), and
//      consecutive ones differ by 1 in their bit patterns, so k = bits(y) - bits(M) is exactly
//      (y - M) / u, with |k| <= 2^(p-2); q = y - M is computed exactly (a multiple of u, |q| <= 2^E).
//  (b) q is the multiple of u nearest x, so |x - q| <= u / 2 and |x - q| <= |x| (0 is a multiple of
//      u). u >= ulp(x) (|x| <= 2^E), so x - q is a multiple of ulp(x) no larger than |x|: it has at
//      most p significant bits and r = x - q is computed exactly. x = k u + r exactly.
// Applied twice: level 1 with E from the chunk's largest |x|, level 2 on r (|r| <= 2^(E+1-p)) with
// E2 = E + 1 - p, raised to T's least normal exponent where needed (a larger E2 keeps |r| <= 2^E2; it
// makes ulp(M2) = 2^-149 or 2^-1074, so that level 2 then leaves nothing). x = k1 u1 + k2 u2 + r2
// exactly, and r2 = 0 wherever x is a multiple of u2 = ulp(M2): where |x| >= 2^(E+2-p) (ulp(x) >= u2),
// and everywhere when E2 was raised (u2 is T's least subnormal). So a chunk whose least non-zero |x|
// is that large needs no r2; otherwise (rare) r2 is computed, and where non-zero (exact, a T) goes to
// the filters. Integer lanes sum bits(y) with wrap-around; subtracting
// count * bits(M) at the chunk's end leaves the exact sum of the k: |sum| <= count 2^(p-2) < 2^(31 or
// 63) for count <= 128 floats or 256 doubles per lane (the chunks below), so the wrapped value is it.
// Needs: IEEE binary32/64 arithmetic in the default rounding mode (round to nearest) and no value-
// changing optimisation (-ffast-math would fold (x + M) - M into x; no multiplies here, so FMA
// contraction cannot apply). A chunk whose largest |x| is 0 or >= 2^top (Inf, NaN, huge: M must stay
// finite, and each level's sum inside the accumulator's range) goes to the filters whole.
#if defined(__FAST_MATH__)
#error "exact_cpu.cpp: the exact sum's binning needs IEEE arithmetic: build without -ffast-math"
#endif

// The instruction set's own vector width (wider GCC vectors are lowered through memory).
#if defined(__AVX512F__)
constexpr int bin_bytes = 64;
#elif defined(__AVX2__)
constexpr int bin_bytes = 32;
#else
constexpr int bin_bytes = 16;
#endif

template <class T>
struct BinTraits;
template <>
struct BinTraits<float> {
  static constexpr int top = 125;          // binned while max |x| < 2^top: y <= 2^(top+2) = 2^127
  static constexpr int W = bin_bytes / 4;  // lanes
  static constexpr int chunk = 128 * W;    // elements (at most 8 KB, in L1): 128 per lane, |lane sum| <= 2^29
};
template <>
struct BinTraits<double> {
  static constexpr int top = 900;  // well below overflow: sums of k u stay doubles (< 2^945) when added
  static constexpr int W = bin_bytes / 8;
  static constexpr int chunk = 256 * W;  // at most 16 KB: 256 per lane, |lane sum| <= 2^59, |chunk sum| <= 2^62
};

__extension__ typedef __int128 int128;  // (__extension__: GCC's own types, under -Wpedantic)
__extension__ typedef unsigned __int128 uint128;

/// A task's binned chunks: per level, the exact sum of k over the chunks seen with the same ulp u
/// (mostly all: the chunks' largest |x| mostly share their exponent), added to the accumulator when
/// u changes and at the end.
template <class T>
struct Binned {
  using B = BinTraits<T>;
  using F = BinFormat<T>;  // exact_bins.hpp: T's format, as the CUDA binning reads it
  using U = typename F::Bits;
  using S = std::make_signed_t<U>;
  static constexpr int W = B::W, shift = F::mant, bias = F::bias;
  static constexpr int p = F::mant + 1, emin = 1 - F::bias;  // significand bits, least normal exponent
  typedef T VT __attribute__((vector_size(bin_bytes)));
  typedef U VU __attribute__((vector_size(bin_bytes)));
  typedef S VS __attribute__((vector_size(bin_bytes)));
  struct Level {
    int128 s = 0;  // exact sum of k (units of 2^e) over `chunks` chunks
    int e = 0;
    std::int64_t chunks = 0;
  };
  Level level[2];
  bool nonzero = false;  // took a chunk with a non-zero value: the sum is not a sum of -0s
  T rem[B::chunk];       // a chunk's non-zero remainders r2, for the filters

  /// n values (a multiple of W, at most B::chunk): binned exactly, or through filters(x, n).
  template <class Filters>
  void chunk(const T* __restrict x, int n, Sink<T>& sink, Filters&& filters) {
    // The largest |x| as bits (NaN and Inf above every finite value) and the least non-zero one:
    // |x| bits + (2^(w-1) - 1) wraps every non-zero value below zero and keeps 0 at the top, so a
    // signed minimum finds it (min + 1 - 2^(w-1) = its bits; 0 when all are zero).
    constexpr S smax = std::numeric_limits<S>::max();
    VS m = {};
    VS z = VS{} + smax;
    for (int i = 0; i < n; i += W) {
      VS b;
      std::memcpy(&b, x + i, sizeof b);
      b &= smax;
      m = b > m ? b : m;
      const VS c = (VS)((VU)b + static_cast<U>(smax));
      z = c < z ? c : z;
    }
    S mb = 0, zs = smax;
    for (int l = 0; l < W; ++l) mb = std::max(mb, m[l]), zs = std::min(zs, z[l]);
    const U zb = static_cast<U>(zs) - static_cast<U>(smax);  // the least non-zero |x| bits
    if (mb == 0 || mb >= (static_cast<S>(B::top + bias) << shift))
      return filters(x, n);                                               // zeros (signs), huge, Inf, NaN
    const int E = std::max(static_cast<int>(mb >> shift), 1) - bias + 1;  // max |x| < 2^E
    const int x1 = E + 1, x2 = std::max(E + 2 - p, emin);                 // exponents of M1 and M2
    const U b1 = bin_m_bits<T>(x1), b2 = bin_m_bits<T>(x2);
    const T m1 = Bins<T>::from_bits(b1), m2 = Bins<T>::from_bits(b2);
    const VT vm1 = VT{} + m1, vm2 = VT{} + m2;
    VU s1 = {}, s2 = {};
    for (int i = 0; i < n; i += W) {
      VT v;
      std::memcpy(&v, x + i, sizeof v);
      // The next chunk towards L1 while this one is binned (an address past the end is harmless).
      __builtin_prefetch(reinterpret_cast<const void*>(reinterpret_cast<std::uintptr_t>(x + i) + sizeof(T) * B::chunk));
      const VT y1 = v + vm1;
      const VT y2 = (v - (y1 - vm1)) + vm2;
      s1 += (VU)y1;
      s2 += (VU)y2;
    }
    const U cnt = static_cast<U>(n / W);
    std::int64_t k1 = 0, k2 = 0;
    for (int l = 0; l < W; ++l) {
      k1 += static_cast<S>(static_cast<U>(s1[l] - cnt * b1));  // modular: the exact lane sum of k
      k2 += static_cast<S>(static_cast<U>(s2[l] - cnt * b2));
    }
    add(level[0], k1, x1 + 1 - p, sink);
    add(level[1], k2, x2 + 1 - p, sink);
    nonzero = true;
    // r2 = 0 wherever x is a multiple of u2 = 2^(x2 + 1 - p): every |x| >= 2^x2, and every x when
    // x2 = emin (u2 is then T's least subnormal). Otherwise (rare) r2, for the filters.
    if (x2 == emin || zb >= static_cast<U>(x2 + bias) << shift) return;
    int r = 0;
    for (int i = 0; i < n; i += W) {
      VT v;
      std::memcpy(&v, x + i, sizeof v);
      const VT r1 = v - ((v + vm1) - vm1);
      const VT r2 = r1 - ((r1 + vm2) - vm2);
      for (int l = 0; l < W; ++l)
        if (r2[l] != 0) rem[r++] = r2[l];
    }
    filters(rem, r);
  }
  void add(Level& L, std::int64_t k, int e, Sink<T>& sink) {
    if (L.e != e || L.chunks == (std::int64_t{1} << 20)) flush(L, sink), L.e = e;  // |s| < 2^82
    L.s += k, ++L.chunks;
  }
  /// s 2^e into the accumulator, as 32-bit digits (each exact in a double; e >= T's least subnormal
  /// exponent, digits below 2^(e + 96) < 2^199 (float) or 2^945 (double): inside the accumulator).
  static void flush(Level& L, Sink<T>& sink) {
    const bool neg = L.s < 0;
    auto a = static_cast<uint128>(neg ? -L.s : L.s);
    for (int j = 0; a != 0; ++j, a >>= 32) {
      const auto d = static_cast<std::uint32_t>(a);
      if (d != 0) sink.add(std::ldexp(neg ? -static_cast<double>(d) : static_cast<double>(d), L.e + 32 * j));
    }
    L.s = 0, L.chunks = 0;
  }
  /// The levels into the accumulator (which the caller has cleared or used).
  void drain(Sink<T>& sink) {
    for (Level& L : level) flush(L, sink);
    if (nonzero) ++sink.acc->w[Accumulator<T>::nonneg_word];
  }
};

/// A task's filters over one run of contiguous values, all into one accumulator.
template <class T>
struct LaneFilters {
  double hi[ExactCpuPolicy::lanes], lo[ExactCpuPolicy::lanes];
  LaneFilters() { std::fill(hi, hi + ExactCpuPolicy::lanes, -0.0), std::fill(lo, lo + ExactCpuPolicy::lanes, 0.0); }
  Binned<T> bins;  // the runs long enough to bin (fold below); the filters take the rest
  /// n contiguous values: binned chunk by chunk where that is exact and cheaper, the rest (the tail,
  /// chunks binning cannot take, the binning's rare non-zero remainders) through the filters.
  void fold(const T* __restrict x, std::int64_t n, Sink<T>& sink) {
    if (n < ExactCpuPolicy::bin_min) return fold_filters(x, n, sink);
    const auto filters = [this, &sink](const T* v, std::int64_t m) { fold_filters(v, m, sink); };
    std::int64_t i = 0;
    for (; i + BinTraits<T>::W <= n;) {
      const std::int64_t c = std::min<std::int64_t>(BinTraits<T>::chunk, (n - i) / BinTraits<T>::W * BinTraits<T>::W);
      bins.chunk(x + i, static_cast<int>(c), sink, filters);
      i += c;
    }
    if (i < n) fold_filters(x + i, n - i, sink);
  }
  /// The filters' hot loop: they stay in registers (local copies), the first TwoSum of 16 values at
  /// once, the second only when one of their errors is non-zero (for float inputs mostly none is),
  /// anything rarer (a residual, a special value) through fold_block's general path.
  void fold_filters(const T* __restrict x, std::int64_t n, Sink<T>& sink) {
    const auto one = [&sink](int) -> Sink<T>& { return sink; };
    // GCC vector types: the 16 filters as R registers of vw doubles each for hi and lo (AVX-512:
    // two of eight; AVX2: four of four; SSE2 pairs in the baseline build). Float inputs take the
    // first sum only and fall back to fold_block when one of 16 is inexact; doubles take both.
    // Anything rarer (a residual to flush, a special value) goes through fold_block from the stored
    // state: the same arithmetic.
    using vd = double __attribute__((vector_size(8 * vw)));
    using vf = float __attribute__((vector_size(4 * vw)));
    using vm = long long __attribute__((vector_size(8 * vw)));
    constexpr int R = ExactCpuPolicy::lanes / vw;
    static_assert(R * vw == ExactCpuPolicy::lanes);
    constexpr bool is_float = std::is_same_v<T, float>;
    vd H[R], O[R];
    std::memcpy(H, hi, sizeof H), std::memcpy(O, lo, sizeof O);
    std::int64_t i = 0;
    for (; i + ExactCpuPolicy::lanes <= n; i += ExactCpuPolicy::lanes) {
      vd S[R], L[R];
      vm flag = {};
      for (int k = 0; k < R; ++k) {
        vd v;
        if constexpr (is_float) {
          vf f;
          std::memcpy(&f, x + i + vw * k, sizeof f);
          v = __builtin_convertvector(f, vd);
        } else {
          std::memcpy(&v, x + i + vw * k, sizeof v);
        }
        S[k] = H[k] + v;
        if constexpr (is_float) {
          // s = h + v is exact iff s - h == v and s - v == h: for the operand of larger magnitude
          // one of the two differences is exact (Sterbenz/Dekker), and it equals the other operand
          // only when nothing was rounded off; when exact, both hold. Four operations instead of
          // TwoSum's five and the test. NaN and Inf fail a comparison: flagged. (A float filter's
          // |h| stays below 2^178, far from overflow.)
          flag |= (S[k] - H[k] != v) | (S[k] - v != H[k]);
        } else {
          const vd b1 = S[k] - H[k];
          const vd e1 = (H[k] - (S[k] - b1)) + (v - b1);
          L[k] = O[k] + e1;
          // lo + e1 exact, by the same test; an overflow anywhere leaves an Inf or NaN that fails it.
          flag |= (L[k] - O[k] != e1) | (L[k] - e1 != O[k]);
        }
      }
      long long any = 0;
      for (int l = 0; l < vw; ++l) any |= flag[l];
      if (any == 0) {
        for (int k = 0; k < R; ++k) {
          H[k] = S[k];
          if constexpr (!is_float) O[k] = L[k];
        }
        continue;
      }
      std::memcpy(hi, H, sizeof H), std::memcpy(lo, O, sizeof O);
      fold_block<ExactCpuPolicy::lanes, T>(x + i, ExactCpuPolicy::lanes, hi, lo, one);
      std::memcpy(H, hi, sizeof H), std::memcpy(O, lo, sizeof O);
    }
    std::memcpy(hi, H, sizeof H), std::memcpy(lo, O, sizeof O);
    if (i < n) fold_block<0, T>(x + i, static_cast<int>(n - i), hi, lo, one);
  }
  /// Everything into the accumulator (cleared first if the sink never used it).
  void drain(Sink<T>& sink) {
    if (!sink.used) sink.acc->clear(), sink.used = true;
    bins.drain(sink);
    for (int l = 0; l < ExactCpuPolicy::lanes; ++l) {
      Filter f{hi[l], lo[l]};
      f.flush_into(*sink.acc);
    }
    sink.acc->normalize();
  }
};

struct RowCursor {  // as in reduce_cpu.cpp: rows q = a * r_ext2 + b without a division per row
  std::int64_t a, b;
  RowCursor(const Plan& p, std::int64_t q) : a(q / p.r_ext2), b(q % p.r_ext2) {}
  [[nodiscard]] std::int64_t offset(const Plan& p) const { return a * p.r_s1 + b * p.r_s2; }
  void next(const Plan& p) {
    if (++b == p.r_ext2) b = 0, ++a;
  }
};

// ---- inner family: out[o] = sum_{q < rows, i < n} in[koff(o) + roff(q) + i] ---------------------------

/// Elements [e0, e1) of the segment at `base` (element e = q * n + i) into the filters.
template <class T>
void inner_range(const Plan& p, const T* base, std::int64_t e0, std::int64_t e1, LaneFilters<T>& f, Sink<T>& sink) {
  RowCursor q(p, e0 / p.n);
  std::int64_t i = e0 % p.n;
  for (std::int64_t e = e0; e < e1;) {
    const std::int64_t len = std::min(p.n - i, e1 - e);
    f.fold(base + q.offset(p) + i, len, sink);
    e += len, i = 0;
    q.next(p);
  }
}

template <class T, class Out>
Out inner_output(const Plan& p, const T* base, Accumulator<T>& acc) {
  const std::int64_t per = p.per_output();
  Sink<T> sink{&acc};
  if (per <= ExactCpuPolicy::short_seg) {  // one filter: mostly no accumulator at all
    Filter f;
    RowCursor q(p, 0);
    for (std::int64_t r = 0; r < p.rows; ++r, q.next(p)) {
      const T* row = base + q.offset(p);
      for (std::int64_t i = 0; i < p.n; ++i) f.add(row[i], sink);
    }
    if (sink.used) sink.acc->normalize();
    return result_of<Out>(f, acc, sink.used);
  }
  LaneFilters<T> f;
  inner_range<T>(p, base, 0, per, f, sink);
  f.drain(sink);
  return result_of<Out>(acc);
}

template <class T, class Out>
void exact_inner(const Plan& p, const T* in, Out* out) {
  const std::int64_t per = p.per_output();
  const bool team = p.n_out * per >= ExactCpuPolicy::serial_below;
  if (p.n_out >= ExactCpuPolicy::target_tasks || per <= 2 * ExactCpuPolicy::grain) {
    const std::int64_t ob = std::max<std::int64_t>(1, ExactCpuPolicy::grain / std::max<std::int64_t>(per, 1));
#pragma omp parallel for schedule(static) if (team)
    for (std::int64_t t = 0; t < ceil_div(p.n_out, ob); ++t) {
      Accumulator<T> acc;
      for (std::int64_t o = t * ob; o < std::min(p.n_out, (t + 1) * ob); ++o)
        out[o] = inner_output<T, Out>(p, in + p.koff(o), acc);
    }
    return;
  }
  // Few long outputs: fixed chunks, each into an accumulator of its own, merged per output.
  const std::int64_t split =
      std::min(ceil_div(per, ExactCpuPolicy::grain), ceil_div(ExactCpuPolicy::target_tasks, p.n_out));
  const std::int64_t chunk = ceil_div(per, split);
  const std::int64_t nchunks = ceil_div(per, chunk);
  std::vector<Accumulator<T>> part(static_cast<std::size_t>(p.n_out * nchunks));
#pragma omp parallel for schedule(static) if (team)
  for (std::int64_t t = 0; t < p.n_out * nchunks; ++t) {
    const std::int64_t o = t / nchunks, c = t % nchunks;
    Sink<T> sink{&part[static_cast<std::size_t>(t)]};
    LaneFilters<T> f;
    inner_range<T>(p, in + p.koff(o), c * chunk, std::min(per, (c + 1) * chunk), f, sink);
    f.drain(sink);
  }
  for (std::int64_t o = 0; o < p.n_out; ++o) {
    Accumulator<T>& a = part[static_cast<std::size_t>(o * nchunks)];
    for (std::int64_t c = 1; c < nchunks; ++c) a.merge(part[static_cast<std::size_t>(o * nchunks + c)]);
    out[o] = result_of<Out>(a);
  }
}

// ---- outer family: out[b * nc + c] = sum_{q < rows} in[b * sb + roff(q) + c] ---------------------------

/// Rows [q0, q1) of slab b, columns [c0, c0 + w): a filter and a (lazily cleared) accumulator per column.
template <class T>
struct ColumnTask {
  double hi[ExactCpuPolicy::col_block], lo[ExactCpuPolicy::col_block];
  Accumulator<T> acc[ExactCpuPolicy::col_block];
  Sink<T> sink[ExactCpuPolicy::col_block];
  int w;
  ColumnTask(const Plan& p, const T* in, std::int64_t b, std::int64_t c0, int w_, std::int64_t q0, std::int64_t q1)
      : w(w_) {
    std::fill(hi, hi + w, -0.0), std::fill(lo, lo + w, 0.0);
    for (int c = 0; c < w; ++c) sink[c] = Sink<T>{&acc[c]};
    const T* slab = in + b * p.sb + c0;
    RowCursor q(p, q0);
    for (std::int64_t r = q0; r < q1; ++r, q.next(p)) {
      const T* row = slab + q.offset(p);
      for (int c = 0; c < w; c += ExactCpuPolicy::lanes) {
        const auto of = [this, c](int l) -> Sink<T>& { return sink[c + l]; };
        if (c + ExactCpuPolicy::lanes <= w)
          fold_block<ExactCpuPolicy::lanes, T>(row + c, ExactCpuPolicy::lanes, hi + c, lo + c, of);
        else fold_block<0, T>(row + c, w - c, hi + c, lo + c, of);
      }
    }
  }
  template <class Out>
  Out result(int c) {
    Filter f{hi[c], lo[c]};
    if (sink[c].used) acc[c].normalize();
    return result_of<Out>(f, acc[c], sink[c].used);
  }
  /// Column c's whole sum in its accumulator.
  Accumulator<T>& drained(int c) {
    if (!sink[c].used) acc[c].clear(), sink[c].used = true;
    Filter f{hi[c], lo[c]};
    f.flush_into(acc[c]);
    acc[c].normalize();
    return acc[c];
  }
};

template <class T, class Out>
void exact_outer(const Plan& p, const T* in, Out* out) {
  const std::int64_t cw = std::min<std::int64_t>(p.nc, ExactCpuPolicy::col_block);
  const std::int64_t ncb = ceil_div(p.nc, cw);
  const std::int64_t units = p.nb * ncb;
  const bool team = p.nb * p.nc * p.rows >= ExactCpuPolicy::serial_below;
  std::int64_t nrb = 1;
  if (units < ExactCpuPolicy::target_tasks && p.rows * cw > 2 * ExactCpuPolicy::grain)
    nrb = std::min(ceil_div(p.rows * cw, ExactCpuPolicy::grain), ceil_div(ExactCpuPolicy::target_tasks, units));
  const std::int64_t rb_rows = ceil_div(p.rows, nrb);
  nrb = ceil_div(p.rows, rb_rows);
  if (nrb == 1) {
#pragma omp parallel for schedule(static) if (team)
    for (std::int64_t t = 0; t < units; ++t) {
      const std::int64_t b = t / ncb, c0 = (t % ncb) * cw;
      const int w = static_cast<int>(std::min(cw, p.nc - c0));
      auto task = std::make_unique<ColumnTask<T>>(p, in, b, c0, w, 0, p.rows);
      for (int c = 0; c < w; ++c) out[b * p.nc + c0 + c] = task->template result<Out>(c);
    }
    return;
  }
  // Rows split too: each (unit, row block) leaves its columns' accumulators, merged per column.
  std::vector<Accumulator<T>> part(static_cast<std::size_t>(units * nrb * cw));
#pragma omp parallel for schedule(static) if (team)
  for (std::int64_t t = 0; t < units * nrb; ++t) {
    const std::int64_t u = t / nrb, rb = t % nrb, b = u / ncb, c0 = (u % ncb) * cw;
    const int w = static_cast<int>(std::min(cw, p.nc - c0));
    auto task = std::make_unique<ColumnTask<T>>(p, in, b, c0, w, rb * rb_rows, std::min(p.rows, (rb + 1) * rb_rows));
    for (int c = 0; c < w; ++c) part[static_cast<std::size_t>(t * cw + c)] = task->drained(c);
  }
#pragma omp parallel for schedule(static) if (team)
  for (std::int64_t u = 0; u < units; ++u) {
    const std::int64_t b = u / ncb, c0 = (u % ncb) * cw;
    const int w = static_cast<int>(std::min(cw, p.nc - c0));
    for (int c = 0; c < w; ++c) {
      Accumulator<T>& a = part[static_cast<std::size_t>((u * nrb) * cw + c)];
      for (std::int64_t rb = 1; rb < nrb; ++rb) a.merge(part[static_cast<std::size_t>((u * nrb + rb) * cw + c)]);
      out[b * p.nc + c0 + c] = result_of<Out>(a);
    }
  }
}

}  // namespace

template <class T, class Out>
void exact_cpu_isa(const Problem& prob, Out* out) {
  const Plan p = make_plan(prob);
  const T* in = static_cast<const T*>(prob.data);
  if (p.empty) {
    if constexpr (std::is_same_v<Out, Accumulator<T>>) std::for_each(out, out + p.n_out, [](Out& a) { a.clear(); });
    else std::fill(out, out + p.n_out, Out(0));
  } else if (p.kind == Plan::Kind::inner) exact_inner<T, Out>(p, in, out);
  else exact_outer<T, Out>(p, in, out);
}

template void exact_cpu_isa<float, float>(const Problem&, float*);
template void exact_cpu_isa<float, double>(const Problem&, double*);
template void exact_cpu_isa<double, double>(const Problem&, double*);
template void exact_cpu_isa<float, Accumulator<float>>(const Problem&, Accumulator<float>*);
template void exact_cpu_isa<double, Accumulator<double>>(const Problem&, Accumulator<double>*);

}  // namespace tally::reduce::detail::TALLY_CPU_ISA
