// Segmented reductions on CUDA (tally/reduce/segmented.cuh): the library's reducers (reducers.hpp: ArgMax, ArgMin,
// MinMax, MeanVar) over int32, int64, float and double inputs.
#include "instantiate.hpp"
#include "tally/reduce/detail/segmented.cuh"
#include "tally/reduce/reducers.hpp"

namespace tally::reduce::detail {

template <class Op, class T, class Acc, class Off>
void segmented_cuda(const T* in, std::int64_t n, const Off* off, std::int64_t n_seg, Acc* out, Workspace& ws,
                    stream_t stream) {
  cuda::seg::segmented_cuda_impl<Op, T, Acc, Off>(in, n, off, n_seg, out, ws, stream);
}

#define TALLY_INSTANTIATE_SEG_CUDA_R(R, T)                                                                             \
  template void segmented_cuda<R, T, R::value_type, std::int32_t>(const T*, std::int64_t, const std::int32_t*,         \
                                                                  std::int64_t, R::value_type*, Workspace&, stream_t); \
  template void segmented_cuda<R, T, R::value_type, std::int64_t>(const T*, std::int64_t, const std::int64_t*,         \
                                                                  std::int64_t, R::value_type*, Workspace&, stream_t);
TALLY_REDUCERS_FOR_EACH(TALLY_INSTANTIATE_SEG_CUDA_R)

}  // namespace tally::reduce::detail
