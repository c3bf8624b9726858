#pragma once
// The rank runtime: the ranks of an MPI job (or one process alone), the GPU each uses and what device
// and host buffers travel by (MPI, NCCL), the host collectives the apps need, the halo exchange and
// the agreement on options and errors. Host-only header: no MPI, NCCL or CUDA headers, so app code has
// no #ifdefs; a build without MPI (TALLY_MPI=OFF) has the same API with one rank. The runtime moves
// bytes; the rank level of a reduction (tally/reduce/ranks.hpp: reduce(comm, ...), allreduce with the
// library's operators folded in rank order) is built on it. main(): session.hpp.
//
//   comm.use_device(comm.pick_device(), stream);  // each rank its GPU; NCCL when each has its own
//   const std::vector<int> all = comm.allgather(comm.rank());
//   comm.require_same(cli::command_line(argc, argv), "the command line");
//
// Collectives: every call named "collective" must be made by every rank of the communicator, in
// the same order, with the same counts. Device-memory calls are stream-ordered on `stream` (they
// return once enqueued, like reduce()); host-memory calls return when the result is in place.
//
// Errors: bad arguments throw std::invalid_argument naming the argument; a failed MPI, NCCL or CUDA
// call throws tally::Error naming the call, file and line. A rank that fails while others wait in a
// collective cannot be recovered: run_ranks() then aborts the whole job (every rank exits non-zero).
//
// Device buffers travel by NCCL or by MPI through host staging, as the run-time setting
// TALLY_RANK_TRANSPORT says (read once per process, when the RankSession starts):
//   auto (or unset)  NCCL where the build has it and no two ranks of a node share a GPU (NCCL refuses
//                    two ranks on one device of one host), MPI through host staging otherwise;
//   nccl             NCCL always. Where ranks share a GPU, each rank sets NCCL_HOSTID to a value of its
//                    own (replacing any other) and, when every rank is on one node, NCCL_SOCKET_IFNAME=lo
//                    and NCCL_IB_DISABLE=1 unless they are set, before its first NCCL call: NCCL then
//                    takes each rank for a host of its own and connects them through sockets. Correct,
//                    not fast: it runs every transport on a one-GPU machine. A build without NCCL
//                    refuses it (use_device: std::invalid_argument);
//   host             MPI through host staging always.
// Any other value ends the program at start: run_ranks prints the setting and its values, exit 2.

#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "tally/common/stream.hpp"

namespace tally::ranks {

/// Where the buffers given to a cross-rank call live.
enum class Memory { host, device };

/// True when this build has MPI (TALLY_MPI) / NCCL (TALLY_NCCL).
[[nodiscard]] bool mpi_built();
[[nodiscard]] bool nccl_built();

/// What device buffers travel by between ranks: the setting TALLY_RANK_TRANSPORT (above).
enum class RankTransport { automatic, nccl, host };
/// TALLY_RANK_TRANSPORT, read from the environment on the first call and kept for the process: auto
/// (or unset, or empty), nccl or host; anything else throws std::invalid_argument naming the setting
/// and its values (RankSession makes the first call, so run_ranks refuses it at start, exit 2).
[[nodiscard]] RankTransport rank_transport();
/// The setting's spelling: "auto", "nccl" or "host".
[[nodiscard]] const char* to_string(RankTransport t);

/// Per-rank statistics of one number (a phase's seconds): min, median, max over ranks, and each
/// rank's value in rank order (on every rank).
struct RankStats {
  double min = 0, median = 0, max = 0;
  std::vector<double> per_rank;
};

/// The element types the transports carry.
enum class DType { i32, i64, f32, f64 };
template <class T>
constexpr DType dtype_of() {
  static_assert(std::is_same_v<T, std::int32_t> || std::is_same_v<T, std::int64_t> || std::is_same_v<T, float> ||
                    std::is_same_v<T, double>,
                "the transports carry int32, int64, float and double");
  if constexpr (std::is_same_v<T, std::int32_t>) return DType::i32;
  else if constexpr (std::is_same_v<T, std::int64_t>) return DType::i64;
  else if constexpr (std::is_same_v<T, float>) return DType::f32;
  else return DType::f64;
}
/// The transports' own reductions (MPI_Allreduce, ncclAllReduce).
enum class NativeOp { sum, prod, max, min };

/// How Comm::allreduce_with combines the ranks' values: the caller's fold in rank order, or, where it
/// gives the same bits in any order, the transport's own reduction (tally/reduce/ranks.hpp builds one
/// from an operator).
struct RankFold {
  /// out[i] = the fold over r = 0, 1, ..., nranks - 1 of gathered[r * count + i] (host memory).
  void (*host)(const void* gathered, void* out, std::size_t count, int nranks) = nullptr;
  /// The same on device memory, enqueued on `stream`.
  void (*device)(const void* gathered, void* out, std::size_t count, int nranks, stream_t stream) = nullptr;
  /// Set when `native` reduces the values to the fold's bits in any order (integer sum, prod, max, min).
  bool use_native = false;
  NativeOp native = NativeOp::sum;
};

/// A communicator: the ranks of the job (MPI_COMM_WORLD), or one process alone (the default, and
/// the only one in a build without MPI). One rank is exactly the single-process program.
/// Not thread-safe: one thread calls it, one device stream at a time (like a Workspace).
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
  /// Collective. Makes `device` current and sets up device-buffer transport as rank_transport()
  /// says: NCCL, or MPI through host staging (TALLY_RANK_TRANSPORT, above). Once per communicator:
  /// a second call for the same device does nothing, for another device it throws.
  void use_device(int device, stream_t stream = nullptr);
  /// Whether several ranks of a node run on one GPU (for testing; the summary says so).
  [[nodiscard]] bool shares_device() const;
  /// What host or device buffers travel by: "none" (one rank), "mpi" (host buffers), and for device
  /// buffers "nccl", "nccl (sockets: ranks share a GPU)" or "mpi (host-staged)".
  [[nodiscard]] std::string transport(Memory where) const;

  // ---- the cross-rank step ------------------------------------------------------------------------
  /// Collective. out[i] = fold.host or fold.device over every rank's in[i] in rank order (every
  /// rank's values gathered, then folded rank 0, 1, ...), or the transport's own reduction where
  /// fold.use_native; on every rank. `count` elements of `type` in `where`; in and out may be the
  /// same buffer; every rank passes the same count. The typed form with an operator:
  /// tally::reduce::allreduce (tally/reduce/ranks.hpp).
  void allreduce_with(const void* in, void* out, std::size_t count, DType type, const RankFold& fold, Memory where,
                      stream_t stream = nullptr) const;

  /// Device memory the communicator keeps for a caller between collectives (the rank level's exact
  /// sum keeps its accumulators there): at least `bytes`, grown once to the largest request (growing
  /// waits for the device); the contents do not survive growth. No call of the communicator uses it.
  [[nodiscard]] void* device_scratch(std::size_t bytes) const;

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
  /// copies back on `stream`). The destructor waits. (An Exchange is any non-blocking operation in
  /// flight: start_sum's too.)
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
  /// Collective: starts the sum over every rank of each of `values` (host memory, in place), which
  /// stays untouched until wait(): integers, so the result is the same whatever the order (MPI's
  /// non-blocking all-reduce). What the caller computes meanwhile overlaps it (pipelined solvers).
  [[nodiscard]] Exchange start_sum(std::span<std::int64_t> values) const;
  template <class T>
  [[nodiscard]] Exchange start_exchange(std::span<const T> to_prev, std::span<T> from_prev, std::span<const T> to_next,
                                        std::span<T> from_next, Memory where, stream_t stream = nullptr) const;

  /// Ends the whole job from one rank (MPI_Abort): for a failure while others may wait in a
  /// collective. Every rank exits non-zero.
  [[noreturn]] void abort(int exit_code) const;

  struct Impl;  // the MPI/NCCL state (common/src/ranks/)
 private:
  friend class RankSession;
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

}  // namespace tally::ranks
