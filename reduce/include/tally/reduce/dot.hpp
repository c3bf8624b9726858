#pragma once
// The exact dot product (host API):
//
//   exact_dot<T, Out>(backend, a, b, out, workspace, stream)
//
// out[0] = sum_i a[i] b[i] computed exactly and rounded once, to nearest even, to Out, for (T, Out) =
// (float, float), (float, double), (double, double). Every product is exact before it is summed (a
// double holds a float product; a double product is p + e with p = a b, e = fma(a, b, -p), split on
// scaled significands where p would overflow or lose bits to underflow), and the sum is ExactSum's
// (exact.hpp): bitwise the same on both backends, for any thread count and grid. IEEE's rules for
// the rest: a NaN, Inf * 0 or +Inf with -Inf gives NaN, an Inf otherwise wins, an exact result
// beyond Out's range rounds to Inf, an exact zero is -0 only when every product is -0.
//
// CUDA: a, b and out are device memory, the call is asynchronous on `stream`; CPU: host memory,
// OpenMP threads. exact_dot_to_host returns the value on the host (on CUDA: waits for `stream`).
// The device building block is device::ExactThread<exact::products_of<T>>::add_product (exact.cuh).
// Bad arguments (a and b of different lengths, an output that is not one element, a null pointer
// with a non-zero length, a workspace of the other backend) throw std::invalid_argument naming them.

#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "tally/reduce/backend.hpp"
#include "tally/reduce/config.hpp"
#include "tally/reduce/workspace.hpp"

namespace tally::reduce {

namespace detail {
template <class T, class Out>
void exact_dot_cpu(const T* a, const T* b, std::int64_t n, Out* out);
template <class T, class Out>
void exact_dot_cuda(const T* a, const T* b, std::int64_t n, Out* d_out, Workspace& ws, stream_t stream);
void check_workspace(const Workspace& ws, Backend b);
}  // namespace detail

template <class T, class Out>
inline constexpr bool is_exact_dot_supported = (std::is_same_v<T, float> &&
                                                (std::is_same_v<Out, float> || std::is_same_v<Out, double>)) ||
                                               (std::is_same_v<T, double> && std::is_same_v<Out, double>);

template <class T, class Out = T>
void exact_dot(Backend backend, std::span<const T> a, std::span<const T> b, std::span<Out> out, Workspace& ws,
               stream_t stream = nullptr) {
  static_assert(is_exact_dot_supported<T, Out>, "exact_dot: (float, float), (float, double) or (double, double)");
  const auto fail = [](const std::string& m) { throw std::invalid_argument("tally::reduce::exact_dot: " + m); };
  if (a.size() != b.size()) fail("b: " + std::to_string(b.size()) + " elements, but a has " + std::to_string(a.size()));
  if (out.size() != 1) fail("out: must hold exactly one element (got " + std::to_string(out.size()) + ")");
  if (out.data() == nullptr) fail("out: null pointer");
  if (!a.empty() && (a.data() == nullptr || b.data() == nullptr))
    fail(a.data() == nullptr ? "a: null pointer" : "b: null pointer");
  detail::check_workspace(ws, backend);
  const auto n = static_cast<std::int64_t>(a.size());
  if (backend == Backend::cpu) detail::exact_dot_cpu<T, Out>(a.data(), b.data(), n, out.data());
  else detail::exact_dot_cuda<T, Out>(a.data(), b.data(), n, out.data(), ws, stream);
}

namespace detail {
template <class Acc>
Acc copy_scalar_to_host(const Acc* d_value, stream_t stream);  // reduce.hpp
}  // namespace detail

template <class T, class Out = T>
Out exact_dot_to_host(Backend backend, std::span<const T> a, std::span<const T> b, Workspace& ws,
                      stream_t stream = nullptr) {
  if (backend == Backend::cpu) {
    Out r{};
    exact_dot<T, Out>(backend, a, b, std::span<Out>(&r, 1), ws, stream);
    return r;
  }
  Out* d_r = static_cast<Out*>(ws.result_slot());
  exact_dot<T, Out>(backend, a, b, std::span<Out>(d_r, 1), ws, stream);
  return detail::copy_scalar_to_host(d_r, stream);
}

}  // namespace tally::reduce
