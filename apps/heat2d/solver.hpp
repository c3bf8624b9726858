#pragma once
// The one solver interface. The driver and the tests name a backend once (make_solver); the CPU
// backend is solver_cpu.cpp, the CUDA backend solver_cuda.cu.
//
// Across ranks (SolverOptions::comm with several ranks) the grid is split into row blocks by the
// job's Decomposition (decompose(): the interior rows 1..ny-2, made once by the caller), each rank
// holding its rows plus one row on each side (its neighbours' boundary rows, exchanged every sweep,
// or the global edge rows on the end ranks); with passes of t > 1 sweeps the solver holds t rows a
// side, exchanged after each pass (HaloLayout), while set_field/get_field still take the one-row
// Block. The global residual is the Max over ranks (exact), so every rank stops at the same sweep and
// the fields and residuals are bitwise those of one rank.

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "decomposition.hpp"
#include "heat2d.hpp"
#include "tally/reduce/backend.hpp"
#include "tuning.hpp"

namespace tally::ranks {
class Comm;
}

namespace tally::heat2d {

/// The rows a rank holds: global rows [row0, row0 + rows) of the ny x nx field, its interior rows
/// and one halo or edge row on each side. One rank: the whole field.
struct Block {
  std::int64_t row0 = 0, rows = 0;
  [[nodiscard]] std::int64_t end() const { return row0 + rows; }
};
/// The problem's interior rows 1..ny-2 split over `ranks` ranks, as rank `rank` sees it (one rank:
/// all of them). Throws tally::InputError when there are more ranks than interior rows.
Decomposition decompose(const Problem& p, int ranks = 1, int rank = 0);
/// This rank's Block: its rows and one row on each side.
Block local_block(const Decomposition& d);

struct SolveResult {
  std::int64_t iterations = 0;  ///< sweeps done
  Status status = Status::max_iter;
  double final_residual = 0.0;                ///< the residual of the last checked sweep
  std::vector<std::int64_t> check_iteration;  ///< every checked sweep, in order
  std::vector<double> check_residual;
  double solve_s = 0.0;  ///< device time (CUDA events) or host time (CPU) of the whole iteration
};

/// Called after each check the host has seen: (iteration, residual, seconds since the start).
using ProgressFn = std::function<void(std::int64_t, double, double)>;

template <class T>
class Solver {
 public:
  virtual ~Solver() = default;
  /// This rank's block (block.rows * nx, row-major; the whole field on one rank); returns when the
  /// copy is done.
  virtual void set_field(std::span<const T> u) = 0;
  /// Sweeps until the rule stops; the field then holds the state after result.iterations sweeps.
  /// Collective across the ranks of SolverOptions::comm (every rank gets the same result).
  virtual SolveResult solve(const StopRule& rule, const ProgressFn& progress = {}) = 0;
  /// Copies the current block out (halo rows included); returns when the copy is done.
  virtual void get_field(std::span<T> u) = 0;
};

/// The most sweeps one pass over memory (one CUDA launch, one cache-tiled CPU pass) may advance.
constexpr int max_sweeps_per_pass = 8;
/// What auto aims for on each backend (the largest t that divides --check-every up to these).
using tuning::cpu_preferred_sweeps_per_pass;
using tuning::cuda_preferred_sweeps_per_pass;

/// --sweeps-per-pass: the sweeps each pass advances, given `requested` (0: auto) and the check
/// interval. Residuals exist only at a pass's last sweep, so t must divide --check-every; auto picks
/// the largest t <= the backend's preferred depth that does. `deepest`: the most the decomposition
/// allows (deepest_pass). Throws tally::InputError naming the option otherwise.
int resolve_sweeps_per_pass(int requested, std::int64_t check_every, reduce::Backend b,
                            int deepest = max_sweeps_per_pass);

/// Across ranks a pass of t sweeps needs t halo rows on each side, all from the neighbour's own
/// rows, exchanged after every pass: t is at most the smallest block's row count.
int deepest_pass(const Decomposition& d);

/// The rows a rank's solver holds for passes of up to `depth` sweeps: its own rows, and up to
/// `depth` rows on each side (its neighbour's, or the global edge row alone on the end ranks). The
/// Block's rows (one halo row a side) are rows [below - 1, below + own + 1) of it.
struct HaloLayout {
  std::int64_t below = 1, own = 1, above = 1;
  [[nodiscard]] std::int64_t rows() const { return below + own + above; }
  [[nodiscard]] std::int64_t first() const { return below; }      ///< the first own row (local)
  [[nodiscard]] std::int64_t end() const { return below + own; }  ///< one past the last own row
};
HaloLayout halo_layout(const Decomposition& d, int depth);

/// The passes of sweeps first+1..last with t sweeps a pass: each ends at a multiple of t (so a
/// restart or a stop lines up with the checks) or at `last` (a shorter final pass). The length of
/// the pass that starts at sweep k.
inline std::int64_t pass_length(std::int64_t k, std::int64_t last, int t) {
  const std::int64_t end = (k + t - 1) / t * t;
  return (end < last ? end : last) - k + 1;
}

struct SolverOptions {
  int device = 0;
  /// The CUDA sweep kernel: "async" (rows staged through shared memory by cp.async), "registers"
  /// (rows queued in registers, one launch a sweep) or "persistent" (the registers kernel's sweeps,
  /// many a launch; one rank and one sweep a pass, else the registers kernel); all give the same bits.
  std::string cuda_kernel = "persistent";
  /// The ranks the grid is split over; nullptr: one rank. With several, the solver is collective
  /// (every rank constructs and solves in step), and on CUDA Comm::use_device() must have been called.
  const ranks::Comm* comm = nullptr;
  /// This rank's part of the grid (decompose() over comm's ranks); nullptr: the whole grid (one rank).
  const Decomposition* decomposition = nullptr;
  /// Sweeps a pass (0: auto, resolved at each solve() against the rule's check interval; see
  /// resolve_sweeps_per_pass). Every t gives the same bits as t = 1.
  int sweeps_per_pass = 1;
};

/// Throws tally::InputError when the grid does not fit (device memory for CUDA).
template <class T>
std::unique_ptr<Solver<T>> make_solver(reduce::Backend b, const Problem& p, const SolverOptions& o = {});

/// The backend's copy bandwidth in GB/s (bytes read + written), median of `repeats` copies of
/// `bytes` bytes: a device-to-device cudaMemcpy on CUDA, a parallel memcpy on the CPU.
double copy_bandwidth_gbs(reduce::Backend b, std::int64_t bytes, int repeats, int device = 0);

// The backends' factories (solver_cpu.cpp, solver_cuda.cu).
/// The decomposition a backend's solver runs on: o.decomposition, checked against the problem and
/// comm's ranks (tally::Error when it is another's or missing on several ranks), or the whole grid.
Decomposition solver_decomposition(const Problem& p, const SolverOptions& o);
template <class T>
std::unique_ptr<Solver<T>> make_cpu_solver(const Problem& p, const SolverOptions& o);
double cpu_copy_bandwidth_gbs(std::int64_t bytes, int repeats);
#ifdef TALLY_HAS_CUDA
template <class T>
std::unique_ptr<Solver<T>> make_cuda_solver(const Problem& p, const SolverOptions& o);
double cuda_copy_bandwidth_gbs(std::int64_t bytes, int repeats, int device);
#endif

/// Eigen reference (validate_eigen.cpp): `sweeps` sweeps of the same iteration on Eigen arrays.
template <class T>
std::vector<T> eigen_sweeps(const Problem& p, std::span<const T> u0, std::int64_t sweeps);

}  // namespace tally::heat2d
