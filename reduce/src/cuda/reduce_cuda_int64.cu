// CUDA backend: the int64 and the bitwise/logical combinations (kernels in kernels.cuh).
#include "instantiate.hpp"
#include "kernels.cuh"

namespace tally::reduce::detail {

template <class Op, class T, class Acc>
void reduce_cuda(const Problem& prob, Acc* d_out, Workspace& ws, stream_t stream) {
  cuda::reduce_cuda_impl<Op, T, Acc>(prob, d_out, ws, stream);
}

#define TALLY_INSTANTIATE_CUDA(Op, T, Acc) \
  template void reduce_cuda<Op, T, Acc>(const Problem&, Acc*, Workspace&, stream_t);
TALLY_REDUCE_ARITH_OPS(TALLY_INSTANTIATE_CUDA, std::int64_t, std::int64_t)
TALLY_REDUCE_BIT_OPS(TALLY_INSTANTIATE_CUDA, std::int32_t)
TALLY_REDUCE_BIT_OPS(TALLY_INSTANTIATE_CUDA, std::int64_t)

}  // namespace tally::reduce::detail
