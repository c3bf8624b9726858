#pragma once
// The CPU backend's adapter for reduce_checks.hpp: buffers are host vectors.
#include <cstddef>
#include <cstring>
#include <vector>

#include "custom_reducers.hpp"
#include "tally/reduce/generic.hpp"
#include "tally/reduce/reduce.hpp"
#include "tally/reduce/segmented_generic.hpp"

namespace tally::test {

struct CpuBackend {
  static constexpr reduce::Backend backend = reduce::Backend::cpu;
  static constexpr reduce::Backend other = reduce::Backend::cuda;
  template <class T>
  using Buffer = std::vector<T>;

  template <class T>
  static Buffer<T> upload(const std::vector<T>& host) {
    return host;
  }
  template <class T>
  static Buffer<T> poisoned(std::size_t n, unsigned char byte) {
    Buffer<T> b(n);
    if (n > 0) std::memset(static_cast<void*>(b.data()), byte, n * sizeof(T));
    return b;
  }
  template <class T>
  static std::vector<T> download(const Buffer<T>& b) {
    return b;
  }
  static stream_t stream() { return nullptr; }
  /// A user reducer through the header-only engine.
  template <class R, class T>
  static void reduce_custom(reduce::View<const T> in, reduce::Levels levels, std::span<typename R::value_type> out,
                            reduce::Workspace&) {
    reduce::reduce_custom_cpu<R, T>(in, levels, out);
  }
  template <class R, class T, class Off>
  static void segmented_custom(std::span<const T> in, std::span<const Off> offsets,
                               std::span<typename R::value_type> out, reduce::Workspace&) {
    reduce::segmented_reduce_custom_cpu<R, T, Off>(in, offsets, out);
  }
};

}  // namespace tally::test
