// Test kernels for the device building blocks: each one exercises one block exactly the way an app
// kernel would, with the block shapes the test chooses.
#include "blocks_kernels.hpp"
#include "tally/common/cuda_check.cuh"
#include "tally/reduce/device/exact.cuh"
#include "tally/reduce/device/gang.cuh"
#include "tally/reduce/device/segment.cuh"
#include "tally/reduce/device/vector.cuh"
#include "tally/reduce/device/worker.cuh"
#include "tally/reduce/ops.hpp"
#include "tally/reduce/reducers.hpp"
#include "tally/reduce/segmented.hpp"

namespace tally::test::blocks {
namespace dev = tally::reduce::device;

namespace {

template <class Op, class T>
__global__ void block_reduce_kernel(const T* in, T* out) {
  __shared__ dev::BlockReduceStorage<T> tmp;
  const T x = in[dev::block_rank() * dev::block_size() + dev::block_thread_rank()];
  const T r = dev::block_reduce<Op>(x, tmp);
  if (dev::block_thread_rank() == 0) out[dev::block_rank()] = r;
}

template <class Op, class T, int G>
__global__ void group_reduce_kernel(const T* in, T* out) {
  out[threadIdx.x] = dev::group_reduce<Op, G>(in[threadIdx.x]);
}

template <class Op, class T>
__global__ void group_reduce_n_kernel(const T* in, T* out, int g) {
  out[threadIdx.x] = dev::group_reduce_n<Op>(in[threadIdx.x], g);
}

template <class Op, class T>
__global__ void worker_reduce_kernel(const T* in, T* out) {
  extern __shared__ unsigned char smem_raw[];
  T* smem = reinterpret_cast<T*>(smem_raw);
  const std::int64_t b = blockIdx.x;
  const T x = in[(b * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x];
  const T r = dev::worker_reduce<Op>(x, smem);
  if (threadIdx.y == 0) out[b * blockDim.x + threadIdx.x] = r;
}

template <class Op, class T>
__global__ void gang_reduce_kernel(const T* in, std::int64_t n, T* partials, unsigned int* ticket, T* out) {
  __shared__ dev::GangStorage<T> tmp;
  T local = Op::template identity<T>();
  for (auto i : dev::grid_stride_range(n)) local = Op::template combine<T>(local, in[i]);
  T r;
  if (dev::gang_reduce<Op>(local, partials, ticket, r, tmp) && threadIdx.x == 0) *out = r;
}

template <class Op, class T>
__global__ void gang_segments_kernel(const T* in, T* partials, unsigned int* tickets, T* out, int count, int width) {
  __shared__ bool last;
  const int g = static_cast<int>(blockIdx.x) / count, b = static_cast<int>(blockIdx.x) % count;
  T* seg = partials + static_cast<std::int64_t>(g) * count * width;
  for (int e = threadIdx.x; e < width; e += blockDim.x)
    seg[b * width + e] = in[(static_cast<std::int64_t>(g) * count + b) * width + e];
  if (dev::gang_arrive(tickets + g, static_cast<unsigned int>(count), last))
    for (int e = threadIdx.x; e < width; e += blockDim.x)
      out[g * width + e] = dev::gang_combine<Op>(seg, count, width, e);
}

template <class Op, class T>
__global__ void gang_select_kernel(const T* in, std::int64_t n, dev::select_key_t<T>* cell, unsigned int* ticket,
                                   T* out) {
  __shared__ dev::GangStorage<T> tmp;
  T local = Op::template identity<T>();
  for (auto i : dev::grid_stride_range(n)) local = Op::template combine<T>(local, in[i]);
  T r;
  if (dev::gang_reduce_select<Op>(local, cell, ticket, r, tmp) && threadIdx.x == 0) *out = r;
}

template <class T, class Out>
__global__ void __launch_bounds__(1024)
    exact_gang_kernel(const T* in, std::int64_t n, tally::reduce::exact::Accumulator<T>* partials, unsigned int* ticket,
                      Out* out) {
  __shared__ dev::ExactStorage<T> s;
  dev::ExactThread<T> t(s);
  // Batches of four through the bins (add_batch), the rest one by one (add): both paths, any grid.
  const std::int64_t stride = std::int64_t{gridDim.x} * blockDim.x;
  std::int64_t i = std::int64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  for (; i + 3 * stride < n; i += 4 * stride) {
    const T x[4] = {in[i], in[i + stride], in[i + 2 * stride], in[i + 3 * stride]};
    t.add_batch(x);
  }
  for (; i < n; i += stride) t.add(in[i]);
  Out r;
  if (dev::exact_gang_sum(t, partials, ticket, r, s) && threadIdx.x == 0) *out = r;
}

template <class Out>
__global__ void __launch_bounds__(1024)
    exact_dot_kernel(const float* a, const float* b, std::int64_t n,
                     tally::reduce::exact::Accumulator<tally::reduce::exact::FloatProducts>* partials,
                     unsigned int* ticket, Out* out) {
  __shared__ dev::ExactStorage<tally::reduce::exact::FloatProducts> s;
  dev::ExactThread<tally::reduce::exact::FloatProducts> t(s);
  for (auto i : dev::grid_stride_range(n)) t.add_product(a[i], b[i]);
  Out r;
  if (dev::exact_gang_sum(t, partials, ticket, r, s) && threadIdx.x == 0) *out = r;
}

/// A user's kernel: each segment by the form segment.cuh assigns to its length, in its order.
template <class Op, class T, class Acc>
__global__ void segments_by_forms_kernel(const T* x, std::int64_t n, const std::int64_t* off, Acc* out) {
  __shared__ dev::BlockReduceStorage<Acc> tmp;
  __shared__ Acc part[16];
  const std::int64_t s = blockIdx.x, b = off[s], len = off[s + 1] - b;
  const unsigned t = threadIdx.x;
  if (len <= tally::reduce::segment_thread_max) {
    if (t == 0) out[s] = dev::thread_segment_reduce<Op, Acc>(x, n, b, b + len);
  } else if (len <= tally::reduce::segment_warp_max) {
    if (t < dev::warp_size) {
      const Acc r = dev::warp_segment_reduce<Op, Acc>(x + b, len);
      if (t == 0) out[s] = r;
    }
  } else {
    const std::int64_t chunks = (len + tally::reduce::segment_chunk - 1) / tally::reduce::segment_chunk;
    for (std::int64_t c = 0; c < chunks; ++c) {
      const std::int64_t c0 = c * tally::reduce::segment_chunk;
      const Acc v =
          dev::block_segment_reduce<Op, Acc>(x + b + c0, min(tally::reduce::segment_chunk, len - c0), tmp, c0);
      if (t == 0) part[c] = v;
    }
    __syncthreads();
    Acc v = tally::reduce::detail::op_identity<Op, Acc>();
    for (std::int64_t k = t; k < chunks; k += blockDim.x) v = tally::reduce::detail::op_combine<Op, Acc>(v, part[k]);
    v = chunks == 1 ? part[0] : dev::block_reduce<Op>(v, tmp);
    if (t == 0) out[s] = v;
  }
}

}  // namespace

template <class Out>
void exact_dot(const float* d_a, const float* d_b, std::int64_t n, void* d_partials, unsigned int* d_ticket, Out* d_out,
               int blocks, int threads) {
  using A = tally::reduce::exact::Accumulator<tally::reduce::exact::FloatProducts>;
  exact_dot_kernel<Out><<<blocks, threads>>>(d_a, d_b, n, static_cast<A*>(d_partials), d_ticket, d_out);
  TALLY_CHECK_LAUNCH();
}
template void exact_dot<float>(const float*, const float*, std::int64_t, void*, unsigned int*, float*, int, int);
template void exact_dot<double>(const float*, const float*, std::int64_t, void*, unsigned int*, double*, int, int);

template <class T, class Out>
void exact_gang_sum(const T* d_in, std::int64_t n, void* d_partials, unsigned int* d_ticket, Out* d_out, int blocks,
                    int threads) {
  exact_gang_kernel<T, Out>
      <<<blocks, threads>>>(d_in, n, static_cast<tally::reduce::exact::Accumulator<T>*>(d_partials), d_ticket, d_out);
  TALLY_CHECK_LAUNCH();
}
template void exact_gang_sum<float, float>(const float*, std::int64_t, void*, unsigned int*, float*, int, int);
template void exact_gang_sum<float, double>(const float*, std::int64_t, void*, unsigned int*, double*, int, int);
template void exact_gang_sum<double, double>(const double*, std::int64_t, void*, unsigned int*, double*, int, int);

template <class Op, class T>
void block_reduce(const T* d_in, T* d_out, int bx, int by, int blocks) {
  block_reduce_kernel<Op, T><<<blocks, dim3(bx, by)>>>(d_in, d_out);
  TALLY_CHECK_LAUNCH();
}

template <class Op, class T>
void group_reduce(const T* d_in, T* d_out, int G, bool runtime, int threads) {
  if (runtime) {
    group_reduce_n_kernel<Op, T><<<1, threads>>>(d_in, d_out, G);
  } else {
    switch (G) {
      case 1: group_reduce_kernel<Op, T, 1><<<1, threads>>>(d_in, d_out); break;
      case 2: group_reduce_kernel<Op, T, 2><<<1, threads>>>(d_in, d_out); break;
      case 4: group_reduce_kernel<Op, T, 4><<<1, threads>>>(d_in, d_out); break;
      case 8: group_reduce_kernel<Op, T, 8><<<1, threads>>>(d_in, d_out); break;
      case 16: group_reduce_kernel<Op, T, 16><<<1, threads>>>(d_in, d_out); break;
      default: group_reduce_kernel<Op, T, 32><<<1, threads>>>(d_in, d_out); break;
    }
  }
  TALLY_CHECK_LAUNCH();
}

template <class Op, class T>
void worker_reduce(const T* d_in, T* d_out, int bx, int by, int blocks) {
  worker_reduce_kernel<Op, T><<<blocks, dim3(bx, by), sizeof(T) * bx * by>>>(d_in, d_out);
  TALLY_CHECK_LAUNCH();
}

template <class Op, class T>
void gang_reduce(const T* d_in, std::int64_t n, T* d_partials, unsigned int* d_ticket, T* d_out, int blocks,
                 int threads) {
  gang_reduce_kernel<Op, T><<<blocks, threads>>>(d_in, n, d_partials, d_ticket, d_out);
  TALLY_CHECK_LAUNCH();
}

template <class Op, class T>
void gang_segments(const T* d_in, T* d_partials, unsigned int* d_tickets, T* d_out, int nseg, int count, int width,
                   int threads) {
  gang_segments_kernel<Op, T><<<nseg * count, threads>>>(d_in, d_partials, d_tickets, d_out, count, width);
  TALLY_CHECK_LAUNCH();
}

template <class Op, class T>
void gang_select_arm(void* d_cell) {
  const auto key = dev::select_identity_key<Op, T>();
  TALLY_CUDA_TRY(cudaMemcpy(d_cell, &key, sizeof key, cudaMemcpyHostToDevice));
}

template <class Op, class T>
bool gang_select_armed(const void* d_cell) {
  dev::select_key_t<T> key{};
  TALLY_CUDA_TRY(cudaMemcpy(&key, d_cell, sizeof key, cudaMemcpyDeviceToHost));
  return key == dev::select_identity_key<Op, T>();
}

template <class Op, class T>
void gang_select(const T* d_in, std::int64_t n, void* d_cell, unsigned int* d_ticket, T* d_out, int blocks,
                 int threads) {
  gang_select_kernel<Op, T><<<blocks, threads>>>(d_in, n, static_cast<dev::select_key_t<T>*>(d_cell), d_ticket, d_out);
  TALLY_CHECK_LAUNCH();
}

template <class Op, class T, class Acc>
void segments_by_forms(const T* d_in, std::int64_t n, const std::int64_t* d_off, std::int64_t n_seg, Acc* d_out) {
  segments_by_forms_kernel<Op, T, Acc>
      <<<static_cast<unsigned>(n_seg), tally::reduce::segment_block>>>(d_in, n, d_off, d_out);
  TALLY_CHECK_LAUNCH();
}
template void segments_by_forms<tally::reduce::Sum, float, float>(const float*, std::int64_t, const std::int64_t*,
                                                                  std::int64_t, float*);
template void segments_by_forms<tally::reduce::Sum, double, double>(const double*, std::int64_t, const std::int64_t*,
                                                                    std::int64_t, double*);
template void segments_by_forms<tally::reduce::ArgMax<float>, float, tally::reduce::ValueIndex<float>>(
    const float*, std::int64_t, const std::int64_t*, std::int64_t, tally::reduce::ValueIndex<float>*);
template void segments_by_forms<tally::reduce::MeanVar, float, tally::reduce::Moments>(const float*, std::int64_t,
                                                                                       const std::int64_t*,
                                                                                       std::int64_t,
                                                                                       tally::reduce::Moments*);

#define TALLY_BLOCKS_SELECT(Op, T)                     \
  template void gang_select_arm<Op, T>(void*);         \
  template bool gang_select_armed<Op, T>(const void*); \
  template void gang_select<Op, T>(const T*, std::int64_t, void*, unsigned int*, T*, int, int);

#define TALLY_BLOCKS_INSTANTIATE(Op, T)                                                      \
  template void block_reduce<Op, T>(const T*, T*, int, int, int);                            \
  template void group_reduce<Op, T>(const T*, T*, int, bool, int);                           \
  template void worker_reduce<Op, T>(const T*, T*, int, int, int);                           \
  template void gang_reduce<Op, T>(const T*, std::int64_t, T*, unsigned int*, T*, int, int); \
  template void gang_segments<Op, T>(const T*, T*, unsigned int*, T*, int, int, int, int);
#define TALLY_BLOCKS_OPS(T)                        \
  TALLY_BLOCKS_INSTANTIATE(tally::reduce::Sum, T)  \
  TALLY_BLOCKS_INSTANTIATE(tally::reduce::Prod, T) \
  TALLY_BLOCKS_INSTANTIATE(tally::reduce::Max, T)  \
  TALLY_BLOCKS_INSTANTIATE(tally::reduce::Min, T)  \
  TALLY_BLOCKS_SELECT(tally::reduce::Max, T)       \
  TALLY_BLOCKS_SELECT(tally::reduce::Min, T)
TALLY_BLOCKS_OPS(int)
TALLY_BLOCKS_OPS(float)
TALLY_BLOCKS_OPS(double)
TALLY_BLOCKS_SELECT(tally::reduce::Max, std::int64_t)
TALLY_BLOCKS_SELECT(tally::reduce::Min, std::int64_t)

}  // namespace tally::test::blocks
