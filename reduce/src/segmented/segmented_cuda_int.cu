// Segmented reductions on CUDA (tally/reduce/segmented.cuh): the integer combinations and the offsets check. The
// floating-point ones are in segmented_cuda_fp.cu, so that the CI's two cores build them in parallel.
#include "instantiate.hpp"
#include "tally/reduce/detail/segmented.cuh"

namespace tally::reduce::detail {

template <class Op, class T, class Acc, class Off>
void segmented_cuda(const T* in, std::int64_t n, const Off* off, std::int64_t n_seg, Acc* out, Workspace& ws,
                    stream_t stream) {
  cuda::seg::segmented_cuda_impl<Op, T, Acc, Off>(in, n, off, n_seg, out, ws, stream);
}

template <class Off>
void check_offsets_cuda(const Off* d_off, std::int64_t n_seg, std::int64_t n, Workspace& ws, stream_t stream) {
  cuda::seg::check_offsets_cuda_impl<Off>(d_off, n_seg, n, ws, stream);
}
template void check_offsets_cuda<std::int32_t>(const std::int32_t*, std::int64_t, std::int64_t, Workspace&, stream_t);
template void check_offsets_cuda<std::int64_t>(const std::int64_t*, std::int64_t, std::int64_t, Workspace&, stream_t);

#define TALLY_INSTANTIATE_SEG_CUDA(Op, T, Acc)                                                                      \
  template void segmented_cuda<Op, T, Acc, std::int32_t>(const T*, std::int64_t, const std::int32_t*, std::int64_t, \
                                                         Acc*, Workspace&, stream_t);                               \
  template void segmented_cuda<Op, T, Acc, std::int64_t>(const T*, std::int64_t, const std::int64_t*, std::int64_t, \
                                                         Acc*, Workspace&, stream_t);
TALLY_REDUCE_ARITH_OPS(TALLY_INSTANTIATE_SEG_CUDA, std::int32_t, std::int32_t)
TALLY_REDUCE_ARITH_OPS(TALLY_INSTANTIATE_SEG_CUDA, std::int32_t, std::int64_t)
TALLY_REDUCE_ARITH_OPS(TALLY_INSTANTIATE_SEG_CUDA, std::int64_t, std::int64_t)
TALLY_REDUCE_BIT_OPS(TALLY_INSTANTIATE_SEG_CUDA, std::int32_t)
TALLY_REDUCE_BIT_OPS(TALLY_INSTANTIATE_SEG_CUDA, std::int64_t)

}  // namespace tally::reduce::detail
