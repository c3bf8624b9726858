#pragma once
// The implicit mode's outputs (output.cpp): the result file, written through a temporary name and
// renamed once complete (tally::h5::File), the --json summary and the summary line.
//
// The result file:
//   /            attributes app (heat2d), mode (implicit), deck_file, deck (deck_text: every keyword),
//                solver, preconditioner, eps, eps_norm, max_iters, reproducible, cheby_steps_per_pass (the
//                Chebyshev steps a pass took: cheby_steps_per_pass()), backend, ranks, x_cells, y_cells,
//                dx, dy, dt, steps (asked), steps_done, status, converged, iterations
//   field        ny x nx: u after the last step taken (attribute status: "converged", or the failed
//                solve's "max-iters" / "diverged", the field it reached); energy, density likewise
//   summary/     step, time, volume, mass, density, energy, temperature: one row per field summary
//                (step 0, every summary_frequency steps, the last)
//   steps/       one row per step taken: iterations, cg_iterations, inner_iterations, cheby_estimate,
//                error (the last value tested), residual (|u0 - A u|_2, -1 without check_result),
//                eigmin, eigmax, status (0 converged, 1 max-iters, 2 diverged), solve_s
//   residual/    every solve's history, concatenated: iteration, value (what was tested against
//                eps); offsets (steps_done + 1): step k's entries are [offsets[k], offsets[k+1])
//   timings/     attributes setup, solve, summary, per_iteration, total (up to the write; seconds)
//   provenance/, device/ (tally/common/provenance.hpp)

#include <optional>
#include <string>

#include "run.hpp"
#include "tally/common/cli.hpp"
#include "tally/common/device_info.hpp"
#include "tally/common/h5.hpp"
#include "tally/common/provenance.hpp"

namespace tally::heat2d::implicit {

struct OutputRecord {
  std::string deck_file;  ///< as given (--deck), empty for a deck of --set lines only
  std::string backend;
  int ranks = 1;
  double write_s = 0.0, total_s = 0.0;
};

/// Writes the report into a file just created (the caller commits it).
void write_result(h5::Location& f, const RunReport& r, const OutputRecord& rec, const Provenance& prov,
                  const std::optional<DeviceInfo>& dev);

/// The one-line JSON summary (--json).
std::string json_summary(const RunReport& r, const OutputRecord& rec, const std::string& out);

/// Rank 0's report on stdout: the JSON line with --json, else the summary line unless --quiet; a
/// solve that did not converge is said on stderr either way.
void print_report(const RunReport& r, const OutputRecord& rec, const cli::CommonOptions& common);

/// An XDMF sidecar (<out> with .xmf) describing /field, /energy and /density on the cell grid.
void write_xdmf(const std::string& h5_path, const RunReport& r);

}  // namespace tally::heat2d::implicit
