#pragma once
// The (Op, T, Acc) combinations compiled into the backends: X(Op, T, Acc) for each.
// Kept in one list so the CPU and CUDA backends (and is_supported in ops.hpp) agree.

#include <cstdint>

#include "tally/reduce/ops.hpp"

#define TALLY_REDUCE_ARITH_OPS(X, T, Acc) \
  X(::tally::reduce::Sum, T, Acc)         \
  X(::tally::reduce::Prod, T, Acc) X(::tally::reduce::Max, T, Acc) X(::tally::reduce::Min, T, Acc)
#define TALLY_REDUCE_BIT_OPS(X, T) \
  X(::tally::reduce::BitAnd, T, T) \
  X(::tally::reduce::BitOr, T, T)  \
  X(::tally::reduce::BitXor, T, T) X(::tally::reduce::LogicalAnd, T, T) X(::tally::reduce::LogicalOr, T, T)

// X(Op, T, T): the combinations whose accumulator is the input type (the rank level's allreduce).
#define TALLY_REDUCE_FOR_EACH_SAME(X)                   \
  TALLY_REDUCE_ARITH_OPS(X, std::int32_t, std::int32_t) \
  TALLY_REDUCE_ARITH_OPS(X, std::int64_t, std::int64_t) \
  TALLY_REDUCE_ARITH_OPS(X, float, float)               \
  TALLY_REDUCE_ARITH_OPS(X, double, double)             \
  TALLY_REDUCE_BIT_OPS(X, std::int32_t)                 \
  TALLY_REDUCE_BIT_OPS(X, std::int64_t)

#define TALLY_REDUCE_FOR_EACH(X)                        \
  TALLY_REDUCE_FOR_EACH_SAME(X)                         \
  TALLY_REDUCE_ARITH_OPS(X, std::int32_t, std::int64_t) \
  TALLY_REDUCE_ARITH_OPS(X, float, double)

/// The mean (ops.hpp: Sum's kernels, each output divided by its count): floating accumulators only.
/// Not in the lists above: the rank level and the segmented reductions have no mean.
#define TALLY_REDUCE_FOR_EACH_MEAN(X)     \
  X(::tally::reduce::Mean, float, float)  \
  X(::tally::reduce::Mean, float, double) \
  X(::tally::reduce::Mean, double, double)

/// The exact sum's (input, output) pairs (exact.hpp); compiled by exact_cpu.cpp and exact_cuda.cu.
#define TALLY_REDUCE_FOR_EACH_EXACT(X)        \
  X(::tally::reduce::ExactSum, float, float)  \
  X(::tally::reduce::ExactSum, float, double) \
  X(::tally::reduce::ExactSum, double, double)
