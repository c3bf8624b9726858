#pragma once
// Programmatic dependent launch (sm_90+) for the production kernels (and the header-only kernels of
// detail/generic.cuh and detail/segmented.cuh; no API of its own). Each is launched so that it
// may start while the stream's previous kernel is still finishing; its first act is to wait for that
// kernel's completion and memory (griddepcontrol.wait), so it sees exactly what a plain launch would,
// and then it lets the stream's next kernel start early in turn. What overlaps is launch latency, not
// work, which is what back-to-back small reductions (graph replays) spend most of their time on. No
// kernel here waits on another block, so dependents parked on an SM cannot starve it.

#include <cuda_runtime.h>

#include <cstdint>
#include <utility>

#include "tally/common/cuda_check.cuh"
#include "tally/reduce/config.hpp"
#include "tally/reduce/workspace.hpp"

namespace tally::reduce::detail::cuda {

/// First statement of every kernel launched with launch(): before any global memory access.
__device__ __forceinline__ void enter_after_predecessor() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

/// kernel<<<grid, block, 0, stream>>>(args...), programmatic where the device supports it.
template <class... Params, class... Args>
void launch(void (*kernel)(Params...), std::int64_t grid, int block, const Tuning& tune, stream_t stream,
            Args&&... args) {
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = dim3(static_cast<unsigned>(grid));
  cfg.blockDim = dim3(static_cast<unsigned>(block));
  cfg.stream = stream;
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr.val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = &attr;
  cfg.numAttrs = tune.programmatic_launch ? 1 : 0;
  TALLY_CUDA_TRY(cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...));
  TALLY_CHECK_LAUNCH();
}

/// Blocks of `block` threads of `kernel` resident on one SM (at least 1; cached by the callers, once
/// per kernel). A grid-stride kernel's grid sized as a multiple of this runs whole rounds of blocks,
/// not a last round on a fraction of the SMs.
template <class... Params>
int resident_blocks(void (*kernel)(Params...), int block) {
  int nb = 0;
  TALLY_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&nb, kernel, block, 0));
  return nb > 1 ? nb : 1;
}

}  // namespace tally::reduce::detail::cuda
