// ExactSum across ranks (rank.hpp): the ranks add their unrounded accumulators, never rounded
// partials. Each rank computes its outputs' normalised accumulators (exact_cpu / exact_cuda with
// Out = exact::Accumulator<T>), an integer allreduce<Sum, int64> adds them word by word (exact in
// any order: every limb below 2^32 after normalisation, so up to 2^31 ranks), and every rank rounds
// once: the single-process exact sum, whatever the rank count.
#include <span>
#include <vector>

#include "instantiate.hpp"
#include "rank/impl.hpp"
#include "tally/reduce/detail/exact.hpp"

namespace tally::reduce::detail {

template <class T, class Out>
void exact_across_ranks(const Comm& comm, Backend backend, View<const T> in, Levels levels, std::span<Out> out,
                        Workspace& ws, stream_t stream) {
  using A = exact::Accumulator<T>;
  static_assert(sizeof(A) == sizeof(std::int64_t) * A::words, "exact::Accumulator: a plain array of int64");
  const Problem p{in.data, in.ext, in.stride_w, in.stride_g, levels, static_cast<std::int64_t>(out.size())};
  validate(p, out.data());
  check_workspace(ws, backend);
  const std::size_t words = out.size() * A::words;
  if (backend == Backend::cpu) {
    std::vector<A> acc(out.size());
    exact_cpu<T, A>(p, acc.data());
    const std::span<std::int64_t> w(acc.empty() ? nullptr : acc.data()->w, words);
    comm.allreduce<Sum, std::int64_t>(std::span<const std::int64_t>(w.data(), w.size()), w, Memory::host);
    for (std::size_t o = 0; o < out.size(); ++o) out[o] = acc[o].template round<Out>();
    return;
  }
  // Device: the accumulators in the communicator's own buffer (the kernels use the workspace's
  // scratch), grown once, so the hot path neither allocates nor waits for the device.
  void* buf = comm.impl_->device_accumulators.grow(words * sizeof(std::int64_t));
  A* d_acc = static_cast<A*>(buf);
  exact_cuda<T, A>(p, d_acc, ws, stream);
  auto* d_words = static_cast<std::int64_t*>(buf);
  comm.allreduce<Sum, std::int64_t>(std::span<const std::int64_t>(d_words, words), std::span<std::int64_t>(d_words, words),
                                    Memory::device, stream);
  exact_round_cuda<T, Out>(d_acc, out.data(), static_cast<std::int64_t>(out.size()), ws, stream);
}

#define TALLY_INSTANTIATE_EXACT_RANKS(Op, T, Out)                                                                 \
  template void exact_across_ranks<T, Out>(const Comm&, Backend, View<const T>, Levels, std::span<Out>, Workspace&, \
                                           stream_t);
TALLY_REDUCE_FOR_EACH_EXACT(TALLY_INSTANTIATE_EXACT_RANKS)

}  // namespace tally::reduce::detail
