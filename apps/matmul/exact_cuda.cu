// matmul --exact on the GPU (exact.hpp): each level's kernel on tally::reduce's exact device
// blocks (device/exact.cuh). Whatever the mapping, each element is its exact dot product rounded
// once: the same bits as every other level and as the CPU.
#include <cuda_runtime.h>

#include <algorithm>
#include <type_traits>

#include "exact.hpp"
#include "tuning.cuh"
#include "tally/common/cuda_check.cuh"
#include "tally/common/device_buffer.cuh"
#include "tally/common/error.hpp"
#include "tally/reduce/device/exact.cuh"

namespace tally::matmul {
namespace {

using idx = std::int64_t;
namespace dev = tally::reduce::device;
namespace ex = tally::reduce::exact;
template <class T>
using P = ex::products_of<T>;
template <class T>
using Acc = ex::Accumulator<P<T>>;

/// vector (Threads = 32: a warp per element, lanes split K) and worker+vector (Threads =
/// tuning::exact_threads: a block per element): every thread's filter, then exact_block_sum.
template <class T, int Threads>
__global__ void __launch_bounds__(Threads)
    exact_block_level(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ c, idx m, idx n, idx k) {
  __shared__ dev::ExactStorage<P<T>> s;
  for (idx e = blockIdx.x; e < m * n; e += gridDim.x) {
    const idx i = e / n, j = e % n;
    dev::ExactThread<P<T>> t(s);
    for (idx q = threadIdx.x; q < k; q += Threads) t.add_product(a[i * k + q], b[q * n + j]);
    const T r = dev::exact_block_sum<T>(t, s);
    if (threadIdx.x == 0) c[e] = r;
    __syncthreads();  // s is cleared for the next element
  }
}

/// worker: 32 neighbouring elements per block (x), its Y warps (y) split K; each element's
/// accumulator in shared memory, filled by every thread's filter through atomics; warp y rounds
/// elements y, y + Y, ...
template <class T>
__global__ void __launch_bounds__(tuning::exact_threads)
    exact_worker_level(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ c, idx m, idx n, idx k) {
  constexpr int W = Acc<T>::words, Y = tuning::exact_workers, threads = 32 * Y;
  __shared__ Acc<T> acc[32];
  const int x = threadIdx.x, y = threadIdx.y, tid = y * 32 + x;
  for (idx e0 = idx{blockIdx.x} * 32; e0 < m * n; e0 += idx{gridDim.x} * 32) {
    for (int w = tid; w < 32 * W; w += threads) acc[w / W].w[w % W] = 0;
    __syncthreads();
    const idx e = e0 + x;
    ex::Filter f;
    dev::SharedSink<P<T>> sink{&acc[x]};
    bool seen = false;
    if (e < m * n) {
      const idx i = e / n, j = e % n;
      for (idx q = y; q < k; q += Y) f.add_product(a[i * k + q], b[q * n + j], sink), seen = true;
    }
    dev::exact_thread_flush(f, sink, seen);
    __syncthreads();
    for (int el = y; el < 32; el += Y) {
      const T r = dev::exact_warp_round<T>(acc[el]);
      if (x == 0 && e0 + el < m * n) c[e0 + el] = r;
    }
    __syncthreads();
  }
}

/// gang: element e's K cut into S chunks, a block per (element, chunk), joined by exact_gang_sum
/// on the element's partials and ticket.
template <class T>
__global__ void __launch_bounds__(tuning::exact_threads)
    exact_gang_level(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ c, idx m, idx n, idx k, idx S,
                     idx chunk, Acc<T>* __restrict__ partials, unsigned int* __restrict__ tickets) {
  __shared__ dev::ExactStorage<P<T>> s;
  for (idx item = blockIdx.x; item < m * n * S; item += gridDim.x) {
    const idx e = item / S, q = item % S, i = e / n, j = e % n;
    const idx k1 = min(k, (q + 1) * chunk);
    dev::ExactThread<P<T>> t(s);
    for (idx kk = q * chunk + threadIdx.x; kk < k1; kk += tuning::exact_threads)
      t.add_product(a[i * k + kk], b[kk * n + j]);
    T r;
    if (dev::exact_gang_sum(t, S > 1 ? partials + e * S : nullptr, S > 1 ? tickets + e : nullptr, r, s, S, q) &&
        threadIdx.x == 0)
      c[e] = r;
    __syncthreads();
  }
}

/// tiled: E x E tiles of C (E = tuning::exact_tile) over S chunks of K staged through shared memory, a filter per
/// thread (its element), flushed by atomics into the element's accumulator in global memory; the last chunk of a tile
/// to arrive rounds its elements and clears their accumulators for the next run.
template <class T>
__global__ void __launch_bounds__(tuning::exact_tile* tuning::exact_tile)
    exact_tiled_level(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ c, idx m, idx n, idx k, idx S,
                      idx chunk, Acc<T>* __restrict__ acc, unsigned int* __restrict__ tickets) {
  constexpr int W = Acc<T>::words, E = tuning::exact_tile;
  // The tiles as doubles: a float is converted once when staged, not by each of the E threads that
  // multiply it (a float-to-double conversion runs at a quarter of the FP64 rate on sm_90).
  __shared__ double As[E][E + 1], Bs[E][E + 1];
  __shared__ bool last;
  const int tx = threadIdx.x, ty = threadIdx.y;
  const idx tiles_n = (n + E - 1) / E, tiles = (m + E - 1) / E * tiles_n;
  for (idx item = blockIdx.x; item < tiles * S; item += gridDim.x) {
    const idx tile = item / S, q = item % S;
    const idx i0 = tile / tiles_n * E, j0 = tile % tiles_n * E, i = i0 + ty, j = j0 + tx;
    const bool inside = i < m && j < n;
    const idx k0 = q * chunk, k1 = min(k, k0 + chunk);
    ex::Filter f;
    dev::SharedSink<P<T>> sink{inside ? &acc[i * n + j] : nullptr};  // global memory: atomics reach it too
    for (idx kb = k0; kb < k1; kb += E) {
      As[ty][tx] = i0 + ty < m && kb + tx < k1 ? static_cast<double>(a[(i0 + ty) * k + kb + tx]) : 0.0;
      Bs[ty][tx] = kb + ty < k1 && j0 + tx < n ? static_cast<double>(b[(kb + ty) * n + j0 + tx]) : 0.0;
      __syncthreads();
      const int kn = static_cast<int>(min(idx{E}, k1 - kb));
      if (inside)
        for (int kk = 0; kk < kn; ++kk) {
          if constexpr (std::is_same_v<T, float>)
            f.add(As[ty][kk] * Bs[kk][tx], sink);  // exact: add_product(float, float)'s sum
          else f.add_product(As[ty][kk], Bs[kk][tx], sink);
        }
      __syncthreads();
    }
    if (inside) dev::exact_thread_flush(f, sink, k1 > k0);
    if (!dev::gang_arrive(tickets + tile, static_cast<unsigned int>(S), last)) continue;
    if (inside) {
      Acc<T> mine;
      for (int w = 0; w < W; ++w) mine.w[w] = __ldcg(&acc[i * n + j].w[w]), acc[i * n + j].w[w] = 0;
      c[i * n + j] = mine.template round<T>();
    }
  }
}

idx ceil_div(idx x, idx y) { return (x + y - 1) / y; }

}  // namespace

struct ExactCuda::Impl {
  DeviceBuffer<unsigned char> scratch;  // partials (gang) or element accumulators (tiled)
  DeviceBuffer<unsigned int> tickets;
  Level scratch_for = Level::vector;
  void grow(std::size_t bytes, std::size_t nt, Level level, cudaStream_t stream) {
    if (bytes > scratch.size() || level != scratch_for) {
      scratch = DeviceBuffer<unsigned char>(std::max(bytes, scratch.size()));
      TALLY_CUDA_TRY(cudaMemsetAsync(scratch.data(), 0, scratch.size(), stream));  // tiled: accumulators start at zero
      scratch_for = level;
    }
    if (nt > tickets.size()) {
      tickets = DeviceBuffer<unsigned int>(nt);
      TALLY_CUDA_TRY(cudaMemsetAsync(tickets.data(), 0, nt * sizeof(unsigned int), stream));
    }
  }
};

ExactCuda::ExactCuda() : impl_(new Impl) {}
ExactCuda::~ExactCuda() { delete impl_; }

template <class T>
void ExactCuda::multiply(Level level, const T* a, const T* b, T* c, Shape s, stream_t stream_, int sm_count) {
  const auto stream = static_cast<cudaStream_t>(stream_);
  using namespace tuning;
  const idx mn = s.m * s.n, resident = idx{std::max(sm_count, 1)} * exact_blocks_per_sm;
  // Each accumulator (shared or global) takes fewer than 2^31 additions of less than 2^32 per limb:
  // at most 2 K of them per element.
  if (s.k >= (idx{1} << 28))
    throw InputError("--k: matmul --exact takes K below 2^28 (got " + std::to_string(s.k) + ")");
  const auto grid = [&](idx items) { return static_cast<unsigned>(std::clamp<idx>(items, 1, resident * exact_waves)); };
  switch (level) {
    case Level::vector: exact_block_level<T, 32><<<grid(mn), 32, 0, stream>>>(a, b, c, s.m, s.n, s.k); break;
    case Level::worker_vector:
      exact_block_level<T, exact_threads><<<grid(mn), exact_threads, 0, stream>>>(a, b, c, s.m, s.n, s.k);
      break;
    case Level::ozaki:  // its exact form: every element by its fallback's mapping (ozaki/ozaki_cuda.cu)
    case Level::worker:
      exact_worker_level<T><<<grid(ceil_div(mn, 32)), dim3(32, exact_workers), 0, stream>>>(a, b, c, s.m, s.n, s.k);
      break;
    case Level::gang: {
      // Enough chunks to fill the device twice, at least two where K allows, none under the minimum.
      const idx most = std::max<idx>(1, s.k / exact_gang_min_chunk),
                S = std::clamp<idx>(ceil_div(2 * resident, mn), std::min<idx>(2, most), most);
      const idx chunk = ceil_div(s.k, S);
      impl_->grow(static_cast<std::size_t>(mn * S) * sizeof(Acc<T>), static_cast<std::size_t>(mn), level, stream);
      exact_gang_level<T><<<grid(mn * S), exact_threads, 0, stream>>>(
          a, b, c, s.m, s.n, s.k, S, chunk, reinterpret_cast<Acc<T>*>(impl_->scratch.data()), impl_->tickets.data());
      break;
    }
    case Level::tiled: {
      const idx tiles = ceil_div(s.m, exact_tile) * ceil_div(s.n, exact_tile);
      const idx S =
          std::clamp<idx>(ceil_div(2 * resident, tiles), 1, std::max<idx>(1, ceil_div(s.k, exact_tiled_min_chunk)));
      const idx chunk = ceil_div(ceil_div(s.k, S), exact_tile) * exact_tile;
      impl_->grow(static_cast<std::size_t>(mn) * sizeof(Acc<T>), static_cast<std::size_t>(tiles), level, stream);
      exact_tiled_level<T><<<grid(tiles * ceil_div(s.k, chunk)), dim3(exact_tile, exact_tile), 0, stream>>>(
          a, b, c, s.m, s.n, s.k, ceil_div(s.k, chunk), chunk, reinterpret_cast<Acc<T>*>(impl_->scratch.data()),
          impl_->tickets.data());
      break;
    }
    case Level::tiled_tc:  // resolve_levels keeps it out of --exact; never leave C as the last level left it
      throw InputError(kNoExactTiledTc);
  }
  TALLY_CHECK_LAUNCH();
}

template void ExactCuda::multiply<float>(Level, const float*, const float*, float*, Shape, stream_t, int);
template void ExactCuda::multiply<double>(Level, const double*, const double*, double*, Shape, stream_t, int);

}  // namespace tally::matmul
