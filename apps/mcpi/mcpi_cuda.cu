// CUDA backend: fused kernels (cuRAND device API: generate, test and count in registers; the
// per-thread counts summed by the library's gang step in 64 bits), the host-API pipeline
// (curandGenerateUniform into a buffer, then a count kernel), and what the benchmark times
// (CudaCounter, the reference kernel; bench.cpp runs them).
#include <curand.h>
#include <curand_kernel.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <type_traits>
#include <vector>

#include "mcpi.hpp"
#include "mcpi_curand.hpp"
#include "sample.hpp"
#include "tally/common/copy_bandwidth.cuh"
#include "tally/common/cuda_check.cuh"
#include "tally/common/device_buffer.cuh"
#include "tally/common/device_timer.cuh"
#include "tally/common/timing.hpp"
#include "tally/reduce/device/gang.cuh"
#include "tuning.hpp"

namespace tally::mcpi {

namespace {

namespace dev = tally::reduce::device;
using tally::reduce::Sum;
using hits_t = long long;  // 64-bit counts (same width as std::int64_t; the shuffles take long long)

using tuning::block_threads;
constexpr std::int64_t philox_subsequences = 65536;  // cuRAND's host-API Philox layout (mcpi.hpp)

/// Sums the per-thread counts over the grid; the last block's thread 0 stores (or adds) the total.
__device__ __forceinline__ void finish_count(hits_t h, hits_t* d_partials, unsigned* d_ticket, hits_t* d_out,
                                             bool accumulate, hits_t extra = 0) {
  __shared__ dev::GangStorage<hits_t> tmp;
  hits_t total;
  if (dev::gang_reduce<Sum>(h, d_partials, d_ticket, total, tmp) && threadIdx.x == 0)
    *d_out = (accumulate ? *d_out : 0) + total + extra;
}

__device__ __forceinline__ hits_t philox_single_sample(unsigned long long seed, long long k) {
  // Sample k = uniforms 2k, 2k+1: block k/2 (subsequence b % 65536, counter b / 65536), lanes 2(k%2), +1.
  const unsigned long long b = static_cast<unsigned long long>(k) >> 1;
  curandStatePhilox4_32_10_t st;
  curand_init(seed, b % philox_subsequences, 4 * (b / philox_subsequences) + 2 * (k & 1), &st);
  const float x = curand_uniform(&st);
  const float y = curand_uniform(&st);
  return in_quarter_disc(x, y);
}

/// Philox, samples [a, b). Thread g takes subsequence g % 65536 and part g / 65536 of its counter
/// range among the whole blocks [ceil(a/2), floor(b/2)); the last block adds the (at most two)
/// samples of half blocks at the ends.
///   direct = true (production): cuRAND's Philox4x32-10 bijection (curand_Philox4x32_10) on the
///     counter {lo c, hi c, z, 0} with a plain 64-bit counter increment: no per-call state shuffling.
///   direct = false: curand_init(seed, z, 4 c) then curand_uniform4, the textbook device-API loop.
///   min_blocks = 8 caps registers at 32 (full occupancy; round keys recomputed instead of kept live).
/// All produce the same points (the tests compare each with the CPU); the benchmark times each.
template <bool direct, int min_blocks>
__global__ void __launch_bounds__(block_threads, min_blocks)
    fused_philox(unsigned long long seed, long long a, long long b, int parts, hits_t* d_partials, unsigned* d_ticket,
                 hits_t* d_out) {
  const long long g = dev::global_thread_id();
  const long long z = g % philox_subsequences, part = g / philox_subsequences;
  const long long b0 = (a + 1) >> 1, b1 = b >> 1;  // whole blocks
  auto first_x = [&](long long blk) {
    return blk <= z ? 0 : (blk - z + philox_subsequences - 1) / philox_subsequences;
  };
  const long long x_lo = first_x(b0), x_hi = first_x(b1), cnt = x_hi > x_lo ? x_hi - x_lo : 0;
  const long long xs = x_lo + cnt * part / parts, xe = x_lo + cnt * (part + 1) / parts;
  const unsigned trips = static_cast<unsigned>(xe - xs);  // < 2^24: a 32-bit loop
  unsigned int h = 0;  // < 2^32: a thread has at most 2 * 2^40 / 65536 samples per launch
  if constexpr (direct) {
    const uint2 key = make_uint2(static_cast<unsigned>(seed), static_cast<unsigned>(seed >> 32));
    unsigned long long c = static_cast<unsigned long long>(xs);
    for (unsigned i = 0; i < trips; ++i, ++c) {
      const uint4 r = curand_Philox4x32_10(
          make_uint4(static_cast<unsigned>(c), static_cast<unsigned>(c >> 32), static_cast<unsigned>(z), 0u), key);
      h += in_quarter_disc(uniform_from_bits(r.x), uniform_from_bits(r.y));
      h += in_quarter_disc(uniform_from_bits(r.z), uniform_from_bits(r.w));
    }
  } else if (trips > 0) {
    curandStatePhilox4_32_10_t st;
    curand_init(seed, z, 4ull * xs, &st);
    for (unsigned i = 0; i < trips; ++i) {
      const float4 u = curand_uniform4(&st);
      h += in_quarter_disc(u.x, u.y);
      h += in_quarter_disc(u.z, u.w);
    }
  }
  hits_t extra = 0;
  if (threadIdx.x == 0) {  // only the last block's value is used; cheap enough to compute in each block's thread 0
    if ((a & 1) && a < b) extra += philox_single_sample(seed, a);
    if ((b & 1) && b - 1 >= ((a + 1) & ~1LL)) extra += philox_single_sample(seed, b - 1);
  }
  finish_count(h, d_partials, d_ticket, d_out, false, extra);
}

// ---- stateful generators (xorwow, mrg32k3a): 2^18 persistent streams ----------------------------

template <class State>
__global__ void __launch_bounds__(block_threads)
    init_streams(unsigned long long seed, long long first, State* d_states) {
  const long long s = dev::global_thread_id();
  if (s >= pseudo_streams) return;
  // The stream's first row r0 with r0 * S + s >= first; row r uses uniforms 2r, 2r+1.
  const long long r0 = first <= s ? 0 : (first - s + pseudo_streams - 1) / pseudo_streams;
  State st;
  curand_init(seed, s, 2ull * r0, &st);
  d_states[s] = st;
}

template <class State>
__global__ void __launch_bounds__(block_threads)
    fused_streams(long long a, long long b, State* d_states, hits_t* d_partials, unsigned* d_ticket, hits_t* d_out) {
  const long long s = dev::global_thread_id();
  unsigned int h = 0;
  if (s < pseudo_streams) {
    auto first_row = [&](long long k) { return k <= s ? 0 : (k - s + pseudo_streams - 1) / pseudo_streams; };
    const long long rows = first_row(b) - first_row(a);
    State st = d_states[s];
    for (long long r = 0; r < rows; ++r) {
      const float x = curand_uniform(&st);
      const float y = curand_uniform(&st);
      h += in_quarter_disc(x, y);
    }
    d_states[s] = st;
  }
  finish_count(h, d_partials, d_ticket, d_out, false);
}

// ---- Sobol: dimension 0 gives x, dimension 1 gives y, point by point ------------------------------

template <bool scrambled>
__global__ void __launch_bounds__(block_threads)
    fused_sobol(long long a, long long b, const unsigned* d_dv, unsigned c0, unsigned c1, hits_t* d_partials,
                unsigned* d_ticket, hits_t* d_out) {
  const long long t = dev::global_thread_id(), nt = dev::grid_stride(), cnt = b - a;
  const long long ps = a + cnt * t / nt, pe = a + cnt * (t + 1) / nt;  // contiguous points: Gray-code steps
  unsigned int h = 0;
  if (pe > ps) {
    using State = std::conditional_t<scrambled, curandStateScrambledSobol32_t, curandStateSobol32_t>;
    State sx, sy;
    if constexpr (scrambled) {
      curand_init(const_cast<unsigned*>(d_dv), c0, static_cast<unsigned>(ps), &sx);
      curand_init(const_cast<unsigned*>(d_dv + 32), c1, static_cast<unsigned>(ps), &sy);
    } else {
      curand_init(const_cast<unsigned*>(d_dv), static_cast<unsigned>(ps), &sx);
      curand_init(const_cast<unsigned*>(d_dv + 32), static_cast<unsigned>(ps), &sy);
    }
    for (long long i = ps; i < pe; ++i) {
      const float x = curand_uniform(&sx);
      const float y = curand_uniform(&sy);
      h += in_quarter_disc(x, y);
    }
  }
  finish_count(h, d_partials, d_ticket, d_out, false);
}

// ---- host-API pipeline: count a buffer of uniforms --------------------------------------------------

/// m points from 2m floats: interleaved (x0, y0, x1, y1, ...) or planar (m x values, then m y values).
/// 16-byte loads where the layout allows.
template <bool planar>
__global__ void __launch_bounds__(block_threads) count_buffer(const float* d_buf, long long m, hits_t* d_partials,
                                                              unsigned* d_ticket, hits_t* d_out, bool accumulate) {
  unsigned int h = 0;
  if constexpr (planar) {
    const float* d_x = d_buf;
    const float* d_y = d_buf + m;
    if (m % 4 == 0) {  // both halves 16-byte aligned
      const float4* x4 = reinterpret_cast<const float4*>(d_x);
      const float4* y4 = reinterpret_cast<const float4*>(d_y);
      for (long long i : dev::grid_stride_range(m / 4)) {
        const float4 x = x4[i], y = y4[i];
        h += in_quarter_disc(x.x, y.x) + in_quarter_disc(x.y, y.y) + in_quarter_disc(x.z, y.z) +
             in_quarter_disc(x.w, y.w);
      }
    } else {
      for (long long i : dev::grid_stride_range(m)) h += in_quarter_disc(d_x[i], d_y[i]);
    }
  } else {
    const float4* p4 = reinterpret_cast<const float4*>(d_buf);
    for (long long i : dev::grid_stride_range(m / 2)) {
      const float4 v = p4[i];
      h += in_quarter_disc(v.x, v.y) + in_quarter_disc(v.z, v.w);
    }
    if ((m & 1) && dev::global_thread_id() == 0) h += in_quarter_disc(d_buf[2 * m - 2], d_buf[2 * m - 1]);
  }
  finish_count(h, d_partials, d_ticket, d_out, accumulate);
}

// ---- the outside reference: a plain hand-written fused kernel -------------------------------------

/// The textbook kernel: one Philox subsequence per thread, curand_uniform4, 32-bit count, a warp sum
/// and one atomicAdd per warp.
__global__ void reference_uniform4_kernel(unsigned long long seed, long long per_thread, unsigned long long* d_hits) {
  curandStatePhilox4_32_10_t st;
  curand_init(seed, dev::global_thread_id(), 0, &st);
  unsigned int h = 0;
  for (long long i = 0; i < per_thread; ++i) {
    const float4 u = curand_uniform4(&st);
    h += (u.x * u.x + u.y * u.y <= 1.0f);
    h += (u.z * u.z + u.w * u.w <= 1.0f);
  }
  h = __reduce_add_sync(0xffffffffu, h);
  if (dev::lane_id() == 0) atomicAdd(d_hits, static_cast<unsigned long long>(h));
}

// ---- the engine: one generator positioned in its stream --------------------------------------------

using detail::PhiloxLoop;
constexpr PhiloxLoop production_loop = PhiloxLoop::direct;  // run_cuda's (mcpi.hpp)

class Stream {
 public:
  Stream() { TALLY_CUDA_TRY(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking)); }
  ~Stream() { cudaStreamDestroy(s_); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  [[nodiscard]] cudaStream_t get() const { return s_; }

 private:
  cudaStream_t s_{};
};

template <class K>
int max_blocks_per_sm(K kernel) {
  int nb = 0;
  TALLY_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&nb, kernel, block_threads, 0));
  return std::max(nb, 1);
}

class Engine {
 public:
  /// Sets the generator up at sample `first` (state initialisation, timed into setup_s).
  /// loop: which fused Philox kernel (see fused_philox); production_loop unless a benchmark asks.
  Engine(Generator g, Api api, std::uint64_t seed, std::int64_t first, cudaStream_t s,
         PhiloxLoop loop = production_loop)
      : g_(g), api_(api), seed_(seed), next_(first), s_(s), loop_(loop) {
    int device = 0;
    TALLY_CUDA_TRY(cudaGetDevice(&device));
    TALLY_CUDA_TRY(cudaDeviceGetAttribute(&sm_count_, cudaDevAttrMultiProcessorCount, device));
    d_ticket_ = DeviceBuffer<unsigned>(1);
    d_ticket_.fill_bytes(0, s_);
    EventTimer t;
    t.start(s_);
    if (api_ == Api::host) {
      gen_ = std::make_unique<detail::CurandGenerator>(g_, seed_, first, /*host=*/false);
      gen_->set_stream(s_);
      d_buf_ = DeviceBuffer<float>(static_cast<std::size_t>(2 * host_chunk));
      grid_ = sm_count_ * std::min(max_blocks_per_sm(count_buffer<false>), max_blocks_per_sm(count_buffer<true>));
    } else if (g_ == Generator::philox) {
      const int nb = loop_ == PhiloxLoop::direct        ? max_blocks_per_sm(fused_philox<true, 1>)
                     : loop_ == PhiloxLoop::direct_full ? max_blocks_per_sm(fused_philox<true, 8>)
                                                        : max_blocks_per_sm(fused_philox<false, 1>);
      parts_ = std::max(1, sm_count_ * nb * block_threads / static_cast<int>(philox_subsequences));
      grid_ = static_cast<int>(philox_subsequences * parts_ / block_threads);
    } else if (g_ == Generator::xorwow) {
      init_states<curandStateXORWOW_t>(first);
    } else if (g_ == Generator::mrg32k3a) {
      init_states<curandStateMRG32k3a_t>(first);
    } else {
      curandDirectionVectors32_t* dv = nullptr;
      // Scrambled Sobol has its own direction vectors (as cuRAND's host API uses them).
      detail::CurandGenerator::check(
          curandGetDirectionVectors32(&dv, g_ == Generator::sobol ? CURAND_DIRECTION_VECTORS_32_JOEKUO6
                                                                  : CURAND_SCRAMBLED_DIRECTION_VECTORS_32_JOEKUO6),
          "curandGetDirectionVectors32");
      unsigned* sc = nullptr;
      detail::CurandGenerator::check(curandGetScrambleConstants32(&sc), "curandGetScrambleConstants32");
      std::vector<unsigned> h_dv(dv[0], dv[0] + 32);
      h_dv.insert(h_dv.end(), dv[1], dv[1] + 32);
      d_dv_ = DeviceBuffer<unsigned>(std::span<const unsigned>(h_dv), s_);
      c0_ = sc[0], c1_ = sc[1];
      grid_ = sm_count_ *
              (g_ == Generator::sobol ? max_blocks_per_sm(fused_sobol<false>) : max_blocks_per_sm(fused_sobol<true>));
    }
    t.stop(s_);
    setup_s_ = t.elapsed_s();
    d_partials_ = DeviceBuffer<hits_t>(static_cast<std::size_t>(grid_));
  }

  [[nodiscard]] double setup_s() const { return setup_s_; }

  /// Enqueues the count of samples [next, next + n) into *d_out (overwritten); advances next.
  void run(std::int64_t n, hits_t* d_out) {
    const long long a = next_, b = next_ + n;
    if (api_ == Api::host) {
      for (long long c = 0; c < n; c += host_chunk) {
        const long long m = std::min<long long>(host_chunk, n - c);
        gen_->uniforms(d_buf_.data(), static_cast<std::size_t>(2 * m));
        if (is_quasi(g_))
          count_buffer<true>
              <<<grid_, block_threads, 0, s_>>>(d_buf_.data(), m, d_partials_.data(), d_ticket_.data(), d_out, c > 0);
        else
          count_buffer<false>
              <<<grid_, block_threads, 0, s_>>>(d_buf_.data(), m, d_partials_.data(), d_ticket_.data(), d_out, c > 0);
        TALLY_CHECK_LAUNCH();
      }
    } else if (g_ == Generator::philox) {
      auto kernel = loop_ == PhiloxLoop::direct        ? fused_philox<true, 1>
                    : loop_ == PhiloxLoop::direct_full ? fused_philox<true, 8>
                                                       : fused_philox<false, 1>;
      kernel<<<grid_, block_threads, 0, s_>>>(seed_, a, b, parts_, d_partials_.data(), d_ticket_.data(), d_out);
      TALLY_CHECK_LAUNCH();
    } else if (g_ == Generator::xorwow) {
      fused_streams<<<grid_, block_threads, 0, s_>>>(a, b, static_cast<curandStateXORWOW_t*>(d_states_.get()),
                                                     d_partials_.data(), d_ticket_.data(), d_out);
      TALLY_CHECK_LAUNCH();
    } else if (g_ == Generator::mrg32k3a) {
      fused_streams<<<grid_, block_threads, 0, s_>>>(a, b, static_cast<curandStateMRG32k3a_t*>(d_states_.get()),
                                                     d_partials_.data(), d_ticket_.data(), d_out);
      TALLY_CHECK_LAUNCH();
    } else if (g_ == Generator::sobol) {
      fused_sobol<false>
          <<<grid_, block_threads, 0, s_>>>(a, b, d_dv_.data(), c0_, c1_, d_partials_.data(), d_ticket_.data(), d_out);
      TALLY_CHECK_LAUNCH();
    } else {
      fused_sobol<true>
          <<<grid_, block_threads, 0, s_>>>(a, b, d_dv_.data(), c0_, c1_, d_partials_.data(), d_ticket_.data(), d_out);
      TALLY_CHECK_LAUNCH();
    }
    next_ = b;
  }

 private:
  static constexpr long long host_chunk = tuning::host_chunk;  // samples per curandGenerateUniform call

  template <class State>
  void init_states(std::int64_t first) {
    auto* p = static_cast<void*>(nullptr);
    TALLY_CUDA_TRY(cudaMalloc(&p, sizeof(State) * pseudo_streams));
    d_states_.reset(p);
    grid_ = static_cast<int>(pseudo_streams / block_threads);
    init_streams<State><<<grid_, block_threads, 0, s_>>>(seed_, first, static_cast<State*>(p));
    TALLY_CHECK_LAUNCH();
  }
  struct CudaFree {
    void operator()(void* p) const { cudaFree(p); }
  };

  Generator g_;
  Api api_;
  std::uint64_t seed_;
  std::int64_t next_;
  cudaStream_t s_;
  PhiloxLoop loop_;
  int sm_count_ = 0, grid_ = 0, parts_ = 1;
  double setup_s_ = 0;
  unsigned c0_ = 0, c1_ = 0;
  DeviceBuffer<unsigned> d_ticket_, d_dv_;
  DeviceBuffer<hits_t> d_partials_;
  DeviceBuffer<float> d_buf_;
  std::unique_ptr<void, CudaFree> d_states_;
  std::unique_ptr<detail::CurandGenerator> gen_;
};

/// CudaCounter on an Engine of its own stream.
class Counter final : public CudaCounter {
 public:
  Counter(Generator g, Api api, std::uint64_t seed, std::int64_t first, PhiloxLoop loop)
      : e_(g, api, seed, first, stream_.get(), loop), d_out_(1) {}
  [[nodiscard]] double setup_s() const override { return e_.setup_s(); }
  std::int64_t count(std::int64_t n, double* device_s) override {
    timer_.start(stream_.get());
    e_.run(n, d_out_.data());
    timer_.stop(stream_.get());
    hits_t h = 0;
    TALLY_CUDA_TRY(cudaMemcpyAsync(&h, d_out_.data(), sizeof h, cudaMemcpyDeviceToHost, stream_.get()));
    TALLY_CUDA_TRY(cudaStreamSynchronize(stream_.get()));
    if (device_s) *device_s = timer_.elapsed_s();
    return h;
  }

 private:
  Stream stream_;
  Engine e_;
  DeviceBuffer<hits_t> d_out_;
  EventTimer timer_;
};

}  // namespace

Result run_cuda(const Params& p, int device, const ProgressFn& progress) {
  validate(p);
  TALLY_CUDA_TRY(cudaSetDevice(device));
  Stream stream;
  Engine engine(p.generator, p.api, p.seed, p.offset, stream.get());
  Result r;
  r.setup_s = engine.setup_s();
  const std::int64_t nbatches = (p.n + p.batch - 1) / p.batch;
  DeviceBuffer<hits_t> d_batch_hits(static_cast<std::size_t>(nbatches));
  d_batch_hits.fill_bytes(0xFF, stream.get());  // poisoned: every batch must write its slot
  std::vector<hits_t> h_batch(static_cast<std::size_t>(nbatches));
  EventTimer t;
  t.start(stream.get());
  std::int64_t done = 0, hits_so_far = 0;
  for (std::int64_t i = 0; i < nbatches; ++i) {
    const std::int64_t m = std::min(p.batch, p.n - done);
    engine.run(m, d_batch_hits.data() + i);
    r.batch_n.push_back(m);
    done += m;
    if (progress) {  // one 8-byte copy per batch of >= milliseconds of work
      TALLY_CUDA_TRY(
          cudaMemcpyAsync(&h_batch[i], d_batch_hits.data() + i, sizeof(hits_t), cudaMemcpyDeviceToHost, stream.get()));
      TALLY_CUDA_TRY(cudaStreamSynchronize(stream.get()));
      hits_so_far += h_batch[i];
      progress(done, hits_so_far);
    }
  }
  t.stop(stream.get());
  r.generate_count_s = t.elapsed_s();
  d_batch_hits.download(std::span<hits_t>(h_batch), stream.get());
  for (hits_t h : h_batch) {
    if (h < 0) throw Error("mcpi: a batch count was never written (internal error)");
    r.batch_hits.push_back(h);
    r.hits += h;
  }
  return r;
}

std::int64_t detail::philox_fused_hits_cuda(std::uint64_t seed, std::int64_t first, std::int64_t n, PhiloxLoop loop) {
  Params p;
  p.n = n;
  p.offset = first;
  p.seed = seed;
  p.batch = std::min<std::int64_t>(n, std::int64_t{1} << 40);
  validate(p);
  Stream stream;
  Engine e(Generator::philox, Api::device, seed, first, stream.get(), loop);
  DeviceBuffer<hits_t> d_out(1);
  e.run(n, d_out.data());
  return d_out.to_host(stream.get())[0];
}

std::unique_ptr<CudaCounter> make_cuda_counter(int device, Generator g, Api api, std::uint64_t seed, std::int64_t first,
                                               PhiloxLoop loop) {
  TALLY_CUDA_TRY(cudaSetDevice(device));
  return std::make_unique<Counter>(g, api, seed, first, loop);
}

std::int64_t reference_uniform4(int device, std::uint64_t seed, std::int64_t samples, double* device_s) {
  TALLY_CUDA_TRY(cudaSetDevice(device));
  int nb = 0, sms = 0;
  TALLY_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&nb, reference_uniform4_kernel, block_threads, 0));
  TALLY_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  const long long threads = static_cast<long long>(std::max(nb, 1)) * sms * block_threads;
  const long long per_thread = samples / 2 / threads;  // two samples per curand_uniform4
  Stream stream;
  const cudaStream_t s = stream.get();
  DeviceBuffer<unsigned long long> d_hits(1);
  d_hits.fill_bytes(0, s);
  EventTimer t;
  t.start(s);
  reference_uniform4_kernel<<<static_cast<unsigned>(threads / block_threads), block_threads, 0, s>>>(seed, per_thread,
                                                                                                     d_hits.data());
  TALLY_CHECK_LAUNCH();
  t.stop(s);
  TALLY_CUDA_TRY(cudaStreamSynchronize(s));
  *device_s = t.elapsed_s();
  return 2 * per_thread * threads;
}

double cuda_copy_gbs(int device, std::size_t bytes, int repeats) {
  TALLY_CUDA_TRY(cudaSetDevice(device));
  Stream stream;
  return tally::copy_bandwidth_gbs(bytes, repeats, stream.get());
}

}  // namespace tally::mcpi
