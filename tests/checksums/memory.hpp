#pragma once
// Memory where a backend reads its inputs and writes its results: host memory for the CPU backend,
// device memory (CUDA runtime) for the CUDA one. Only the runtime's public API, no tally internals.

#include <cstddef>
#include <string>
#include <vector>

#include "tally/reduce/reduce.hpp"  // Backend

namespace checksums {

using tally::reduce::Backend;

void* allocate(Backend b, std::size_t bytes);
void release(Backend b, void* p);
void to_backend(Backend b, void* dst, const void* host, std::size_t bytes);
void to_host(Backend b, void* host, const void* src, std::size_t bytes);
/// Waits for the backend's work and throws on an error it reports (a failed kernel).
void finish(Backend b);
/// "sm_90, 132 SMs": the properties the library's and the apps' launch shapes derive from (CUDA).
std::string device_key();
std::string device_name();

/// An array of n T in the backend's memory, filled from or read back to host vectors.
template <class T>
class Buffer {
 public:
  Buffer(Backend b, std::size_t n) : b_(b), n_(n), p_(static_cast<T*>(allocate(b, n * sizeof(T)))) {}
  Buffer(Backend b, const std::vector<T>& host) : Buffer(b, host.size()) {
    to_backend(b_, p_, host.data(), n_ * sizeof(T));
  }
  ~Buffer() { release(b_, p_); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  [[nodiscard]] T* data() const { return p_; }
  [[nodiscard]] std::size_t size() const { return n_; }
  [[nodiscard]] std::vector<T> host() const {
    std::vector<T> v(n_);
    to_host(b_, v.data(), p_, n_ * sizeof(T));
    return v;
  }

 private:
  Backend b_;
  std::size_t n_;
  T* p_;
};

}  // namespace checksums
