// Segmented reductions on CUDA (tally/reduce/segmented.cuh): the float and double combinations.
#include "instantiate.hpp"
#include "tally/reduce/detail/segmented.cuh"

namespace tally::reduce::detail {

template <class Op, class T, class Acc, class Off>
void segmented_cuda(const T* in, std::int64_t n, const Off* off, std::int64_t n_seg, Acc* out, Workspace& ws,
                    stream_t stream) {
  cuda::seg::segmented_cuda_impl<Op, T, Acc, Off>(in, n, off, n_seg, out, ws, stream);
}

#define TALLY_INSTANTIATE_SEG_CUDA(Op, T, Acc)                                                                      \
  template void segmented_cuda<Op, T, Acc, std::int32_t>(const T*, std::int64_t, const std::int32_t*, std::int64_t, \
                                                         Acc*, Workspace&, stream_t);                               \
  template void segmented_cuda<Op, T, Acc, std::int64_t>(const T*, std::int64_t, const std::int64_t*, std::int64_t, \
                                                         Acc*, Workspace&, stream_t);
TALLY_REDUCE_ARITH_OPS(TALLY_INSTANTIATE_SEG_CUDA, float, float)
TALLY_REDUCE_ARITH_OPS(TALLY_INSTANTIATE_SEG_CUDA, float, double)
TALLY_REDUCE_ARITH_OPS(TALLY_INSTANTIATE_SEG_CUDA, double, double)

}  // namespace tally::reduce::detail
