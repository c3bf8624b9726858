#pragma once
// matmul's launch constants on the CUDA backend, in one place: the block, tile and pipeline shapes
// of every kernel the engines launch (matmul_cuda.cu, exact_cuda.cu, tiled_wgmma.cu), one line of
// reason each. The measurements behind them: BENCHMARKS.md (matmul).
//
// A constant that shapes a reduction (the threads or worker groups splitting K, a slice's depth, an
// MMA chain's length) also fixes the order of each element's sum: changing it changes C's bits,
// never its error bound. The rest (stages, blocks per SM, grid sizes, L2 promotion) changes only
// the speed.
//
// The CUDA-core tiles are TileConfig<BM, BN, BK, TM, TN, G> (kernels.cuh): a BM x BN tile of C per
// block, TM x TN per thread, BK-deep slices of K, G worker groups splitting each slice. The
// tensor-core tiles are TcConfig<Math, BM, BN, WM, WN, KG, BK, stages, blocks per SM, TMA,
// chain slices, rolled k-steps, early issue> (tensor_core.cuh).

#include <cstdint>

#include "kernels.cuh"
#include "tensor_core.cuh"

namespace tally::matmul::tuning {

namespace k = kernels;

// ---- the one-element-per-warp/block levels (kernels.cuh) --------------------------------------------
/// vector: a warp per element of C, 8 warps a block: full occupancy without shared memory.
inline constexpr int vector_threads = 256;
/// worker: 32 neighbouring columns of C (a warp reads a row of B coalesced), 8 workers splitting K.
inline constexpr int worker_workers = 8;
/// worker+vector: a block per element of C, its 256 threads splitting K (block_reduce).
inline constexpr int worker_vector_threads = 256;
/// Grid-stride kernels launch at most this many blocks per SM: more would only wait in the queue.
inline constexpr int max_blocks_per_sm = 64;
/// The input generator and the reference's combine: 8 blocks of 256 threads per SM fill it.
inline constexpr int fill_threads = 256, fill_blocks_per_sm = 8;
/// The device reference: a thread per element and K range, K split until about 2^21 threads run
/// (enough for any GPU), each range at least 256 terms long.
inline constexpr int reference_threads_per_block = 256;
inline constexpr std::int64_t reference_threads = std::int64_t{1} << 21, reference_min_chunk = 256;

// ---- tiled, and the gang level without tensor cores (kernels.cuh) -----------------------------------
/// tiled, and gang beyond 64 x 64: 8 x 8 per thread of 128 x 128 tiles, enough arithmetic per byte loaded.
using Big = k::TileConfig<128, 128, 8, 8, 8, 1>;
/// gang, C within 64 x 64: one tile covers C, 4 worker groups split each 32-deep slice.
using Ts64 = k::TileConfig<64, 64, 32, 8, 8, 4>;
/// gang, C within 32 x 32: 64-deep slices keep 64 bytes of loads in flight a thread.
using Ts32 = k::TileConfig<32, 32, 64, 4, 4, 4>;
/// gang, C within 16 x 16: 4 x 4 per thread in 16 worker groups (2 x 2 spends a shared load per FMA).
using Ts16 = k::TileConfig<16, 16, 128, 4, 4, 16>;
/// The same in double: half the slice depth, the same bytes a slice.
using Ts16d = k::TileConfig<16, 16, 64, 4, 4, 16>;

// ---- the gang level's Gram tiles on the tensor cores, C within 64 x 64 (tensor_core.cuh) ------------
/// Float on sm_90, K and N multiples of 4: one thread's tensor copies leave the warps free; 64 x 32
/// a warp, 4 groups each taking 32 of a 128-deep slice, 3 stages (193 KiB, one block an SM).
using TcFloatTma = k::tc::TcConfig<k::tc::Tf32x3, 64, 64, 64, 32, 4, 128, 3, 1, true>;
/// Float elsewhere (sm_80/89, odd K or N): cp.async into padded tiles, 64 x 32 a warp, 2 groups,
/// 64-deep slices, 3 stages, 2 blocks an SM; set by the latency of each warp's loads, split and chain.
using TcFloat = k::tc::TcConfig<k::tc::Tf32x3, 64, 64, 64, 32, 2, 64, 3, 2>;
/// Double elsewhere: DMMA, 32 x 32 a warp, 2 groups, 16-deep slices, 4 stages, 2 blocks an SM.
using TcDouble = k::tc::TcConfig<k::tc::Dmma<8>, 64, 64, 32, 32, 2, 16, 4, 2>;
/// Float C within 16 x 16: two warps cover C, 4 groups split 128-deep slices (Ts16 spends an
/// instruction per FMA and falls behind the memory).
using Tc16Float = k::tc::TcConfig<k::tc::Tf32x3, 16, 16, 16, 8, 4, 128, 4, 2>;
/// Double C within 16 x 16 on sm_90, K and N even: tensor copies, one warp a group, 8 groups each
/// taking 16 of a 128-deep slice, 6 stages of 32 KiB (5 slices in flight an SM).
using TcDouble16Tma = k::tc::TcConfig<k::tc::Dmma<8>, 16, 16, 16, 16, 8, 128, 6, 1, true>;
/// Double C within 64 x 64 on sm_90, K and N even: tensor copies, 64 x 32 a warp (half the fragment
/// bytes per DMMA of 32 x 16), 4 groups each taking 24 of a 96-deep slice in a rolled loop (240
/// registers, no spills), 2 stages of 96 KiB, each slice issued before waiting for the previous one.
using TcDoubleTma = k::tc::TcConfig<k::tc::Dmma<8>, 64, 64, 64, 32, 4, 96, 2, 1, true, 1, true, true>;
/// L2 promotion of the tensor maps (256 bytes or none): the double tiles stream faster without it
/// (with it some SMs' streams starve); the float Gram tile and the wgmma kernel keep it.
inline constexpr bool gram_float_l2_promote = true, gram_double_l2_promote = false, wgmma_l2_promote = true;

// ---- tiled-tc (tiled_tc.cuh, tiled_wgmma.cuh) -------------------------------------------------------
/// Float (mma.sync): 128 x 64 of C a block, 4 warps of 64 x 32, 32-deep slices in 3 stages (88 KiB),
/// two blocks an SM, MMA chains over two slices (8 k-steps).
using TcTiled = k::tc::TcConfig<k::tc::Tf32x3, 128, 64, 64, 32, 1, 32, 3, 2, false, 2>;
/// Double (DMMA): 128 x 128, 16 warps of 32 x 32, 16-deep slices, 4 stages.
using TcTiledD = k::tc::TcConfig<k::tc::Dmma<8>, 128, 128, 32, 32, 1, 16, 4, 1>;
/// Float on sm_90 (wgmma; its 128 x 128 tile and 32-deep slices follow from its instructions): 4
/// stages, chains over two slices (8 k-steps).
inline constexpr int wgmma_stages = 4, wgmma_chain_slices = 2;

// ---- --exact (exact_cuda.cu) ------------------------------------------------------------------------
/// Blocks of 256 threads (worker: 32 elements x 8 warps), 8 resident per SM; grids of at most 8 such
/// waves (grid-stride beyond).
inline constexpr int exact_threads = 256, exact_blocks_per_sm = 8, exact_waves = 8;
inline constexpr int exact_workers = exact_threads / 32;
/// gang: enough K chunks to fill the device twice, none under 4096 terms (16 loads a thread).
inline constexpr std::int64_t exact_gang_min_chunk = 4096;
/// tiled: 16 x 16 tiles of C (a thread an element), K chunks of at least 256 terms.
inline constexpr int exact_tile = 16;
inline constexpr std::int64_t exact_tiled_min_chunk = 256;

}  // namespace tally::matmul::tuning
