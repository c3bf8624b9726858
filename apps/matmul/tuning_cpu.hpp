#pragma once
// matmul's loop-nest constants on the CPU backend (matmul_cpu.cpp, exact_cpu.cpp), one line of reason
// each; the CUDA backend's are in tuning.cuh. The gang level's chunks fix the order of each
// element's sum (C's bits); the rest change only the speed.
#include <cstdint>

namespace tally::matmul::tuning::cpu {

/// tiled: 64 rows x 256 columns of C a task, K in 256-deep blocks, so that a block of B stays in cache.
inline constexpr std::int64_t tile_rows = 64, tile_cols = 256, tile_depth = 256;
/// gang: K in chunks of at least 1024 terms, at most 64 chunks and 2^26 partial elements in all,
/// whatever the thread count (so C does not depend on it).
inline constexpr std::int64_t gang_min_chunk = 1024, gang_max_chunks = 64, gang_max_partials = std::int64_t{1} << 26;
/// --exact: elements in blocks of 64 (their chunks' accumulators stay small); worker+vector: 4 K
/// ranges a thread (a finer split than worker's one); tiled: 8 x 8 tiles of C, a filter an element.
inline constexpr std::int64_t exact_block = 64, exact_ranges_per_thread = 4, exact_tile = 8;

}  // namespace tally::matmul::tuning::cpu
