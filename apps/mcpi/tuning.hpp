#pragma once
// mcpi's launch constants on the CUDA backend (mcpi_cuda.cu), one line of reason each; the
// measurements behind them: BENCHMARKS.md (mcpi). None changes a count: the hits are integers,
// summed exactly in any order.

namespace tally::mcpi::tuning {

/// Every kernel's block: 256 threads (8 warps), as many blocks an SM as the occupancy calculator fits.
inline constexpr int block_threads = 256;
/// The host API's buffer: 2^27 samples a curandGenerateUniform call (1 GiB of floats), enough that the
/// call's fixed cost vanishes.
inline constexpr long long host_chunk = 1LL << 27;

}  // namespace tally::mcpi::tuning
