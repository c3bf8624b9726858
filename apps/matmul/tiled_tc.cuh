#pragma once
// The tiled-tc level: square and rectangular products on the tensor cores at FP32 / FP64 accuracy.
// One block per BM x BN tile of C over the whole K, its product the Gram path's tensor-core block
// product (tensor_core.cuh, TcProduct::run): 16-byte cp.async slices in `stages` buffers, 3xTF32
// m16n8k8 MMAs (Tf32x3: x = hi + lo, lo_a hi_b + hi_a lo_b + hi_a hi_b) in chains of
// Cfg::chain_steps k-steps, each folded into the FP32 accumulators with Sum::combine (the thread
// level of the reduction over K, in K order: bitwise reproducible); in double, DMMA m16n8k8 (exact
// FP64 FMAs, accumulated in place). No split K and no worker groups: a big C has tiles enough to
// fill the machine.
//
// Float accuracy: Tf32x3's bound (tc_mma.cuh), (20 + 6 S) u for the split and a chain of S k-steps,
// plus gamma of the ceil(K / (8 S)) chains folded in turn, against a K-term FP32 sum's gamma_K: the
// tensor cores run where theirs is no larger (K >= 70 at S = 8), the CUDA-core tiled kernel below
// that (microseconds of work; tf32x3_pays).

#include <cmath>
#include <cstdint>

#include "tensor_core.cuh"

namespace tally::matmul::kernels::tc {

/// Whether Tf32x3's error bound with chains of `steps` k-steps is no larger than a K-term FP32 sum's:
/// (20 + 6 steps) u + gamma_chains against gamma_K, i.e. 20 + 6 steps + chains <= K.
inline bool tf32x3_pays(std::int64_t k, int steps) {
  const std::int64_t chains = (k + 8 * steps - 1) / (8 * steps);
  return static_cast<double>(chains) + Tf32x3::chain_error_u(steps) <= static_cast<double>(k);
}

/// Block b's tile: groups of `group` tile rows, column-major inside a group, so that the blocks
/// resident at once share A's row panels and B's column panels in L2 (CUTLASS's threadblock swizzle).
struct TileOrder {
  idx row0, col0;
  __device__ TileOrder(idx b, idx tiles_m, idx tiles_n, int bm, int bn, idx group = 8) {
    const idx width = group * tiles_n;
    const idx first = b / width * group;
    const idx rows = tiles_m - first < group ? tiles_m - first : group;
    row0 = (first + b % width % rows) * bm;
    col0 = (b % width / rows) * bn;
  }
};

template <class Cfg, bool Vec>
__global__ void __launch_bounds__(Cfg::threads, Cfg::min_blocks)
    tiled_level_tc(const typename Cfg::T* __restrict__ d_a, const typename Cfg::T* __restrict__ d_b,
                   typename Cfg::T* __restrict__ d_c, idx m, idx n, idx k) {
  using T = typename Cfg::T;
  static_assert(Cfg::KG == 1 && !Cfg::tma, "tiled-tc: one worker group, cp.async");
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const TileOrder tile(blockIdx.x, (m + Cfg::BM - 1) / Cfg::BM, (n + Cfg::BN - 1) / Cfg::BN, Cfg::BM, Cfg::BN);
  TcProduct<Cfg> p;
  p.template run<Vec>(d_a, d_b, m, n, k, tile.row0, tile.col0, 0, k, reinterpret_cast<T*>(smem_raw));
  // C registers 2h, 2h + 1 are row neighbours: one paired store where the pair lies inside C and N is
  // even (aligned), element by element at the edges.
#pragma unroll
  for (int mt = 0; mt < Cfg::MT; ++mt)
#pragma unroll
    for (int nt = 0; nt < Cfg::NT; ++nt)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const idx r = tile.row0 + TcProduct<Cfg>::row_of(mt, 2 * h), c = tile.col0 + TcProduct<Cfg>::col_of(nt, 0);
        if (r >= m) continue;
        T* out = d_c + r * n + c;
        if (c + 1 < n && n % 2 == 0) {
          *reinterpret_cast<dev::Vec<T, 2>*>(out) = dev::Vec<T, 2>{{p.acc[mt][nt][2 * h], p.acc[mt][nt][2 * h + 1]}};
        } else {
          if (c < n) out[0] = p.acc[mt][nt][2 * h];
          if (c + 1 < n) out[1] = p.acc[mt][nt][2 * h + 1];
        }
      }
}

}  // namespace tally::matmul::kernels::tc
