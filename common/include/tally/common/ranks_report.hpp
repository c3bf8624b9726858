#pragma once
// The multi-rank summary every app writes into its HDF5 file: group "ranks" with how the job was
// split and each phase's seconds on every rank. Plain data, filled by the app from the rank level
// (Comm::size/transport/shares_device, Comm::stats); common does not depend on reduce.
//
//   ranks/            attributes ranks, transport, decomposition, shares_device, writer, phases ("a,b")
//     <phase>_s       per-rank seconds (rank order), attributes min, median, max

#include <string>
#include <vector>

#include "tally/common/h5.hpp"

namespace tally {

/// RanksReport::writer: how the distributed data (heat2d's field) reached the file.
inline constexpr const char* writer_one_rank = "one rank";
inline constexpr const char* writer_gathered = "gathered to rank 0";
inline constexpr const char* writer_parallel_hdf5 = "parallel HDF5";  ///< each rank its hyperslab, collective

struct RankPhase {
  std::string name;  ///< "solve", "setup", ... (the dataset is "<name>_s")
  double min = 0, median = 0, max = 0;
  std::vector<double> per_rank;  ///< one value per rank, in rank order
};

struct RanksReport {
  int ranks = 1;
  std::string transport = "none";  ///< "none", "mpi", "nccl" or "mpi (host-staged)"
  bool shares_device = false;      ///< several ranks of a node on one GPU (testing)
  std::string decomposition;       ///< e.g. "rows 0-170 | 171-341 | 342-511"
  std::string writer;              ///< writer_*; empty: writer_one_rank for one rank, else writer_gathered
  std::vector<RankPhase> phases;
};

/// Writes group "ranks" under `where`. std::invalid_argument (naming the phase) when a phase has not
/// one value per rank, an empty or repeated name or one with ',' or '/', or ranks < 1.
void write(h5::Location& where, const RanksReport& report);
/// Reads back what write() wrote (tests, tools).
[[nodiscard]] RanksReport read_ranks_report(const h5::Location& where);
/// What a summary line adds: ", 3 ranks (mpi)", and " (3 ranks share a GPU)" when so; "" for one rank.
[[nodiscard]] std::string ranks_summary(const RanksReport& report);

}  // namespace tally
