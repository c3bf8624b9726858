// The rank level's fold on device memory (tally/reduce/ranks.hpp): every rank's values, gathered by
// the rank runtime, combined in rank order by a kernel, for every operator and type of allreduce.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>

#include "instantiate.hpp"
#include "tally/common/cuda_check.cuh"
#include "tally/reduce/detail/tuning_cuda.hpp"
#include "tally/reduce/ranks.hpp"

namespace tally::reduce::detail {

namespace {

/// out[i] = combine(...combine(g[0][i], g[1][i])..., g[nranks-1][i]): the same sequence of combines as
/// the host fold, with the library's operators (ops.hpp: NaN propagates through Max/Min).
template <class Op, class T>
__global__ void fold_ranks_kernel(const T* __restrict__ gathered, T* __restrict__ out, std::size_t count, int nranks) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    T acc = gathered[i];
    for (int r = 1; r < nranks; ++r)
      acc = Op::template combine<T>(acc, gathered[static_cast<std::size_t>(r) * count + i]);
    out[i] = acc;
  }
}

}  // namespace

template <class Op, class T>
void fold_ranks_device(const void* gathered, void* out, std::size_t count, int nranks, stream_t stream) {
  constexpr int block = ReducePolicy::block;
  const std::size_t blocks = std::min<std::size_t>((count + block - 1) / block, 65535);
  fold_ranks_kernel<Op, T><<<static_cast<unsigned>(blocks), block, 0, stream>>>(static_cast<const T*>(gathered),
                                                                                static_cast<T*>(out), count, nranks);
  TALLY_CHECK_LAUNCH();
}

#define TALLY_FOLD_RANKS_DEVICE(Op, T, Acc) \
  template void fold_ranks_device<Op, T>(const void*, void*, std::size_t, int, stream_t);
TALLY_REDUCE_FOR_EACH_SAME(TALLY_FOLD_RANKS_DEVICE)
#undef TALLY_FOLD_RANKS_DEVICE

}  // namespace tally::reduce::detail
