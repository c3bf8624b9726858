#pragma once
// The reducers' results from a buffer of their value_type structs in device memory, each field (or
// a finished value: var_mean's m2 / (count - correction)) into an array of its own, contiguous and
// of the result dtype, in one small kernel on the call's stream (fields.cu). tally.argmax & co. on
// PyTorch CUDA tensors (torch_binding.cpp) hand those arrays back as new tensors: a torch view or
// division per field cost more host time than the reduction's launch. Host-only header.
#include <cstdint>

#include "tally/reduce/reducers.hpp"

namespace tally::python {

namespace tr = ::tally::reduce;

// n structs at `s` (device memory). A null destination is not written. The caller has made the
// buffers' device current; each launch is checked (tally::CudaError).

/// values[i] = s[i].value, index[i] = s[i].index.
template <class T>
void store_fields(const tr::ValueIndex<T>* s, std::int64_t n, T* values, std::int64_t* index, std::uintptr_t stream);

/// lo[i] = s[i].min, hi[i] = s[i].max.
template <class T>
void store_fields(const tr::MinMaxPair<T>* s, std::int64_t n, T* lo, T* hi, std::uintptr_t stream);

/// var[i] = Out(s[i].m2 / divisor) in float64, rounded once to Out (NaN where divisor <= 0:
/// Moments::variance's rule); mean[i] = Out(s[i].mean). Every struct counts `divisor + correction`
/// > 0 elements here, so the mean is defined.
template <class Out>
void store_fields(const tr::Moments* s, std::int64_t n, Out* var, Out* mean, std::int64_t divisor,
                  std::uintptr_t stream);

}  // namespace tally::python
