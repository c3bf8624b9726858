#pragma once
// The tiled-tc level's float product on Hopper's warpgroup MMAs (wgmma, sm_90a): 3xTF32 like the
// mma.sync path (tiled_tc.cuh, Tf32x3), at up to ~3x mma.sync's TF32 rate. Its kernel is compiled
// for sm_90a alone (tiled_wgmma.cu); a build without it (TALLY_MATMUL_WGMMA_BUILT 0) or another device
// takes the mma.sync path.
//
// C = A B is computed as C^T = B^T A^T, because TF32 wgmma reads shared-memory operands K-major only:
// A (row-major M x K) is K-major as it stands and is wgmma's B operand (wgmma N = rows of C), B
// (row-major K x N) is read into registers transposed as wgmma's A operand (wgmma M = columns of C).
//
// Block: 128 x 128 of C; warpgroup 0 the producer (one thread issues TMA tensor copies of 32-deep
// slices into 4 stages of 128-byte-swizzled tiles; all 128 threads split each A tile in place into
// big = rna_tf32(x) and, in a second tile at the same offsets, small = x - big, Tf32x3::split),
// warpgroups 1, 2 the consumers, 64 columns of C each (m64n128k8: small_b big_a, big_b small_a,
// big_b big_a per k-step, B's split in registers). mbarriers: full (the copy landed), ready (split,
// after fence.proxy.async), empty (both consumers' wgmmas have read the stage).
// Chains of 8 k-steps (two slices) from zero in the wgmma accumulators, each folded into FP32
// register accumulators with Sum::combine in K order: Tf32x3's error bound with S = 8, bitwise
// reproducible. Tensor bounds zero-fill rows beyond M, columns beyond N and the K tail.

#include <cuda.h>  // CUtensorMap
#include <cuda_runtime.h>

#include <cstdint>

#include "tuning.cuh"

#ifndef TALLY_MATMUL_WGMMA_BUILT
#define TALLY_MATMUL_WGMMA_BUILT 0
#endif

namespace tally::matmul::kernels::wg {

inline constexpr int BM = 128, BN = 128, BK = 32;  // fixed by m64n128k8 and the 128-byte swizzle row
inline constexpr int stages = tuning::wgmma_stages;
inline constexpr int chain_slices = tuning::wgmma_chain_slices;  // k-steps a chain spans: 4 chain_slices
inline constexpr int chain_steps = BK / 8 * chain_slices;
inline constexpr int threads = 384;  // producer + 2 consumer warpgroups
inline constexpr int a_elems = BM * BK, b_elems = BK * BN;
inline constexpr int stage_elems = 2 * a_elems + b_elems;                               // A big (in place), A small, B
inline constexpr std::size_t smem_bytes = sizeof(float) * stages * stage_elems + 1024;  // + alignment

/// Whether the wgmma kernel is in this build (sm_90a code).
constexpr bool built() { return TALLY_MATMUL_WGMMA_BUILT != 0; }

/// C (M x N) = A B from tensor maps of A (box 32 x BM) and B (box 32 x BK), both 128-byte swizzled;
/// `specials`: A or B holds an infinity (Tf32x3Specials). Defined only where built().
void launch_tiled(const CUtensorMap& ta, const CUtensorMap& tb, float* d_c, std::int64_t m, std::int64_t n,
                  std::int64_t k, bool specials, cudaStream_t stream);

}  // namespace tally::matmul::kernels::wg
