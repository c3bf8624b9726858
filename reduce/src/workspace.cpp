#include "tally/reduce/workspace.hpp"

#include <stdexcept>

#include "tally/reduce/detail/tuning_cuda.hpp"

#ifdef TALLY_HAS_CUDA
#include <cuda_runtime_api.h>

#include "tally/common/cuda_check.cuh"
#endif

namespace tally::reduce {

struct Workspace::Impl {
  Backend backend;
  void* d_scratch = nullptr;
  std::size_t scratch_bytes = 0;
  unsigned int* d_tickets = nullptr;
  std::size_t tickets = 0;
  void* d_result = nullptr;
  int allocations = 0;
  Tuning tuning;
};

bool cuda_built() {
#ifdef TALLY_HAS_CUDA
  return true;
#else
  return false;
#endif
}

Workspace::Workspace(Backend backend) : impl_(std::make_unique<Impl>()) {
  impl_->backend = backend;
  if (backend == Backend::cuda) {
#ifdef TALLY_HAS_CUDA
    int dev = 0, sms = 0, max_threads_sm = 0, major = 0;
    TALLY_CUDA_TRY(cudaGetDevice(&dev));
    TALLY_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    TALLY_CUDA_TRY(cudaDeviceGetAttribute(&max_threads_sm, cudaDevAttrMaxThreadsPerMultiProcessor, dev));
    TALLY_CUDA_TRY(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
    impl_->tuning.sm_count = sms;
    impl_->tuning.programmatic_launch = major >= 9;
    impl_->tuning.blocks_per_sm = max_threads_sm / detail::ReducePolicy::block;
    TALLY_CUDA_TRY(cudaMalloc(&impl_->d_result, 16));
#else
    throw std::invalid_argument("tally::reduce: Workspace(Backend::cuda) in a build without the CUDA backend");
#endif
  }
}

Workspace::~Workspace() {
#ifdef TALLY_HAS_CUDA
  if (impl_) {
    cudaFree(impl_->d_scratch);  // destructors do not throw
    cudaFree(impl_->d_tickets);
    cudaFree(impl_->d_result);
  }
#endif
}

Workspace::Workspace(Workspace&&) noexcept = default;
Workspace& Workspace::operator=(Workspace&&) noexcept = default;

Backend Workspace::backend() const { return impl_->backend; }
std::size_t Workspace::scratch_bytes() const { return impl_->scratch_bytes; }
std::size_t Workspace::tickets() const { return impl_->tickets; }
int Workspace::allocations() const { return impl_->allocations; }
void* Workspace::scratch() const { return impl_->d_scratch; }
unsigned int* Workspace::ticket_array() const { return impl_->d_tickets; }
void* Workspace::result_slot() const { return impl_->d_result; }
const Tuning& Workspace::tuning() const { return impl_->tuning; }

void Workspace::reserve(std::size_t scratch_bytes, std::size_t tickets, stream_t stream) {
  if (impl_->backend != Backend::cuda) return;  // the CPU backend keeps its partials on the stack
#ifdef TALLY_HAS_CUDA
  if (scratch_bytes > impl_->scratch_bytes) {
    // Growth is rare (the first call at a new size); freeing synchronises, as cudaFree does.
    TALLY_CUDA_TRY(cudaFree(impl_->d_scratch));
    impl_->d_scratch = nullptr;
    impl_->scratch_bytes = 0;
    TALLY_CUDA_TRY(cudaMalloc(&impl_->d_scratch, scratch_bytes));
    impl_->scratch_bytes = scratch_bytes;
    ++impl_->allocations;
  }
  if (tickets > impl_->tickets) {
    TALLY_CUDA_TRY(cudaFree(impl_->d_tickets));
    impl_->d_tickets = nullptr;
    impl_->tickets = 0;
    TALLY_CUDA_TRY(cudaMalloc(reinterpret_cast<void**>(&impl_->d_tickets), tickets * sizeof(unsigned int)));
    TALLY_CUDA_TRY(
        cudaMemsetAsync(impl_->d_tickets, 0, tickets * sizeof(unsigned int), stream));  // kernels keep them zero
    impl_->tickets = tickets;
    ++impl_->allocations;
  }
#else
  (void)scratch_bytes;
  (void)tickets;
  (void)stream;
#endif
}

}  // namespace tally::reduce
