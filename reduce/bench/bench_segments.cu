// reduce-bench --suite segments on CUDA: the segmented float sum of 2^28 floats (uniform segments of
// 4, 16, 1000 and 2^20, a power-law mix, 10^5 ones next to one giant) against the full float sum of the
// same array in the same run and cub::DeviceSegmentedReduce::Sum on the same offsets. Times are GPU
// times per call from CUDA-graph replays (medians), as in bench_cuda.cu; the library's calls are
// SegmentCheck::trusted (the offsets check waits for the device, which a graph cannot), and one
// checked call is timed on its own. Every result is compared with CUB's and with a rerun (bitwise).
#include <cuda_runtime.h>

#include <cub/device/device_segmented_reduce.cuh>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "bench.hpp"
#include "tally/common/copy_bandwidth.cuh"
#include "tally/common/device_buffer.cuh"
#include "tally/common/device_info.hpp"
#include "tally/common/device_timer.cuh"
#include "tally/common/interrupt.hpp"
#include "tally/reduce/segmented.hpp"

namespace tally::reduce::bench {

namespace {

__global__ void fill_uniform(float* p, std::int64_t n, std::uint64_t seed) {  // (-1, 1) from splitmix64
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::int64_t{gridDim.x} * blockDim.x) {
    std::uint64_t x = seed ^ static_cast<std::uint64_t>(i);
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    x ^= x >> 31;
    p[i] = static_cast<float>(static_cast<double>(x >> 11) * 0x1.0p-52 - 1.0);
  }
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

/// Median GPU time (us) per call of f from graph replays of K calls, after two warm-up calls.
double graph_time_us(cudaStream_t s, const std::function<void()>& f, int reps, int K) {
  f();
  f();
  TALLY_CUDA_TRY(cudaStreamSynchronize(s));
  cudaGraph_t graph{};
  cudaGraphExec_t exec{};
  TALLY_CUDA_TRY(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  for (int k = 0; k < K; ++k) f();
  TALLY_CUDA_TRY(cudaStreamEndCapture(s, &graph));
  TALLY_CUDA_TRY(cudaGraphInstantiate(&exec, graph, 0));
  TALLY_CUDA_TRY(cudaGraphLaunch(exec, s));
  EventTimer ev;
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    ev.start(s);
    TALLY_CUDA_TRY(cudaGraphLaunch(exec, s));
    ev.stop(s);
    t.push_back(1e3 * ev.elapsed_ms() / K);
  }
  TALLY_CUDA_TRY(cudaGraphExecDestroy(exec));
  TALLY_CUDA_TRY(cudaGraphDestroy(graph));
  return median(t);
}

}  // namespace

Report run_segments_cuda(const Options& o) {
  TALLY_CUDA_TRY(cudaSetDevice(o.device));
  Report rep;
  rep.backend = "cuda";
  rep.device = query_device(o.device).summary();
  cudaStream_t s = nullptr;
  TALLY_CUDA_TRY(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const std::int64_t n = std::int64_t{1} << (o.quick ? 22 : 28);
  const int reps = o.quick ? 5 : 9, K = o.quick ? 10 : 2;
  const double bytes = 4.0 * double(n);
  DeviceBuffer<float> x(static_cast<std::size_t>(n));
  fill_uniform<<<4096, 256, 0, s>>>(x.data(), n, o.seed);
  TALLY_CHECK_LAUNCH();
  Workspace ws(Backend::cuda);
  const std::span<const float> in(x.data(), static_cast<std::size_t>(n));
  DeviceBuffer<float> full_out(1);
  const double full = graph_time_us(
      s,
      [&] {
        reduce<Sum, float>(Backend::cuda, View<const float>::flat(x.data(), n), Levels::all(), full_out.span(), ws, s);
      },
      reps, K);
  Row f = make_row("segments", "tally full sum", "", "sum", "float", "1 segment", n, bytes, bytes, full);
  f.gbs = bytes / (full * 1e3);
  rep.rows.push_back(f);
  rep.ceiling_gbs = f.gbs, rep.ceiling_name = "tally's full float sum of the same array (graph replays)";
  // Two GB/s: input bytes only (issue 16's measure) and all bytes (input + int32 offsets + outputs,
  // what the memory moves). The ceiling is input / all bytes: the full sum's bandwidth spent on all of
  // them, the most "vs full" can reach (0.89 for segments of 16, 0.72 on the power law).
  rep.summary.push_back(
      "| segments (" + size_name(n) +
      " floats) | segments | us | tally GB/s | all-bytes GB/s | vs full | ceiling | all bytes vs full | "
      "int64 offsets vs full | CUB GB/s | CUB all-bytes GB/s | tally/CUB speed | fixed-size vs full | checked call us "
      "|");
  rep.summary.push_back("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |");
  const auto add = [&](Row r, double ref_us, const std::string& ref) {
    r.gbs = bytes / (r.time_us * 1e3), r.vs_ceiling = r.gbs / f.gbs;
    if (ref_us > 0) r.vs_ref = ref_us / r.time_us, r.ref = ref;
    rep.rows.push_back(r);
    return r;
  };
  for (const SegmentCase& c : segment_cases(n, o.segment_case)) {
    const auto off64 = segment_offsets(c, n, o.seed);
    const std::vector<std::int32_t> off32h(off64.begin(), off64.end());
    const auto n_seg = static_cast<std::int64_t>(off64.size()) - 1;
    DeviceBuffer<std::int64_t> d64(std::span<const std::int64_t>(off64), s);
    DeviceBuffer<std::int32_t> d32(std::span<const std::int32_t>(off32h), s);
    DeviceBuffer<float> out(static_cast<std::size_t>(n_seg)), out2(static_cast<std::size_t>(n_seg)),
        cub_out(static_cast<std::size_t>(n_seg));
    const std::span<const std::int32_t> o32(d32.data(), d32.size());
    const std::span<const std::int64_t> o64(d64.data(), d64.size());
    const auto seg32 = [&](DeviceBuffer<float>& to) {
      segmented_reduce<Sum, float>(Backend::cuda, in, o32, to.span(), ws, s, SegmentCheck::trusted);
    };
    const double t32 = graph_time_us(
        s, [&] { seg32(out); }, reps, K);
    const double t64 = graph_time_us(
        s, [&] { segmented_reduce<Sum, float>(Backend::cuda, in, o64, out2.span(), ws, s, SegmentCheck::trusted); },
        reps, K);
    std::size_t temp = 0;
    TALLY_CUDA_TRY(
        cub::DeviceSegmentedReduce::Sum(nullptr, temp, x.data(), cub_out.data(), n_seg, d32.data(), d32.data() + 1, s));
    DeviceBuffer<unsigned char> cub_temp(std::max<std::size_t>(temp, 1));
    const double tcub = graph_time_us(
        s,
        [&] {
          TALLY_CUDA_TRY(cub::DeviceSegmentedReduce::Sum(cub_temp.data(), temp, x.data(), cub_out.data(), n_seg,
                                                         d32.data(), d32.data() + 1, s));
        },
        reps, K);
    // One checked call (validation kernel, a wait, then the reduction), as a host loop sees it.
    segmented_reduce<Sum, float>(Backend::cuda, in, o32, out2.span(), ws, s);
    const auto t0 = std::chrono::steady_clock::now();
    segmented_reduce<Sum, float>(Backend::cuda, in, o32, out2.span(), ws, s);
    TALLY_CUDA_TRY(cudaStreamSynchronize(s));
    const double checked = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    const Row r32 = add(make_row("segments", "tally", "offsets int32", "sum", "float", c.name, n, bytes,
                                 bytes + 4.0 * double(n_seg + 1) + 4.0 * double(n_seg), t32),
                        tcub, "cub time / this time");
    const Row r64 = add(make_row("segments", "tally", "offsets int64", "sum", "float", c.name, n, bytes,
                                 bytes + 8.0 * double(n_seg + 1) + 4.0 * double(n_seg), t64),
                        tcub, "cub time / this time");
    const Row rc = add(make_row("segments", "cub::DeviceSegmentedReduce::Sum", "offsets int32", "sum", "float", c.name,
                                n, bytes, bytes + 4.0 * double(n_seg + 1) + 4.0 * double(n_seg), tcub),
                       0, "");
    double fixed_vs = std::nan("");
    if (c.uniform > 0) {
      const std::int64_t nf = n / c.uniform * c.uniform;
      const double tf = graph_time_us(
          s,
          [&] {
            segmented_reduce_fixed<Sum, float>(Backend::cuda, in.subspan(0, static_cast<std::size_t>(nf)), c.uniform,
                                               out2.span().subspan(0, static_cast<std::size_t>(nf / c.uniform)), ws, s);
          },
          reps, K);
      Row q = make_row("segments", "tally fixed size", "", "sum", "float", c.name, nf, 4.0 * double(nf),
                       4.0 * double(nf), tf);
      q.gbs = q.input_bytes / (tf * 1e3), q.vs_ceiling = q.gbs / f.gbs;
      rep.rows.push_back(q);
      fixed_vs = q.vs_ceiling;
    }
    // Checks: CUB agrees within the sum's error bound ((L + 1) eps sum|x| each, |x| < 1), a rerun gives the same bits.
    seg32(out2);
    const auto a = out.to_host(s), b = out2.to_host(s), cb = cub_out.to_host(s);
    std::int64_t bad = 0, first = -1;
    for (std::int64_t k = 0; k < n_seg; ++k) {
      const double L = double(off64[static_cast<std::size_t>(k) + 1] - off64[static_cast<std::size_t>(k)]);
      if (!(std::fabs(double(a[k]) - double(cb[k])) <= 2.0 * (L + 1) * 0x1.0p-23 * L))
        bad += 1, first = first < 0 ? k : first;
    }
    if (bad > 0 || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) != 0) {
      char line[240];
      std::snprintf(line, sizeof line,
                    "| MISMATCH segmented sum %s: %lld segments differ from CUB beyond the bound (first %lld), rerun "
                    "bitwise %s |",
                    c.name.c_str(), static_cast<long long>(bad), static_cast<long long>(first),
                    std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0 ? "equal" : "DIFFERENT");
      rep.summary.push_back(line);
    }
    const double all = r32.moved_bytes, all_gbs = all / (t32 * 1e3);
    char line[400];
    std::snprintf(line, sizeof line,
                  "| %s | %lld | %.1f | %.1f | %.1f | %.2f | %.2f | %.2f | %.2f | %.1f | %.1f | %.2fx | %.2f | %.1f |",
                  c.name.c_str(), static_cast<long long>(n_seg), t32, r32.gbs, all_gbs, r32.vs_ceiling, bytes / all,
                  all_gbs / f.gbs, r64.vs_ceiling, rc.gbs, all / (tcub * 1e3), tcub / t32, fixed_vs, checked);
    rep.summary.push_back(line);
    interrupt::check("between benchmark cases");
  }
  char line[240];
  std::snprintf(
      line, sizeof line,
      "| full float sum of the same %s floats | 1 | %.1f | %.1f | %.1f | 1.00 | 1.00 | 1.00 | - | - | - | - | - | - |",
      size_name(n).c_str(), full, f.gbs, f.gbs);
  rep.summary.push_back(line);
  TALLY_CUDA_TRY(cudaStreamDestroy(s));
  return rep;
}

}  // namespace tally::reduce::bench
