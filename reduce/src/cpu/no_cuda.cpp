// A build without the CUDA backend: the CUDA entry points exist and say so.
#include <stdexcept>

#include "instantiate.hpp"
#include "tally/reduce/detail/exact.hpp"
#include "tally/reduce/dot.hpp"
#include "tally/reduce/ranks.hpp"
#include "tally/reduce/reduce.hpp"
#include "tally/reduce/segmented.hpp"

namespace tally::reduce::detail {

namespace {
[[noreturn]] void no_cuda() {
  throw std::invalid_argument("tally::reduce: Backend::cuda requested, but this build has no CUDA backend");
}
}  // namespace

template <class Op, class T, class Acc>
void reduce_cuda(const Problem&, Acc*, Workspace&, stream_t) {
  no_cuda();
}
template <class Acc>
Acc copy_scalar_to_host(const Acc*, stream_t) {
  no_cuda();
}
template <class Op, class T, class Acc, class Off>
void segmented_cuda(const T*, std::int64_t, const Off*, std::int64_t, Acc*, Workspace&, stream_t) {
  no_cuda();
}
template <class Off>
void check_offsets_cuda(const Off*, std::int64_t, std::int64_t, Workspace&, stream_t) {
  no_cuda();
}
template <class T, class Out>
void exact_cuda(const Problem&, Out*, Workspace&, stream_t) {
  no_cuda();
}
template <class T, class Out>
void exact_round_cuda(const exact::Accumulator<T>*, Out*, std::int64_t, Workspace&, stream_t) {
  no_cuda();
}
template <class T, class Out>
void exact_dot_cuda(const T*, const T*, std::int64_t, Out*, Workspace&, stream_t) {
  no_cuda();
}
template <class Op, class T>
void fold_ranks_device(const void*, void*, std::size_t, int, stream_t) {
  no_cuda();
}
template void exact_dot_cuda<float, float>(const float*, const float*, std::int64_t, float*, Workspace&, stream_t);
template void exact_dot_cuda<float, double>(const float*, const float*, std::int64_t, double*, Workspace&, stream_t);
template void exact_dot_cuda<double, double>(const double*, const double*, std::int64_t, double*, Workspace&, stream_t);

#define TALLY_INSTANTIATE_NO_CUDA(Op, T, Acc) \
  template void reduce_cuda<Op, T, Acc>(const Problem&, Acc*, Workspace&, stream_t);
TALLY_REDUCE_FOR_EACH(TALLY_INSTANTIATE_NO_CUDA)
TALLY_REDUCE_FOR_EACH_MEAN(TALLY_INSTANTIATE_NO_CUDA)
#define TALLY_INSTANTIATE_NO_CUDA_FOLD(Op, T, Acc) \
  template void fold_ranks_device<Op, T>(const void*, void*, std::size_t, int, stream_t);
TALLY_REDUCE_FOR_EACH_SAME(TALLY_INSTANTIATE_NO_CUDA_FOLD)
#define TALLY_INSTANTIATE_NO_CUDA_SEG(Op, T, Acc)                                                                   \
  template void segmented_cuda<Op, T, Acc, std::int32_t>(const T*, std::int64_t, const std::int32_t*, std::int64_t, \
                                                         Acc*, Workspace&, stream_t);                               \
  template void segmented_cuda<Op, T, Acc, std::int64_t>(const T*, std::int64_t, const std::int64_t*, std::int64_t, \
                                                         Acc*, Workspace&, stream_t);
TALLY_REDUCE_FOR_EACH(TALLY_INSTANTIATE_NO_CUDA_SEG)
#define TALLY_INSTANTIATE_NO_CUDA_SEG_R(R, T) TALLY_INSTANTIATE_NO_CUDA_SEG(R, T, R::value_type)
TALLY_REDUCERS_FOR_EACH(TALLY_INSTANTIATE_NO_CUDA_SEG_R)
template void check_offsets_cuda<std::int32_t>(const std::int32_t*, std::int64_t, std::int64_t, Workspace&, stream_t);
template void check_offsets_cuda<std::int64_t>(const std::int64_t*, std::int64_t, std::int64_t, Workspace&, stream_t);
#define TALLY_INSTANTIATE_NO_CUDA_EXACT(Op, T, Out)                             \
  template void exact_cuda<T, Out>(const Problem&, Out*, Workspace&, stream_t); \
  template void exact_round_cuda<T, Out>(const exact::Accumulator<T>*, Out*, std::int64_t, Workspace&, stream_t);
TALLY_REDUCE_FOR_EACH_EXACT(TALLY_INSTANTIATE_NO_CUDA_EXACT)
template void exact_cuda<float, exact::Accumulator<float>>(const Problem&, exact::Accumulator<float>*, Workspace&,
                                                           stream_t);
template void exact_cuda<double, exact::Accumulator<double>>(const Problem&, exact::Accumulator<double>*, Workspace&,
                                                             stream_t);
template <class R, class T>
void reducer_cuda(View<const T>, Levels, typename R::value_type*, std::int64_t, Workspace&, stream_t) {
  no_cuda();
}
template <class R, class T>
typename R::value_type reducer_cuda_to_host(View<const T>, Workspace&, stream_t) {
  no_cuda();
}
#define TALLY_INSTANTIATE_NO_CUDA_REDUCER(R, T)                                                              \
  template void reducer_cuda<R, T>(View<const T>, Levels, typename R::value_type*, std::int64_t, Workspace&, \
                                   stream_t);                                                                \
  template typename R::value_type reducer_cuda_to_host<R, T>(View<const T>, Workspace&, stream_t);
TALLY_REDUCERS_FOR_EACH(TALLY_INSTANTIATE_NO_CUDA_REDUCER)
template std::int32_t copy_scalar_to_host<std::int32_t>(const std::int32_t*, stream_t);
template std::int64_t copy_scalar_to_host<std::int64_t>(const std::int64_t*, stream_t);
template float copy_scalar_to_host<float>(const float*, stream_t);
template double copy_scalar_to_host<double>(const double*, stream_t);

}  // namespace tally::reduce::detail
