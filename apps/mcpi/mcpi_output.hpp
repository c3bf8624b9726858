#pragma once
// mcpi's output (output.cpp): the job's result gathered over the ranks, its verdict, the result file
// that the executable (driver.cpp) and the Python module (tally.mcpi) write alike, and the
// executable's JSON line and summary line. The result file:
//
//   /            attributes app, backend, seed, n, hits, estimate, std_error, abs_error, error_bound,
//                generator, api, offset, batch, batches, status
//   batches/     n, hits, per_rank (batches of each rank), estimate
//   timings      attributes setup, generate_count (the slowest rank's), total
//   throughput   attribute samples_per_s
//   provenance/, device/ (tally/common/provenance.hpp); ranks/ (ranks_report.hpp) + part_begin, part_end

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "mcpi.hpp"
#include "tally/common/cli.hpp"
#include "tally/common/device_info.hpp"
#include "tally/common/h5.hpp"
#include "tally/common/provenance.hpp"
#include "tally/common/ranks_report.hpp"
#include "tally/common/timing.hpp"
#include "tally/ranks/comm.hpp"
#include "tally/ranks/split.hpp"
#include "tally/reduce/backend.hpp"

namespace tally::mcpi {

/// The estimate of a job's `hits` and the executable's check: within error_bound (mcpi.hpp) of pi,
/// which a correct count of pseudo-random points exceeds with probability below 1e-20 and of Sobol
/// points never. A miss means a broken generator or count.
struct Outcome {
  double estimate = 0, std_error = 0, abs_error = 0, error_bound = 0;
  bool ok = false;
};
[[nodiscard]] Outcome judge(const Params& p, std::int64_t hits);

/// A whole job's result, as rank 0 writes it.
struct Job {
  Params params;  ///< the job's (not a rank's stretch)
  reduce::Backend backend = reduce::Backend::cpu;
  Result
      result;  ///< hits of every rank; every rank's batches in rank order; the slowest rank's setup_s, generate_count_s
  std::vector<std::int64_t> batches_per_rank;
  double total_s = 0;  ///< rank 0's wall time from `total`'s start to the gathered result
  Outcome outcome;
  RanksReport ranks;  ///< each phase on every rank, the decomposition (each rank's stretch of samples)
  [[nodiscard]] double samples_per_s() const { return static_cast<double>(params.n) / result.generate_count_s; }
};

/// Collective: combines every rank's `mine` (its stretch ranks::split_range(p.n, size, rank) of the
/// job `p`) into the Job (complete on rank 0). `total` started before the run.
[[nodiscard]] Job gather_job(const ranks::Comm& comm, const Params& p, reduce::Backend backend, Result mine,
                             const HostTimer& total);

/// Attributes app, backend, seed (every mcpi file, the benchmark's too).
void write_header(h5::Location& f, reduce::Backend backend, std::uint64_t seed);
/// The whole file of a run (header included), into a file just created; the caller commits it.
void write_result(h5::Location& f, const Job& job, const Provenance& prov, const std::optional<DeviceInfo>& dev);

/// Rank 0's report of a job on stdout: the JSON line with --json, else the summary line unless
/// --quiet; an estimate beyond its bound is said on stderr either way.
void print_report(const Job& job, const cli::CommonOptions& common);

}  // namespace tally::mcpi
