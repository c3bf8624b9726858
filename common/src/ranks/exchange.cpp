// Comm::Exchange: one halo exchange with rank - 1 and rank + 1 (or start_sum's all-reduce). Host memory:
// MPI_Irecv/MPI_Isend, completed by wait(). Device memory: NCCL send/recv on the stream, or staged through host buffers
// (ranks sharing a GPU, or no NCCL): D2H + synchronise at start, MPI in between, H2D at wait().

#include <cstring>
#include <stdexcept>
#include <vector>

#include "ranks/impl.hpp"

namespace tally::ranks {

struct Comm::Exchange::Impl {
#ifdef TALLY_HAS_MPI
  std::vector<MPI_Request> requests;
#endif
  // Host-staged device exchange: the host copies, and where the received halves go on the device.
  std::vector<std::byte> send_prev, send_next, recv_prev, recv_next;
  void* dev_prev = nullptr;
  void* dev_next = nullptr;
  stream_t stream = nullptr;
  bool done = false;

  void complete() {
    if (done) return;
    done = true;
#ifdef TALLY_HAS_MPI
    if (!requests.empty())
      TALLY_MPI_CHECK(MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE));
#endif
    if (dev_prev) rank_detail::copy_to_device_async(dev_prev, recv_prev.data(), recv_prev.size(), stream);
    if (dev_next) rank_detail::copy_to_device_async(dev_next, recv_next.data(), recv_next.size(), stream);
  }
};

Comm::Exchange::Exchange() = default;
Comm::Exchange::Exchange(Exchange&&) noexcept = default;
Comm::Exchange& Comm::Exchange::operator=(Exchange&& other) noexcept {
  if (this != &other) {
    if (impl_) {
      try {
        impl_->complete();
      } catch (...) {  // a failed wait in a move: the job cannot recover, like the destructor below
      }
    }
    impl_ = std::move(other.impl_);
  }
  return *this;
}
Comm::Exchange::~Exchange() {
  if (!impl_) return;
  try {
    impl_->complete();
  } catch (...) {  // destructors must not throw; the caller that cared called wait()
  }
}
void Comm::Exchange::wait() {
  if (impl_) impl_->complete();
}

Comm::Exchange Comm::start_sum([[maybe_unused]] std::span<std::int64_t> values) const {
  Exchange ex;
  if (size() == 1 || values.empty()) return ex;
#ifdef TALLY_HAS_MPI
  const int n = rank_detail::mpi_count(values.size(), "start_sum");
  ex.impl_ = std::make_unique<Exchange::Impl>();
  MPI_Request& r = ex.impl_->requests.emplace_back(MPI_REQUEST_NULL);
  TALLY_MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, values.data(), n, MPI_INT64_T, MPI_SUM, impl_->world, &r));
#endif
  return ex;
}

template <class T>
Comm::Exchange Comm::start_exchange(std::span<const T> to_prev, std::span<T> from_prev, std::span<const T> to_next,
                                    std::span<T> from_next, [[maybe_unused]] Memory where,
                                    [[maybe_unused]] stream_t stream) const {
  const int prev = rank() - 1, next = rank() + 1 < size() ? rank() + 1 : -1;
  if (prev >= 0 && to_prev.size() != from_prev.size())
    throw std::invalid_argument("start_exchange: to_prev and from_prev differ in size (" +
                                std::to_string(to_prev.size()) + " and " + std::to_string(from_prev.size()) + ")");
  if (next >= 0 && to_next.size() != from_next.size())
    throw std::invalid_argument("start_exchange: to_next and from_next differ in size (" +
                                std::to_string(to_next.size()) + " and " + std::to_string(from_next.size()) + ")");
  Exchange ex;
  if (size() == 1) return ex;  // no neighbours
#ifdef TALLY_HAS_MPI
  Impl& c = *impl_;
  ex.impl_ = std::make_unique<Exchange::Impl>();
  Exchange::Impl& e = *ex.impl_;
  const std::size_t np = prev >= 0 ? to_prev.size() : 0, nn = next >= 0 ? to_next.size() : 0;
  if (where == Memory::device) {
    if (!c.device_set) throw std::invalid_argument("start_exchange: Memory::device before use_device()");
#ifdef TALLY_HAS_NCCL
    if (c.nccl) {
      // Both neighbours in one group: NCCL pairs the sends and receives without deadlock.
      rank_detail::nccl_exchange(c.nccl, to_prev.data(), from_prev.data(), np ? prev : -1, np, to_next.data(),
                                 from_next.data(), nn ? next : -1, nn, dtype_of<T>(), stream);
      e.done = true;
      return ex;
    }
#endif
    e.stream = stream;
    e.send_prev.resize(np * sizeof(T)), e.recv_prev.resize(np * sizeof(T));
    e.send_next.resize(nn * sizeof(T)), e.recv_next.resize(nn * sizeof(T));
    if (np) rank_detail::copy_to_host(e.send_prev.data(), to_prev.data(), np * sizeof(T), stream);
    if (nn) rank_detail::copy_to_host(e.send_next.data(), to_next.data(), nn * sizeof(T), stream);
    e.dev_prev = np ? from_prev.data() : nullptr;
    e.dev_next = nn ? from_next.data() : nullptr;
  }
  const bool host = where == Memory::host;
  const void* sp = host ? static_cast<const void*>(to_prev.data()) : e.send_prev.data();
  const void* sn = host ? static_cast<const void*>(to_next.data()) : e.send_next.data();
  void* rp = host ? static_cast<void*>(from_prev.data()) : e.recv_prev.data();
  void* rn = host ? static_cast<void*>(from_next.data()) : e.recv_next.data();
  const int bp = rank_detail::mpi_count(np * sizeof(T), "start_exchange"),
            bn = rank_detail::mpi_count(nn * sizeof(T), "start_exchange");
  // Tag 0 travels toward higher ranks, tag 1 toward lower: a two-rank job's two messages never mix.
  e.requests.reserve(4);
  auto post = [&](auto&& call) {
    e.requests.emplace_back();
    TALLY_MPI_CHECK(call(&e.requests.back()));
  };
  if (prev >= 0) {
    post([&](MPI_Request* r) { return MPI_Irecv(rp, bp, MPI_BYTE, prev, 0, c.world, r); });
    post([&](MPI_Request* r) { return MPI_Isend(sp, bp, MPI_BYTE, prev, 1, c.world, r); });
  }
  if (next >= 0) {
    post([&](MPI_Request* r) { return MPI_Irecv(rn, bn, MPI_BYTE, next, 1, c.world, r); });
    post([&](MPI_Request* r) { return MPI_Isend(sn, bn, MPI_BYTE, next, 0, c.world, r); });
  }
#endif
  return ex;
}

#define TALLY_RANK_EXCHANGE(T)                                                                                        \
  template Comm::Exchange Comm::start_exchange<T>(std::span<const T>, std::span<T>, std::span<const T>, std::span<T>, \
                                                  Memory, stream_t) const;
TALLY_RANK_EXCHANGE(float)
TALLY_RANK_EXCHANGE(double)
TALLY_RANK_EXCHANGE(std::int32_t)
TALLY_RANK_EXCHANGE(std::int64_t)
#undef TALLY_RANK_EXCHANGE

}  // namespace tally::ranks
