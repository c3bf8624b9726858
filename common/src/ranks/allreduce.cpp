// The cross-rank step, Comm::allreduce_with: every rank's values combined in rank order on every
// rank. Every rank's values are gathered and folded rank 0, 1, ..., size-1 by the caller's fold
// (tally/reduce/ranks.hpp: the library's operators and NaN rule); where the fold says the transport's
// own reduction gives the same bits (integer Sum/Prod/Max/Min, exact in any order), that is used.

#include <cstring>
#include <stdexcept>

#include "ranks/impl.hpp"

namespace tally::ranks {

namespace {

[[maybe_unused]] std::size_t dtype_bytes(DType t) { return t == DType::i32 || t == DType::f32 ? 4 : 8; }

#ifdef TALLY_HAS_MPI
MPI_Datatype mpi_type(DType t) {
  switch (t) {
    case DType::i32: return MPI_INT32_T;
    case DType::i64: return MPI_INT64_T;
    case DType::f32: return MPI_FLOAT;
    default: return MPI_DOUBLE;
  }
}

MPI_Op mpi_op(NativeOp op) {
  switch (op) {
    case NativeOp::sum: return MPI_SUM;
    case NativeOp::prod: return MPI_PROD;
    case NativeOp::max: return MPI_MAX;
    default: return MPI_MIN;
  }
}

/// The host path: `in` and `out` are host memory of `count` elements (may alias).
void allreduce_host(Comm::Impl& c, const void* in, void* out, std::size_t count, DType type, const RankFold& fold) {
  const int n = rank_detail::mpi_count(count, "allreduce");
  if (fold.use_native) {
    TALLY_MPI_CHECK(MPI_Allreduce(in == out ? MPI_IN_PLACE : in, out, n, mpi_type(type), mpi_op(fold.native), c.world));
  } else {
    rank_detail::mpi_count(count * static_cast<std::size_t>(c.size), "allreduce (all ranks' values)");
    const std::size_t bytes = count * static_cast<std::size_t>(c.size) * dtype_bytes(type);
    auto& scratch = c.host_scratch;
    if (scratch.size() < bytes) scratch.resize(bytes);
    TALLY_MPI_CHECK(MPI_Allgather(in, n, mpi_type(type), scratch.data(), n, mpi_type(type), c.world));
    fold.host(scratch.data(), out, count, c.size);
  }
}
#endif

}  // namespace

void Comm::allreduce_with(const void* in, void* out, std::size_t count, DType type, const RankFold& fold, Memory where,
                          [[maybe_unused]] stream_t stream) const {
  if (count == 0) return;
  if (in == nullptr || out == nullptr)
    throw std::invalid_argument("allreduce: null buffer with " + std::to_string(count) + " elements");
  [[maybe_unused]] const std::size_t bytes = count * dtype_bytes(type);
  if (size() == 1) {
    if (in == out) return;
    if (where == Memory::host) std::memcpy(out, in, bytes);
    else rank_detail::copy_device_async(out, in, bytes, stream);
    return;
  }
#ifdef TALLY_HAS_MPI
  Impl& c = *impl_;
  if (where == Memory::host) {
    allreduce_host(c, in, out, count, type, fold);
    return;
  }
  if (!c.device_set) throw std::invalid_argument("allreduce: Memory::device before use_device()");
#ifdef TALLY_HAS_NCCL
  if (c.nccl) {
    if (fold.use_native) {
      rank_detail::nccl_allreduce(c.nccl, in, out, count, type, fold.native, stream);
    } else {
      void* all = c.device_gathered.grow(bytes * static_cast<std::size_t>(c.size));
      rank_detail::nccl_allgather(c.nccl, in, all, count, type, stream);
      fold.device(all, out, count, c.size, stream);
    }
    return;
  }
#endif
  // Host-staged (no NCCL, or ranks sharing a GPU): D2H, the host path, H2D, in stream order.
  auto& staged = c.host_scratch2;
  if (staged.size() < bytes) staged.resize(bytes);
  rank_detail::copy_to_host(staged.data(), in, bytes, stream);
  allreduce_host(c, staged.data(), staged.data(), count, type, fold);
  rank_detail::copy_to_device_async(out, staged.data(), bytes, stream);
#endif
}

}  // namespace tally::ranks
