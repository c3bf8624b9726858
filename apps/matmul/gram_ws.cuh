#pragma once
// The double 64 x 64 Gram tile (gang level, 32 < max(M, N) <= 64, sm_90, K and N even) with a
// warp-specialised pipeline, as CUTLASS's sm90 kernels: one producer warpgroup whose one thread issues
// the TMA tensor copies of S stages, each completing on its `full` mbarrier (expect_tx), and the
// 8 consumer warps of TcProduct (64 x 32 DMMA warp tiles, 4 worker groups splitting each slice), which
// wait on `full` and arrive once per warp on the stage's `empty` mbarrier when their fragments are
// read: no block barrier in the K loop, so a warp waits only for the bytes it needs and the producer
// only for the stage it refills. setmaxnreg gives the consumers 240 registers (the producer 24):
// 12 warps fit the register file only so. The worker groups' tiles are combined in group order and
// the split-K partials by the last block, as everywhere in the gang level (bitwise reproducible; the
// 96-deep, 2-stage variant computes exactly the sums of TcDoubleTma, the same bits).
// Compiled for sm_90a alone, in the object library of tiled_wgmma.cu (kernels::wg::built()).
// Not the default: slower than TcDoubleTma's synchronous loop on the H200 in every variant measured
// (2026-11-24; apps/matmul/README.md, issue 21 round 3); reached by TALLY_MATMUL_GRAM=ws=V.

#include <cuda.h>  // CUtensorMap
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace tally::matmul::kernels::ws {

/// What the host needs of a variant: its kernel (attributes, occupancy), the C tile, the slice depth,
/// the tensor maps' box width (elements in 128 bytes), the block and its dynamic shared memory.
struct GramWs {
  const void* kernel;
  int bm, bn, bk, tile_w;
  dim3 block;
  std::size_t smem;
};

/// Variants (slice depth x stages, 192-224 KiB of shared memory): 64 x 64 of C per block: 0: 96 x 2
/// (TcDoubleTma's), 1: 32 x 7; 64 x 32 (two blocks a K range): 2: 64 x 4.
inline constexpr int variants = 3;

/// Variant v (0 <= v < variants); defined only where kernels::wg::built().
GramWs gram_ws(int variant);

/// The gang level's launch of variant v: gang_level_tma's arguments, grid (tiles, splits) from the
/// host's split_k_grid; A's map in boxes of tile_w x bm, B's in tile_w x bk.
void launch_gram_ws(int variant, dim3 grid, const CUtensorMap& ta, const CUtensorMap& tb, double* d_c, std::int64_t m,
                    std::int64_t n, std::int64_t k, std::int64_t k_chunk, double* d_partials, unsigned int* d_tickets,
                    cudaStream_t stream);

}  // namespace tally::matmul::kernels::ws
