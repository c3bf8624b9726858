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

/// Folds V elements into acc in element order: acc = op(...op(op(acc, x0), x1)..., x[V-1]).
template <class Op, class Acc, class T, int V>
__device__ __forceinline__ Acc fold(Acc acc, const Vec<T, V>& x) {
#pragma unroll
  for (int k = 0; k < V; ++k) acc = Op::template combine<Acc>(acc, static_cast<Acc>(x.v[k]));
  return acc;
}

/// Whether p is aligned for loads of V elements.
template <int V, class T>
__device__ __forceinline__ bool is_aligned(const T* p) {
  return (reinterpret_cast<std::uintptr_t>(p) % (sizeof(T) * V)) == 0;
}

}  // namespace tally::reduce::device
