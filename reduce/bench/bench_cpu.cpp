// reduce-bench on the CPU backend, against Eigen on the same array: Eigen::Map<...>.sum()/maxCoeff()
// (one thread) and an Eigen Tensor reduction on a ThreadPoolDevice with as many threads as OpenMP uses.
#define EIGEN_USE_THREADS
#include <omp.h>

#include <Eigen/Core>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <random>
#include <unsupported/Eigen/CXX11/Tensor>
#include <vector>

#include "bench.hpp"
#include "tally/reduce/reduce.hpp"
#include "tally/common/interrupt.hpp"

namespace tally::reduce::bench {

double median_us(const std::function<void()>& f, int reps) {
  f();  // warm-up (first touch, thread pool start)
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

std::vector<double> median_us_interleaved(const std::vector<std::function<void()>>& fs, int reps) {
  for (const auto& f : fs) f();  // warm-up
  std::vector<std::vector<double>> t(fs.size());
  for (int r = 0; r < reps; ++r)
    for (std::size_t k = 0; k < fs.size(); ++k) {
      const std::size_t i = (k + static_cast<std::size_t>(r)) % fs.size();  // each goes first in turn
      const auto t0 = std::chrono::steady_clock::now();
      fs[i]();
      t[i].push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
    }
  std::vector<double> m;
  for (auto& v : t) {
    std::sort(v.begin(), v.end());
    m.push_back(v[v.size() / 2]);
  }
  return m;
}

Report run_cpu(const Options& o) {
  Report rep;
  const int threads = o.threads > 0 ? o.threads : omp_get_max_threads();
  if (o.threads > 0) omp_set_num_threads(o.threads);
  rep.backend = "cpu";
  rep.device = "cpu, " + std::to_string(threads) + " threads";
  auto pool = std::make_unique<Eigen::ThreadPool>(threads);
  Eigen::ThreadPoolDevice tp(pool.get(), threads);
  Workspace ws(Backend::cpu);
  const std::vector<int> logs = o.quick ? std::vector<int>{16, 20, 22} : std::vector<int>{16, 20, 24, 26};
  std::mt19937_64 g(o.seed);
  std::uniform_real_distribution<float> d(-1.f, 1.f);
  std::vector<float> x(std::size_t{1} << logs.back());
  for (auto& v : x) v = d(g);
  float sink = 0;
  rep.summary.push_back("| case | tally cpu | Eigen 1 thread | Eigen Tensor pool | tally/Tensor speed |");
  rep.summary.push_back("| --- | --- | --- | --- | --- |");
  for (int lg : logs) {
    const std::int64_t n = std::int64_t{1} << lg;
    const int reps = o.quick ? 5 : 15;
    const auto view = View<const float>::flat(x.data(), n);
    Eigen::Map<const Eigen::VectorXf> m(x.data(), n);
    Eigen::TensorMap<Eigen::Tensor<const float, 1>> t(x.data(), n);
    Eigen::Tensor<float, 0> r0;
    for (int op = 0; op < 2; ++op) {
      const bool is_sum = op == 0;
      const double ours = median_us(
          [&] {
            sink += is_sum ? reduce_to_host<Sum, float>(Backend::cpu, view, ws)
                           : reduce_to_host<Max, float>(Backend::cpu, view, ws);
          },
          reps);
      const double eig = median_us([&] { sink += is_sum ? m.sum() : m.maxCoeff(); }, reps);
      const double ten = median_us(
          [&] {
            if (is_sum) r0.device(tp) = t.sum();
            else r0.device(tp) = t.maximum();
            sink += r0();
          },
          reps);
      const char* opn = is_sum ? "sum" : "max";
      Row a = make_row("cpu", "tally cpu", "gang+worker+vector", opn, "float", size_name(n), n, 4.0 * double(n),
                       4.0 * double(n), ours);
      a.vs_ref = ten / ours, a.ref = "Eigen Tensor (thread pool) time / this time";
      Row b = make_row("cpu", "Eigen Map", "gang+worker+vector", opn, "float", size_name(n), n, 4.0 * double(n),
                       4.0 * double(n), eig);
      Row c = make_row("cpu", "Eigen Tensor pool", "gang+worker+vector", opn, "float", size_name(n), n, 4.0 * double(n),
                       4.0 * double(n), ten);
      for (Row* r : {&a, &b, &c}) r->gbs = r->input_bytes / (r->time_us * 1e3);
      a.vs_ceiling = a.gbs / c.gbs;
      char line[200];
      std::snprintf(line, sizeof line, "| float %s %s | %.1f us | %.1f us | %.1f us | %.2fx |", opn,
                    size_name(n).c_str(), ours, eig, ten, ten / ours);
      rep.summary.push_back(line);
      rep.rows.push_back(a), rep.rows.push_back(b), rep.rows.push_back(c);
      interrupt::check("between benchmark cases");
      if (lg == logs.back() && is_sum) rep.ceiling_gbs = c.gbs, rep.ceiling_name = "Eigen Tensor sum on a thread pool";
    }
  }
  // The exact sum against the ordinary one, on the same threads: float and double arrays. Eigen's
  // pool goes first: its idle threads spinning beside OpenMP's make the timings erratic.
  pool.reset();
  rep.summary.push_back("| exact sum | tally exact | tally ordinary sum | ordinary/exact time |");
  rep.summary.push_back("| --- | --- | --- | --- |");
  std::vector<double> xd(x.begin(), x.end());
  for (int lg : logs) {
    const std::int64_t n = std::int64_t{1} << lg;
    const int reps = o.quick ? 5 : 15;
    const auto run_type = [&]<class T>(const std::vector<T>& v, const char* tn) {
      const auto view = View<const T>::flat(v.data(), n);
      const double plain =
          median_us([&] { sink += static_cast<float>(reduce_to_host<Sum, T>(Backend::cpu, view, ws)); }, reps);
      const double ex =
          median_us([&] { sink += static_cast<float>(reduce_to_host<ExactSum, T, T>(Backend::cpu, view, ws)); }, reps);
      const double bytes = double(n) * double(sizeof(T));
      Row a = make_row("cpu-exact", "tally cpu exact", "gang+worker+vector", "exact_sum", tn, size_name(n), n, bytes,
                       bytes, ex);
      Row b = make_row("cpu-exact", "tally cpu", "gang+worker+vector", "sum", tn, size_name(n), n, bytes, bytes, plain);
      for (Row* r : {&a, &b}) r->gbs = r->input_bytes / (r->time_us * 1e3);
      a.vs_ref = plain / ex, a.ref = "ordinary sum time / this time";
      char line[200];
      std::snprintf(line, sizeof line, "| %s exact sum %s | %.1f us | %.1f us | %.2fx |", tn, size_name(n).c_str(), ex,
                    plain, plain / ex);
      rep.summary.push_back(line);
      rep.rows.push_back(a), rep.rows.push_back(b);
      interrupt::check("between benchmark cases");
    };
    run_type(x, "float");
    run_type(xd, "double");
  }
  if (sink == 12345.f) std::printf(" \n");  // keeps the results alive
  return rep;
}

namespace {

/// The ranks suite on the CPU backend: host memory, a host timer.
class CpuRankBench final : public RankBench {
 public:
  explicit CpuRankBench(int threads) {
    if (threads > 0) omp_set_num_threads(threads);
    threads_ = omp_get_max_threads();
  }
  void fill(std::int64_t n, std::int64_t offset, std::uint64_t seed) override {
    in_ = std::vector<float>();  // the old array goes first: the whole one and a slab never coexist
    in_.resize(static_cast<std::size_t>(n));
    float* p = in_.data();
#pragma omp parallel for schedule(static)
    for (std::int64_t i = 0; i < n; ++i) p[i] = rank_input_value(seed, offset + i);
  }
  [[nodiscard]] const float* data() const override { return in_.data(); }
  [[nodiscard]] float* result() override { return &out_; }
  [[nodiscard]] float read_result() override { return out_; }
  double time_us(const std::function<void()>& f) override {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  }
  [[nodiscard]] stream_t stream() const override { return nullptr; }
  [[nodiscard]] std::string device() const override { return "cpu, " + std::to_string(threads_) + " threads"; }

 private:
  std::vector<float> in_;
  float out_ = 0;
  int threads_ = 1;
};

}  // namespace

std::unique_ptr<RankBench> make_rank_bench_cpu(int threads) { return std::make_unique<CpuRankBench>(threads); }

}  // namespace tally::reduce::bench
