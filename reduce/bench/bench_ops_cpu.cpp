// reduce-bench --suite ops on the CPU backend: the generic reducers and the mean against Eigen where
// Eigen has the operation (Map::maxCoeff(&index), minCoeff(&index), mean(); minCoeff() + maxCoeff()
// as two passes for MinMax, and mean() beside MeanVar, which computes more: mean and M2 in double),
// and tally's own float sum, on the same array. Two pairings: tally on one thread against Eigen's
// Map (single-threaded), and tally on all of OpenMP's threads against an Eigen Tensor reduction
// (sum, mean, argmax, argmin, minimum + maximum) on a ThreadPoolDevice with as many threads, as the
// cpu suite does for sum and max. tally's bits do not depend on the thread count.
//
// Eigen's pool exists only while its rows are timed, after every OpenMP timing: its idle threads
// spinning beside OpenMP's made timings erratic (bench_cpu.cpp).
#define EIGEN_USE_THREADS
#include <omp.h>

// Eigen's Tensor argmax/argmin of a 1-D tensor: GCC 13 reports its m_strides as read uninitialised
// in a branch that NumDims == 1 never takes (TensorArgMax.h); a false positive in a header.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <Eigen/Core>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <unsupported/Eigen/CXX11/Tensor>
#include <vector>

#include "bench.hpp"
#include "tally/common/interrupt.hpp"
#include "tally/reduce/reduce.hpp"

namespace tally::reduce::bench {

namespace {
/// What Eigen does for an op of the table (its row's reference).
std::string eigen_name(const std::string& op) {
  if (op == "meanvar") return "mean()";
  if (op == "minmax") return "minCoeff()+maxCoeff()";
  if (op == "argmax") return "maxCoeff(&i)";
  if (op == "argmin") return "minCoeff(&i)";
  return op + "()";
}
}  // namespace

Report run_cpu_ops(const Options& o) {
  Report rep;
  const int threads = o.threads > 0 ? o.threads : omp_get_max_threads();
  rep.backend = "cpu";
  rep.device = "cpu, " + std::to_string(threads) + " threads";
  Workspace ws(Backend::cpu);
  const std::vector<int> logs = o.quick ? std::vector<int>{20} : std::vector<int>{20, 24, 26};
  std::mt19937_64 g(o.seed);
  std::uniform_real_distribution<float> d(-1.f, 1.f);
  std::vector<float> x(std::size_t{1} << logs.back());
  for (auto& v : x) v = d(g);
  double sink = 0;
  const int reps = o.quick ? 5 : 11;
  const std::vector<std::string> ops = {"sum", "mean", "argmax", "argmin", "minmax", "meanvar"};

  struct Timing {
    double one = 0, all = 0, eigen = 0, pool = 0;
  };
  std::vector<std::vector<Timing>> t(logs.size(), std::vector<Timing>(ops.size()));

  // tally (1 thread, all threads) and Eigen's Map, with no Eigen pool alive.
  for (std::size_t s = 0; s < logs.size(); ++s) {
    const std::int64_t n = std::int64_t{1} << logs[s];
    const auto view = View<const float>::flat(x.data(), n);
    Eigen::Map<const Eigen::VectorXf> m(x.data(), n);
    for (std::size_t k = 0; k < ops.size(); ++k) {
      const std::string& op = ops[k];
      std::function<void()> ours, eig;
      if (op == "sum") {
        ours = [&] { sink += reduce_to_host<Sum, float>(Backend::cpu, view, ws); };
        eig = [&] { sink += m.sum(); };
      } else if (op == "mean") {
        ours = [&] { sink += reduce_to_host<Mean, float>(Backend::cpu, view, ws); };
        eig = [&] { sink += m.mean(); };
      } else if (op == "argmax") {
        ours = [&] { sink += static_cast<double>(reduce_to_host<ArgMax<float>, float>(Backend::cpu, view, ws).index); };
        eig = [&] {
          Eigen::Index i = 0;
          sink += m.maxCoeff(&i);
          sink += static_cast<double>(i);
        };
      } else if (op == "argmin") {
        ours = [&] { sink += static_cast<double>(reduce_to_host<ArgMin<float>, float>(Backend::cpu, view, ws).index); };
        eig = [&] {
          Eigen::Index i = 0;
          sink += m.minCoeff(&i);
          sink += static_cast<double>(i);
        };
      } else if (op == "minmax") {
        ours = [&] { sink += reduce_to_host<MinMax<float>, float>(Backend::cpu, view, ws).max; };
        eig = [&] { sink += m.minCoeff() + m.maxCoeff(); };
      } else {
        ours = [&] { sink += reduce_to_host<MeanVar, float>(Backend::cpu, view, ws).mean; };
        eig = [&] { sink += m.mean(); };
      }
      Timing& r = t[s][k];
      // tally on one thread and Eigen's Map in turns: timed one after the other, the first of the
      // two read 0.75-1.07x the second's speed on a 2-core VM for the same memory-bound sum.
      omp_set_num_threads(1);
      const auto one_eigen = median_us_interleaved({ours, eig}, reps);
      r.one = one_eigen[0], r.eigen = one_eigen[1];
      omp_set_num_threads(threads);
      r.all = median_us(ours, reps);
      interrupt::check("between benchmark cases");
    }
  }

  // Eigen's Tensor reductions on a pool of `threads` threads.
  {
    auto pool = std::make_unique<Eigen::ThreadPool>(threads);
    Eigen::ThreadPoolDevice tp(pool.get(), threads);
    Eigen::Tensor<float, 0> r0, r1;
    Eigen::Tensor<Eigen::Index, 0> ri;
    for (std::size_t s = 0; s < logs.size(); ++s) {
      const std::int64_t n = std::int64_t{1} << logs[s];
      Eigen::TensorMap<Eigen::Tensor<const float, 1>> tm(x.data(), n);
      for (std::size_t k = 0; k < ops.size(); ++k) {
        const std::string& op = ops[k];
        std::function<void()> f;
        if (op == "sum")
          f = [&] {
            r0.device(tp) = tm.sum();
            sink += r0();
          };
        else if (op == "mean" || op == "meanvar")
          f = [&] {
            r0.device(tp) = tm.mean();
            sink += r0();
          };
        else if (op == "argmax")
          f = [&] {
            ri.device(tp) = tm.argmax();
            sink += static_cast<double>(ri());
          };
        else if (op == "argmin")
          f = [&] {
            ri.device(tp) = tm.argmin();
            sink += static_cast<double>(ri());
          };
        else
          f = [&] {
            r0.device(tp) = tm.minimum();
            r1.device(tp) = tm.maximum();
            sink += r0() + r1();
          };
        t[s][k].pool = median_us(f, reps);
        interrupt::check("between benchmark cases");
      }
    }
  }

  const std::string nt = std::to_string(threads);
  rep.summary.push_back("| case | tally 1 thread | Eigen Map (1 thread) | Eigen/tally | tally " + nt +
                        " threads | Eigen Tensor pool " + nt + " | Tensor/tally | Eigen op |");
  rep.summary.push_back("| --- | --- | --- | --- | --- | --- | --- | --- |");
  for (std::size_t s = 0; s < logs.size(); ++s) {
    const std::int64_t n = std::int64_t{1} << logs[s];
    const double bytes = 4.0 * double(n);
    for (std::size_t k = 0; k < ops.size(); ++k) {
      const std::string& op = ops[k];
      const Timing& r = t[s][k];
      Row a = make_row("ops-cpu", "tally cpu 1 thread", "gang+worker+vector", op, "float", size_name(n), n, bytes,
                       bytes, r.one);
      Row b = make_row("ops-cpu", "tally cpu", "gang+worker+vector", op, "float", size_name(n), n, bytes, bytes, r.all);
      Row e =
          make_row("ops-cpu", "Eigen Map", "gang+worker+vector", op, "float", size_name(n), n, bytes, bytes, r.eigen);
      Row p = make_row("ops-cpu", "Eigen Tensor pool", "gang+worker+vector", op, "float", size_name(n), n, bytes, bytes,
                       r.pool);
      for (Row* w : {&a, &b, &e, &p}) w->gbs = w->input_bytes / (w->time_us * 1e3);
      a.vs_ref = r.eigen / r.one, a.ref = "Eigen " + eigen_name(op) + " (1 thread) time / this time";
      b.vs_ref = r.pool / r.all, b.ref = "Eigen Tensor (thread pool) time / this time";
      char line[300];
      std::snprintf(line, sizeof line, "| float %s %s | %.1f us | %.1f us | %.2fx | %.1f us | %.1f us | %.2fx | %s |",
                    op.c_str(), size_name(n).c_str(), r.one, r.eigen, r.eigen / r.one, r.all, r.pool, r.pool / r.all,
                    eigen_name(op).c_str());
      rep.summary.push_back(line);
      rep.rows.push_back(a), rep.rows.push_back(b), rep.rows.push_back(e), rep.rows.push_back(p);
    }
  }
  omp_set_num_threads(threads);
  if (sink == 12345.0) std::printf(" \n");  // keeps the results alive
  return rep;
}

}  // namespace tally::reduce::bench
