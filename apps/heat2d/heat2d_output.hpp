#pragma once
// heat2d's output in the explicit mode (output.cpp): the result file, written by the executable
// (driver.cpp) and the Python module (tally.heat2d) alike, its XDMF sidecar, and the executable's
// JSON line and summary line. The result file:
//   /            attributes app, nx, ny, h, mode, precision, backend, tol, max_iter, check_every, alpha,
//                dt, r, t_end, bc_top, bc_bottom, bc_left, bc_right, init, validate, cuda_kernel, sweeps_per_pass,
//                iterations, keep_partial, restart_from and restart_iterations (a restart), sim_time,
//                status, converged, final_residual
//   field        ny x nx; residual/iteration, residual/value: the checked sweeps' history
//   errors       attributes analytic_max, analytic_l2, eigen_max_abs_diff, eigen_tolerance, eigen_passed
//   throughput   attributes points_per_s, gb_per_s; timings: this rank's, write, total
//   provenance/, device/ (tally/common/provenance.hpp); ranks/ (ranks_report.hpp) + row_begin, row_end
#include <cstdint>
#include <optional>
#include <string>

#include "driver.hpp"
#include "tally/common/device_info.hpp"
#include "tally/common/h5.hpp"
#include "tally/common/provenance.hpp"
#include "tally/common/timing.hpp"

namespace tally::heat2d {

/// What the file records beyond the Problem, the StopRule and the RunOptions.
struct RunRecord {
  std::int64_t max_iter = 0;  ///< as given (the rule's last sweep may be the transient's steps)
  std::string restart_from;   ///< the file the run continued (--restart); empty when none
};

/// The device a run uses (its provenance), none on the CPU backend.
[[nodiscard]] std::optional<DeviceInfo> device_of(const RunOptions& ro);

/// What carried the halos ("none" on one rank, "mpi", "nccl", ...).
[[nodiscard]] std::string transport_of(const ranks::Comm& comm, const RunOptions& ro);
/// How the field reached the file (RanksReport::writer).
[[nodiscard]] std::string writer_of(const ranks::Comm& comm, const RunOptions& ro);
/// Several ranks of a node on one GPU.
[[nodiscard]] bool shared_gpu(const ranks::Comm& comm, const RunOptions& ro);

/// The sweeps' rate: grid points and field bytes (read + written) per second of the solve.
struct Throughput {
  double points_per_s = 0, gb_per_s = 0;
};
template <class T>
[[nodiscard]] Throughput throughput(const Problem& p, const StopRule& rule, const Report<T>& rep);

/// Rank 0, into a file just created, or reopened after every rank wrote its rows of the field
/// (RunOptions::gather false: the field is not written again); the caller commits it. `total` is every
/// rank's run time (Comm::stats, collective: taken before rank 0 alone writes), `write` started before
/// the file was created and `run` at the start of the run: timings/write and timings/total.
template <class T>
void write_result(h5::Location& file, const Problem& p, const StopRule& rule, const RunOptions& ro,
                  const RunRecord& rec, const Report<T>& rep, const ranks::Comm& comm, const ranks::RankStats& total,
                  const Provenance& prov, const std::optional<DeviceInfo>& dev, const HostTimer& write,
                  const HostTimer& run);

/// The XDMF sidecar (<out> with .xmf) of a result file: the field on the grid points.
void write_xdmf(const std::string& h5_path, const Problem& p, int precision_bytes);

/// Rank 0's report of a solve on stdout: the JSON line with --json, else the summary line unless --quiet.
template <class T>
void print_report(const Options& o, const Problem& p, const StopRule& rule, const RunOptions& ro, const Report<T>& rep,
                  const ranks::Comm& comm);

}  // namespace tally::heat2d
