// Phase timing of the flat exact kernel (not part of the build; scripts/exact-gpu-check.sh compiles and runs it):
// where the time of an exact sum goes, next to the plain sum, for floats and doubles, and small sums on 1 .. 64
// blocks. `phases profile` launches each phase once at 2^28, `phases profile16` P12 and P10 three times each at 2^16 (doubles, then floats), for ncu.
#include <cuda_runtime.h>
#include <algorithm>
#include <cstring>
#include <cstdio>
#include <string>
#include <vector>
#include "tally/reduce/device/exact.cuh"
#include "tally/reduce/device/exact_total.cuh"
#include "tally/reduce/device/gang.cuh"
#include "tally/reduce/device/thread.cuh"
namespace dev = tally::reduce::device;
namespace ex = tally::reduce::exact;
#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { std::printf("CUDA %s at %d\n", cudaGetErrorString(e_), __LINE__); return 1; } } while (0)

// The flat kernel's tail as main had it before the fourth session of 2026-11-24 (every thread
// through exact_block_flush, the block's carry step, atomics of the carried words, gang_arrive, the
// last block's read): timed beside the production exact_gang_total (P10) in the same run.
template <class Out, class T>
__device__ __forceinline__ bool prev_gang_total(dev::ExactThread<T>& t, std::int64_t* d_total, unsigned* d_ticket, Out& result,
                                                dev::ExactStorage<T>& s) {
  constexpr int W = ex::Accumulator<T>::words;
  dev::exact_block_flush(t, s);
  const int k = threadIdx.x;
  if (gridDim.x > 1) {
    dev::exact_block_carry(s.acc);
    if (k < W && s.acc.w[k] != 0)
      atomicAdd(reinterpret_cast<unsigned long long*>(d_total + k * dev::kExactTotalStride), static_cast<unsigned long long>(s.acc.w[k]));
    if (!dev::gang_arrive(d_ticket, gridDim.x, s.last)) return false;
    if (k < W) {
      s.acc.w[k] = __ldcg(d_total + k * dev::kExactTotalStride);
      d_total[k * dev::kExactTotalStride] = 0;
    }
    __syncthreads();
  }
  if (k < 32) {
    const Out r = dev::exact_output<Out>(s);
    if (k == 0) result = r;
  }
  return true;
}

// exact_gang_total as round 2 of the fifth session of 2026-11-24 had it (P12): the last block's loads
// of the total one after another (its rounding is the current one); timed beside the production tail (P10).
template <class Out, class T>
__device__ __forceinline__ bool round2_gang_total(dev::ExactThread<T>& t, std::int64_t* d_total, unsigned* d_ticket, Out& result,
                                                  dev::ExactStorage<T>& s) {
  constexpr int W = ex::Accumulator<T>::words;
  dev::exact_block_publish(t, s);
  if (threadIdx.x >= 32) return false;
  const int lane = threadIdx.x;
  const dev::ExactGathered g = dev::exact_warp0_gather(s);
  if (lane == 0 && g.several) dev::exact_put_warps_serial(s, 8);
  __syncwarp();
  for (int k = lane; k < W; k += 32) {
    const std::int64_t v = dev::exact_block_word(s, g, k);
    if (v != 0) atomicAdd(reinterpret_cast<unsigned long long*>(d_total + k * dev::kExactTotalStride), static_cast<unsigned long long>(v));
  }
  __syncwarp();
  bool last = false;
  if (lane == 0) last = dev::take_ticket(d_ticket, gridDim.x);
  if (!__shfl_sync(0xffffffffu, last, 0)) return false;
  __syncwarp();
  for (int k = lane; k < W; k += 32) {
    s.acc.w[k] = __ldcg(d_total + k * dev::kExactTotalStride);
    d_total[k * dev::kExactTotalStride] = 0;
  }
  __syncwarp();
  const Out r = dev::exact_output<Out>(s);
  if (lane == 0) result = r;
  return true;
}

constexpr int U = 4;
// P: 0 plain gang_reduce<Sum>; 1 exact loop only (bins); 2 + block flush; 3 + carry/partials/ticket; 6 + merge; 4 full exact_gang_sum;
// 9 full, the previous tail (prev_gang_total: main before 2026-11-24's fourth session, its add_batch too);
// 10 full exact_gang_total (the production flat kernel's tail; the previous loop);
// 11 = 10 with the production loop (the next batch's loads in flight while one is binned; 3 blocks an SM's registers);
// 12 = 10 with round 2's tail (round2_gang_total: the last block's loads one after another);
// (G blocks table: G below n / (256 V U) leaves threads without a whole batch: this loop then skips
// their elements, so only the rows where every thread has a batch time a real sum)
// 7 full without the one-by-one path (timing only);
// 8 = 2 plus an out-of-line call to round() that is never taken (its stack frame)
template <class T, int P>
__global__ void __launch_bounds__(256, P == 11 ? 3 : 4) k(const T* __restrict__ in, long n, T* out, ex::Accumulator<T>* partials, T* fpart, unsigned* ticket,
                                            std::int64_t* total) {
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
    if constexpr (P == 11) {  // the production flat kernel's loop: the next batch's loads before this one's binning
      i = dev::exact_add_batches<true, U, V>(t, in, i, n, step);
    } else {
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
        } else if constexpr (P == 9) {  // the previous add_batch: each lane widens to its own batch's largest value
          t.seen = true;
          if (!t.bins.try_add(x, t.f, t.sink) && !(t.bins.widen(x, t.f, t.sink) && t.bins.try_add(x, t.f, t.sink))) {
            T y[U * V];
#pragma unroll
            for (int q = 0; q < U * V; ++q) y[q] = x[q];
#pragma unroll 1
            for (int q = 0; q < U * V; ++q) t.bins.add(y[q], t.f, t.sink);
          }
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
    } else if constexpr (P == 9) {  // the previous tail
      T r;
      if (prev_gang_total(t, total, ticket, r, s) && threadIdx.x == 0) *out = r;
    } else if constexpr (P == 10 || P == 11) {  // the production flat kernel's tail (11: and its loop)
      T r;
      if (dev::exact_gang_total(t, total, ticket, r, s) && threadIdx.x == 0) *out = r;
    } else if constexpr (P == 12) {
      T r;
      if (round2_gang_total(t, total, ticket, r, s) && threadIdx.x == 0) *out = r;
    } else {
      T r;
      if (dev::exact_gang_sum(t, partials, ticket, r, s) && threadIdx.x == 0) *out = r;
    }
  }
}

template <class T, int P>
float time_it(const T* d, long n, T* out, ex::Accumulator<T>* parts, T* fp, unsigned* ticket, std::int64_t* total, cudaStream_t st,
              int grid = 0) {
  constexpr int V = 16 / sizeof(T);
  if (grid == 0) grid = int(std::clamp<long>((n + 256 * V * U - 1) / (256 * V * U), 1, 132 * 3));
  cudaGraph_t g;
  cudaGraphExec_t ge;
  cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal);
  for (int r = 0; r < 20; ++r) k<T, P><<<grid, 256, 0, st>>>(d, n, out, parts, fp, ticket, total);
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
int table(void* buf, long N, bool profile, bool profile16 = false) {
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
  std::int64_t* total;
  CK(cudaMalloc(&fp, 4096 * sizeof(T)));
  CK(cudaMalloc(&total, dev::exact_total_bytes<T>()));
  CK(cudaMemset(total, 0, dev::exact_total_bytes<T>()));  // P9's and P10's: zero-kept
  CK(cudaMalloc(&ticket, 64));
  CK(cudaMemset(ticket, 0, 64));
  cudaStream_t st;
  CK(cudaStreamCreate(&st));
  const char* tn = sizeof(T) == 4 ? "float" : "double";
  if (profile16) {  // 2^16 on the default grid, for ncu: P12 three times, then P10 three times (doubles first)
    const int g16 = int((65536 + 256 * (16 / sizeof(T)) * U - 1) / (256 * (16 / sizeof(T)) * U));
    for (int r = 0; r < 3; ++r) k<T, 12><<<g16, 256, 0, st>>>(d, 65536, out, parts, fp, ticket, total);
    for (int r = 0; r < 3; ++r) k<T, 10><<<g16, 256, 0, st>>>(d, 65536, out, parts, fp, ticket, total);
    CK(cudaStreamSynchronize(st));
    CK(cudaGetLastError());
    return 0;
  }
  if (profile) {  // one plain launch of each phase at 2^28, for ncu
    k<T, 2><<<396, 256, 0, st>>>(d, N, out, parts, fp, ticket, total);
    k<T, 3><<<396, 256, 0, st>>>(d, N, out, parts, fp, ticket, total);
    k<T, 4><<<396, 256, 0, st>>>(d, N, out, parts, fp, ticket, total);
    k<T, 7><<<396, 256, 0, st>>>(d, N, out, parts, fp, ticket, total);
    k<T, 8><<<396, 256, 0, st>>>(d, N, out, parts, fp, ticket, total);
    CK(cudaStreamSynchronize(st));
    return 0;
  }
  // The exact sum of the first n inputs on the host (the array repeats h every 2^24), to check P9's
  // and P10's results bit for bit.
  ex::Accumulator<T> h_acc;
  h_acc.clear();
  long h_n = 0;
  const auto reference = [&](long n) {
    for (; h_n < std::min<long>(n, long(h.size())); ++h_n) h_acc.add(double(h[h_n]));
    ex::Accumulator<T> a = h_acc;
    for (auto& w : a.w) w *= n / h_n;  // n / 2^24 copies of all of h
    a.w[ex::Accumulator<T>::seen_word] = a.w[ex::Accumulator<T>::nonneg_word] = 1;
    return a.template round<T>();
  };
  int bad = 0;
  const auto check = [&](long n, const char* what) {
    constexpr long V = 16 / sizeof(T), batch = 256 * V * U;
    if (n % (std::clamp<long>(n / batch, 1, 132 * 3) * batch) != 0) return;  // a remainder the phase kernels skip
    T got;
    cudaMemcpy(&got, out, sizeof got, cudaMemcpyDeviceToHost);
    const T want = reference(n);
    if (std::memcmp(&got, &want, sizeof got) != 0) std::printf("MISMATCH %s %s 2^%d: %.17g vs host %.17g\n", tn, what, __builtin_ctzl(n), double(got), double(want)), ++bad;
  };
  std::printf("| %s n | plain | bins loop only | +block flush | +carry/ticket | +merge | full exact_gang_sum | full, no one-by-one path | flush + an untaken call to round | full, previous tail (P9) | full, exact_gang_total (P10) | P10 + the production loop (P11) | round 2's tail (P12) | P10 again | (us, graph of 20, median) |\n", tn);
  for (int lg : {16, 20, 24, 28}) {
    const long n = 1l << lg;
    const float t0 = time_it<T, 0>(d, n, out, parts, fp, ticket, total, st), t1 = time_it<T, 1>(d, n, out, parts, fp, ticket, total, st),
                t2 = time_it<T, 2>(d, n, out, parts, fp, ticket, total, st), t3 = time_it<T, 3>(d, n, out, parts, fp, ticket, total, st),
                t6 = time_it<T, 6>(d, n, out, parts, fp, ticket, total, st), t4 = time_it<T, 4>(d, n, out, parts, fp, ticket, total, st);
    check(n, "exact_gang_sum (P4)");
    const float t7 = time_it<T, 7>(d, n, out, parts, fp, ticket, total, st), t8 = time_it<T, 8>(d, n, out, parts, fp, ticket, total, st),
                t9 = time_it<T, 9>(d, n, out, parts, fp, ticket, total, st);
    check(n, "previous tail (P9)");
    const float t10 = time_it<T, 10>(d, n, out, parts, fp, ticket, total, st);
    check(n, "exact_gang_total (P10)");
    const float t11 = time_it<T, 11>(d, n, out, parts, fp, ticket, total, st);
    check(n, "production loop and tail (P11)");
    const float t12 = time_it<T, 12>(d, n, out, parts, fp, ticket, total, st);
    check(n, "round 2's tail (P12)");
    const float t10b = time_it<T, 10>(d, n, out, parts, fp, ticket, total, st);
    std::printf("| 2^%d | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f |\n", lg, t0, t1, t2, t3, t6, t4, t7, t8, t9,
                t10, t11, t12, t10b);
  }
  std::printf("| %s full exact on G blocks | G=1 | 2 | 4 | 8 | 16 | 32 | plain (default grid) |\n", tn);
  for (int lg : {16, 18}) {
    const long n = 1l << lg;
    std::printf("| 2^%d previous (P9)", lg);
    for (int g : {1, 2, 4, 8, 16, 32}) std::printf(" | %.2f", time_it<T, 9>(d, n, out, parts, fp, ticket, total, st, g));
    std::printf(" | %.2f |\n| 2^%d production (P10)", time_it<T, 0>(d, n, out, parts, fp, ticket, total, st), lg);
    for (int g : {1, 2, 4, 8, 16, 32}) std::printf(" | %.2f", time_it<T, 10>(d, n, out, parts, fp, ticket, total, st, g));
    std::printf(" | |\n| 2^%d round 2 (P12)", lg);
    for (int g : {1, 2, 4, 8, 16, 32}) std::printf(" | %.2f", time_it<T, 12>(d, n, out, parts, fp, ticket, total, st, g));
    std::printf(" | |\n");
  }
  std::printf("| %s exact_gang_total (P10) on G blocks | G=264 (2 a SM) | 396 (3, production) | 528 (4) | P11 (396) | plain (396) |\n", tn);
  for (int lg : {24, 28}) {
    const long n = 1l << lg;
    std::printf("| 2^%d", lg);
    for (int g : {264, 396, 528}) std::printf(" | %.2f", time_it<T, 10>(d, n, out, parts, fp, ticket, total, st, g));
    std::printf(" | %.2f", time_it<T, 11>(d, n, out, parts, fp, ticket, total, st, 396));
    std::printf(" | %.2f |\n", time_it<T, 0>(d, n, out, parts, fp, ticket, total, st));
  }
  if (bad == 0) std::printf("%s: P4, P9, P10 and P11 equal the host's exact sum wherever the phase kernels sum every input\n", tn);
  CK(cudaGetLastError());
  return 0;
}

int main(int argc, char** argv) {
  const long N = 1l << 28;
  const bool profile = argc > 1 && std::string(argv[1]) == "profile", profile16 = argc > 1 && std::string(argv[1]) == "profile16";
  void* buf;
  CK(cudaMalloc(&buf, N * sizeof(double)));
  if (profile16) return table<double>(buf, N, false, true) != 0 || table<float>(buf, N, false, true) != 0;
  if (table<float>(buf, N, profile) != 0) return 1;
  if (table<double>(buf, N, profile) != 0) return 1;
  return 0;
}
