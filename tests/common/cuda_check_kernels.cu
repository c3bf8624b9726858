#include "tally/common/cuda_check.cuh"

namespace {
__global__ void write42(int* out) { *out = 42; }
}  // namespace

void launch_with_too_many_threads() {
  write42<<<1, 4096>>>(nullptr);  // more than 1024 threads per block: an invalid configuration
  TALLY_CHECK_LAUNCH();
}

void launch_fine(int* d_out) {
  write42<<<1, 1>>>(d_out);
  TALLY_CHECK_LAUNCH();
}
