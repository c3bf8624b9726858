// CUDA backend of the exact dot product (dot.hpp): one launch, a grid-stride loop of products into
// each thread's filter (device::ExactThread<products_of<T>>::add_product), then exact_gang_sum over
// the blocks: the exact sum of the exact products, rounded once, the CPU backend's bits whatever
// the grid.
#include "instantiate.hpp"
#include "tally/common/cuda_check.cuh"
#include "kernels.cuh"
#include "tally/reduce/device/exact.cuh"
#include "tally/reduce/dot.hpp"

namespace tally::reduce::detail {

namespace cuda {

/// A block takes at most this many products (up to two filter inputs each): its shared limbs gain
/// less than 2^32 per input, with 31 bits of headroom.
inline constexpr std::int64_t kDotMaxPerBlock = std::int64_t{1} << 28;

template <class T, class Out>
__global__ void __launch_bounds__(ReducePolicy::block, ReducePolicy::min_blocks_sm)
    exact_dot_kernel(const T* __restrict__ a, const T* __restrict__ b, std::int64_t n, Out* __restrict__ out,
                     exact::Accumulator<exact::products_of<T>>* __restrict__ partials,
                     unsigned int* __restrict__ ticket) {
  using P = exact::products_of<T>;
  enter_after_predecessor();
  __shared__ device::ExactStorage<P> s;
  device::ExactThread<P> t(s);
  const std::int64_t step = std::int64_t{gridDim.x} * ReducePolicy::block;
  std::int64_t i = std::int64_t{blockIdx.x} * ReducePolicy::block + threadIdx.x;
  for (; i + 3 * step < n; i += 4 * step) {  // four independent loads of each in flight
    T x[4], y[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) x[u] = a[i + u * step], y[u] = b[i + u * step];
#pragma unroll
    for (int u = 0; u < 4; ++u) t.add_product(x[u], y[u]);
  }
  for (; i < n; i += step) t.add_product(a[i], b[i]);
  Out r;
  if (device::exact_gang_sum(t, partials, ticket, r, s) && threadIdx.x == 0) *out = r;
}

}  // namespace cuda

template <class T, class Out>
void exact_dot_cuda(const T* a, const T* b, std::int64_t n, Out* d_out, Workspace& ws, stream_t stream) {
  using namespace cuda;
  using A = exact::Accumulator<exact::products_of<T>>;
  const Tuning& tune = ws.tuning();
  if (n == 0) {
    launch(fill_kernel<ExactSum, Out>, 1, ReducePolicy::block, tune, stream, d_out, std::int64_t{1});
    return;
  }
  const std::int64_t wave = std::int64_t{std::max(tune.sm_count, 1)} * ReducePolicy::flat_blocks_sm;
  std::int64_t grid = std::clamp<std::int64_t>(ceil_div(n, std::int64_t{ReducePolicy::block} * 16), 1, wave);
  grid = std::max(grid, ceil_div(n, kDotMaxPerBlock));
  A* partials = nullptr;
  if (grid > 1) {
    ws.reserve(static_cast<std::size_t>(grid) * sizeof(A), 1, stream);
    partials = static_cast<A*>(ws.scratch());
  }
  launch(exact_dot_kernel<T, Out>, grid, ReducePolicy::block, tune, stream, a, b, n, d_out, partials,
         ws.ticket_array());
}

template void exact_dot_cuda<float, float>(const float*, const float*, std::int64_t, float*, Workspace&, stream_t);
template void exact_dot_cuda<float, double>(const float*, const float*, std::int64_t, double*, Workspace&, stream_t);
template void exact_dot_cuda<double, double>(const double*, const double*, std::int64_t, double*, Workspace&, stream_t);

}  // namespace tally::reduce::detail
