#pragma once
// Thread level: what one thread folds into its private accumulator before any cooperation.
// Vector loads of 16 bytes where alignment allows; the fold order is fixed by the caller's indexing.

#include <cstdint>

#include "tally/reduce/ops.hpp"

namespace tally::reduce::device {

/// V consecutive T loaded as one aligned vector (V * sizeof(T) of 4, 8 or 16 bytes).
template <class T, int V>
struct alignas(sizeof(T) * V) Vec {
  T v[V];
};

/// Elements per 16-byte vector load.
template <class T>
inline constexpr int vec16 = 16 / sizeof(T) > 0 ? static_cast<int>(16 / sizeof(T)) : 1;

template <int V, class T>
__device__ __forceinline__ Vec<T, V> load_vec(const T* p) {
  return *reinterpret_cast<const Vec<T, V>*>(p);
}

/// Folds V elements into acc as a fixed pairwise tree joined last: acc = op(acc, tree(x)), e.g.
/// op(acc, op(op(x0, x1), op(x2, x3))). The tree is off acc's dependency chain, so a thread's chain
/// grows by one operation per vector, not per element (4 float4 loads were 16 dependent adds).
template <class Op, class Acc, class T, int V>
__device__ __forceinline__ Acc fold(Acc acc, const Vec<T, V>& x) {
  Acc t[V];
#pragma unroll
  for (int k = 0; k < V; ++k) t[k] = static_cast<Acc>(x.v[k]);
#pragma unroll
  for (int w = 1; w < V; w *= 2)
#pragma unroll
    for (int k = 0; k + w < V; k += 2 * w) t[k] = Op::template combine<Acc>(t[k], t[k + w]);
  return Op::template combine<Acc>(acc, t[0]);
}

/// Whether p is aligned for loads of V elements.
template <int V, class T>
__device__ __forceinline__ bool is_aligned(const T* p) {
  return (reinterpret_cast<std::uintptr_t>(p) % (sizeof(T) * V)) == 0;
}

}  // namespace tally::reduce::device
