// Phase timing of the flat exact float kernel (not part of the build; scripts/exact-gpu-check.sh compiles and runs it):
// where the time of a small exact sum goes, next to the plain sum, each phase added in turn.
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <vector>
#include "tally/reduce/device/exact.cuh"
#include "tally/reduce/device/gang.cuh"
#include "tally/reduce/device/thread.cuh"
namespace dev = tally::reduce::device;
namespace ex = tally::reduce::exact;
#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { std::printf("CUDA %s at %d\n", cudaGetErrorString(e_), __LINE__); return 1; } } while (0)

// P: 0 plain gang_reduce<Sum>; 1 exact loop only; 2 + block flush; 3 + carry/partials/ticket; 4 full exact_gang_sum
template <int P>
__global__ void __launch_bounds__(256, 4) k(const float* __restrict__ in, long n, float* out, ex::Accumulator<float>* partials,
                                          float* fpart, unsigned* ticket) {
  constexpr int V = 4, U = 4;
  const long step = long(gridDim.x) * 256 * V;
  long i = (long(blockIdx.x) * 256 + threadIdx.x) * V;
  if constexpr (P == 0) {
    __shared__ dev::GangStorage<float> g;
    float acc = 0;
    for (; i + (U - 1) * step < n; i += U * step) {
      dev::Vec<float, V> v[U];
#pragma unroll
      for (int u = 0; u < U; ++u) v[u] = dev::load_vec<V>(in + i + u * step);
#pragma unroll
      for (int u = 0; u < U; ++u)
#pragma unroll
        for (int q = 0; q < V; ++q) acc += v[u].v[q];
    }
    float r;
    if (dev::gang_reduce<tally::reduce::Sum>(acc, fpart, ticket, r, g) && threadIdx.x == 0) *out = r;
  } else {
    __shared__ dev::ExactStorage<float> s;
    dev::ExactThread<float> t(s);
    for (; i + (U - 1) * step < n; i += U * step) {
      dev::Vec<float, V> v[U];
#pragma unroll
      for (int u = 0; u < U; ++u) v[u] = dev::load_vec<V>(in + i + u * step);
#pragma unroll
      for (int u = 0; u < U; ++u) t.add_n(v[u].v);
    }
    if constexpr (P == 1) {
      if (t.f.hi == 12345.0) *out = float(t.f.lo);
    } else if constexpr (P == 2) {
      dev::exact_block_flush(t);
      if (threadIdx.x == 0) *out = float(s.acc.w[3]);
    } else if constexpr (P == 3) {
      dev::exact_block_flush(t);
      dev::exact_block_carry(s.acc);
      if (threadIdx.x < ex::Accumulator<float>::words) partials[blockIdx.x].w[threadIdx.x] = s.acc.w[threadIdx.x];
      if (dev::gang_arrive(ticket, gridDim.x, s.last) && threadIdx.x == 0) *out = 1.0f;
    } else {
      float r;
      if (dev::exact_gang_sum(t, partials, ticket, r, s) && threadIdx.x == 0) *out = r;
    }
  }
}

template <int P>
float time_it(const float* d, long n, float* out, ex::Accumulator<float>* parts, float* fp, unsigned* ticket, cudaStream_t st) {
  const int grid = int(std::clamp<long>((n + 256 * 16 - 1) / (256 * 16), 1, 132 * 3));
  cudaGraph_t g;
  cudaGraphExec_t ge;
  cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal);
  for (int r = 0; r < 20; ++r) k<P><<<grid, 256, 0, st>>>(d, n, out, parts, fp, ticket);
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

int main() {
  const long N = 1l << 28;
  float* d;
  CK(cudaMalloc(&d, N * sizeof(float)));
  std::vector<float> h(1 << 24);
  unsigned long long x = 88172645463325252ull;
  for (auto& v : h) x ^= x << 13, x ^= x >> 7, x ^= x << 17, v = float(double(x >> 11) * 0x1.0p-52 - 1.0);
  for (long o = 0; o < N; o += long(h.size())) CK(cudaMemcpy(d + o, h.data(), h.size() * sizeof(float), cudaMemcpyHostToDevice));
  float* out;
  ex::Accumulator<float>* parts;
  float* fp;
  unsigned* ticket;
  CK(cudaMalloc(&out, 64));
  CK(cudaMalloc(&parts, 4096 * sizeof(ex::Accumulator<float>)));
  CK(cudaMalloc(&fp, 4096 * 4));
  CK(cudaMalloc(&ticket, 64));
  CK(cudaMemset(ticket, 0, 64));
  cudaStream_t st;
  CK(cudaStreamCreate(&st));
  std::printf("| n | plain | loop only | +block flush | +carry/ticket | full exact | (us, graph of 20, median) |\n");
  for (int lg : {16, 18, 20, 22, 24, 28}) {
    const long n = 1l << lg;
    std::printf("| 2^%d | %.2f | %.2f | %.2f | %.2f | %.2f |\n", lg, time_it<0>(d, n, out, parts, fp, ticket, st), time_it<1>(d, n, out, parts, fp, ticket, st),
                time_it<2>(d, n, out, parts, fp, ticket, st), time_it<3>(d, n, out, parts, fp, ticket, st), time_it<4>(d, n, out, parts, fp, ticket, st));
  }
  CK(cudaGetLastError());
  return 0;
}
