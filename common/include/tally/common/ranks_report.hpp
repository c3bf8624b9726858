#pragma once
// The /ranks group every multi-rank app writes (one layout, so that scripts read any app's file the
// same way), and the words the summary line adds. Plain data: common knows nothing of MPI (the apps
// fill it from reduce::Comm).
//
//   /ranks  attrs: ranks, transport, decomposition, shares_device
//           datasets: part_begin, part_end (each rank's share of the split axis, rank order)
//           /ranks/timings/<phase>  attrs: min, median, max; dataset per_rank

#include <cstdint>
#include <string>
#include <vector>

#include "tally/common/h5.hpp"

namespace tally {

struct RankTiming {
  std::string name;  ///< e.g. "generate_count_s"
  double min = 0, median = 0, max = 0;
  std::vector<double> per_rank;
};

struct RanksReport {
  int ranks = 1;
  std::string transport = "none";  ///< Comm::transport(): "none", "mpi", "nccl", "mpi (host-staged)"
  std::string decomposition;       ///< e.g. "samples: contiguous stretches of the stream"
  bool shares_device = false;
  std::vector<std::int64_t> part_begin, part_end;
  std::vector<RankTiming> timings;
};

/// Writes `r` as the group "ranks" of `where`.
void write_ranks(h5::Location& where, const RanksReport& r);

/// ", 3 ranks (mpi)" and " (3 ranks share a GPU)" when so; empty for one rank.
[[nodiscard]] std::string ranks_summary(const RanksReport& r);

}  // namespace tally
