#pragma once
// Reusable scratch for reductions: sized on first use (or up front with reserve()), then reused,
// so that the hot path neither allocates nor synchronises. One workspace per stream at a time:
// concurrent reductions on different streams need different workspaces.

#include <cstddef>
#include <memory>
#include <string>

#include "tally/reduce/backend.hpp"
#include "tally/reduce/config.hpp"

namespace tally::reduce {

/// Launch shape of the production CUDA kernels, derived from the device's properties (a printable
/// struct, CUB style, not macros).
struct Tuning {
  int blocks_per_sm = 8;             ///< resident 256-thread blocks per SM (the production kernels' block)
  int sm_count = 0;                  ///< multiprocessors of the device
  bool programmatic_launch = false;  ///< launch so that a kernel's start overlaps its predecessor's end (sm_90+)
  [[nodiscard]] std::string to_string() const;
};

class Workspace {
 public:
  /// For Backend::cuda, the workspace belongs to the current CUDA device.
  explicit Workspace(Backend backend = Backend::cpu);
  ~Workspace();
  Workspace(Workspace&&) noexcept;
  Workspace& operator=(Workspace&&) noexcept;
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;

  [[nodiscard]] Backend backend() const;
  /// Grows the device scratch (bytes) and the ticket counters to at least these sizes. New tickets
  /// are zeroed on `stream`; kernels leave them zero again. Growing frees the old buffers (cudaFree
  /// synchronises the device): size the workspace once, up front or in a warm-up call.
  void reserve(std::size_t scratch_bytes, std::size_t tickets, stream_t stream = nullptr);
  [[nodiscard]] std::size_t scratch_bytes() const;
  [[nodiscard]] std::size_t tickets() const;
  /// How many times reserve() had to allocate: a steady state shows no growth.
  [[nodiscard]] int allocations() const;

  // For the backends' dispatch code.
  [[nodiscard]] void* scratch() const;
  [[nodiscard]] unsigned int* ticket_array() const;
  /// 16 bytes of device memory for reduce_to_host()'s scalar.
  [[nodiscard]] void* result_slot() const;
  [[nodiscard]] const Tuning& tuning() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tally::reduce
