#pragma once
// The process frame of the rank runtime: MPI for the life of the process and main() of a multi-rank
// app.
//
//   int main(int argc, char** argv) {
//     return tally::ranks::run_ranks("heat2d", argc, argv, [&](Comm& comm) { return run(argc, argv, comm); });
//   }

#include <functional>
#include <string>

#include "tally/ranks/comm.hpp"

namespace tally::ranks {

/// The number of ranks an MPI launcher started this process with, read from the launcher's
/// environment (OpenMPI, MPICH/Hydra, PMIx, Slurm's PMI); 1 when none. A build without MPI that
/// finds more than 1 refuses to run (run_ranks: exit 2) instead of running the same job N times.
[[nodiscard]] int launcher_world_size();

/// MPI for the life of a process: MPI_Init_thread (funneled) in the constructor, MPI_Finalize in
/// the destructor; without MPI (or TALLY_MPI=OFF) a single rank. world() is MPI_COMM_WORLD. The
/// constructor reads TALLY_RANK_TRANSPORT first (rank_transport(), comm.hpp): std::invalid_argument
/// for a value other than auto, nccl or host.
class RankSession {
 public:
  RankSession(int& argc, char**& argv);
  ~RankSession();
  RankSession(const RankSession&) = delete;
  RankSession& operator=(const RankSession&) = delete;
  [[nodiscard]] const Comm& world() const { return world_; }
  [[nodiscard]] Comm& world() { return world_; }

 private:
  bool finalize_ = false;
  Comm world_;
};

/// main() of a multi-rank app: starts the RankSession, runs body(world) on every rank and maps
/// exceptions to messages and exit codes like tally::run_app (input errors 2, failures 1):
///  * an AgreedError: every rank exits with its code, rank 0 prints the message;
///  * an exception on one rank of several (the others may be waiting in a collective): that rank
///    prints "name: rank r of n: error: ..." and aborts the job (Comm::abort), so no rank hangs;
///  * a build without MPI started by a launcher with several ranks, or a bad TALLY_RANK_TRANSPORT:
///    a message, exit 2.
int run_ranks(const std::string& name, int argc, char** argv, const std::function<int(Comm&)>& body);

}  // namespace tally::ranks
