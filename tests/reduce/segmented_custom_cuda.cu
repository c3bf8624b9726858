// The test reducers of custom_reducers.hpp over segments through the header-only CUDA engine.
#include "segmented_custom.hpp"
#include "tally/reduce/segmented.cuh"

namespace tally::test {

template <class R, class T, class Off>
void custom_segmented_cuda(std::span<const T> in, std::span<const Off> offsets, std::span<typename R::value_type> d_out,
                           reduce::Workspace& ws) {
  reduce::segmented_reduce_custom<R, T, Off>(reduce::Backend::cuda, in, offsets, d_out, ws);
}

template void custom_segmented_cuda<SumSq, float, std::int64_t>(std::span<const float>, std::span<const std::int64_t>,
                                                                std::span<SumSqCount>, reduce::Workspace&);
template void custom_segmented_cuda<SumSqWide, Wide, std::int64_t>(std::span<const Wide>, std::span<const std::int64_t>,
                                                                   std::span<SumSqCount>, reduce::Workspace&);
template void custom_segmented_cuda<BBox2, Point2, std::int32_t>(std::span<const Point2>, std::span<const std::int32_t>,
                                                                 std::span<Box2>, reduce::Workspace&);

}  // namespace tally::test
