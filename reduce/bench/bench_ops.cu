// reduce-bench --suite ops on the CUDA backend: the generic reducers (ArgMax, ArgMin, MinMax,
// MeanVar) on 2^28 floats against tally's own float sum and CUB's DeviceReduce::ArgMax/ArgMin, all in
// the same run. Times: medians of CUDA-event-timed replays of a CUDA graph of calls (GPU time), as
// the other suites; `call_us` one call between two events. Every timed result is checked: tally's
// arg-reductions against a host scan of the same array (first index), CUB's value against tally's.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cub/device/device_reduce.cuh>
#include <functional>
#include <string>
#include <vector>

#include "bench.hpp"
#include "tally/common/device_buffer.cuh"
#include "tally/common/device_info.hpp"
#include "tally/common/device_timer.cuh"
#include "tally/common/interrupt.hpp"
#include "tally/reduce/reduce.hpp"

namespace tally::reduce::bench {

namespace {

__global__ void fill_uniform(float* p, std::int64_t n, std::uint64_t seed) {
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::int64_t{gridDim.x} * blockDim.x) {
    std::uint64_t x = seed ^ static_cast<std::uint64_t>(i);  // splitmix64
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    x ^= x >> 31;
    p[i] = static_cast<float>(-1.0 + 2.0 * static_cast<double>(x >> 11) * 0x1.0p-53);
  }
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

class OpsBench {
 public:
  explicit OpsBench(const Options& o) : o_(o), ws_(Backend::cuda) {
    TALLY_CUDA_TRY(cudaSetDevice(o.device));
    ws_ = Workspace(Backend::cuda);
    TALLY_CUDA_TRY(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    rep_.backend = "cuda";
    rep_.device = query_device(o.device).summary();
  }
  ~OpsBench() { cudaStreamDestroy(stream_); }
  OpsBench(const OpsBench&) = delete;
  OpsBench& operator=(const OpsBench&) = delete;

  Report run() {
    const int lg = o_.quick ? 22 : 28;
    n_ = std::int64_t{1} << lg;
    in_ = DeviceBuffer<float>(static_cast<std::size_t>(n_));
    out_ = DeviceBuffer<unsigned char>(4096);
    fill_uniform<<<4096, 256, 0, stream_>>>(in_.data(), n_, o_.seed);
    TALLY_CHECK_LAUNCH();
    const auto view = View<const float>::flat(in_.data(), n_);
    const double bytes = 4.0 * static_cast<double>(n_);
    const std::string shape = size_name(n_);
    auto* d = out_.data();

    const double sum_us = time_us([&] {
      reduce<Sum, float>(Backend::cuda, view, Levels::all(), std::span<float>(reinterpret_cast<float*>(d), 1), ws_,
                         stream_);
    });
    add("tally sum", "sum", shape, bytes, sum_us, 0);
    const double sum_gbs = bytes / (sum_us * 1e3);
    const auto vs_sum = [&](double us) { return (bytes / (us * 1e3)) / sum_gbs; };

    auto* vi = reinterpret_cast<ValueIndex<float>*>(d);
    const double amax = time_us([&] {
      reduce<ArgMax<float>, float>(Backend::cuda, view, Levels::all(), std::span<ValueIndex<float>>(vi, 1), ws_,
                                   stream_);
    });
    add("tally argmax", "argmax", shape, bytes, amax, vs_sum(amax));
    const double amin = time_us([&] {
      reduce<ArgMin<float>, float>(Backend::cuda, view, Levels::all(), std::span<ValueIndex<float>>(vi, 1), ws_,
                                   stream_);
    });
    add("tally argmin", "argmin", shape, bytes, amin, vs_sum(amin));
    auto* mm = reinterpret_cast<MinMaxPair<float>*>(d);
    const double mmus = time_us([&] {
      reduce<MinMax<float>, float>(Backend::cuda, view, Levels::all(), std::span<MinMaxPair<float>>(mm, 1), ws_,
                                   stream_);
    });
    add("tally minmax", "minmax", shape, bytes, mmus, vs_sum(mmus));
    auto* mv = reinterpret_cast<Moments*>(d);
    const double mvus = time_us(
        [&] { reduce<MeanVar, float>(Backend::cuda, view, Levels::all(), std::span<Moments>(mv, 1), ws_, stream_); });
    add("tally meanvar", "meanvar", shape, bytes, mvus, vs_sum(mvus));

    // CUB: the two-output ArgMax/ArgMin of CCCL 3 (value and int64 index apart).
    float* cv = reinterpret_cast<float*>(d + 1024);
    auto* ci = reinterpret_cast<std::int64_t*>(d + 1032);
    std::size_t temp = 0;
    TALLY_CUDA_TRY(cub::DeviceReduce::ArgMax(nullptr, temp, in_.data(), cv, ci, n_, stream_));
    std::size_t temp2 = 0;
    TALLY_CUDA_TRY(cub::DeviceReduce::ArgMin(nullptr, temp2, in_.data(), cv, ci, n_, stream_));
    DeviceBuffer<unsigned char> tmp(std::max(temp, temp2) + 1);
    const double cmax =
        time_us([&] { TALLY_CUDA_TRY(cub::DeviceReduce::ArgMax(tmp.data(), temp, in_.data(), cv, ci, n_, stream_)); });
    add("cub ArgMax", "argmax", shape, bytes, cmax, vs_sum(cmax));
    const std::int64_t cub_max_i = read<std::int64_t>(ci);
    const float cub_max_v = read<float>(cv);
    const double cmin =
        time_us([&] { TALLY_CUDA_TRY(cub::DeviceReduce::ArgMin(tmp.data(), temp2, in_.data(), cv, ci, n_, stream_)); });
    add("cub ArgMin", "argmin", shape, bytes, cmin, vs_sum(cmin));
    const float cub_min_v = read<float>(cv);

    // Checks: a host scan (first index), CUB's values.
    std::vector<float> h = in_.to_host(stream_);
    std::int64_t hi = 0, lo = 0;
    double s1 = 0, s2 = 0;
    for (std::int64_t i = 1; i < n_; ++i) {
      if (h[static_cast<std::size_t>(i)] > h[static_cast<std::size_t>(hi)]) hi = i;
      if (h[static_cast<std::size_t>(i)] < h[static_cast<std::size_t>(lo)]) lo = i;
    }
    for (float x : h) s1 += x;
    const double mean = s1 / static_cast<double>(n_);
    for (float x : h) s2 += (x - mean) * (x - mean);
    const auto tmax = reduce_to_host<ArgMax<float>, float>(Backend::cuda, view, ws_, stream_);
    const auto tmin = reduce_to_host<ArgMin<float>, float>(Backend::cuda, view, ws_, stream_);
    const auto tmm = reduce_to_host<MinMax<float>, float>(Backend::cuda, view, ws_, stream_);
    const auto tmv = reduce_to_host<MeanVar, float>(Backend::cuda, view, ws_, stream_);
    char line[256];
    const bool ok = tmax.index == hi && tmin.index == lo && tmax.value == cub_max_v && tmin.value == cub_min_v &&
                    tmm.min == tmin.value && tmm.max == tmax.value && tmv.count == static_cast<double>(n_) &&
                    std::fabs(tmv.mean - mean) < 1e-8 && std::fabs(tmv.m2 - s2) < 1e-7 * s2;
    std::snprintf(line, sizeof line,
                  "| check | argmax %lld (host %lld, cub %lld), argmin %lld (host %lld); var %.12g (host %.12g) | %s |",
                  static_cast<long long>(tmax.index), static_cast<long long>(hi), static_cast<long long>(cub_max_i),
                  static_cast<long long>(tmin.index), static_cast<long long>(lo), tmv.variance(),
                  s2 / static_cast<double>(n_), ok ? "ok" : "MISMATCH");
    checks_.push_back(line);

    rep_.summary.push_back("| " + shape + " floats | GPU us (graph) | call us | GB/s | vs tally sum |");
    rep_.summary.push_back("| --- | --- | --- | --- | --- |");
    for (const Row& r : rep_.rows) {
      std::snprintf(line, sizeof line, "| %s | %.2f | %.2f | %.0f | %.3f |", r.name.c_str(), r.time_us, r.call_us,
                    r.gbs, r.name == "tally sum" ? 1.0 : r.vs_ref);
      rep_.summary.push_back(line);
    }
    for (auto& l : checks_) rep_.summary.push_back(l);
    return rep_;
  }

 private:
  template <class T>
  T read(const T* p) {
    T v{};
    TALLY_CUDA_TRY(cudaMemcpyAsync(&v, p, sizeof(T), cudaMemcpyDeviceToHost, stream_));
    TALLY_CUDA_TRY(cudaStreamSynchronize(stream_));
    return v;
  }

  /// Median GPU time per call over graph replays of K calls (K = 4 at 2^28), after two warm-up calls.
  double time_us(const std::function<void()>& f) {
    f();
    f();
    TALLY_CUDA_TRY(cudaStreamSynchronize(stream_));
    const int K = o_.quick ? 20 : 4, reps = o_.quick ? 7 : 9;
    cudaGraph_t graph{};
    cudaGraphExec_t exec{};
    TALLY_CUDA_TRY(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
    for (int k = 0; k < K; ++k) f();
    TALLY_CUDA_TRY(cudaStreamEndCapture(stream_, &graph));
    TALLY_CUDA_TRY(cudaGraphInstantiate(&exec, graph, 0));
    TALLY_CUDA_TRY(cudaGraphLaunch(exec, stream_));
    EventTimer ev;
    std::vector<double> t, c;
    for (int r = 0; r < reps; ++r) {
      ev.start(stream_);
      TALLY_CUDA_TRY(cudaGraphLaunch(exec, stream_));
      ev.stop(stream_);
      t.push_back(1e3 * ev.elapsed_ms() / K);
    }
    TALLY_CUDA_TRY(cudaGraphExecDestroy(exec));
    TALLY_CUDA_TRY(cudaGraphDestroy(graph));
    for (int r = 0; r < reps; ++r) {
      ev.start(stream_);
      f();
      ev.stop(stream_);
      c.push_back(1e3 * ev.elapsed_ms());
    }
    last_call_us_ = median(c);
    return median(t);
  }

  void add(const std::string& name, const std::string& op, const std::string& shape, double bytes, double us,
           double vs_sum) {
    interrupt::check("after ops " + name);
    Row r = make_row("ops", name, "gang+worker+vector", op, "float", shape, n_, bytes, bytes, us);
    r.call_us = last_call_us_;
    r.gbs = bytes / (us * 1e3);
    if (vs_sum > 0) r.vs_ref = vs_sum, r.ref = "bandwidth / tally float sum's";
    rep_.rows.push_back(std::move(r));
  }

  Options o_;
  Workspace ws_;
  cudaStream_t stream_{};
  std::int64_t n_ = 0;
  DeviceBuffer<float> in_;
  DeviceBuffer<unsigned char> out_;
  double last_call_us_ = 0;
  std::vector<std::string> checks_;
  Report rep_;
};

}  // namespace

Report run_cuda_ops(const Options& o) {
  OpsBench b(o);
  return b.run();
}

}  // namespace tally::reduce::bench
