// CUDA backend, first version: one block per output (grid-stride over outputs), the block's
// threads stride over the output's elements, then block_reduce. Correct for every plan; the
// production kernels (vector loads, lane groups, split segments) replace it.
#include <cuda_runtime.h>

#include "instantiate.hpp"
#include "plan.hpp"
#include "tally/common/cuda_check.cuh"
#include "tally/reduce/device/worker.cuh"

namespace tally::reduce::detail {

namespace {

template <class Op, class T, class Acc>
__global__ void generic_kernel(Plan p, const T* __restrict__ in, Acc* __restrict__ out) {
  __shared__ device::BlockReduceStorage<Acc> tmp;
  const std::int64_t per = p.per_output();
  for (std::int64_t o = blockIdx.x; o < p.n_out; o += gridDim.x) {
    Acc acc = Op::template identity<Acc>();
    for (std::int64_t e = threadIdx.x; e < per; e += blockDim.x) {
      std::int64_t off;
      if (p.kind == Plan::Kind::inner) off = p.koff(o) + p.roff(e / p.n) + e % p.n;
      else off = (o / p.nc) * p.sb + p.roff(e) + o % p.nc;
      acc = Op::template combine<Acc>(acc, static_cast<Acc>(in[off]));
    }
    acc = device::block_reduce<Op>(acc, tmp);
    if (threadIdx.x == 0) out[o] = acc;
  }
}

template <class Op, class Acc>
__global__ void fill_kernel(Acc* out, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < n; i += std::int64_t{gridDim.x} * blockDim.x)
    out[i] = Op::template identity<Acc>();
}

}  // namespace

template <class Op, class T, class Acc>
void reduce_cuda(const Problem& prob, Acc* d_out, Workspace& ws, stream_t stream) {
  const Plan p = make_plan(prob);
  if (p.n_out == 0) return;
  const int blocks = static_cast<int>(std::min<std::int64_t>(p.n_out, 65535));
  if (p.empty) {
    fill_kernel<Op, Acc><<<blocks, 256, 0, stream>>>(d_out, p.n_out);
  } else {
    generic_kernel<Op, T, Acc><<<blocks, 256, 0, stream>>>(p, static_cast<const T*>(prob.data), d_out);
  }
  TALLY_CHECK_LAUNCH();
  (void)ws;
}

template <class Acc>
Acc copy_scalar_to_host(const Acc* d_value, stream_t stream) {
  Acc v{};
  TALLY_CUDA_TRY(cudaMemcpyAsync(&v, d_value, sizeof(Acc), cudaMemcpyDeviceToHost, stream));
  TALLY_CUDA_TRY(cudaStreamSynchronize(stream));
  return v;
}

#define TALLY_INSTANTIATE_CUDA(Op, T, Acc) template void reduce_cuda<Op, T, Acc>(const Problem&, Acc*, Workspace&, stream_t);
TALLY_REDUCE_FOR_EACH(TALLY_INSTANTIATE_CUDA)
template std::int32_t copy_scalar_to_host<std::int32_t>(const std::int32_t*, stream_t);
template std::int64_t copy_scalar_to_host<std::int64_t>(const std::int64_t*, stream_t);
template float copy_scalar_to_host<float>(const float*, stream_t);
template double copy_scalar_to_host<double>(const double*, stream_t);

}  // namespace tally::reduce::detail
