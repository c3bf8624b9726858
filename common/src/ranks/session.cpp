// The process frame of the rank runtime (session.hpp): the launcher's environment and the
// TALLY_RANK_TRANSPORT setting, RankSession (MPI for the life of the process) and run_ranks (main()
// of a multi-rank app).

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "ranks/impl.hpp"
#include "tally/common/error.hpp"
#include "tally/common/interrupt.hpp"
#include "tally/ranks/session.hpp"

namespace tally::ranks {

namespace {

/// A positive integer from the environment, 0 when unset or not a number.
int env_count(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return 0;
  char* end = nullptr;
  errno = 0;
  const long n = std::strtol(v, &end, 10);
  return (errno == 0 && *end == '\0' && n > 0 && n < (1L << 30)) ? static_cast<int>(n) : 0;
}

/// True when a launcher started this process (even with one rank): MPI is then initialised.
[[maybe_unused]] bool launcher_present() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMI_RANK", "PMIX_RANK"})
    if (std::getenv(name)) return true;
  return false;
}

}  // namespace

RankTransport rank_transport() {
  static const RankTransport setting = [] {
    const char* v = std::getenv("TALLY_RANK_TRANSPORT");
    const std::string value = v ? v : "";
    if (value.empty() || value == "auto") return RankTransport::automatic;
    if (value == "nccl") return RankTransport::nccl;
    if (value == "host") return RankTransport::host;
    throw std::invalid_argument("TALLY_RANK_TRANSPORT=" + value +
                                ": expected auto, nccl or host (what device buffers travel by between ranks)");
  }();
  return setting;
}

const char* to_string(RankTransport t) {
  switch (t) {
    case RankTransport::nccl: return "nccl";
    case RankTransport::host: return "host";
    default: return "auto";
  }
}

int launcher_world_size() {
  // OpenMPI (mpiexec/mpirun, and srun with OpenMPI's PMIx): OMPI_COMM_WORLD_SIZE. MPICH/Hydra, Intel
  // MPI and Slurm's PMI-1/2: PMI_SIZE. Slurm with PMIx: SLURM_STEP_NUM_TASKS, trusted only next to
  // PMIX_RANK or PMI_FD (set for the tasks of an MPI step), never alone: a batch script's own
  // environment has Slurm's task counts too and is one process. MPI_LOCALNRANKS (MPICH) counts one
  // node only, so it is not read.
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"})
    if (const int n = env_count(name)) return n;
  if (std::getenv("PMIX_RANK") || std::getenv("PMI_FD"))
    if (const int n = env_count("SLURM_STEP_NUM_TASKS")) return n;
  return 1;
}

#ifdef TALLY_HAS_MPI
namespace {
std::unique_ptr<Comm::Impl> world_impl() {
  auto c = std::make_unique<Comm::Impl>();
  c->world = MPI_COMM_WORLD;
  TALLY_MPI_CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  TALLY_MPI_CHECK(MPI_Comm_rank(c->world, &c->rank));
  TALLY_MPI_CHECK(MPI_Comm_size(c->world, &c->size));
  TALLY_MPI_CHECK(MPI_Comm_split_type(c->world, MPI_COMM_TYPE_SHARED, c->rank, MPI_INFO_NULL, &c->local));
  TALLY_MPI_CHECK(MPI_Comm_set_errhandler(c->local, MPI_ERRORS_RETURN));
  TALLY_MPI_CHECK(MPI_Comm_rank(c->local, &c->local_rank));
  TALLY_MPI_CHECK(MPI_Comm_size(c->local, &c->local_size));
  return c;
}
}  // namespace
#endif

RankSession::RankSession([[maybe_unused]] int& argc, [[maybe_unused]] char**& argv) {
  (void)rank_transport();  // the process's one reading of the setting: a bad value ends it here
#ifdef TALLY_HAS_MPI
  // A plain ./app (no launcher) is today's program: no MPI start-up at all.
  if (launcher_world_size() <= 1 && !launcher_present()) return;
  int provided = 0;
  const int rc = MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  if (rc != MPI_SUCCESS) throw Error("MPI_Init_thread failed (error " + std::to_string(rc) + ")");
  finalize_ = true;
  if (provided < MPI_THREAD_FUNNELED)
    throw Error("MPI_Init_thread: the MPI library does not provide MPI_THREAD_FUNNELED");
  world_ = Comm(world_impl());
#endif
}

RankSession::~RankSession() {
  world_ = Comm();  // NCCL and the node communicator go before MPI_Finalize
#ifdef TALLY_HAS_MPI
  if (finalize_)
    if (const int rc = MPI_Finalize(); rc != MPI_SUCCESS)
      std::fprintf(stderr, "tally: MPI_Finalize failed (MPI error %d)\n", rc);  // a destructor's path
#endif
}

int run_ranks(const std::string& name, int argc, char** argv, const std::function<int(Comm&)>& body) {
  if (!mpi_built() && launcher_world_size() > 1) {
    std::fprintf(stderr,
                 "%s: error: started by an MPI launcher with %d ranks, but this build has no MPI (configure with "
                 "TALLY_MPI=ON and an MPI library)\n",
                 name.c_str(), launcher_world_size());
    return exit_bad_input;
  }
  std::unique_ptr<RankSession> session;
  try {
    session = std::make_unique<RankSession>(argc, argv);
  } catch (...) {
    const ExceptionReport r = classify(std::current_exception());
    std::fprintf(stderr, "%s: %s: %s\n", name.c_str(), r.kind, r.message.c_str());
    return r.exit_code;
  }
  Comm& world = session->world();
  // Across ranks a signal ends the process at once (removing temporary files): a launcher's SIGTERM
  // means the job is being torn down, and a safe point could wait for peers that are gone.
  interrupt::install();
  interrupt::set_immediate(world.size() > 1);
  try {
    return body(world);
  } catch (const AgreedError& e) {
    // Every rank has the same error: each exits with its code, one prints it.
    if (world.is_root())
      std::fprintf(stderr, "%s: %s: %s\n", name.c_str(), e.input_error() ? "error" : "failed", e.what());
    return e.input_error() ? exit_bad_input : exit_failure;
  } catch (...) {
    const ExceptionReport r = classify(std::current_exception());
    if (world.size() == 1) {
      std::fprintf(stderr, "%s: %s: %s\n", name.c_str(), r.kind, r.message.c_str());
      return r.exit_code;
    }
    // The other ranks may be waiting for this one in a collective: end the whole job.
    std::fprintf(stderr, "%s: rank %d of %d: %s: %s\n", name.c_str(), world.rank(), world.size(), r.kind,
                 r.message.c_str());
    world.abort(r.exit_code);
  }
}

}  // namespace tally::ranks
