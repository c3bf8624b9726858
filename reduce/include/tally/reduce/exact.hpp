#pragma once
// Exact sums, the public face. reduce<ExactSum, T, Out>(...) (reduce.hpp) with (T, Out) = (float,
// float), (float, double) or (double, double) returns each output's exact sum rounded once, to nearest
// even, to Out (the third type is the OUTPUT type; the accumulator is internal); exact_dot (dot.hpp)
// the exact dot product. What a fused kernel or a caller handles directly, in namespace exact:
// * exact::Accumulator<T>: the superaccumulator, a plain array of Accumulator<T>::words int64 (limbs,
//   then five counters). Two accumulators are merged by adding them word by word, so ranks can combine
//   theirs with an integer MPI_SUM / ncclSum. After normalize() every limb but the top one is in
//   [0, 2^32), so up to 2^31 normalised accumulators can be added word-wise without overflow;
//   round<Out>() is the exact sum rounded once. device::exact_gang_sum's partials (device/exact.cuh)
//   are these.
// * exact::products_of<T> (FloatProducts, DoubleProducts): the accumulator's tag for dot products.
// * exact::dot<Out>(a, b, n): the exact dot product of host arrays, sequentially.
// The algorithm, its bounds and the rest of the machinery: detail/exact.hpp.

#include "tally/reduce/detail/exact.hpp"
