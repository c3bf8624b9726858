// reduce-bench --suite ops on the CPU backend: the generic reducers against Eigen where Eigen has the
// operation (Map::maxCoeff(&index), minCoeff(&index), mean(); minCoeff() + maxCoeff() as two passes
// for MinMax), and tally's own float sum, on the same array. Eigen's are single-threaded: tally is
// timed on one thread (the comparison) and on all of OpenMP's (its bits do not depend on that).
#include <omp.h>

#include <Eigen/Core>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <random>
#include <vector>

#include "bench.hpp"
#include "tally/common/interrupt.hpp"
#include "tally/reduce/reduce.hpp"

namespace tally::reduce::bench {

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
  rep.summary.push_back("| case | tally 1 thread | Eigen (1 thread) | Eigen/tally time | tally " + std::to_string(threads) + " threads |");
  rep.summary.push_back("| --- | --- | --- | --- | --- |");
  for (int lg : logs) {
    const std::int64_t n = std::int64_t{1} << lg;
    const int reps = o.quick ? 5 : 11;
    const auto view = View<const float>::flat(x.data(), n);
    Eigen::Map<const Eigen::VectorXf> m(x.data(), n);
    struct Case {
      const char* op;
      std::function<void()> tally, eigen;
    };
    const std::vector<Case> cases = {
        {"sum", [&] { sink += reduce_to_host<Sum, float>(Backend::cpu, view, ws); }, [&] { sink += m.sum(); }},
        {"argmax", [&] { sink += static_cast<double>(reduce_to_host<ArgMax<float>, float>(Backend::cpu, view, ws).index); },
         [&] { Eigen::Index i = 0; sink += m.maxCoeff(&i); sink += static_cast<double>(i); }},
        {"argmin", [&] { sink += static_cast<double>(reduce_to_host<ArgMin<float>, float>(Backend::cpu, view, ws).index); },
         [&] { Eigen::Index i = 0; sink += m.minCoeff(&i); sink += static_cast<double>(i); }},
        {"minmax", [&] { sink += reduce_to_host<MinMax<float>, float>(Backend::cpu, view, ws).max; },
         [&] { sink += m.minCoeff() + m.maxCoeff(); }},
        {"meanvar", [&] { sink += reduce_to_host<MeanVar, float>(Backend::cpu, view, ws).mean; }, [&] { sink += m.mean(); }},
    };
    for (const Case& c : cases) {
      omp_set_num_threads(1);
      const double one = median_us(c.tally, reps);
      omp_set_num_threads(threads);
      const double all = median_us(c.tally, reps);
      const double eig = median_us(c.eigen, reps);
      Row a = make_row("ops-cpu", "tally cpu 1 thread", "gang+worker+vector", c.op, "float", size_name(n), n, 4.0 * double(n), 4.0 * double(n), one);
      Row b = make_row("ops-cpu", "tally cpu", "gang+worker+vector", c.op, "float", size_name(n), n, 4.0 * double(n), 4.0 * double(n), all);
      Row e = make_row("ops-cpu", "Eigen Map", "gang+worker+vector", c.op, "float", size_name(n), n, 4.0 * double(n), 4.0 * double(n), eig);
      for (Row* r : {&a, &b, &e}) r->gbs = r->input_bytes / (r->time_us * 1e3);
      a.vs_ref = eig / one, a.ref = std::string("Eigen ") + (std::string(c.op) == "meanvar" ? "mean()" : std::string(c.op) == "minmax" ? "minCoeff()+maxCoeff()" : c.op) + " time / this time";
      char line[200];
      std::snprintf(line, sizeof line, "| float %s %s | %.1f us | %.1f us | %.2fx | %.1f us |", c.op, size_name(n).c_str(), one, eig,
                    eig / one, all);
      rep.summary.push_back(line);
      rep.rows.push_back(a), rep.rows.push_back(b), rep.rows.push_back(e);
      interrupt::check("between benchmark cases");
    }
  }
  omp_set_num_threads(threads);
  if (sink == 12345.0) std::printf(" \n");  // keeps the results alive
  return rep;
}

}  // namespace tally::reduce::bench
