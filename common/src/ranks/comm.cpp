// Comm: ranks, devices and the host collectives. Every MPI call is checked (MPI_ERRORS_RETURN is
// set on the world communicator by RankSession). A Comm without Impl is one rank: every call local.

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <thread>

#include "ranks/impl.hpp"
#include "tally/common/device_info.hpp"
#include "tally/common/error.hpp"

namespace tally::ranks {

bool mpi_built() {
#ifdef TALLY_HAS_MPI
  return true;
#else
  return false;
#endif
}

bool nccl_built() {
#ifdef TALLY_HAS_NCCL
  return true;
#else
  return false;
#endif
}

namespace rank_detail {

void check_mpi([[maybe_unused]] int rc, [[maybe_unused]] const char* call, [[maybe_unused]] const char* file,
               [[maybe_unused]] int line) {
#ifdef TALLY_HAS_MPI
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS) len = std::snprintf(text, sizeof text, "MPI error %d", rc);
  throw Error(std::string(call) + " failed at " + file + ":" + std::to_string(line) + ": " + std::string(text, len));
#endif
}

int mpi_count(std::size_t n, const char* what) {
  if (n > static_cast<std::size_t>(INT_MAX))
    throw std::invalid_argument(std::string(what) + ": " + std::to_string(n) +
                                " elements, more than one MPI call carries (" + std::to_string(INT_MAX) + ")");
  return static_cast<int>(n);
}

}  // namespace rank_detail

using rank_detail::mpi_count;

namespace {

/// Before the first NCCL call of a rank whose GPU another rank shares: a host id of its own, so that
/// NCCL takes the ranks for separate hosts and connects them through its socket transport instead of
/// refusing them; with every rank on one node, through the loopback interface and without
/// InfiniBand, unless the user chose otherwise.
[[maybe_unused]] void nccl_as_separate_hosts(int rank, bool one_node) {
  const auto set = [](const char* name, const std::string& value, bool replace) {
    if (::setenv(name, value.c_str(), replace ? 1 : 0) != 0)
      throw Error(std::string("setenv(") + name + ") failed: " + std::strerror(errno));
  };
  set("NCCL_HOSTID", "tally-rank-" + std::to_string(rank), true);
  if (one_node) {
    set("NCCL_SOCKET_IFNAME", "lo", false);
    set("NCCL_IB_DISABLE", "1", false);
  }
}

}  // namespace

void* Comm::Impl::DeviceBuffer::grow(std::size_t need) {
  if (bytes < need) {
    rank_detail::device_free(p);  // cudaFree waits for work still using the old buffer
    p = nullptr;
    p = rank_detail::device_alloc(need);
    bytes = need;
  }
  return p;
}

Comm::Impl::~Impl() {
#ifdef TALLY_HAS_NCCL
  if (nccl) rank_detail::nccl_destroy(nccl);  // before MPI_Finalize (the session destroys the Comm first)
#endif
  for (DeviceBuffer* b : {&device_gathered, &device_caller})
    if (b->p) rank_detail::device_free(b->p);
#ifdef TALLY_HAS_MPI
  // A destructor's path: a failure is reported, not thrown.
  int finalized = 0;
  if (const int rc = MPI_Finalized(&finalized); rc != MPI_SUCCESS)
    std::fprintf(stderr, "tally: MPI_Finalized failed (MPI error %d)\n", rc);
  else if (!finalized && local != MPI_COMM_NULL)
    if (const int rc2 = MPI_Comm_free(&local); rc2 != MPI_SUCCESS)
      std::fprintf(stderr, "tally: MPI_Comm_free failed (MPI error %d)\n", rc2);
#endif
}

Comm::Comm() = default;
Comm::Comm(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Comm::~Comm() = default;
Comm::Comm(Comm&&) noexcept = default;
Comm& Comm::operator=(Comm&&) noexcept = default;

int Comm::rank() const { return impl_ ? impl_->rank : 0; }
int Comm::size() const { return impl_ ? impl_->size : 1; }
int Comm::local_rank() const { return impl_ ? impl_->local_rank : 0; }
int Comm::local_size() const { return impl_ ? impl_->local_size : 1; }
std::int64_t Comm::mpi_handle() const {
#ifdef TALLY_HAS_MPI
  if (impl_ && impl_->world != MPI_COMM_NULL) return static_cast<std::int64_t>(MPI_Comm_c2f(impl_->world));
#endif
  return -1;
}

int Comm::pick_device(int requested) const {
  const int n = tally::cuda_device_count();
  if (n == 0) return -1;
  if (size() == 1) return requested;
  return local_rank() % n;
}

bool Comm::shares_device() const { return impl_ && impl_->shares_device; }

void* Comm::device_scratch(std::size_t bytes) const {
  if (!impl_) throw std::invalid_argument("device_scratch: a single-rank Comm keeps no device memory");
  return impl_->device_caller.grow(bytes);
}

void Comm::use_device(int device, [[maybe_unused]] stream_t stream) {
  if (device < 0) throw std::invalid_argument("use_device: device " + std::to_string(device) + " is not a CUDA device");
  rank_detail::set_device(device);
  if (!impl_) return;
  if (impl_->device_set) {  // the transport is set up once: again for the same device is a no-op
    if (impl_->device == device) return;
    throw std::invalid_argument("use_device: device " + std::to_string(device) + " after device " +
                                std::to_string(impl_->device) + " (the transport is set up once per communicator)");
  }
  const RankTransport setting = rank_transport();
  if (setting == RankTransport::nccl && !nccl_built() && impl_->size > 1)
    throw std::invalid_argument(
        "TALLY_RANK_TRANSPORT=nccl: this build has no NCCL (configure with TALLY_NCCL=ON); use auto or host");
  impl_->device = device;
  impl_->device_set = true;
#ifdef TALLY_HAS_MPI
  // Ranks of a node on the same device: NCCL refuses two ranks on one GPU of one host.
  std::vector<int> devices(impl_->local_size);
  TALLY_MPI_CHECK(MPI_Allgather(&device, 1, MPI_INT, devices.data(), 1, MPI_INT, impl_->local));
  std::sort(devices.begin(), devices.end());
  int shared = std::adjacent_find(devices.begin(), devices.end()) != devices.end() ? 1 : 0;
  TALLY_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &shared, 1, MPI_INT, MPI_MAX, impl_->world));
  impl_->shares_device = shared != 0;
#ifdef TALLY_HAS_NCCL
  const bool nccl = setting == RankTransport::nccl || (setting == RankTransport::automatic && !impl_->shares_device);
  if (impl_->size > 1 && nccl) {
    if (impl_->shares_device) nccl_as_separate_hosts(impl_->rank, impl_->local_size == impl_->size);
    std::vector<char> id = impl_->rank == 0 ? rank_detail::nccl_unique_id() : std::vector<char>();
    int id_size = static_cast<int>(id.size());
    TALLY_MPI_CHECK(MPI_Bcast(&id_size, 1, MPI_INT, 0, impl_->world));
    id.resize(static_cast<std::size_t>(id_size));
    TALLY_MPI_CHECK(MPI_Bcast(id.data(), id_size, MPI_BYTE, 0, impl_->world));
    impl_->nccl = rank_detail::nccl_init(impl_->size, id, impl_->rank);
  }
#endif
#endif
}

std::string Comm::transport(Memory where) const {
  if (size() == 1) return "none";
  if (where == Memory::host) return "mpi";
  if (!impl_->nccl) return "mpi (host-staged)";
  return impl_->shares_device ? "nccl (sockets: ranks share a GPU)" : "nccl";
}

void Comm::barrier() const {
#ifdef TALLY_HAS_MPI
  if (impl_) TALLY_MPI_CHECK(MPI_Barrier(impl_->world));
#endif
}

void Comm::idle_barrier() const {
#ifdef TALLY_HAS_MPI
  if (!impl_) return;
  MPI_Request request = MPI_REQUEST_NULL;
  TALLY_MPI_CHECK(MPI_Ibarrier(impl_->world, &request));
  for (int done = 0;;) {
    TALLY_MPI_CHECK(MPI_Test(&request, &done, MPI_STATUS_IGNORE));
    if (done) return;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
#endif
}

template <class T>
void Comm::broadcast([[maybe_unused]] std::span<T> data, int root) const {
  if (root < 0 || root >= size())
    throw std::invalid_argument("broadcast: root " + std::to_string(root) + " is not a rank");
#ifdef TALLY_HAS_MPI
  if (impl_ && impl_->size > 1)
    TALLY_MPI_CHECK(MPI_Bcast(data.data(), mpi_count(data.size_bytes(), "broadcast"), MPI_BYTE, root, impl_->world));
#endif
}

template <class T>
std::vector<T> Comm::gather(std::span<const T> mine, int root) const {
  if (root < 0 || root >= size())
    throw std::invalid_argument("gather: root " + std::to_string(root) + " is not a rank");
  if (size() == 1) return std::vector<T>(mine.begin(), mine.end());
  std::vector<T> all;
#ifdef TALLY_HAS_MPI
  const int bytes = mpi_count(mine.size_bytes(), "gather");
  std::vector<int> counts(impl_->size), displs(impl_->size);
  TALLY_MPI_CHECK(MPI_Gather(&bytes, 1, MPI_INT, counts.data(), 1, MPI_INT, root, impl_->world));
  if (impl_->rank == root) {
    std::size_t total = 0;
    for (int r = 0; r < impl_->size; ++r) {
      displs[r] = mpi_count(total, "gather (all ranks)");
      total += static_cast<std::size_t>(counts[r]);
    }
    mpi_count(total, "gather (all ranks)");
    all.resize(total / sizeof(T));
  }
  TALLY_MPI_CHECK(MPI_Gatherv(mine.data(), bytes, MPI_BYTE, all.data(), counts.data(), displs.data(), MPI_BYTE, root,
                              impl_->world));
#endif
  return all;
}

template <class T>
std::vector<T> Comm::allgather(T value) const {
  std::vector<T> all(static_cast<std::size_t>(size()), value);
#ifdef TALLY_HAS_MPI
  if (impl_ && impl_->size > 1)
    TALLY_MPI_CHECK(MPI_Allgather(&value, sizeof(T), MPI_BYTE, all.data(), sizeof(T), MPI_BYTE, impl_->world));
#endif
  return all;
}

#define TALLY_RANK_HOST_TYPES(X) \
  X(char)                        \
  X(signed char)                 \
  X(unsigned char) X(int) X(unsigned) X(long) X(unsigned long) X(long long) X(unsigned long long) X(float) X(double)
#define X(T)                                                              \
  template void Comm::broadcast<T>(std::span<T>, int) const;              \
  template std::vector<T> Comm::gather<T>(std::span<const T>, int) const; \
  template std::vector<T> Comm::allgather<T>(T) const;
TALLY_RANK_HOST_TYPES(X)
#undef X

RankStats Comm::stats(double value) const {
  RankStats s;
  s.per_rank = allgather(value);
  std::vector<double> sorted = s.per_rank;
  std::sort(sorted.begin(), sorted.end());
  const std::size_t n = sorted.size();
  s.min = sorted.front();
  s.max = sorted.back();
  s.median = n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
  return s;
}

namespace {

std::uint64_t fnv1a(const std::string& s) {
  std::uint64_t h = 14695981039346656037ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h ^ s.size();
}

/// Up to ~60 characters of `s` around `at` (the first difference), with "..." where cut.
std::string excerpt(const std::string& s, std::size_t at) {
  const std::size_t begin = at > 30 ? at - 30 : 0, end = std::min(s.size(), at + 30);
  return (begin > 0 ? "..." : "") + s.substr(begin, end - begin) + (end < s.size() ? "..." : "");
}

}  // namespace

void Comm::require_same(const std::string& text, const std::string& what) const {
  if (size() == 1) return;
  const std::vector<std::uint64_t> hashes = allgather(fnv1a(text));
  if (std::all_of(hashes.begin(), hashes.end(), [&](std::uint64_t h) { return h == hashes[0]; })) return;
  // Some rank differs: every rank learns rank 0's text and the first differing rank's text.
  int r = 1;
  while (hashes[static_cast<std::size_t>(r)] == hashes[0]) ++r;
  std::string texts[2];
  for (int i = 0; i < 2; ++i) {
    const int from = i == 0 ? 0 : r;
    std::int64_t n = rank() == from ? static_cast<std::int64_t>(text.size()) : 0;
    broadcast(std::span<std::int64_t>(&n, 1), from);
    texts[i] = rank() == from ? text : std::string(static_cast<std::size_t>(n), '\0');
    broadcast(std::span<char>(texts[i].data(), texts[i].size()), from);
  }
  std::size_t at = 0;
  while (at < texts[0].size() && at < texts[1].size() && texts[0][at] == texts[1][at]) ++at;
  // Every rank reaches this point with the same message: an agreed input error (rank 0 prints it).
  throw AgreedError(what + " differs between ranks: rank 0 has \"" + excerpt(texts[0], at) + "\", rank " +
                        std::to_string(r) + " has \"" + excerpt(texts[1], at) + "\"",
                    /*input_error=*/true);
}

void Comm::agree(std::exception_ptr failure) const {
  // One rank alone keeps its own exception (its type maps to the exit code wherever it is caught).
  if (failure && size() == 1) std::rethrow_exception(failure);
  std::string message;
  bool input = false;
  if (failure) {
    try {
      std::rethrow_exception(failure);
    } catch (const AgreedError& e) {
      message = e.what(), input = e.input_error();
    } catch (...) {
      const ExceptionReport r = classify(std::current_exception());
      message = r.message, input = r.exit_code == exit_bad_input;
    }
  }
  const std::vector<unsigned char> status = allgather<unsigned char>(failure ? (input ? 2 : 1) : 0);
  const auto first = std::find_if(status.begin(), status.end(), [](unsigned char s) { return s != 0; });
  if (first == status.end()) return;
  const int r = static_cast<int>(first - status.begin());
  std::int64_t n = rank() == r ? static_cast<std::int64_t>(message.size()) : 0;
  broadcast(std::span<std::int64_t>(&n, 1), r);
  if (rank() != r) message.assign(static_cast<std::size_t>(n), '\0');
  broadcast(std::span<char>(message.data(), message.size()), r);
  throw AgreedError(size() > 1 ? "rank " + std::to_string(r) + ": " + message : message, *first == 2);
}

void Comm::abort(int exit_code) const {
  std::fflush(stdout);
  std::fflush(stderr);
#ifdef TALLY_HAS_MPI
  if (impl_) MPI_Abort(impl_->world, exit_code);
#endif
  std::exit(exit_code);
}

}  // namespace tally::ranks
