#pragma once
// Checks for CUDA runtime calls and kernel launches.
//
//   TALLY_CUDA_TRY(cudaMalloc(&p, bytes));   // throws tally::CudaError("<expr>: <error> at file:line")
//   kernel<<<grid, block, 0, stream>>>(...);
//   TALLY_CHECK_LAUNCH();                    // launch-configuration errors, at once
//
// Errors that leave the CUDA context unusable (an illegal address, a trap, a launch failure) abort
// with a message instead of throwing: no later CUDA call could succeed, so no handler could recover.
// Define TALLY_SYNC_LAUNCHES (or configure with -DTALLY_SYNC_LAUNCHES=ON) to also synchronise after
// every launch, so that asynchronous faults are reported at the launch that caused them.

#include <cuda_runtime_api.h>

#include "tally/common/error.hpp"

namespace tally::detail {
[[noreturn]] void throw_cuda_error(cudaError_t e, const char* expr, const char* file, int line);
inline void cuda_check(cudaError_t e, const char* expr, const char* file, int line) {
  if (e != cudaSuccess) throw_cuda_error(e, expr, file, line);
}
void check_launch(const char* file, int line);
}  // namespace tally::detail

#define TALLY_CUDA_TRY(expr) ::tally::detail::cuda_check((expr), #expr, __FILE__, __LINE__)
#define TALLY_CHECK_LAUNCH() ::tally::detail::check_launch(__FILE__, __LINE__)
