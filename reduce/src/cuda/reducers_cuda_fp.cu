// CUDA backend of the generic reducers (ArgMax, ArgMin, MinMax, MeanVar) for float and double inputs: the
// header-only engine of generic.cuh, compiled here (the other types in reducers_cuda_*.cu, so that
// the CI's two cores build them in parallel).
#include "tally/reduce/detail/generic.cuh"

namespace tally::reduce::detail {

template <class R, class T>
void reducer_cuda(View<const T> in, Levels levels, typename R::value_type* d_out, std::int64_t, Workspace& ws,
                  stream_t stream) {
  generic::run<R, T>(in, levels, d_out, ws, stream);
}

template <class R, class T>
typename R::value_type reducer_cuda_to_host(View<const T> in, Workspace& ws, stream_t stream) {
  typename R::value_type r = R::identity();
  generic::run<R, T>(in, Levels::all(), nullptr, ws, stream, &r);
  return r;
}

#define TALLY_INSTANTIATE_REDUCER_CUDA(R, T)                                                                 \
  template void reducer_cuda<R, T>(View<const T>, Levels, typename R::value_type*, std::int64_t, Workspace&, \
                                   stream_t);                                                                \
  template typename R::value_type reducer_cuda_to_host<R, T>(View<const T>, Workspace&, stream_t);
TALLY_REDUCERS_FOR_TYPE(TALLY_INSTANTIATE_REDUCER_CUDA, float)
TALLY_REDUCERS_FOR_TYPE(TALLY_INSTANTIATE_REDUCER_CUDA, double)

}  // namespace tally::reduce::detail
