#pragma once
// The suite's cases and its independent reference (reduce_checks.hpp's first half): the (operator,
// input, accumulator) cases, a naive sequential loop over the view in the order (k, j, i) in long
// double for floating-point sums and products and int64 for integers, with the operators'
// identities and joins written out again here (independent of ops.hpp); the inputs; the shapes and
// layouts the suite runs on.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "tally/reduce/reduce.hpp"
#include "test_support.hpp"

namespace tally::test::reduce_checks {

using namespace tally::reduce;  // NOLINT: test code
using std::int32_t;
using std::int64_t;

// ---- the (operator, input, accumulator) cases -----------------------------------------------------

template <class Op_, class T_, class Acc_ = T_>
struct Case {
  using Op = Op_;
  using T = T_;
  using Acc = Acc_;
};
template <class... C>
struct CaseList {};

template <class T>
const char* type_name() {
  if constexpr (std::is_same_v<T, int32_t>) return "int32";
  else if constexpr (std::is_same_v<T, int64_t>) return "int64";
  else if constexpr (std::is_same_v<T, float>) return "float";
  else return "double";
}

#define TALLY_ARITH_CASES(T, Acc) Case<Sum, T, Acc>, Case<Prod, T, Acc>, Case<Max, T, Acc>, Case<Min, T, Acc>
#define TALLY_BIT_CASES(T) Case<BitAnd, T>, Case<BitOr, T>, Case<BitXor, T>, Case<LogicalAnd, T>, Case<LogicalOr, T>
#define TALLY_ALL_CASES                                                                                          \
  TALLY_ARITH_CASES(int32_t, int32_t), TALLY_ARITH_CASES(int32_t, int64_t), TALLY_ARITH_CASES(int64_t, int64_t), \
      TALLY_ARITH_CASES(float, float), TALLY_ARITH_CASES(float, double), TALLY_ARITH_CASES(double, double),      \
      TALLY_BIT_CASES(int32_t), TALLY_BIT_CASES(int64_t)
/// Every combination the library compiles with a segmented form: 4 operators x 6 (input, accumulator)
/// pairs + 5 x 2 integer ones.
using AllCases = CaseList<TALLY_ALL_CASES>;
/// Every combination reduce() has: those and the mean's 3 floating ones.
using ReduceCases = CaseList<TALLY_ALL_CASES, Case<Mean, float>, Case<Mean, float, double>, Case<Mean, double>>;
using FloatMaxMinCases = CaseList<Case<Max, float>, Case<Min, float>, Case<Max, float, double>,
                                  Case<Min, float, double>, Case<Max, double>, Case<Min, double>>;
#undef TALLY_ARITH_CASES
#undef TALLY_BIT_CASES
#undef TALLY_ALL_CASES

template <class... C, class F>
void for_each_case(CaseList<C...>, F&& f) {
  (f(C{}), ...);
}

template <class Op, class T, class Acc>
std::string case_name() {
  return std::string(Op::name) + "<" + type_name<T>() +
         (std::is_same_v<T, Acc> ? "" : std::string("->") + type_name<Acc>()) + ">";
}

// ---- the reference: written out again, independent of ops.hpp -------------------------------------

template <class Op>
constexpr bool is_fp_arith(bool fp) {
  return fp && (std::is_same_v<Op, Sum> || std::is_same_v<Op, Prod> || std::is_same_v<Op, Mean>);
}

/// What the reference accumulates in: long double for floating-point sums and products, int64 for
/// integer sums and products, the accumulator type itself for the exact operators.
template <class Op, class Acc>
using RefType =
    std::conditional_t<is_fp_arith<Op>(std::is_floating_point_v<Acc>), long double,
                       std::conditional_t<std::is_same_v<Op, Sum> || std::is_same_v<Op, Prod>, int64_t, Acc>>;

template <class Op, class R>
R ref_identity() {
  if constexpr (std::is_same_v<Op, Sum> || std::is_same_v<Op, Mean> || std::is_same_v<Op, BitOr> ||
                std::is_same_v<Op, BitXor> || std::is_same_v<Op, LogicalOr>)
    return R(0);
  else if constexpr (std::is_same_v<Op, Prod> || std::is_same_v<Op, LogicalAnd>) return R(1);
  else if constexpr (std::is_same_v<Op, BitAnd>) return R(-1);  // all bits set
  else if constexpr (std::is_same_v<Op, Max>)
    return std::is_floating_point_v<R> ? -std::numeric_limits<R>::infinity() : std::numeric_limits<R>::min();
  else return std::is_floating_point_v<R> ? std::numeric_limits<R>::infinity() : std::numeric_limits<R>::max();
}

template <class Op, class R>
R ref_join(R a, R b) {
  if constexpr (std::is_same_v<Op, Sum> || std::is_same_v<Op, Mean>) return a + b;
  else if constexpr (std::is_same_v<Op, Prod>) return a * b;
  else if constexpr (std::is_same_v<Op, Max>)
    return std::isnan(static_cast<double>(a)) || std::isnan(static_cast<double>(b))
               ? std::numeric_limits<R>::quiet_NaN()
               : std::max(a, b);
  else if constexpr (std::is_same_v<Op, Min>)
    return std::isnan(static_cast<double>(a)) || std::isnan(static_cast<double>(b))
               ? std::numeric_limits<R>::quiet_NaN()
               : std::min(a, b);
  else if constexpr (std::is_same_v<Op, BitAnd>) return a & b;
  else if constexpr (std::is_same_v<Op, BitOr>) return a | b;
  else if constexpr (std::is_same_v<Op, BitXor>) return a ^ b;
  else if constexpr (std::is_same_v<Op, LogicalAnd>) return R(a != 0 && b != 0);
  else return R(a != 0 || b != 0);
}

template <class R>
struct Reference {
  std::vector<R> value;
  std::vector<long double> abs_sum;  ///< sum |x| per output (sum tolerances)
  std::vector<int64_t> count;        ///< elements per output
  std::vector<char> has_nan;         ///< a NaN among the output's elements
};

/// Reduces `levels` of the (ng, nw, nv) view at x with row strides (sw, sg), naively, in (k, j, i) order.
template <class Op, class T, class Acc>
Reference<RefType<Op, Acc>> reference(const T* x, Extents e, int64_t sw, int64_t sg, Levels levels) {
  using R = RefType<Op, Acc>;
  const bool keep[3] = {!levels.contains(Level::gang), !levels.contains(Level::worker),
                        !levels.contains(Level::vector)};
  const int64_t ext[3] = {e.ng, e.nw, e.nv};
  int64_t n_out = 1;
  for (int a = 0; a < 3; ++a)
    if (keep[a]) n_out *= ext[a];
  Reference<R> r;
  r.value.assign(static_cast<std::size_t>(n_out), ref_identity<Op, R>());
  r.abs_sum.assign(static_cast<std::size_t>(n_out), 0.0L);
  r.count.assign(static_cast<std::size_t>(n_out), 0);
  r.has_nan.assign(static_cast<std::size_t>(n_out), 0);
  // Output index o = k * mult[0] + j * mult[1] + i * mult[2], the reduced axes with multiplier 0.
  int64_t mult[3] = {0, 0, 0}, m = 1;
  for (int a = 2; a >= 0; --a)
    if (keep[a]) mult[a] = m, m *= ext[a];
  for (int64_t k = 0; k < e.ng; ++k)
    for (int64_t j = 0; j < e.nw; ++j)
      for (int64_t i = 0; i < e.nv; ++i) {
        const auto u = static_cast<std::size_t>(k * mult[0] + j * mult[1] + i * mult[2]);
        const T v = x[k * sg + j * sw + i];
        r.value[u] = ref_join<Op, R>(r.value[u], static_cast<R>(static_cast<Acc>(v)));
        r.abs_sum[u] += std::fabs(static_cast<long double>(v));
        r.count[u] += 1;
        if constexpr (std::is_floating_point_v<T>) r.has_nan[u] |= static_cast<char>(std::isnan(v));
      }
  if constexpr (std::is_same_v<Op, Mean>)  // the sum over the count: 0 / 0 = NaN for no element
    for (std::size_t u = 0; u < r.value.size(); ++u) r.value[u] /= static_cast<R>(r.count[u]);
  return r;
}

/// Whether `got` matches the reference within the tolerance the arithmetic allows.
template <class Op, class Acc, class R>
bool matches(Acc got, R ref, long double abs_sum, int64_t n) {
  if constexpr (std::is_floating_point_v<Acc>) {
    if (std::isnan(static_cast<long double>(ref))) return std::isnan(got);
    if (std::isnan(got)) return false;
    const long double eps = std::numeric_limits<Acc>::epsilon();
    const long double diff = std::fabs(static_cast<long double>(got) - static_cast<long double>(ref));
    if constexpr (std::is_same_v<Op, Sum>) return diff <= static_cast<long double>(n + 1) * eps * abs_sum;
    // The sum's bound over n, and the division's own rounding.
    else if constexpr (std::is_same_v<Op, Mean>)
      return diff <=
             static_cast<long double>(n + 1) * eps * abs_sum / static_cast<long double>(n) + eps * std::fabs(ref);
    else if constexpr (std::is_same_v<Op, Prod>) return diff <= static_cast<long double>(n + 1) * eps * std::fabs(ref);
    else return got == static_cast<Acc>(ref);  // max, min: exact
  } else {
    return static_cast<R>(got) == ref;  // integers: exact (the reference is int64)
  }
}

template <class T>
std::string show(T v) {
  std::ostringstream s;
  s.precision(std::numeric_limits<long double>::max_digits10);
  s << v;
  return s.str();
}

/// Compares every output; returns "" or a description of the first mismatches.
template <class Op, class Acc, class R>
std::string compare(const std::vector<Acc>& got, const Reference<R>& ref) {
  if (got.size() != ref.value.size())
    return "output size " + std::to_string(got.size()) + " != " + std::to_string(ref.value.size());
  std::string msg;
  int64_t bad = 0;
  for (std::size_t o = 0; o < got.size(); ++o) {
    if (matches<Op>(got[o], ref.value[o], ref.abs_sum[o], ref.count[o])) continue;
    if (++bad <= 3)
      msg += "out[" + std::to_string(o) + "] = " + show(got[o]) + ", reference " + show(ref.value[o]) +
             " (n = " + std::to_string(ref.count[o]) + "); ";
  }
  return bad == 0 ? "" : std::to_string(bad) + " of " + std::to_string(got.size()) + " outputs wrong: " + msg;
}

// ---- inputs -------------------------------------------------------------------------------------

/// Random inputs for operator Op over n elements (at most `per` per output): values whose result
/// is neither trivial nor out of range. Sums of int32 in int32 stay small; in int64 they use the
/// whole int32 range (an int32 accumulator would overflow). Integer products are +-1; floating
/// products are 2^u, u uniform in [-a, a] with a <= 1 so that the product of `per` stays far from
/// overflow and underflow.
template <class Op, class T, class Acc>
std::vector<T> make_input(std::size_t n, int64_t per, std::uint64_t salt) {
  auto g = tally::test::rng(salt);
  std::vector<T> v(n);
  if constexpr (std::is_floating_point_v<T>) {
    if constexpr (std::is_same_v<Op, Prod>) {
      const double a = std::min(1.0, 8.0 / std::sqrt(static_cast<double>(std::max<int64_t>(per, 1))));
      std::uniform_real_distribution<double> d(-a, a);
      for (auto& x : v) x = static_cast<T>(std::exp2(d(g)));
    } else {
      // Mean: mostly positive, so that the mean is not a cancellation's residue of the sum.
      const double lo = std::is_same_v<Op, Sum> ? -1.0 : std::is_same_v<Op, Mean> ? -1.0 : -1e3;
      const double hi = std::is_same_v<Op, Sum> ? 1.0 : std::is_same_v<Op, Mean> ? 3.0 : 1e3;
      std::uniform_real_distribution<double> d(lo, hi);
      for (auto& x : v) x = static_cast<T>(d(g));
    }
  } else {
    constexpr int bits = std::numeric_limits<T>::digits;  // value bits (31 or 63)
    const auto uniform = [&](int64_t lo, int64_t hi) {
      return static_cast<T>(std::uniform_int_distribution<int64_t>(lo, hi)(g));
    };
    for (auto& x : v) {
      if constexpr (std::is_same_v<Op, Sum>) {
        if constexpr (std::is_same_v<T, int64_t>) x = uniform(-(int64_t{1} << 40), int64_t{1} << 40);
        else if constexpr (std::is_same_v<T, Acc>) x = uniform(-1000, 1000);
        else x = uniform(std::numeric_limits<T>::min(), std::numeric_limits<T>::max());
      } else if constexpr (std::is_same_v<Op, Prod>) {
        x = uniform(0, 1) != 0 ? T(1) : T(-1);
      } else if constexpr (std::is_same_v<Op, BitAnd>) {  // mostly all ones, a few bits cleared
        const int64_t b = uniform(0, 8 * bits);
        x = b < bits ? static_cast<T>(~(int64_t{1} << b)) : T(-1);
      } else if constexpr (std::is_same_v<Op, BitOr>) {  // mostly zero, a few bits set
        const int64_t b = uniform(0, 8 * bits);
        x = b < bits ? static_cast<T>(int64_t{1} << b) : T(0);
      } else if constexpr (std::is_same_v<Op, LogicalAnd>) {
        x = uniform(0, 200);
      } else if constexpr (std::is_same_v<Op, LogicalOr>) {
        x = uniform(0, 200) == 0 ? uniform(1, 1000) : T(0);
      } else {  // max, min, xor: the whole range
        x = uniform(std::numeric_limits<T>::min(), std::numeric_limits<T>::max());
      }
    }
  }
  return v;
}

/// A value for the padding around a strided view that changes the result of Op if it is read.
template <class Op, class T>
T pad_value() {
  if constexpr (std::is_floating_point_v<T>) return std::numeric_limits<T>::quiet_NaN();
  else if constexpr (std::is_same_v<Op, Max> || std::is_same_v<Op, BitOr>) return std::numeric_limits<T>::max();
  else if constexpr (std::is_same_v<Op, Min>) return std::numeric_limits<T>::min();
  else if constexpr (std::is_same_v<Op, LogicalAnd> || std::is_same_v<Op, BitAnd>) return T(0);
  else if constexpr (std::is_same_v<Op, LogicalOr>) return T(7);
  else return T(3);  // sum, product, xor
}

// ---- shapes and layouts ---------------------------------------------------------------------------

/// Where a view lives in its host array: contiguous, or a sub-array of a larger padded array.
struct Layout {
  Extents ext;
  int64_t offset = 0, sw = 0, sg = 0, total = 0;
};

inline Layout make_layout(Extents e, bool strided) {
  Layout l{e};
  if (!strided) {
    l.sw = e.nv, l.sg = e.nw * e.nv, l.total = e.size();
    return l;
  }
  const int64_t NG = e.ng + 2, NW = e.nw + 3, NV = e.nv + 5;  // the larger array; the view starts at (1, 2, 3)
  l.sw = NV, l.sg = NW * NV, l.total = NG * NW * NV;
  l.offset = 1 * l.sg + 2 * l.sw + 3;
  return l;
}

inline std::string shape_name(Extents e, bool strided) {
  return "(" + std::to_string(e.ng) + ", " + std::to_string(e.nw) + ", " + std::to_string(e.nv) + ")" +
         (strided ? " strided" : "");
}

/// Shapes built from the extents 0, 1, 31, 32, 33, 1023, 1025 (and 2, 3, 4, 8, 16 for narrow rows);
/// strided, (1025, 33, 1) has no contiguous axis at all.
inline const std::vector<Extents>& matrix_shapes() {
  static const std::vector<Extents> s = {{0, 3, 5},     {4, 0, 7},     {2, 3, 0},     {1, 1, 1},     {31, 32, 33},
                                         {3, 1025, 31}, {33, 1, 1023}, {1, 33, 1025}, {1025, 31, 2}, {1023, 2, 32},
                                         {2, 1023, 8},  {32, 33, 4},   {31, 1025, 3}, {33, 31, 16},  {1025, 33, 1}};
  return s;
}

/// Sizes of the 1-D full reductions.
inline const std::vector<int64_t>& full_sizes() {
  static const std::vector<int64_t> s = {0, 1, 31, 32, 33, 1023, 1025, (int64_t{1} << 20) + 7};
  return s;
}

}  // namespace tally::test::reduce_checks
