#pragma once
// The heat2d driver (driver.cpp): the job as the command line (main.cpp) asks for it, in either
// mode -- the explicit mode's set-up, agreed over the ranks, then the solve and its file or --bench
// (bench.cpp); the implicit mode's --deck/--set runs handed to implicit/job.hpp -- and the run of
// one explicit problem, which the Python module and the tests call too. It knows no backend (the
// solvers are behind solver.hpp) and writes no line itself (heat2d_output.hpp).

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "heat2d.hpp"
#include "implicit/job.hpp"
#include "solver.hpp"
#include "tally/common/cli.hpp"
#include "tally/common/timing.hpp"
#include "tally/ranks/comm.hpp"

namespace tally::heat2d {

/// The job as the command line (main.cpp) asks for it.
struct Options {
  cli::CommonOptions common;
  /// The implicit mode (--deck or --set given): its options; the explicit mode's below are unused.
  bool implicit_mode = false;
  implicit::Options implicit;
  // The explicit mode.
  Problem p;  ///< nx, alpha, dt, t_end as given; the rest from the texts below (driver.cpp)
  std::string mode = "steady", bc_top = "sin", bc_bottom = "0", bc_left = "0", bc_right = "0", init = "0";
  std::int64_t ny = 0;  ///< 0: nx
  double tol = 1e-10;
  std::int64_t max_iter = 1'000'000, check_every = 1;
  std::string cuda_kernel = "persistent";
  std::string sweeps_per_pass = "auto";  ///< auto or 1..max_sweeps_per_pass
  bool validate = false, xdmf = false, bench = false, keep_partial = false;
  std::vector<std::int64_t> bench_sizes;
  std::string restart;  ///< a heat2d output to continue from
  std::string command;  ///< the command line as run, for the provenance
};

/// The job on the ranks of `comm`: every rank checks the options and sets up (a failure anywhere is
/// every rank's, rank 0 naming it), then the implicit mode's run, --bench, or the solve, rank 0
/// writing the file and printing. Collective. Returns the exit code; bad input throws InputError.
int run(const Options& o, ranks::Comm& comm);

/// --sweeps-per-pass: "auto" (0) or a whole number (its range is resolve_sweeps_per_pass's to check).
int parse_sweeps_per_pass(const std::string& text);

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

/// --bench (bench.cpp): the sizes it runs (--bench-sizes, else the backend's; checked against the
/// ranks: throws InputError), and the table on one rank or the scaling over several, rank 0 printing
/// and writing the file. Collective.
std::vector<std::int64_t> bench_sizes(const Options& o, reduce::Backend b, int ranks);
int run_bench(const Options& o, const RunOptions& ro, const ranks::Comm& comm);

/// Solves one problem from `start` (this rank's block, halo rows included: a restart's field at
/// sweep rule.first) or, when empty, from initial_field. Several ranks: each builds its block of the initial field, the
/// solver is created (a failure on any rank is agreed on: every rank throws AgreedError), and the final field is
/// gathered to rank 0 (RunOptions::gather; else each rank keeps its block and the analytic error is computed in parts,
/// rank 0 holding the result), which alone runs --validate (on the whole field, gathered for it); validation_passed is
/// rank 0's verdict on every rank.
template <class T>
Report<T> run_problem(const Problem& p, const StopRule& rule, const RunOptions& o, std::span<const T> start = {});

}  // namespace tally::heat2d
