#pragma once
// Thread level: what one thread folds into its private accumulator before any cooperation.
// Vector loads of 16 bytes where alignment allows; the fold order is fixed by the caller's indexing.

#include <cstdint>

#include "tally/reduce/ops.hpp"
#include "tally/reduce/reducer.hpp"

namespace tally::reduce::device {

/// V consecutive T loaded as one aligned vector (V * sizeof(T) of 4, 8 or 16 bytes).
template <class T, int V>
struct alignas(sizeof(T) * V) Vec {
  T v[V];
};

/// V elements of any type, loaded one by one (for element types whose size is not a power of two).
template <class T, int V>
struct Pack {
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
/// grows by one operation per vector, not per element (4 float4 loads: 4 dependent adds, not 16).
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

/// t[0] = t[0] + t[1] + ... + t[N-1] as a fixed pairwise tree (N a power of two) under R::combine.
template <class R, int N, class Val>
__device__ __forceinline__ void tree_combine(Val (&t)[N]) {
  static_assert((N & (N - 1)) == 0, "tree_combine: N must be a power of two");
#pragma unroll
  for (int w = 1; w < N; w *= 2)
#pragma unroll
    for (int k = 0; k + w < N; k += 2 * w) t[k] = R::combine(t[k], t[k + w]);
}

/// Generic reducers (reducer.hpp): U vectors of V elements, element k of vector u having flat index
/// index[u] + k, loaded with R::load and combined as ONE fixed pairwise tree that is joined to acc
/// last. The tree is off acc's dependency chain, and where the loaded values' parts are constants
/// (MeanVar's count of 1) the compiler folds them through the tree: MeanVar divides once per batch.
/// Pack: anything with an array member v[V] (Vec<T, V>, or a Pack<T, V> for types that no vector
/// load fits).
template <class R, int V, int U, class Pack>
__device__ __forceinline__ typename R::value_type fold_batch(typename R::value_type acc, const Pack (&x)[U],
                                                             const std::int64_t (&index)[U]) {
  typename R::value_type t[U * V];
#pragma unroll
  for (int u = 0; u < U; ++u)
#pragma unroll
    for (int k = 0; k < V; ++k) t[u * V + k] = reducer_load<R>(x[u].v[k], index[u] + k);
  tree_combine<R>(t);
  return R::combine(acc, t[0]);
}

/// Whether p is aligned for loads of V elements.
template <int V, class T>
__device__ __forceinline__ bool is_aligned(const T* p) {
  return (reinterpret_cast<std::uintptr_t>(p) % (sizeof(T) * V)) == 0;
}

}  // namespace tally::reduce::device
