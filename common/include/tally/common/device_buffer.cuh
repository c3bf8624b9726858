#pragma once
// RAII device memory (cudaMalloc / cudaFree) with typed copies. Plain allocations only: no
// managed memory (it can hang a shared GPU when over-subscribed).

#include <cuda_runtime_api.h>

#include <cstddef>
#include <span>
#include <vector>

#include "tally/common/cuda_check.cuh"

namespace tally {

template <class T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t n) : n_(n) {
    if (n_ > 0) TALLY_CUDA_TRY(cudaMalloc(reinterpret_cast<void**>(&p_), n_ * sizeof(T)));
  }
  explicit DeviceBuffer(std::span<const T> host, cudaStream_t s = nullptr) : DeviceBuffer(host.size()) {
    upload(host, s);
  }
  ~DeviceBuffer() { cudaFree(p_); }  // never throws
  DeviceBuffer(DeviceBuffer&& o) noexcept : p_(o.p_), n_(o.n_) { o.p_ = nullptr, o.n_ = 0; }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      cudaFree(p_);
      p_ = o.p_, n_ = o.n_;
      o.p_ = nullptr, o.n_ = 0;
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  [[nodiscard]] T* data() { return p_; }
  [[nodiscard]] const T* data() const { return p_; }
  [[nodiscard]] std::size_t size() const { return n_; }
  [[nodiscard]] std::size_t bytes() const { return n_ * sizeof(T); }
  [[nodiscard]] std::span<T> span() { return {p_, n_}; }

  /// Asynchronous on `s` (pageable host memory makes it effectively synchronous).
  void upload(std::span<const T> host, cudaStream_t s = nullptr) {
    if (host.size() != n_) throw Error("DeviceBuffer::upload: size mismatch");
    if (n_ > 0) TALLY_CUDA_TRY(cudaMemcpyAsync(p_, host.data(), bytes(), cudaMemcpyHostToDevice, s));
  }
  void download(std::span<T> host, cudaStream_t s = nullptr) const {
    if (host.size() != n_) throw Error("DeviceBuffer::download: size mismatch");
    if (n_ > 0) TALLY_CUDA_TRY(cudaMemcpyAsync(host.data(), p_, bytes(), cudaMemcpyDeviceToHost, s));
    TALLY_CUDA_TRY(cudaStreamSynchronize(s));
  }
  [[nodiscard]] std::vector<T> to_host(cudaStream_t s = nullptr) const {
    std::vector<T> h(n_);
    download(h, s);
    return h;
  }
  /// Sets every byte to `byte` (0xFF poisons floats with NaN, ints with -1).
  void fill_bytes(int byte, cudaStream_t s = nullptr) {
    if (n_ > 0) TALLY_CUDA_TRY(cudaMemsetAsync(p_, byte, bytes(), s));
  }

 private:
  T* p_ = nullptr;
  std::size_t n_ = 0;
};

}  // namespace tally
