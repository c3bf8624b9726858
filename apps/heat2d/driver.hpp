#pragma once
// The run of one problem and the benchmark table, independent of the backend and of the output
// (main.cpp writes the lines, output.cpp the result file).

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "heat2d.hpp"
#include "solver.hpp"
#include "tally/common/timing.hpp"
#include "tally/ranks/comm.hpp"

namespace tally::heat2d {

struct RunOptions {
  reduce::Backend backend = reduce::Backend::cpu;
  int device = 0;
  std::string cuda_kernel = "persistent";
  int sweeps_per_pass = 1;  ///< 0: auto (SolverOptions::sweeps_per_pass)
  bool validate = false;
  bool progress = false;  ///< a progress line on a terminal
  /// On one rank a signal (tally/common/interrupt.hpp) stops the solve at the next checked sweep
  /// (status interrupted). Then run_problem throws interrupt::Interrupted unless keep_partial, which
  /// returns the report of the sweeps done (the caller writes it and exits 128 + signal).
  bool keep_partial = false;
  /// The ranks the grid is split over (nullptr: one). With several, run_problem is collective and,
  /// on CUDA, Comm::use_device(device) must have been called.
  const ranks::Comm* comm = nullptr;
  /// This rank's part of the grid (decompose() over comm's ranks, made once by the caller); nullptr:
  /// the whole grid on one rank.
  const Decomposition* decomposition = nullptr;
  /// Several ranks: gather the final field to rank 0 (Report::field). false (the field is written
  /// with parallel HDF5): each rank keeps its block in Report::block_field, and rank 0 gathers only
  /// when it needs the whole field (the analytic error, --validate).
  bool gather = true;
};

template <class T>
struct Report {
  SolveResult result;
  std::vector<T> field;                ///< final field (ny * nx), gathered on rank 0 (empty on the other ranks)
  std::vector<T> block_field;          ///< with RunOptions::gather false: this rank's block (Report::block's rows)
  double sim_time = 0.0;               ///< transient: iterations * dt
  std::optional<ErrorNorms> analytic;  ///< when an analytic solution applies (and not diverged)
  std::optional<double> eigen_max_abs_diff;  ///< with validate
  double eigen_tolerance = 0.0;
  bool validation_passed = true;
  Timings timings;              ///< setup, h2d, solve, per_sweep, d2h (main adds write and total); this rank's
  Decomposition decomposition;  ///< the job's rows over its ranks, as this rank sees them
  Block block;                  ///< this rank's rows (local_block)
  /// With RunOptions::comm: min/median/max over ranks of each timing (in the order of `timings`).
  std::vector<std::pair<std::string, ranks::RankStats>> rank_timings;
  [[nodiscard]] double field_bytes(const Problem& p) const { return static_cast<double>(p.nx * p.ny) * sizeof(T); }
};

/// The global rows [begin, end) that rank `rank` owns in the output: its interior rows, and the edge
/// row at each end of the field for the first and last rank.
[[nodiscard]] Decomposition::Rows own_rows(const Decomposition& d, int rank);

/// Rank 0 assembles the whole field (ny * nx) from every rank's `block` (its local_block's rows):
/// each rank's own rows and the end ranks' edge rows, in rounds of at most `round_bytes` altogether
/// (MPI counts are ints). Collective over comm, whose ranks `d` splits; returns an empty vector on
/// the other ranks.
template <class T>
std::vector<T> gather_field(const ranks::Comm& comm, const Decomposition& d, std::span<const T> block,
                            std::int64_t round_bytes = std::int64_t{1} << 30);

/// Solves one problem from `start` (this rank's block, halo rows included: a restart's field at
/// sweep rule.first) or, when empty, from initial_field. Several ranks: each builds its block of the initial field, the
/// solver is created (a failure on any rank is agreed on: every rank throws AgreedError), and the final field is
/// gathered to rank 0 (RunOptions::gather; else each rank keeps its block and the analytic error is computed in parts,
/// rank 0 holding the result), which alone runs --validate (on the whole field, gathered for it); validation_passed is
/// rank 0's verdict on every rank.
template <class T>
Report<T> run_problem(const Problem& p, const StopRule& rule, const RunOptions& o, std::span<const T> start = {});

struct BenchRow {
  std::string kernel;  ///< cuda: async / registers; cpu: cpu
  std::string precision;
  std::int64_t n = 0;  ///< n x n grid
  std::int64_t check_every = 0;
  int sweeps_per_pass = 1;   ///< t: sweeps a pass over memory
  std::int64_t sweeps = 0;   ///< per timed repeat
  double per_sweep_s = 0.0;  ///< median over repeats
  double gb_per_s = 0.0;     ///< 2 x field bytes per pass (the field read and written once per t sweeps)
  double fraction_of_copy = 0.0;
  double equivalent_fraction_of_copy = 0.0;  ///< 2 x field bytes per sweep, against the copy rate
};
struct BenchTable {
  double copy_gb_per_s = 0.0;
  std::int64_t copy_bytes = 0;
  int repeats = 0;
  std::vector<BenchRow> rows;
};
/// Several ranks (RunOptions::comm): the per-sweep time of steady sweeps checked every sweep, for
/// each size n, float and double, on one rank (rank 0 alone, the others waiting) and split over
/// every rank: strong scaling (the same n x n grid) and weak scaling (each rank n - 2 interior rows:
/// n x (N (n - 2) + 2)). The times across ranks are the slowest rank's. Collective.
struct ScalingRow {
  std::string precision;
  std::int64_t n = 0;
  std::int64_t sweeps = 0;
  double one_rank_s = 0.0, strong_s = 0.0, weak_s = 0.0;  ///< per sweep, median over repeats
  [[nodiscard]] double strong_efficiency(int ranks) const { return one_rank_s / (ranks * strong_s); }
  [[nodiscard]] double weak_efficiency() const { return one_rank_s / weak_s; }
};
struct ScalingTable {
  int ranks = 1;
  int repeats = 0;
  std::vector<ScalingRow> rows;
};
ScalingTable run_scaling(const RunOptions& o, const std::vector<std::int64_t>& sizes, bool quiet);

/// Per-sweep time of n x n steady sweeps (init sin, never zeros) for each size, float and double,
/// checked every sweep and every 100 sweeps, against the backend's copy bandwidth measured first;
/// on CUDA for both sweep kernels; then checked every 8 sweeps with t = 1, 2, 4 and 8 sweeps a pass
/// (CUDA: the registers kernel for t = 1, the blocked kernel beyond).
BenchTable run_bench(const RunOptions& o, const std::vector<std::int64_t>& sizes, bool quiet);

}  // namespace tally::heat2d
