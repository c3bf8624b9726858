// The cross-rank step, Comm::allreduce: every rank's values combined in rank order on every rank.
// Floating-point operands and the bit/logical operators: every rank's values are gathered and folded
// rank 0, 1, ..., size-1 with Op::combine (ops.hpp: the library's NaN rule). Integer Sum/Prod/Max/Min
// are exact in any order, so they may use the transport's own reduction.

#include <cstring>
#include <stdexcept>
#include <type_traits>

#include "instantiate.hpp"
#include "rank/impl.hpp"

namespace tally::reduce {

namespace {

template <class Op, class T>
constexpr bool native_exact = std::is_integral_v<T> && !is_bitwise_op<Op>;

template <class Op>
constexpr NativeOp native_op() {
  if constexpr (std::is_same_v<Op, Sum>) return NativeOp::sum;
  else if constexpr (std::is_same_v<Op, Prod>) return NativeOp::prod;
  else if constexpr (std::is_same_v<Op, Max>) return NativeOp::max;
  else return NativeOp::min;
}

/// out[i] = combine(...combine(x_0[i], x_1[i])..., x_{ranks-1}[i]) over `ranks` rows of `count`.
template <class Op, class T>
void fold_ranks(const T* gathered, T* out, std::size_t count, int ranks) {
  for (std::size_t i = 0; i < count; ++i) {
    T acc = gathered[i];
    for (int r = 1; r < ranks; ++r) acc = Op::template combine<T>(acc, gathered[static_cast<std::size_t>(r) * count + i]);
    out[i] = acc;
  }
}

#ifdef TALLY_HAS_MPI
template <class T>
MPI_Datatype mpi_type() {
  if constexpr (std::is_same_v<T, std::int32_t>) return MPI_INT32_T;
  else if constexpr (std::is_same_v<T, std::int64_t>) return MPI_INT64_T;
  else if constexpr (std::is_same_v<T, float>) return MPI_FLOAT;
  else return MPI_DOUBLE;
}

template <class Op>
MPI_Op mpi_op() {
  switch (native_op<Op>()) {
    case NativeOp::sum: return MPI_SUM;
    case NativeOp::prod: return MPI_PROD;
    case NativeOp::max: return MPI_MAX;
    default: return MPI_MIN;
  }
}

/// The host path: `in` and `out` are host memory of `count` elements (may alias).
template <class Op, class T>
void allreduce_host(Comm::Impl& c, const T* in, T* out, std::size_t count) {
  const int n = rank_detail::mpi_count(count, "allreduce");
  if constexpr (native_exact<Op, T>) {
    TALLY_MPI_CHECK(MPI_Allreduce(in == out ? MPI_IN_PLACE : in, out, n, mpi_type<T>(), mpi_op<Op>(), c.world));
  } else {
    rank_detail::mpi_count(count * static_cast<std::size_t>(c.size), "allreduce (all ranks' values)");
    auto& scratch = c.host_scratch;
    if (scratch.size() < count * c.size * sizeof(T)) scratch.resize(count * c.size * sizeof(T));
    T* all = reinterpret_cast<T*>(scratch.data());
    TALLY_MPI_CHECK(MPI_Allgather(in, n, mpi_type<T>(), all, n, mpi_type<T>(), c.world));
    fold_ranks<Op, T>(all, out, count, c.size);
  }
}
#endif

}  // namespace

template <class Op, class T>
void Comm::allreduce(std::span<const T> in, std::span<T> out, Memory where, [[maybe_unused]] stream_t stream) const {
  static_assert(is_supported<Op, T, T>, "allreduce: this (operator, type) is not in the library");
  static_assert(!std::is_same_v<Op, Mean>, "allreduce: no mean across ranks (allreduce the sums, divide by the total count)");
  if (in.size() != out.size())
    throw std::invalid_argument("allreduce: out has " + std::to_string(out.size()) + " elements, in has " +
                                std::to_string(in.size()));
  if (in.empty()) return;
  if ((in.data() == nullptr) || (out.data() == nullptr))
    throw std::invalid_argument("allreduce: null buffer with " + std::to_string(in.size()) + " elements");
  [[maybe_unused]] const std::size_t count = in.size(), bytes = in.size_bytes();
  const bool aliased = static_cast<const void*>(in.data()) == static_cast<const void*>(out.data());
  if (size() == 1) {
    if (aliased) return;
    if (where == Memory::host) std::memcpy(out.data(), in.data(), bytes);
    else rank_detail::copy_device_async(out.data(), in.data(), bytes, stream);
    return;
  }
#ifdef TALLY_HAS_MPI
  Impl& c = *impl_;
  if (where == Memory::host) {
    allreduce_host<Op, T>(c, in.data(), out.data(), count);
    return;
  }
  if (!c.device_set) throw std::invalid_argument("allreduce: Memory::device before use_device()");
#ifdef TALLY_HAS_NCCL
  if (c.nccl) {
    if constexpr (native_exact<Op, T>) {
      rank_detail::nccl_allreduce(c.nccl, in.data(), out.data(), count, dtype_of<T>(), native_op<Op>(), stream);
    } else {
      T* all = static_cast<T*>(c.device_scratch.grow(bytes * static_cast<std::size_t>(c.size)));
      rank_detail::nccl_allgather(c.nccl, in.data(), all, count, dtype_of<T>(), stream);
      rank_detail::fold_ranks_device<Op, T>(all, out.data(), count, c.size, stream);
    }
    return;
  }
#endif
  // Host-staged (no NCCL, or ranks sharing a GPU): D2H, the host path, H2D, in stream order.
  auto& staged = c.host_scratch2;
  if (staged.size() < bytes) staged.resize(bytes);
  T* h = reinterpret_cast<T*>(staged.data());
  rank_detail::copy_to_host(h, in.data(), bytes, stream);
  allreduce_host<Op, T>(c, h, h, count);
  rank_detail::copy_to_device_async(out.data(), h, bytes, stream);
#endif
}

// Every operator and type of the library with Acc == T (instantiate.hpp's one list).
#define TALLY_RANK_ALLREDUCE(Op, T, Acc) \
  template void Comm::allreduce<Op, T>(std::span<const T>, std::span<T>, Memory, stream_t) const;
TALLY_REDUCE_FOR_EACH_SAME(TALLY_RANK_ALLREDUCE)
#undef TALLY_RANK_ALLREDUCE

}  // namespace tally::reduce
