#pragma once
// The run of one problem and the benchmark table, independent of the backend and of the output
// (main.cpp writes the files and lines).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "heat2d.hpp"
#include "solver.hpp"
#include "tally/common/timing.hpp"

namespace tally::heat2d {

struct RunOptions {
  reduce::Backend backend = reduce::Backend::cpu;
  int device = 0;
  std::string cuda_kernel = "registers";
  bool validate = false;
  bool progress = false;  ///< a progress line on a terminal
};

template <class T>
struct Report {
  SolveResult result;
  std::vector<T> field;   ///< final field (ny * nx)
  double sim_time = 0.0;  ///< transient: iterations * dt
  std::optional<ErrorNorms> analytic;        ///< when an analytic solution applies (and not diverged)
  std::optional<double> eigen_max_abs_diff;  ///< with validate
  double eigen_tolerance = 0.0;
  bool validation_passed = true;
  Timings timings;  ///< setup, h2d, solve, per_sweep, d2h (main adds write and total)
  [[nodiscard]] double field_bytes(const Problem& p) const { return static_cast<double>(p.nx * p.ny) * sizeof(T); }
};

template <class T>
Report<T> run_problem(const Problem& p, const StopRule& rule, const RunOptions& o);

struct BenchRow {
  std::string kernel;  ///< cuda: async / registers; cpu: cpu
  std::string precision;
  std::int64_t n = 0;  ///< n x n grid
  std::int64_t check_every = 0;
  std::int64_t sweeps = 0;  ///< per timed repeat
  double per_sweep_s = 0.0;  ///< median over repeats
  double gb_per_s = 0.0;     ///< 2 x field bytes per sweep
  double fraction_of_copy = 0.0;
};
struct BenchTable {
  double copy_gb_per_s = 0.0;
  std::int64_t copy_bytes = 0;
  int repeats = 0;
  std::vector<BenchRow> rows;
};
/// Per-sweep time of n x n steady sweeps (init sin, never zeros) for each size, float and double,
/// checked every sweep and every 100 sweeps, against the backend's copy bandwidth measured first;
/// on CUDA for both sweep kernels.
BenchTable run_bench(const RunOptions& o, const std::vector<std::int64_t>& sizes, bool quiet);

}  // namespace tally::heat2d
