#pragma once
// The library's operators by code (tally.OPS' order) and the (operator, input, accumulator) dispatch
// shared by tally.reduce (reduce_binding.cpp) and tally.segment_reduce (segments_binding.cpp).
#include "arrays.hpp"

#include <string>
#include <type_traits>

namespace tally::python {

enum Op : int { sum, prod, max, min, band, bor, bxor, land, lor, exact_sum, n_ops };
inline constexpr const char* op_names[] = {"sum", "prod", "max", "min", "band", "bor", "bxor", "land", "lor", "exact_sum"};

/// f.template operator()<Op, T, Acc>() for the operator code and the dtype codes of x and the
/// accumulator, where the library compiles that triple; TypeError naming out/acc_dtype otherwise.
template <class F>
void with_op_types(int op, int x_dtype, int acc_dtype, F&& f) {
  const auto bad = [&]() {
    throw nanobind::type_error(("out/acc_dtype: " + std::string(dtype_names[acc_dtype]) + " is not an accumulator of op='" +
                                op_names[op] + "' for x of dtype " + dtype_names[x_dtype] +
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
    default: throw nanobind::value_error(("op: unknown operator code " + std::to_string(op)).c_str());
  }
}

}  // namespace tally::python
