// CUDA backend entry points for the int32 combinations, and the scalar copy to the host. The
// kernels are in kernels.cuh; the other types are compiled in reduce_cuda_*.cu so that the CI's
// two cores build them in parallel.
#include "instantiate.hpp"
#include "kernels.cuh"

namespace tally::reduce::detail {

template <class Op, class T, class Acc>
void reduce_cuda(const Problem& prob, Acc* d_out, Workspace& ws, stream_t stream) {
  cuda::reduce_cuda_impl<Op, T, Acc>(prob, d_out, ws, stream);
}

template <class Acc>
Acc copy_scalar_to_host(const Acc* d_value, stream_t stream) {
  Acc v{};
  TALLY_CUDA_TRY(cudaMemcpyAsync(&v, d_value, sizeof(Acc), cudaMemcpyDeviceToHost, stream));
  TALLY_CUDA_TRY(cudaStreamSynchronize(stream));
  return v;
}

#define TALLY_INSTANTIATE_CUDA(Op, T, Acc) \
  template void reduce_cuda<Op, T, Acc>(const Problem&, Acc*, Workspace&, stream_t);
TALLY_REDUCE_ARITH_OPS(TALLY_INSTANTIATE_CUDA, std::int32_t, std::int32_t)
TALLY_REDUCE_ARITH_OPS(TALLY_INSTANTIATE_CUDA, std::int32_t, std::int64_t)
template std::int32_t copy_scalar_to_host<std::int32_t>(const std::int32_t*, stream_t);
template std::int64_t copy_scalar_to_host<std::int64_t>(const std::int64_t*, stream_t);
template float copy_scalar_to_host<float>(const float*, stream_t);
template double copy_scalar_to_host<double>(const double*, stream_t);

}  // namespace tally::reduce::detail
