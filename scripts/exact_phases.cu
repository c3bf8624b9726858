// Phase timing of the flat exact kernel (not part of the build; scripts/exact-gpu-check.sh compiles and runs it):
// where the time of an exact sum goes, next to the plain sum, for floats and doubles, and small sums on 1 .. 64
// blocks. `phases profile` launches each phase once at 2^28 (for ncu).
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>
#include "tally/reduce/device/exact.cuh"
#include "tally/reduce/device/gang.cuh"
#include "tally/reduce/device/thread.cuh"
namespace dev = tally::reduce::device;
namespace ex = tally::reduce::exact;
#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { std::printf("CUDA %s at %d\n", cudaGetErrorString(e_), __LINE__); return 1; } } while (0)

constexpr int U = 4;
// P: 0 plain gang_reduce<Sum>; 1 exact loop only (bins); 2 + block flush; 3 + carry/partials/ticket; 6 + merge; 4 full exact_gang_sum;
// 9 full exact_gang_total (the production flat kernel's);
// (G blocks table: G below n / (256 V U) leaves threads without a whole batch: this loop then skips
// their elements, so only the rows where every thread has a batch time a real sum)
// 7 full without the one-by-one path (timing only);
// 8 = 2 plus an out-of-line call to round() that is never taken (its stack frame)
template <class T, int P>
__global__ void __launch_bounds__(256, 4) k(const T* __restrict__ in, long n, T* out, ex::Accumulator<T>* partials, T* fpart, unsigned* ticket) {
  constexpr int V = 16 / sizeof(T);
  const long step = long(gridDim.x) * 256 * V;
  long i = (long(blockIdx.x) * 256 + threadIdx.x) * V;
  if constexpr (P == 0) {
    __shared__ dev::GangStorage<T> g;
    T acc = 0;
    for (; i + (U - 1) * step < n; i += U * step) {
      dev::Vec<T, V> v[U];
#pragma unroll
      for (int u = 0; u < U; ++u) v[u] = dev::load_vec<V>(in + i + u * step);
#pragma unroll
      for (int u = 0; u < U; ++u)
#pragma unroll
        for (int q = 0; q < V; ++q) acc += v[u].v[q];
    }
    T r;
    if (dev::gang_reduce<tally::reduce::Sum>(acc, fpart, ticket, r, g) && threadIdx.x == 0) *out = r;
  } else {
    __shared__ dev::ExactStorage<T> s;
    dev::ExactThread<T> t(s);
    T x[U * V];
    {
      for (; i + (U - 1) * step < n; i += U * step) {
#pragma unroll
        for (int u = 0; u < U; ++u) {
          const auto v = dev::load_vec<V>(in + i + u * step);
#pragma unroll
          for (int q = 0; q < V; ++q) x[u * V + q] = v.v[q];
        }
        if constexpr (P == 7) {  // timing only: no one-by-one path (inexact where a batch needs it)
          if (!t.bins.try_add(x, t.f, t.sink) && t.bins.widen(x, t.f, t.sink)) t.bins.try_add(x, t.f, t.sink);
          t.seen = true;
        } else {
          t.add_batch(x);
        }
      }
    }
    if constexpr (P == 1) {
      if (t.bins.s1 == 12345 && t.bins.s2 == 77) *out = T(t.f.lo);
    } else if constexpr (P == 2) {
      dev::exact_block_flush(t, s);
      if (threadIdx.x == 0) *out = T(s.acc.w[3]);
    } else if constexpr (P == 8) {  // P2 with the rounding's out-of-line call present but never taken
      dev::exact_block_flush(t, s);
      if (threadIdx.x == 0) *out = T(s.acc.w[3]);
      if (threadIdx.x == 0 && s.acc.w[0] == 0x123456789ll) *out = s.acc.template round<T>();
    } else if constexpr (P == 3) {  // + carry, partials, ticket (no merge, no rounding)
      dev::exact_block_flush(t, s);
      dev::exact_block_carry(s.acc);
      if (threadIdx.x < ex::Accumulator<T>::words) partials[blockIdx.x].w[threadIdx.x] = s.acc.w[threadIdx.x];
      if (dev::gang_arrive(ticket, gridDim.x, s.last) && threadIdx.x == 0) *out = T(s.acc.w[3]), *ticket = 0;
    } else if constexpr (P == 6) {  // + the last block's merge (no rounding)
      dev::exact_block_flush(t, s);
      dev::exact_block_carry(s.acc);
      if (threadIdx.x < ex::Accumulator<T>::words) partials[blockIdx.x].w[threadIdx.x] = s.acc.w[threadIdx.x];
      if (dev::gang_arrive(ticket, gridDim.x, s.last)) {
        std::int64_t a = 0;
        if (threadIdx.x < ex::Accumulator<T>::words)
          for (unsigned b = 0; b < gridDim.x; ++b) a += __ldcg(&partials[b].w[threadIdx.x]);
        if (threadIdx.x == 3) *out = T(a), *ticket = 0;
      }
    } else if constexpr (P == 9) {  // the production flat kernel's form: one accumulator by atomics
      T r;
      if (dev::exact_gang_total(t, reinterpret_cast<std::int64_t*>(fpart), ticket, r, s) && threadIdx.x == 0) *out = r;
    } else {
      T r;
      if (dev::exact_gang_sum(t, partials, ticket, r, s) && threadIdx.x == 0) *out = r;
    }
  }
}

template <class T, int P>
float time_it(const T* d, long n, T* out, ex::Accumulator<T>* parts, T* fp, unsigned* ticket, cudaStream_t st, int grid = 0) {
  constexpr int V = 16 / sizeof(T);
  if (grid == 0) grid = int(std::clamp<long>((n + 256 * V * U - 1) / (256 * V * U), 1, 132 * 3));
  cudaGraph_t g;
  cudaGraphExec_t ge;
  cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal);
  for (int r = 0; r < 20; ++r) k<T, P><<<grid, 256, 0, st>>>(d, n, out, parts, fp, ticket);
  cudaStreamEndCapture(st, &g);
  cudaGraphInstantiate(&ge, g, 0);
  cudaEvent_t a, b;
  cudaEventCreate(&a), cudaEventCreate(&b);
  std::vector<float> t;
  for (int rep = 0; rep < 12; ++rep) {
    cudaEventRecord(a, st);
    cudaGraphLaunch(ge, st);
    cudaEventRecord(b, st);
    cudaEventSynchronize(b);
    float ms;
    cudaEventElapsedTime(&ms, a, b);
    t.push_back(ms * 1000 / 20);
  }
  std::sort(t.begin(), t.end());
  cudaGraphExecDestroy(ge), cudaGraphDestroy(g);
  return t[t.size() / 2];
}

template <class T>
int table(void* buf, long N, bool profile) {
  T* d = static_cast<T*>(buf);
  std::vector<T> h(1 << 24);
  unsigned long long x = 88172645463325252ull;
  for (auto& v : h) x ^= x << 13, x ^= x >> 7, x ^= x << 17, v = T(double(x >> 11) * 0x1.0p-52 - 1.0);
  for (long o = 0; o < N; o += long(h.size())) CK(cudaMemcpy(d + o, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice));
  T* out;
  ex::Accumulator<T>* parts;
  T* fp;
  unsigned* ticket;
  CK(cudaMalloc(&out, 64));
  CK(cudaMalloc(&parts, 4096 * sizeof(ex::Accumulator<T>)));
  CK(cudaMalloc(&fp, std::max<std::size_t>(4096 * sizeof(T), dev::exact_total_bytes<T>())));
  CK(cudaMemset(fp, 0, std::max<std::size_t>(4096 * sizeof(T), dev::exact_total_bytes<T>())));  // P9's total: zero-kept
  CK(cudaMalloc(&ticket, 64));
  CK(cudaMemset(ticket, 0, 64));
  cudaStream_t st;
  CK(cudaStreamCreate(&st));
  const char* tn = sizeof(T) == 4 ? "float" : "double";
  if (profile) {  // one plain launch of each phase at 2^28, for ncu
    k<T, 2><<<396, 256, 0, st>>>(d, N, out, parts, fp, ticket);
    k<T, 3><<<396, 256, 0, st>>>(d, N, out, parts, fp, ticket);
    k<T, 4><<<396, 256, 0, st>>>(d, N, out, parts, fp, ticket);
    k<T, 7><<<396, 256, 0, st>>>(d, N, out, parts, fp, ticket);
    k<T, 8><<<396, 256, 0, st>>>(d, N, out, parts, fp, ticket);
    CK(cudaStreamSynchronize(st));
    return 0;
  }
  std::printf("| %s n | plain | bins loop only | +block flush | +carry/ticket | +merge | full exact | full, no one-by-one path | flush + an untaken call to round | full, exact_gang_total (production) | (us, graph of 20, median) |\n", tn);
  for (int lg : {16, 20, 24, 28}) {
    const long n = 1l << lg;
    std::printf("| 2^%d | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f |\n", lg, time_it<T, 0>(d, n, out, parts, fp, ticket, st),
                time_it<T, 1>(d, n, out, parts, fp, ticket, st), time_it<T, 2>(d, n, out, parts, fp, ticket, st),
                time_it<T, 3>(d, n, out, parts, fp, ticket, st), time_it<T, 6>(d, n, out, parts, fp, ticket, st),
                time_it<T, 4>(d, n, out, parts, fp, ticket, st), time_it<T, 7>(d, n, out, parts, fp, ticket, st),
                time_it<T, 8>(d, n, out, parts, fp, ticket, st), time_it<T, 9>(d, n, out, parts, fp, ticket, st));
  }
  std::printf("| %s full exact on G blocks | G=1 | 2 | 4 | 8 | 16 | 32 | 64 | plain (default grid) |\n", tn);
  for (int lg : {16, 18}) {
    const long n = 1l << lg;
    std::printf("| 2^%d", lg);
    for (int g : {1, 2, 4, 8, 16, 32, 64}) std::printf(" | %.2f", time_it<T, 4>(d, n, out, parts, fp, ticket, st, g));
    std::printf(" | %.2f |\n", time_it<T, 0>(d, n, out, parts, fp, ticket, st));
  }
  CK(cudaGetLastError());
  return 0;
}

int main(int argc, char** argv) {
  const long N = 1l << 28;
  const bool profile = argc > 1 && std::string(argv[1]) == "profile";
  void* buf;
  CK(cudaMalloc(&buf, N * sizeof(double)));
  if (table<float>(buf, N, profile) != 0) return 1;
  if (table<double>(buf, N, profile) != 0) return 1;
  return 0;
}
