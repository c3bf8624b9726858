#pragma once
// The library's generic reducers (reducer.hpp): arg-max/arg-min with a 64-bit flat index, min and
// max in one pass, and mean/variance by Welford/Chan. Compiled into tally::reduce for int32, int64,
// float and double inputs (is_compiled_reducer); reduce<R>() in reduce.hpp runs them on either backend.
//
// Ties and NaN (ArgMax, ArgMin): the FIRST index wins. combine() compares indices, so it is
// commutative and associative: any combination tree gives the same (value, index), and the CPU and
// CUDA backends, every level set and launch shape return the same bits. Larger (ArgMin: smaller)
// value wins; equal values (+0 and -0 are equal) -> smaller index; a NaN beats every number; two
// NaNs -> smaller index. An arg-reduction of nothing is an error (std::invalid_argument).
//
// MinMax: both extremes in one read; NaN anywhere gives NaN in both (a canonical quiet NaN, so the
// bits do not depend on which NaN was met first); -0 < +0 (IEEE 754-2019 minimum/maximum), so the
// result is again a selection that no tree changes. Empty: (+inf, -inf) (integers: (max, lowest)).
//
// MeanVar: (count, mean, M2) in double, merged by Chan's pairwise formula (Welford's update is the
// case of one element), so values near 1e8 with spread 1 keep their variance where the naive
// sum-of-squares formula loses every digit. The merge order is fixed by the launch shape:
// deterministic run to run (the bits may differ between backends, like a float sum's). Mean of
// nothing is NaN (count 0); population variance of nothing and sample variance of fewer than two
// values are NaN. A NaN input gives NaN; an infinite one gives Inf or NaN as the arithmetic does.

#include <cstdint>
#include <type_traits>

#include "tally/reduce/ops.hpp"
#include "tally/reduce/reducer.hpp"

namespace tally::reduce {

/// ValueIndex::index of an identity (no element): larger than every real index, so it never wins a tie.
inline constexpr std::int64_t no_index = detail::numeric_limits<std::int64_t>::max();

template <class T>
struct ValueIndex {
  T value;
  std::int64_t index;  ///< flat index within the reduced axes (unflatten() gives coordinates)
};

template <class T>
struct MinMaxPair {
  T min;
  T max;
};

enum class VarianceKind { population, sample };

struct Moments {
  double count;  ///< number of elements (exact below 2^53)
  double mean;
  double m2;  ///< sum of squared deviations from the mean
  /// NaN for an empty set.
  [[nodiscard]] TALLY_HD double mean_or_nan() const {
    return count > 0 ? mean : detail::numeric_limits<double>::quiet_NaN();
  }
  /// m2 / count (population) or m2 / (count - 1) (sample); NaN when that divides by zero or less.
  [[nodiscard]] TALLY_HD double variance(VarianceKind kind = VarianceKind::population) const {
    const double d = kind == VarianceKind::sample ? count - 1 : count;
    return d > 0 ? m2 / d : detail::numeric_limits<double>::quiet_NaN();
  }
};

namespace detail {
/// Whether a wins over b for an arg-reduction (Greater: ArgMax). A total order on (value, index).
/// Bitwise & and | rather than && and ||: no branches, so a CPU's predictor has nothing to miss on
/// random data (a pairwise tree's comparisons are coin flips).
template <bool Greater, class T>
TALLY_HD bool arg_wins(const ValueIndex<T>& a, const ValueIndex<T>& b) {
  const bool better = Greater ? a.value > b.value : a.value < b.value;
  const bool first = a.index < b.index;
  const bool w = better | ((a.value == b.value) & first);
  if constexpr (std::is_floating_point_v<T>) {
    const bool an = is_nan(a.value), bn = is_nan(b.value);
    return (an & (!bn | first)) | (!an & !bn & w);
  } else {
    return w;
  }
}

/// a or b, field by field (selects rather than a branch over the struct).
template <class T>
TALLY_HD ValueIndex<T> arg_select(bool a_wins, const ValueIndex<T>& a, const ValueIndex<T>& b) {
  return {a_wins ? a.value : b.value, a_wins ? a.index : b.index};
}

template <class T>
TALLY_HD T lowest_or_neg_inf() {
  if constexpr (std::is_floating_point_v<T>) return -numeric_limits<T>::infinity();
  else return numeric_limits<T>::lowest();
}
template <class T>
TALLY_HD T highest_or_inf() {
  if constexpr (std::is_floating_point_v<T>) return numeric_limits<T>::infinity();
  else return numeric_limits<T>::max();
}

/// max / min with NaN -> canonical NaN and -0 < +0: the result is one of a total order's elements.
template <bool Greater, class T>
TALLY_HD T select_total(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (is_nan(a) || is_nan(b)) return numeric_limits<T>::quiet_NaN();
    if (a == b) {  // equal: only +0 and -0 differ; 1/x tells them apart (-inf for -0)
      if (a != T(0)) return a;
      const bool a_neg = T(1) / a < T(0);
      return (Greater ? a_neg : !a_neg) ? b : a;
    }
  }
  return (Greater ? a > b : a < b) ? a : b;
}
}  // namespace detail

// The lane loops below vectorise with OpenMP's simd (the library's build has it; elsewhere the
// pragma is left out and the loops stay scalar, with the same results).
#if defined(_OPENMP)
#define TALLY_RUN_SIMD _Pragma("omp simd")
#else
#define TALLY_RUN_SIMD
#endif

namespace detail {
/// CPU fold of a contiguous run for the library's reducers (reducer.hpp's optional fold_run): blocks
/// of run_block elements whose extremes / sums are computed in run_lanes independent lanes (which the
/// compiler vectorises without reassociating anything), each block joined with combine(). Results are
/// those of folding element by element with combine (arg-reductions, MinMax: a total order, so the
/// same bits as any tree) or, for MeanVar, a fixed order: deterministic.
inline constexpr int run_lanes = 8;
inline constexpr std::int64_t run_block = 64;

/// max (Greater) or min of x[0..n), exact when *special comes back false; *special is set when a
/// NaN or an infinity is there (tracked as a sum of x - x, which is 0 for every finite x: plain
/// arithmetic that vectorises, where a boolean flag did not). Callers fold such blocks one element
/// at a time with combine().
template <bool Greater, class T>
inline T run_extreme(const T* x, std::int64_t n, bool* special) {
  T m[run_lanes], sp[run_lanes];
  for (int l = 0; l < run_lanes; ++l) m[l] = x[0], sp[l] = T(0);
  std::int64_t k = 0;
  for (; k + run_lanes <= n; k += run_lanes) {
    TALLY_RUN_SIMD
    for (int l = 0; l < run_lanes; ++l) {
      const T v = x[k + l];
      m[l] = (Greater ? v > m[l] : v < m[l]) ? v : m[l];
      if constexpr (std::is_floating_point_v<T>) sp[l] += v - v;
    }
  }
  for (; k < n; ++k) {
    m[0] = (Greater ? x[k] > m[0] : x[k] < m[0]) ? x[k] : m[0];
    if constexpr (std::is_floating_point_v<T>) sp[0] += x[k] - x[k];
  }
  T r = m[0];
  bool u = sp[0] != T(0);
  for (int l = 1; l < run_lanes; ++l) r = (Greater ? m[l] > r : m[l] < r) ? m[l] : r, u |= sp[l] != T(0);
  *special = u;
  return r;
}

/// min and max of x[0..n) in one pass, as run_extreme, in minmax_lanes lanes (the two extremes'
/// chains and the check's need more registers in flight than one extreme's). The check is a plain
/// sum of x: NaN or infinite exactly when a NaN or an infinity is there or the sum overflowed (the
/// caller's slow path is then merely unneeded), one add per element where x - x would take two.
inline constexpr int minmax_lanes = 16;
inline constexpr std::int64_t minmax_block = 4096;  ///< MinMax::fold_run's blocks: the join per block amortised
template <class T>
inline void run_minmax(const T* x, std::int64_t n, T* mn, T* mx, bool* special) {
  constexpr int L = minmax_lanes;
  T lo[L], hi[L], sp[L];
  for (int l = 0; l < L; ++l) lo[l] = hi[l] = x[0], sp[l] = T(0);
  std::int64_t k = 0;
  for (; k + L <= n; k += L) {
    TALLY_RUN_SIMD
    for (int l = 0; l < L; ++l) {
      const T v = x[k + l];
      lo[l] = v < lo[l] ? v : lo[l];
      hi[l] = v > hi[l] ? v : hi[l];
      if constexpr (std::is_floating_point_v<T>) sp[l] += v;
    }
  }
  for (; k < n; ++k) {
    lo[0] = x[k] < lo[0] ? x[k] : lo[0];
    hi[0] = x[k] > hi[0] ? x[k] : hi[0];
    if constexpr (std::is_floating_point_v<T>) sp[0] += x[k];
  }
  bool u = false;
  for (int l = 0; l < L; ++l) {
    lo[0] = lo[l] < lo[0] ? lo[l] : lo[0], hi[0] = hi[l] > hi[0] ? hi[l] : hi[0];
    if constexpr (std::is_floating_point_v<T>) u |= sp[l] - sp[l] != T(0);  // NaN for NaN and +-inf
  }
  *mn = lo[0], *mx = hi[0], *special = u;
}

/// ArgMax/ArgMin: a block whose extreme cannot beat acc (no NaN, worse, or equal with acc's index
/// first) is skipped after its vectorised extreme; otherwise it is folded element by element.
template <bool Greater, class R, class T>
inline ValueIndex<T> arg_fold_run(ValueIndex<T> acc, const T* x, std::int64_t n, std::int64_t index0) {
  for (std::int64_t b = 0; b < n; b += run_block) {
    const std::int64_t len = n - b < run_block ? n - b : run_block;
    bool nan = false;
    const T m = run_extreme<Greater>(x + b, len, &nan);
    if constexpr (std::is_floating_point_v<T>)
      if (is_nan(acc.value)) return acc;  // an earlier NaN: nothing later wins
    const bool worse = Greater ? m < acc.value : m > acc.value;
    if (!nan && (worse || (m == acc.value && acc.index < index0 + b))) continue;
    for (std::int64_t k = 0; k < len; ++k) acc = R::combine(acc, {x[b + k], index0 + b + k});
  }
  return acc;
}
}  // namespace detail

/// Largest value and the first index holding it (NaN: the first NaN).
template <class T>
struct ArgMax {
  using value_type = ValueIndex<T>;
  static constexpr const char* name = "argmax";
  static constexpr bool needs_input = true;
  TALLY_HD static value_type identity() { return {detail::lowest_or_neg_inf<T>(), no_index}; }
  TALLY_HD static value_type load(T x, std::int64_t index) { return {x, index}; }
  TALLY_HD static value_type combine(const value_type& a, const value_type& b) {
    return detail::arg_select(detail::arg_wins<true>(a, b), a, b);
  }
  /// CPU: acc joined with x[0..n) (flat indices index0, ...), vectorised (reducer.hpp's fold_run).
  static value_type fold_run(value_type acc, const T* x, std::int64_t n, std::int64_t index0) {
    return detail::arg_fold_run<true, ArgMax>(acc, x, n, index0);
  }
};

/// Smallest value and the first index holding it (NaN: the first NaN).
template <class T>
struct ArgMin {
  using value_type = ValueIndex<T>;
  static constexpr const char* name = "argmin";
  static constexpr bool needs_input = true;
  TALLY_HD static value_type identity() { return {detail::highest_or_inf<T>(), no_index}; }
  TALLY_HD static value_type load(T x, std::int64_t index) { return {x, index}; }
  TALLY_HD static value_type combine(const value_type& a, const value_type& b) {
    return detail::arg_select(detail::arg_wins<false>(a, b), a, b);
  }
  static value_type fold_run(value_type acc, const T* x, std::int64_t n, std::int64_t index0) {
    return detail::arg_fold_run<false, ArgMin>(acc, x, n, index0);
  }
};

/// Smallest and largest value in one pass.
template <class T>
struct MinMax {
  using value_type = MinMaxPair<T>;
  static constexpr const char* name = "minmax";
  TALLY_HD static value_type identity() { return {detail::highest_or_inf<T>(), detail::lowest_or_neg_inf<T>()}; }
  TALLY_HD static value_type load(T x) { return {x, x}; }
  TALLY_HD static value_type combine(const value_type& a, const value_type& b) {
    return {detail::select_total<false>(a.min, b.min), detail::select_total<true>(a.max, b.max)};
  }
  /// CPU: vectorised extremes per block; a zero extreme looks for the other sign (-0 < +0).
  static value_type fold_run(value_type acc, const T* x, std::int64_t n, std::int64_t) {
    for (std::int64_t b = 0; b < n; b += detail::minmax_block) {
      const std::int64_t len = n - b < detail::minmax_block ? n - b : detail::minmax_block;
      bool nan = false;
      value_type v;
      detail::run_minmax(x + b, len, &v.min, &v.max, &nan);
      if constexpr (std::is_floating_point_v<T>) {
        if (nan) {  // a NaN or an infinity: this block one element at a time
          for (std::int64_t k = 0; k < len; ++k) acc = combine(acc, {x[b + k], x[b + k]});
          continue;
        }
        for (std::int64_t k = 0; (v.min == T(0) || v.max == T(0)) && k < len; ++k)
          if (x[b + k] == T(0)) v = combine(v, {x[b + k], x[b + k]});
      }
      acc = combine(acc, v);
    }
    return acc;
  }
};

/// Count, mean and M2 (Welford/Chan) in double, for any arithmetic input.
struct MeanVar {
  using value_type = Moments;
  static constexpr const char* name = "meanvar";
  TALLY_HD static value_type identity() { return {0.0, 0.0, 0.0}; }
  template <class T>
  /// One element's M2 is (x - x)^2: 0, but NaN for a NaN or an infinity, so a one-element result keeps
  /// the NaN (as NumPy's var): with 0 a single NaN's variance read 0 (a segment of length 1).
  TALLY_HD static value_type load(T x) {
    const double v = static_cast<double>(x);
    return {1.0, v, v - v};
  }
  /// Chan et al.: n = na + nb, d = mean_b - mean_a, mean = mean_a + d nb/n, M2 = M2a + M2b + d^2 na nb/n.
  /// Where both counts are known at compile time (a tree over loaded elements), nb/n is a constant:
  /// the engine's batch trees cost no division.
  TALLY_HD static value_type combine(const value_type& a, const value_type& b) {
    if (b.count == 0) return a;
    if (a.count == 0) return b;
    const double n = a.count + b.count;
    const double d = b.mean - a.mean;
    const double f = b.count / n;
    return {n, a.mean + d * f, a.m2 + b.m2 + d * d * a.count * f};
  }
  /// CPU: blocks of run_block elements, each block's mean and M2 by the two-pass formula in double
  /// (lanes the compiler vectorises), Chan-merged into acc in block order. Four blocks' moments are
  /// taken before any is merged: their lane sums, divisions and merges are serial chains that one
  /// block at a time left the core waiting on (1.25x in cache, one thread); the bits are the same.
  template <class T>
  static value_type fold_run(value_type acc, const T* x, std::int64_t n, std::int64_t) {
    constexpr std::int64_t B = detail::run_block;
    std::int64_t b = 0;
    for (; b + 4 * B <= n; b += 4 * B) {
      const value_type m0 = block_moments<true>(x + b, B), m1 = block_moments<true>(x + b + B, B);
      const value_type m2 = block_moments<true>(x + b + 2 * B, B), m3 = block_moments<true>(x + b + 3 * B, B);
      acc = combine(combine(combine(combine(acc, m0), m1), m2), m3);
    }
    for (; b < n; b += B) acc = combine(acc, block_moments<false>(x + b, n - b < B ? n - b : B));
    return acc;
  }

 private:
  /// (count, mean, M2) of p[0..len), len <= run_block (Full: len == run_block, no tail loops).
  template <bool Full, class T>
  static value_type block_moments(const T* p, std::int64_t len) {
    constexpr int L = detail::run_lanes;
    if constexpr (Full) len = detail::run_block;
    double s[L] = {}, q[L] = {};
    std::int64_t k = 0;
    for (; k + L <= len; k += L) {
      TALLY_RUN_SIMD
      for (int l = 0; l < L; ++l) s[l] += static_cast<double>(p[k + l]);
    }
    if constexpr (!Full)
      for (; k < len; ++k) s[0] += static_cast<double>(p[k]);
    double sum = 0;
    for (int l = 0; l < L; ++l) sum += s[l];
    const double mean = sum / static_cast<double>(len);
    for (k = 0; k + L <= len; k += L) {
      TALLY_RUN_SIMD
      for (int l = 0; l < L; ++l) {
        const double d = static_cast<double>(p[k + l]) - mean;
        q[l] += d * d;
      }
    }
    if constexpr (!Full)
      for (; k < len; ++k) q[0] += (static_cast<double>(p[k]) - mean) * (static_cast<double>(p[k]) - mean);
    double m2 = 0;
    for (int l = 0; l < L; ++l) m2 += q[l];
    return {static_cast<double>(len), mean, m2};
  }
};

/// The (reducer, input) pairs compiled into tally::reduce (both backends).
template <class R, class T>
inline constexpr bool is_compiled_reducer =
    (std::is_same_v<T, std::int32_t> || std::is_same_v<T, std::int64_t> || std::is_same_v<T, float> ||
     std::is_same_v<T, double>)&&(std::is_same_v<R, ArgMax<T>> || std::is_same_v<R, ArgMin<T>> ||
                                  std::is_same_v<R, MinMax<T>> || std::is_same_v<R, MeanVar>);

}  // namespace tally::reduce

/// X(R, T) for every compiled (reducer, input) pair.
#define TALLY_REDUCERS_FOR_TYPE(X, T) \
  X(::tally::reduce::ArgMax<T>, T)    \
  X(::tally::reduce::ArgMin<T>, T) X(::tally::reduce::MinMax<T>, T) X(::tally::reduce::MeanVar, T)
#define TALLY_REDUCERS_FOR_EACH(X)         \
  TALLY_REDUCERS_FOR_TYPE(X, std::int32_t) \
  TALLY_REDUCERS_FOR_TYPE(X, std::int64_t) TALLY_REDUCERS_FOR_TYPE(X, float) TALLY_REDUCERS_FOR_TYPE(X, double)
