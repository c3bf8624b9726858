// The test reducers of custom_reducers.hpp through the header-only CUDA engine, as a user's .cu would.
#include "custom_reducers.hpp"
#include "tally/reduce/generic.cuh"

namespace tally::test {

template <class R, class T>
void custom_reduce_cuda(reduce::View<const T> in, reduce::Levels levels, std::span<typename R::value_type> d_out,
                        reduce::Workspace& ws) {
  reduce::reduce_custom<R, T>(reduce::Backend::cuda, in, levels, d_out, ws);
}

template void custom_reduce_cuda<SumSq, float>(reduce::View<const float>, reduce::Levels, std::span<SumSqCount>,
                                               reduce::Workspace&);
template void custom_reduce_cuda<BBox2, Point2>(reduce::View<const Point2>, reduce::Levels, std::span<Box2>,
                                                reduce::Workspace&);

}  // namespace tally::test
