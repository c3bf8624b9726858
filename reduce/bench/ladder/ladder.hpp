#pragma once
// The seeds' ladder of reduction strategies, selectable by name for study and benchmarking: the
// ladder suite of reduce-bench, its CUB reference, and the tests that check every rung. Part of the
// benchmark (the static library tally_reduce_ladder), not of the installed tally::reduce. Full
// reductions of contiguous input on CUDA (ladder.cu; CUB's rung in ladder_cub.cu).

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

#include "tally/reduce/reduce.hpp"

namespace tally::reduce::bench {

enum class Strategy {
  production,             ///< the library's default path (deterministic, all level sets)
  atomic,                 ///< one atomic per element (Sum only; NOT deterministic for floats)
  interleaved_divergent,  ///< interleaved addressing, `t % (2*stride) == 0` (divergent branches)
  interleaved,            ///< interleaved addressing with a strided index (no divergence, bank conflicts)
  sequential,             ///< sequential addressing (no bank conflicts)
  first_add,              ///< first add during load (two elements per thread)
  warp_shuffle,           ///< ... plus a warp-shuffle tail instead of the last six shared-memory steps
  coarsened,              ///< ... plus thread coarsening with a grid-stride loop
  cub,                    ///< cub::DeviceReduce, the outside reference
};

inline constexpr std::array<Strategy, 9> all_strategies = {
    Strategy::atomic,    Strategy::interleaved_divergent, Strategy::interleaved, Strategy::sequential,
    Strategy::first_add, Strategy::warp_shuffle,          Strategy::coarsened,   Strategy::production,
    Strategy::cub};

[[nodiscard]] std::string to_string(Strategy s);
/// Throws std::invalid_argument listing the valid names.
[[nodiscard]] Strategy parse_strategy(std::string_view name);
/// Only Strategy::atomic is non-deterministic.
[[nodiscard]] constexpr bool is_deterministic(Strategy s) { return s != Strategy::atomic; }

/// The ladder's rungs (ladder.cu): a full reduction of the contiguous input of `p` into *d_out.
template <class Op, class T, class Acc>
void reduce_cuda_ladder(Strategy s, const detail::Problem& p, Acc* d_out, Workspace& ws, stream_t stream);
/// cub::DeviceReduce::Reduce over in[0, n) into *d_out with Op (NaN-propagating max/min), its temporary
/// storage taken from the workspace (ladder_cub.cu: CUB is heavy to build). Asynchronous on `stream`.
template <class Op, class T, class Acc>
void ladder_cub(const T* in, std::int64_t n, Acc* d_out, Workspace& ws, stream_t stream);

/// A full reduction through one of the ladder's strategies (CUDA only; Strategy::production is the
/// same as reduce()). Strategies other than production need a contiguous input (std::invalid_argument otherwise).
template <class Op, class T, class Acc = T>
void reduce_with(Strategy strategy, View<const T> in, std::span<Acc> out, Workspace& ws, stream_t stream = nullptr) {
  static_assert(!std::is_same_v<Op, ExactSum>, "reduce_with: the ladder has no exact sum (use reduce())");
  static_assert(!std::is_same_v<Op, Mean>, "reduce_with: the ladder has no mean (use reduce())");
  static_assert(is_supported<Op, T, Acc>,
                "this (operator, input type, accumulator) is not compiled into tally::reduce");
  const detail::Problem p{in.data,     in.ext,        in.stride_w,
                          in.stride_g, Levels::all(), static_cast<std::int64_t>(out.size())};
  detail::validate(p, out.data());
  detail::check_workspace(ws, Backend::cuda);
  reduce_cuda_ladder<Op, T, Acc>(strategy, p, out.data(), ws, stream);
}

}  // namespace tally::reduce::bench
