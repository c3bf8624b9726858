// fields.hpp's kernels: one thread per struct, a grid-stride loop; loads and stores of whole
// structs and elements (the outputs are small: what matters is one launch instead of a torch op
// per field).
#include "fields.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <limits>

#include "tally/common/cuda_check.cuh"

namespace tally::python {
namespace {

constexpr int kThreads = 256;

/// a[i], b[i] = f(s[i]) (a or b null: not written).
template <class V, class A, class B, class F>
__global__ void __launch_bounds__(kThreads)
    split_kernel(const V* __restrict__ s, std::int64_t n, A* __restrict__ a, B* __restrict__ b, F f) {
  const std::int64_t stride = std::int64_t{gridDim.x} * kThreads;
  for (std::int64_t i = std::int64_t{blockIdx.x} * kThreads + threadIdx.x; i < n; i += stride) {
    const V v = s[i];
    if (a != nullptr) a[i] = f.first(v);
    if (b != nullptr) b[i] = f.second(v);
  }
}

template <class V, class A, class B, class F>
void split(const V* s, std::int64_t n, A* a, B* b, F f, std::uintptr_t stream) {
  if (n <= 0 || (a == nullptr && b == nullptr)) return;
  const auto blocks = static_cast<unsigned>(std::clamp<std::int64_t>((n + kThreads - 1) / kThreads, 1, 4096));
  split_kernel<<<blocks, kThreads, 0, reinterpret_cast<cudaStream_t>(stream)>>>(s, n, a, b, f);
  TALLY_CHECK_LAUNCH();
}

template <class T>
struct ArgFields {
  __device__ T first(const tr::ValueIndex<T>& v) const { return v.value; }
  __device__ std::int64_t second(const tr::ValueIndex<T>& v) const { return v.index; }
};

template <class T>
struct MinMaxFields {
  __device__ T first(const tr::MinMaxPair<T>& v) const { return v.min; }
  __device__ T second(const tr::MinMaxPair<T>& v) const { return v.max; }
};

template <class Out>
struct MomentFields {
  double divisor;  // NaN where count - correction <= 0
  __device__ Out first(const tr::Moments& v) const { return static_cast<Out>(v.m2 / divisor); }
  __device__ Out second(const tr::Moments& v) const { return static_cast<Out>(v.mean); }
};

}  // namespace

template <class T>
void store_fields(const tr::ValueIndex<T>* s, std::int64_t n, T* values, std::int64_t* index, std::uintptr_t stream) {
  split(s, n, values, index, ArgFields<T>{}, stream);
}

template <class T>
void store_fields(const tr::MinMaxPair<T>* s, std::int64_t n, T* lo, T* hi, std::uintptr_t stream) {
  split(s, n, lo, hi, MinMaxFields<T>{}, stream);
}

template <class Out>
void store_fields(const tr::Moments* s, std::int64_t n, Out* var, Out* mean, std::int64_t divisor,
                  std::uintptr_t stream) {
  // m2 / NaN is NaN: one division either way, correctly rounded in float64 (no fast-math division
  // here), then one rounding to Out: the bits of the NumPy path's m2 / d and cast.
  const double d = divisor > 0 ? static_cast<double>(divisor) : std::numeric_limits<double>::quiet_NaN();
  split(s, n, var, mean, MomentFields<Out>{d}, stream);
}

#define TALLY_STORE_FIELDS(T)                                                                               \
  template void store_fields<T>(const tr::ValueIndex<T>*, std::int64_t, T*, std::int64_t*, std::uintptr_t); \
  template void store_fields<T>(const tr::MinMaxPair<T>*, std::int64_t, T*, T*, std::uintptr_t);
TALLY_STORE_FIELDS(std::int32_t)
TALLY_STORE_FIELDS(std::int64_t)
TALLY_STORE_FIELDS(float)
TALLY_STORE_FIELDS(double)
#undef TALLY_STORE_FIELDS
template void store_fields<float>(const tr::Moments*, std::int64_t, float*, float*, std::int64_t, std::uintptr_t);
template void store_fields<double>(const tr::Moments*, std::int64_t, double*, double*, std::int64_t, std::uintptr_t);

}  // namespace tally::python
