#include "tally/common/cuda_check.cuh"

#include <string>

namespace tally::detail {

namespace {
// Errors after which the context is unusable: every later call fails, so we stop at once.
bool is_sticky(cudaError_t e) {
  switch (e) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorAssert:
    case cudaErrorECCUncorrectable:
    case cudaErrorLaunchTimeout: return true;
    default: return false;
  }
}
}  // namespace

void throw_cuda_error(cudaError_t e, const char* expr, const char* file, int line) {
  const std::string what = std::string(expr) + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ") at " +
                           file + ":" + std::to_string(line);
  if (is_sticky(e)) fatal("CUDA context unusable after " + what);
  (void)cudaGetLastError();  // clear it, so the next launch check does not report it again
  throw CudaError(static_cast<int>(e), what);
}

void check_launch(const char* file, int line) {
  cuda_check(cudaGetLastError(), "kernel launch", file, line);
#ifdef TALLY_SYNC_LAUNCHES
  cuda_check(cudaDeviceSynchronize(), "kernel execution", file, line);
#endif
}

}  // namespace tally::detail
