// cub::DeviceReduce as the ladder's outside reference. The operator is tally's own (max/min
// propagate NaN, unlike cub::Max), so CUB computes the same function as reduce().
#include <cub/device/device_reduce.cuh>

#include "instantiate.hpp"
#include "ladder/ladder.hpp"
#include "tally/common/cuda_check.cuh"

namespace tally::reduce::bench {

namespace {
template <class Op, class Acc>
struct CubOp {
  template <class A, class B>
  __device__ __forceinline__ Acc operator()(const A& a, const B& b) const {
    return Op::template combine<Acc>(static_cast<Acc>(a), static_cast<Acc>(b));
  }
};
}  // namespace

template <class Op, class T, class Acc>
void ladder_cub(const T* in, std::int64_t n, Acc* d_out, Workspace& ws, stream_t stream) {
  std::size_t bytes = 0;
  TALLY_CUDA_TRY(
      cub::DeviceReduce::Reduce(nullptr, bytes, in, d_out, n, CubOp<Op, Acc>{}, Op::template identity<Acc>(), stream));
  ws.reserve(bytes, 0, stream);
  TALLY_CUDA_TRY(cub::DeviceReduce::Reduce(ws.scratch(), bytes, in, d_out, n, CubOp<Op, Acc>{},
                                           Op::template identity<Acc>(), stream));
  TALLY_CHECK_LAUNCH();
}

#define TALLY_INSTANTIATE_CUB(Op, T, Acc) \
  template void ladder_cub<Op, T, Acc>(const T*, std::int64_t, Acc*, Workspace&, stream_t);
TALLY_REDUCE_FOR_EACH(TALLY_INSTANTIATE_CUB)

}  // namespace tally::reduce::bench
