#pragma once
// The seeds' ladder of reduction strategies, selectable by name for study and benchmarking, and the
// production tuning as a plain printable struct (CUB style), not macros.

#include <array>
#include <string>
#include <string_view>

namespace tally::reduce {

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
    Strategy::atomic,      Strategy::interleaved_divergent, Strategy::interleaved,
    Strategy::sequential,  Strategy::first_add,             Strategy::warp_shuffle,
    Strategy::coarsened,   Strategy::production,            Strategy::cub};

[[nodiscard]] std::string to_string(Strategy s);
/// Throws std::invalid_argument listing the valid names.
[[nodiscard]] Strategy parse_strategy(std::string_view name);
/// Strategies other than production only exist for full reductions of contiguous input.
[[nodiscard]] constexpr bool is_deterministic(Strategy s) { return s != Strategy::atomic; }

/// Launch shape of the production CUDA kernels, derived from the device's properties.
struct Tuning {
  int block_threads = 256;      ///< threads per block
  int blocks_per_sm = 8;        ///< resident blocks per SM the grid is sized for
  int sm_count = 0;             ///< multiprocessors of the device
  bool programmatic_launch = false;  ///< launch so that a kernel's start overlaps its predecessor's end (sm_90+)
  [[nodiscard]] std::string to_string() const;
};

}  // namespace tally::reduce
