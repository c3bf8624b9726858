#pragma once
// The launch constants of the CUDA engines: one policy per engine, per GPU generation where the
// values differ (CUB's model, cub/device/dispatch/tuning/). The kernels' launch bounds, their loops
// and the host dispatch read them from here; the search over other values belongs in reduce-bench.
// Plain C++, so that host code without CUDA (Workspace) reads the same values.
//
// One generation is tuned: sm_90 (H100, H200), the architecture the build targets. A generation
// whose best values differ gets policies of its own beside these, picked by the aliases at the end.
// A launch constant is part of the launch configuration that a floating-point sum's bits depend on
// (reduce.hpp): a new value is a new set of bits, recorded again in data/ (tests/checksums).
// Not here: the device building blocks' own constants (device/*.cuh: segment_unroll,
// kExactMergeThreads, ...), which fused kernels use without these engines; limits that keep a result
// exact (kExactMaxPerBlock); and loads in flight that a kernel derives from its element size.

#include <cstdint>

#include "tally/reduce/segmented.hpp"

namespace tally::reduce::detail {

namespace tuning {

/// The production reductions (src/cuda/kernels.cuh, inner_lanes.cuh, kernel_folds.cuh) and the exact
/// sum's and dot's kernels (src/cuda/exact_cuda.cu, exact_dot_cuda.cu).
struct ReduceSm90 {
  static constexpr int block = 256;          ///< threads a block of every kernel: 8 blocks fill an SM's 2048
  static constexpr int min_blocks_sm = 4;    ///< launch bounds' residency: 64 registers a thread, no spills
  static constexpr int unroll = 4;           ///< 16-byte loads in flight a thread: 64 bytes cover the latency
  static constexpr int row_batch = 8;        ///< inner_row_kernel: vectors a lane loaded as one batch
  static constexpr int thread_row_vecs = 4;  ///< inner_thread_kernel: rows of at most this many vectors
  static constexpr int flat_blocks_sm = 3;   ///< the flat kernels' wave, blocks an SM: beats 2 and 4 on long arrays
  /// Least elements a split chunk gets: shorter ones cost the combine more than they save.
  static constexpr std::int64_t min_chunk = 8 * block * 4;
};

/// The generic reducers' engine (detail/generic.cuh: ArgMax, MinMax, MeanVar, a user's Reducer).
struct GenericSm90 {
  static constexpr int block = 256;                         ///< threads per block: the production kernels'
  static constexpr int unroll = 4;                          ///< 16-byte loads per thread per batch
  static constexpr int row_batch = 8;                       ///< block_kernel's scalar loads in flight
  static constexpr int tile_x = 32;                         ///< tile_kernel's outputs a tile: a warp's lanes
  static constexpr std::int64_t min_chunk = 8 * block * 4;  ///< least elements a split chunk gets
};

/// Segmented reductions (detail/segmented.cuh, segmented_tiles.cuh).
struct SegmentedSm90 {
  static constexpr int block = segment_block;    ///< fixed by the results: a long chunk is a block's fold
  static constexpr int min_blocks_sm = 4;        ///< residency fill_blocks counts (the offsets' check)
  static constexpr int short_blocks_sm = 5;      ///< short_kernel: more warps hide more round trips (48 regs)
  static constexpr int staged_blocks_sm = 4;     ///< staged_kernel: 64 registers (at 5 its loop state spills)
  static constexpr int stage_bytes = 2048;       ///< a staging buffer: 512 floats, 99% of power-law tiles
  static constexpr int pair_block = 128;         ///< staged_pair_kernel: 4 warps a block
  static constexpr int pair_blocks_sm = 8;       ///< 8 x (27.3 KB + 1 KB reserved) of the SM's 228 KB
  static constexpr int pair_stage_bytes = 3072;  ///< 768 floats: a power-law pair spans 344 on average
  static constexpr int window_unroll = 4;        ///< a medium segment's loads a lane from shared memory
  static constexpr int long_round = 128;         ///< bytes a long kernel's thread loads before folding
  static constexpr int long_blocks_sm = 3;       ///< long_kernel: 80 registers, a whole round in flight
  static constexpr int scan_block = 1024;        ///< scan_list_kernel: one block scans the long list
  /// Rounds of resident blocks in the tile grid: segments of 16 elements or more are bandwidth-bound
  /// and short blocks even out the end; shorter ones are latency-bound, later tiles finding their
  /// offsets loaded.
  static constexpr int rounds_long = 32, rounds_short = 8;
};

}  // namespace tuning

// The policies the kernels are compiled with.
using ReducePolicy = tuning::ReduceSm90;
using GenericPolicy = tuning::GenericSm90;
using SegmentedPolicy = tuning::SegmentedSm90;

}  // namespace tally::reduce::detail
