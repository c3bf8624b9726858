#pragma once
// The library's operators and reducers by code (tally.OPS' and _tally.REDUCERS' order) and their
// dispatch on the dtypes, shared by tally.reduce (reduce_binding.cpp), the reducers
// (reducers_binding.cpp) and tally.segment_reduce (segments_binding.cpp).
#include "arrays.hpp"

#include <algorithm>
#include <string>
#include <type_traits>

namespace tally::python {

enum Op : int { sum, prod, max, min, band, bor, bxor, land, lor, exact_sum, mean, n_ops };
inline constexpr const char* op_names[] = {"sum",  "prod", "max", "min",       "band", "bor",
                                           "bxor", "land", "lor", "exact_sum", "mean"};

/// f.template operator()<Op, T, Acc>() for the operator code and the dtype codes of x and the
/// accumulator, where the library compiles that triple; TypeError naming out/acc_dtype otherwise.
template <class F>
void with_op_types(int op, int x_dtype, int acc_dtype, F&& f) {
  const auto bad = [&]() {
    throw nanobind::type_error(("out/acc_dtype: " + std::string(dtype_names[acc_dtype]) +
                                " is not an accumulator of op='" + op_names[op] + "' for x of dtype " +
                                dtype_names[x_dtype] +
                                " (same type; int32 -> int64, float32 -> float64; bit and logical ops need integers)")
                                   .c_str());
  };
  const auto types = [&]<class Op>() {
    const auto go = [&]<class T, class Acc>() {
      // Bit and logical ops are compiled with Acc == T only (reduce/src/instantiate.hpp), although
      // is_supported also admits int32 -> int64 for them.
      if constexpr (tr::is_supported<Op, T, Acc> && (!tr::is_bitwise_op<Op> || std::is_same_v<T, Acc>))
        f.template operator()<Op, T, Acc>();
      else bad();
    };
    switch (x_dtype * 4 + acc_dtype) {
      case i32 * 4 + i32: return go.template operator()<std::int32_t, std::int32_t>();
      case i32 * 4 + i64: return go.template operator()<std::int32_t, std::int64_t>();
      case i64 * 4 + i64: return go.template operator()<std::int64_t, std::int64_t>();
      case f32 * 4 + f32: return go.template operator()<float, float>();
      case f32 * 4 + f64: return go.template operator()<float, double>();
      case f64 * 4 + f64: return go.template operator()<double, double>();
      default: bad();
    }
  };
  switch (op) {
    case sum: return types.template operator()<tr::Sum>();
    case prod: return types.template operator()<tr::Prod>();
    case max: return types.template operator()<tr::Max>();
    case min: return types.template operator()<tr::Min>();
    case band: return types.template operator()<tr::BitAnd>();
    case bor: return types.template operator()<tr::BitOr>();
    case bxor: return types.template operator()<tr::BitXor>();
    case land: return types.template operator()<tr::LogicalAnd>();
    case lor: return types.template operator()<tr::LogicalOr>();
    case exact_sum: return types.template operator()<tr::ExactSum>();
    case mean: return types.template operator()<tr::Mean>();
    default: throw nanobind::value_error(("op: unknown operator code " + std::to_string(op)).c_str());
  }
}

/// tally.reduce's checks of out against x, the operator and the axis set, and x's view to launch on
/// (xx, m); nothing is launched. False: nothing to write (an empty kept axis). `stream` is checked
/// to be x's device's unless it is 0 (reduce_binding.cpp).
bool prepare_reduce(const Desc& x, const Desc& out, int op, std::uint64_t mask, std::uintptr_t stream, Desc& xx,
                    Mapped& m);
/// Launches operator `op` on a prepared view into out (C-contiguous, of the accumulator dtype).
void dispatch_op(const Desc& xx, const Mapped& m, Desc& out, std::uintptr_t stream, int op);

enum Reducer : int { argmax, argmin, minmax, meanvar, n_reducers };
inline constexpr const char* reducer_names[] = {"argmax", "argmin", "minmax", "meanvar"};

/// f.template operator()<R, T>() for the reducer code and x's dtype code.
template <class F>
decltype(auto) with_reducer(int reducer, int dtype, F&& f) {
  const auto on = [&]<class T>() -> decltype(auto) {
    switch (reducer) {
      case argmax: return f.template operator()<tr::ArgMax<T>, T>();
      case argmin: return f.template operator()<tr::ArgMin<T>, T>();
      case minmax: return f.template operator()<tr::MinMax<T>, T>();
      default: return f.template operator()<tr::MeanVar, T>();
    }
  };
  switch (dtype) {
    case i32: return on.template operator()<std::int32_t>();
    case i64: return on.template operator()<std::int64_t>();
    case f32: return on.template operator()<float>();
    default: return on.template operator()<double>();
  }
}

/// A reducer's checks of out (the struct buffer, check_struct_out) against x and the axis set, and
/// x's view to launch on; nothing is launched. False: nothing to write. ArgOrderError where an
/// arg-reduction's reduced axes lie in another order than x's. `stream`: as prepare_reduce's.
bool prepare_reducer(const Desc& x, const Desc& out, int reducer, std::uint64_t mask, std::uintptr_t stream, Desc& xx,
                     Mapped& m);
/// The compiled paths' form (NumPy, PyTorch): out described as the C-contiguous struct buffer of
/// shape (*kept, words) on x's device (its data still to be set), and prepare_reducer's view; false
/// where the call must go the general path (nothing to write, or a refusal: that path raises it).
bool prepare_reducer_fast(const Desc& x, int reducer, std::uint64_t mask, Desc& out, Desc& xx, Mapped& m);
/// Launches the reducer on a prepared view into out (the struct buffer, shape (*kept, words)).
void dispatch_reducer(const Desc& xx, const Mapped& m, const Desc& out, std::uintptr_t stream, int reducer);

/// 8-byte words per value_type (the buffer's last axis).
inline std::int64_t words_of(int reducer, int dtype) {
  return with_reducer(reducer, dtype, []<class R, class T>() -> std::int64_t {
    static_assert(sizeof(typename R::value_type) % 8 == 0, "value_type is a whole number of int64 words");
    return static_cast<std::int64_t>(sizeof(typename R::value_type) / 8);
  });
}

/// out: the int64 buffer of the reducer's value_type structs, of shape (*want[0:rank], words) and
/// C-contiguous, on x's device (the Python side allocates it with x's family).
inline void check_struct_out(const Desc& x, const Desc& out, std::int64_t* want, int rank, int reducer) {
  if (reducer < 0 || reducer >= n_reducers)
    throw nanobind::value_error(("reducer: unknown reducer code " + std::to_string(reducer)).c_str());
  want[rank] = words_of(reducer, x.dtype);
  if (out.dtype != i64 || out.ndim != rank + 1 || !std::equal(want, want + rank + 1, out.shape))
    throw nanobind::value_error(("out: must be an int64 buffer of shape " + shape_str(want, rank + 1) + ", got " +
                                 dtype_names[out.dtype] + " " + shape_str(out.shape, out.ndim))
                                    .c_str());
  check_out_layout(x, out);
}

/// A reducer's results as the compiled calls return them: `want` bit 0 the first, bit 1 the second;
/// both as a tuple, one alone as itself (reducer_host, reducer_torch).
inline nanobind::object picked(nanobind::handle first, nanobind::handle second, int want) {
  if (want == 3) return nanobind::make_tuple(first, second);
  return nanobind::borrow(want == 1 ? first : second);
}

}  // namespace tally::python
