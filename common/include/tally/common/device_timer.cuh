#pragma once
// Device timing with CUDA events: brackets work enqueued on a stream.

#include <cuda_runtime_api.h>

#include "tally/common/cuda_check.cuh"

namespace tally {

class EventTimer {
 public:
  EventTimer() {
    TALLY_CUDA_TRY(cudaEventCreate(&start_));
    TALLY_CUDA_TRY(cudaEventCreate(&stop_));
  }
  ~EventTimer() {
    cudaEventDestroy(start_);  // destructors never throw; a failure here changes nothing
    cudaEventDestroy(stop_);
  }
  EventTimer(const EventTimer&) = delete;
  EventTimer& operator=(const EventTimer&) = delete;

  void start(cudaStream_t s = nullptr) { TALLY_CUDA_TRY(cudaEventRecord(start_, s)); }
  void stop(cudaStream_t s = nullptr) { TALLY_CUDA_TRY(cudaEventRecord(stop_, s)); }
  /// Waits for the stop event; milliseconds between the two events.
  [[nodiscard]] float elapsed_ms() const {
    TALLY_CUDA_TRY(cudaEventSynchronize(stop_));
    float ms = 0.f;
    TALLY_CUDA_TRY(cudaEventElapsedTime(&ms, start_, stop_));
    return ms;
  }
  [[nodiscard]] double elapsed_s() const { return 1e-3 * elapsed_ms(); }

 private:
  cudaEvent_t start_{}, stop_{};
};

}  // namespace tally
