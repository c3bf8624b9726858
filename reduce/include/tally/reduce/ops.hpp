#pragma once
// Reduction operators in the Kokkos style: each carries its identity and its join (combine).
// All are commutative and associative in exact arithmetic; the library fixes the combination order
// so that floating-point results are reproducible (see reduce.hpp, "Determinism").
//
// NaN rule: Max and Min PROPAGATE NaN: a NaN anywhere in the input gives NaN. This differs from
// cub::Max / fmax, which drop NaN. A diverging solver whose residual is NaN must never look converged.

#include <cstdint>
#include <type_traits>

#include "tally/reduce/config.hpp"

#if defined(__CUDACC__)
#include <cuda/std/limits>
namespace tally::reduce::detail {
using ::cuda::std::numeric_limits;
}  // namespace tally::reduce::detail
#else
#include <limits>
namespace tally::reduce::detail {
using std::numeric_limits;
}
#endif

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#include <cuda/std/type_traits>
namespace tally::reduce::detail {
// NaN-propagating float max/min in one instruction (PTX max.NaN/min.NaN, sm_80+); the portable
// form below is a dependent compare, compare, select: 3x the latency in a fold's chain.
__device__ __forceinline__ float max_nan(float a, float b) {
  float r;
  asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}
__device__ __forceinline__ float min_nan(float a, float b) {
  float r;
  asm("min.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}
}  // namespace tally::reduce::detail
#define TALLY_FLOAT_MINMAX_NAN 1
#endif

namespace tally::reduce {

template <class T>
TALLY_HD constexpr bool is_nan(T x) {
  if constexpr (std::is_floating_point_v<T>) return x != x;
  else return false;
}

struct Sum {
  static constexpr const char* name = "sum";
  template <class T>
  TALLY_HD static constexpr T identity() {
    return T(0);
  }
  template <class T>
  TALLY_HD static constexpr T combine(T a, T b) {
    return a + b;
  }
};

/// The arithmetic mean: Sum's tree in the accumulator (so Sum's speed and bits), then each output
/// divided once by its element count (finish). Floating-point accumulators only (float -> float or
/// double, double -> double), as PyTorch's mean. NaN propagates as through a sum; the mean of nothing
/// is NaN (0 / 0), as MeanVar's. For values whose sum cancels badly, MeanVar (reducers.hpp) keeps the
/// mean in double by Welford/Chan, at the price of a slower CPU loop.
struct Mean {
  static constexpr const char* name = "mean";
  template <class T>
  TALLY_HD static constexpr T identity() {
    return T(0);
  }
  template <class T>
  TALLY_HD static constexpr T combine(T a, T b) {
    return a + b;
  }
  /// The output from its sum over `count` elements.
  template <class T>
  TALLY_HD static constexpr T finish(T sum, std::int64_t count) {
    return sum / static_cast<T>(count);
  }
};

namespace detail {
/// An output's value from its accumulator (Op::finish where the operator has one: Mean); `count`
/// elements were combined into it.
template <class Op, class Acc>
TALLY_HD constexpr Acc op_finish(Acc acc, std::int64_t count) {
  if constexpr (requires { Op::template finish<Acc>(acc, count); }) return Op::template finish<Acc>(acc, count);
  else {
    (void)count;
    return acc;
  }
}
}  // namespace detail

struct Prod {
  static constexpr const char* name = "prod";
  template <class T>
  TALLY_HD static constexpr T identity() {
    return T(1);
  }
  template <class T>
  TALLY_HD static constexpr T combine(T a, T b) {
    return a * b;
  }
};

struct Max {
  static constexpr const char* name = "max";
  template <class T>
  TALLY_HD static constexpr T identity() {
    if constexpr (std::is_floating_point_v<T>) return -detail::numeric_limits<T>::infinity();
    else return detail::numeric_limits<T>::lowest();
  }
  // (a > b || a is NaN) ? a : b  — a NaN in either argument wins.
  template <class T>
  TALLY_HD static constexpr T combine(T a, T b) {
#ifdef TALLY_FLOAT_MINMAX_NAN
    if constexpr (std::is_same_v<T, float>)
      if (!::cuda::std::is_constant_evaluated()) return detail::max_nan(a, b);
#endif
    return (a > b || is_nan(a)) ? a : b;
  }
};

struct Min {
  static constexpr const char* name = "min";
  template <class T>
  TALLY_HD static constexpr T identity() {
    if constexpr (std::is_floating_point_v<T>) return detail::numeric_limits<T>::infinity();
    else return detail::numeric_limits<T>::max();
  }
  template <class T>
  TALLY_HD static constexpr T combine(T a, T b) {
#ifdef TALLY_FLOAT_MINMAX_NAN
    if constexpr (std::is_same_v<T, float>)
      if (!::cuda::std::is_constant_evaluated()) return detail::min_nan(a, b);
#endif
    return (a < b || is_nan(a)) ? a : b;
  }
};

/// The exact sum: reduce<ExactSum, T, Out> sums float or double inputs exactly and rounds the result
/// once, to nearest even, to Out (float -> float, float -> double, double -> double). Bitwise the
/// same on every backend, level set, thread count and launch shape (see exact.hpp). Not a
/// Kokkos-style join: the backends route it to their exact kernels; identity() is an empty sum.
struct ExactSum {
  static constexpr const char* name = "exact_sum";
  template <class T>
  TALLY_HD static constexpr T identity() {
    return T(0);
  }
};

// OpenACC's remaining reduction operators, for integer types only.
struct BitAnd {
  static constexpr const char* name = "band";
  template <class T>
  TALLY_HD static constexpr T identity() {
    return static_cast<T>(~T(0));
  }
  template <class T>
  TALLY_HD static constexpr T combine(T a, T b) {
    return a & b;
  }
};
struct BitOr {
  static constexpr const char* name = "bor";
  template <class T>
  TALLY_HD static constexpr T identity() {
    return T(0);
  }
  template <class T>
  TALLY_HD static constexpr T combine(T a, T b) {
    return a | b;
  }
};
struct BitXor {
  static constexpr const char* name = "bxor";
  template <class T>
  TALLY_HD static constexpr T identity() {
    return T(0);
  }
  template <class T>
  TALLY_HD static constexpr T combine(T a, T b) {
    return a ^ b;
  }
};
/// Logical and/or: the result is 1 or 0 in the accumulator type (non-zero input counts as true).
struct LogicalAnd {
  static constexpr const char* name = "land";
  template <class T>
  TALLY_HD static constexpr T identity() {
    return T(1);
  }
  template <class T>
  TALLY_HD static constexpr T combine(T a, T b) {
    return T(a != T(0) && b != T(0));
  }
};
struct LogicalOr {
  static constexpr const char* name = "lor";
  template <class T>
  TALLY_HD static constexpr T identity() {
    return T(0);
  }
  template <class T>
  TALLY_HD static constexpr T combine(T a, T b) {
    return T(a != T(0) || b != T(0));
  }
};

template <class Op>
inline constexpr bool is_bitwise_op =
    std::is_same_v<Op, BitAnd> || std::is_same_v<Op, BitOr> || std::is_same_v<Op, BitXor> ||
    std::is_same_v<Op, LogicalAnd> || std::is_same_v<Op, LogicalOr>;

/// The (Op, input, accumulator) combinations the compiled backends provide.
template <class Op, class T, class Acc>
inline constexpr bool is_supported =
    std::is_same_v<Op, ExactSum> || std::is_same_v<Op, Mean>
        ? (std::is_same_v<T, float> && (std::is_same_v<Acc, float> || std::is_same_v<Acc, double>)) ||
              (std::is_same_v<T, double> && std::is_same_v<Acc, double>)
        : (std::is_same_v<T, std::int32_t> || std::is_same_v<T, std::int64_t> || std::is_same_v<T, float> ||
           std::is_same_v<T, double>)&&(std::is_same_v<Acc, T> ||
                                        (std::is_same_v<T, std::int32_t> && std::is_same_v<Acc, std::int64_t>) ||
                                        (std::is_same_v<T, float> && std::is_same_v<Acc, double>)) &&
              (!is_bitwise_op<Op> || std::is_integral_v<Acc>);

}  // namespace tally::reduce
