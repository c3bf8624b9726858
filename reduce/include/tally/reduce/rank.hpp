#pragma once
// The rank level: the fourth level of the reduction hierarchy (vector, worker, gang, rank), over
// MPI processes, with NCCL for device buffers. Host-only header: no MPI, NCCL or CUDA headers, so
// app code has no #ifdefs; a build without MPI (TALLY_MPI=OFF) has the same API with one rank.
//
//   int main(int argc, char** argv) {
//     return tally::reduce::run_ranks("heat2d", argc, argv, [&](const Comm& comm) { return run(argc, argv, comm); });
//   }
//   ...
//   comm.use_device(comm.pick_device(), stream);            // each rank its GPU; NCCL when each has its own
//   reduce<Sum, float, double>(comm, Backend::cuda, slab, Levels::all(), out, ws, stream);  // all four levels
//   comm.allreduce<Max, double>(d_res, d_res, Memory::device, stream);                     // the cross-rank step
//
// Determinism. allreduce() combines the ranks' values in rank order on every rank,
//   out = combine(...combine(combine(x_0, x_1), x_2)..., x_{size-1}),
// so every rank holds the same bits, run to run, whatever ring or tree NCCL or MPI would choose
// (floating-point operands are gathered and folded in that order; only integer Sum/Prod/Max/Min,
// exact in any order, may use the transport's own reduction). Max, Min and every integer operator
// are therefore bitwise identical for every rank count; a floating-point Sum depends on the rank
// count (and on where the gang axis was split), not on anything else; ExactSum does not (the ranks
// add their unrounded accumulators as integers and round once). Max and Min propagate NaN,
// as everywhere in the library (NCCL's and MPI's own max/min are never used on floating point).
//
// Collectives: every call named "collective" must be made by every rank of the communicator, in
// the same order, with the same counts. Device-memory calls are stream-ordered on `stream` (they
// return once enqueued, like reduce()); host-memory calls return when the result is in place.
//
// Errors: bad arguments throw std::invalid_argument naming the argument; a failed MPI, NCCL or CUDA
// call throws tally::Error naming the call, file and line. A rank that fails while others wait in a
// collective cannot be recovered: run_ranks() then aborts the whole job (every rank exits non-zero).

#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "tally/reduce/reduce.hpp"

namespace tally::reduce {

/// Where the buffers given to a cross-rank call live.
enum class Memory { host, device };

/// True when this build has MPI (TALLY_MPI) / NCCL (TALLY_NCCL).
[[nodiscard]] bool mpi_built();
[[nodiscard]] bool nccl_built();

/// The number of ranks an MPI launcher started this process with, read from the launcher's
/// environment (OpenMPI, MPICH/Hydra, PMIx, Slurm's PMI); 1 when none. A build without MPI that
/// finds more than 1 refuses to run (run_ranks: exit 2) instead of running the same job N times.
[[nodiscard]] int launcher_world_size();

/// [begin, end) of part `part` of `parts` equal parts of n items (the first n % parts parts one item
/// longer): the row blocks, K slabs and sample ranges of the apps.
struct Range {
  std::int64_t begin = 0, end = 0;
  [[nodiscard]] constexpr std::int64_t size() const { return end - begin; }
};
[[nodiscard]] constexpr Range split_range(std::int64_t n, int parts, int part) {
  const std::int64_t q = n / parts, r = n % parts, p = part;
  const std::int64_t b = p * q + (p < r ? p : r);
  return {b, b + q + (p < r ? 1 : 0)};
}

/// Per-rank statistics of one number (a phase's seconds): min, median, max over ranks, and each
/// rank's value in rank order (on every rank).
struct RankStats {
  double min = 0, median = 0, max = 0;
  std::vector<double> per_rank;
};

/// A communicator: the ranks of the job (MPI_COMM_WORLD), or one process alone (the default, and
/// the only one in a build without MPI). One rank is exactly the single-process program.
/// Not thread-safe: one thread calls it, one device stream at a time (like a Workspace).
class Comm;
namespace detail {
template <class T, class Out>
void exact_across_ranks(const Comm& comm, Backend backend, View<const T> in, Levels levels, std::span<Out> out,
                        Workspace& ws, stream_t stream);
}  // namespace detail

class Comm {
 public:
  Comm();  ///< a single rank: every call is local
  ~Comm();
  Comm(Comm&&) noexcept;
  Comm& operator=(Comm&&) noexcept;
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;

  [[nodiscard]] int rank() const;
  [[nodiscard]] int size() const;
  [[nodiscard]] bool is_root() const { return rank() == 0; }
  /// This rank among the ranks of its node (an MPI-3 shared-memory split, not a launcher variable).
  [[nodiscard]] int local_rank() const;
  [[nodiscard]] int local_size() const;
  /// The MPI communicator as its Fortran handle (MPI_Comm_c2f; MPI_Comm_f2c turns it back): for a
  /// library that takes an MPI_Comm (parallel HDF5, tally::h5::File::create_collective) without
  /// this header including mpi.h. -1 for a single-process Comm and in a build without MPI.
  [[nodiscard]] std::int64_t mpi_handle() const;

  // ---- devices ------------------------------------------------------------------------------------
  /// The GPU this rank uses: local_rank() % (number of CUDA devices), or `requested` when the job
  /// has one rank (the --device option). -1 when the build or the node has no GPU.
  [[nodiscard]] int pick_device(int requested = 0) const;
  /// Collective. Makes `device` current and sets up device-buffer transport: NCCL when built with
  /// it and no two ranks of a node share a GPU; otherwise MPI through host staging. Once per
  /// communicator: a second call for the same device does nothing, for another device it throws.
  void use_device(int device, stream_t stream = nullptr);
  /// Whether several ranks of this node run on one GPU (for testing; the summary says so).
  [[nodiscard]] bool shares_device() const;
  /// "none" (one rank), "mpi", "nccl" or "mpi (host-staged)": what device/host buffers travel by.
  [[nodiscard]] std::string transport(Memory where) const;

  // ---- the cross-rank step ------------------------------------------------------------------------
  /// Collective. out[i] = the combination of every rank's in[i] in rank order (see the top), on
  /// every rank. in and out may be the same span; every rank passes the same count. Op/T: every
  /// operator and type of the library (is_supported<Op, T, T>).
  template <class Op, class T>
  void allreduce(std::span<const T> in, std::span<T> out, Memory where, stream_t stream = nullptr) const;

  // ---- host collectives the apps need ---------------------------------------------------------------
  void barrier() const;  ///< collective
  /// Collective: a barrier whose waiting ranks poll with short sleeps instead of spinning, leaving
  /// their cores to a rank that computes meanwhile (a single-rank reference measurement).
  void idle_barrier() const;
  /// Collective: root's values replace everyone's.
  template <class T>
  void broadcast(std::span<T> data, int root = 0) const;
  /// Collective: every rank's `mine` concatenated in rank order, on root (empty elsewhere); counts
  /// may differ per rank.
  template <class T>
  [[nodiscard]] std::vector<T> gather(std::span<const T> mine, int root = 0) const;
  /// Collective: every rank's value in rank order, on every rank.
  template <class T>
  [[nodiscard]] std::vector<T> allgather(T value) const;
  /// Collective: min/median/max of a per-rank number (e.g. a phase's seconds).
  [[nodiscard]] RankStats stats(double value) const;
  /// Collective: throws AgreedError (an input error) on every rank unless `text` (e.g. the options,
  /// the command line) is the same on every rank; the message names `what` and the first differing rank.
  void require_same(const std::string& text, const std::string& what) const;
  /// Collective agreement after a phase that may fail on some ranks only (set-up: options, the GPU,
  /// memory): pass nullptr when this rank succeeded, else its exception. Returns when every rank
  /// succeeded; otherwise every rank throws AgreedError carrying the lowest failing rank's message
  /// ("rank 2: --backend cuda: no usable CUDA device") and its kind (input error or failure). One
  /// rank alone rethrows its own exception.
  void agree(std::exception_ptr failure) const;

  // ---- neighbours (halo exchange) -------------------------------------------------------------------
  /// One exchange with the ranks before and after this one in rank order (rank - 1 and rank + 1;
  /// none beyond the ends): sends `to_prev`/`to_next`, receives `from_prev`/`from_next` (the spans
  /// toward a missing neighbour are ignored). Collective between neighbours. Host: non-blocking MPI,
  /// completed by wait(). Device: NCCL send/recv enqueued on `stream` (wait() does nothing on the
  /// host), or, with shared GPUs, staged through the host (wait() completes it and enqueues the
  /// copies back on `stream`). The destructor waits.
  class Exchange {
   public:
    Exchange();
    ~Exchange();
    Exchange(Exchange&&) noexcept;
    Exchange& operator=(Exchange&&) noexcept;
    void wait();

   private:
    friend class Comm;
    struct Impl;
    std::unique_ptr<Impl> impl_;
  };
  template <class T>
  [[nodiscard]] Exchange start_exchange(std::span<const T> to_prev, std::span<T> from_prev, std::span<const T> to_next,
                                        std::span<T> from_next, Memory where, stream_t stream = nullptr) const;

  /// Ends the whole job from one rank (MPI_Abort): for a failure while others may wait in a
  /// collective. Every rank exits non-zero.
  [[noreturn]] void abort(int exit_code) const;

  struct Impl;  // the MPI/NCCL state (src/rank/)
 private:
  friend class RankSession;
  template <class T, class Out>  // keeps its accumulators in the communicator's device buffer
  friend void detail::exact_across_ranks(const Comm&, Backend, View<const T>, Levels, std::span<Out>, Workspace&, stream_t);
  explicit Comm(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// An error every rank agreed on (Comm::agree): each rank exits with its code; only rank 0 prints.
class AgreedError : public std::runtime_error {
 public:
  AgreedError(const std::string& what, bool input_error) : std::runtime_error(what), input_error_(input_error) {}
  [[nodiscard]] bool input_error() const { return input_error_; }

 private:
  bool input_error_;
};

/// MPI for the life of a process: MPI_Init_thread (funneled) in the constructor, MPI_Finalize in
/// the destructor; without MPI (or TALLY_MPI=OFF) a single rank. world() is MPI_COMM_WORLD.
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
///  * a build without MPI started by a launcher with several ranks: a message, exit 2.
int run_ranks(const std::string& name, int argc, char** argv, const std::function<int(Comm&)>& body);

// ---- the four-level reduction ----------------------------------------------------------------------

namespace detail {
/// ExactSum over several ranks (levels with gang): each rank's unrounded, normalised accumulators
/// (exact.hpp), added across ranks as integers (exact, any order), rounded once: the same bits for
/// every rank count, equal to the single-process exact sum. Both backends (src/rank/exact_ranks.cpp).
template <class T, class Out>
void exact_across_ranks(const Comm& comm, Backend backend, View<const T> in, Levels levels, std::span<Out> out,
                        Workspace& ws, stream_t stream);
}  // namespace detail

/// Collective when `levels` contains gang. Each rank holds a slab of the gang axis (its own ng; nw,
/// nv and `levels` the same on every rank; a rank may hold an empty slab, ng = 0). With Level::gang
/// in `levels` the slabs reduce through all four levels: each rank's local result (reduce()) is then
/// combined across ranks by allreduce() and every rank's `out` holds the whole job's result. Without
/// gang the gang axis stays distributed: each rank's output covers its own slab, no communication.
/// Backend::cuda: `out` is device memory, stream-ordered; Backend::cpu: host memory.
template <class Op, class T, class Acc = T>
void reduce(const Comm& comm, Backend backend, View<const T> in, Levels levels, std::span<Acc> out, Workspace& ws,
            stream_t stream = nullptr) {
  static_assert(!std::is_same_v<Op, Mean>, "rank-level reduce: no Mean (reduce Sum across ranks, divide by the count)");
  if constexpr (std::is_same_v<Op, ExactSum>) {
    if (levels.contains(Level::gang) && comm.size() > 1) detail::exact_across_ranks<T, Acc>(comm, backend, in, levels, out, ws, stream);
    else reduce<Op, T, Acc>(backend, in, levels, out, ws, stream);
  } else {
    reduce<Op, T, Acc>(backend, in, levels, out, ws, stream);
    if (levels.contains(Level::gang) && comm.size() > 1)
      comm.allreduce<Op, Acc>(std::span<const Acc>(out.data(), out.size()), out,
                              backend == Backend::cpu ? Memory::host : Memory::device, stream);
  }
}

/// All four levels to a scalar on the host of every rank (waits for `stream`).
template <class Op, class T, class Acc = T>
Acc reduce_to_host(const Comm& comm, Backend backend, View<const T> in, Workspace& ws, stream_t stream = nullptr) {
  static_assert(!std::is_same_v<Op, Mean>, "rank-level reduce_to_host: no Mean (reduce Sum across ranks, divide by the count)");
  if constexpr (std::is_same_v<Op, ExactSum>) {
    if (comm.size() == 1) return reduce_to_host<Op, T, Acc>(backend, in, ws, stream);
    if (backend == Backend::cpu) {
      Acc r{};
      detail::exact_across_ranks<T, Acc>(comm, backend, in, Levels::all(), std::span<Acc>(&r, 1), ws, stream);
      return r;
    }
    Acc* d_r = static_cast<Acc*>(ws.result_slot());
    detail::exact_across_ranks<T, Acc>(comm, backend, in, Levels::all(), std::span<Acc>(d_r, 1), ws, stream);
    return detail::copy_scalar_to_host(d_r, stream);
  } else {
    Acc r = reduce_to_host<Op, T, Acc>(backend, in, ws, stream);
    if (comm.size() > 1) comm.allreduce<Op, Acc>(std::span<const Acc>(&r, 1), std::span<Acc>(&r, 1), Memory::host);
    return r;
  }
}

}  // namespace tally::reduce
