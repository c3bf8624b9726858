// The tiled-tc level's wgmma kernel (tiled_wgmma.cuh), compiled for sm_90a only.
#include "tiled_wgmma.cuh"

#include <cstdint>

#include "tally/common/cuda_check.cuh"
#include "tiled_tc.cuh"

#if !defined(__CUDA_ARCH__) || defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define TALLY_WG_ARCH 1  // host pass, or the sm_90a device pass
#else
#define TALLY_WG_ARCH 0
#endif

namespace tally::matmul::kernels::wg {
namespace {

using tc::mbar_arrive;
using tc::mbar_arrive_expect_tx;
using tc::mbar_init;
using tc::mbar_wait;
using tc::set_max_regs;
using tc::smem_addr;
using tc::tma_load_2d;

// Shared-memory matrix descriptor of a K-major, 128-byte-swizzled tile (rows of 32 floats, 8-row
// atoms 1024 bytes apart, 1024-byte aligned): start >> 4, leading offset 16 bytes (unused within one
// swizzle row), stride offset 1024 bytes, layout SWIZZLE_128B. A k-step of 8 floats is 32 bytes on.
__device__ __forceinline__ std::uint64_t desc(const float* p) {
  const std::uint64_t a = smem_addr(p);
  return ((a & 0x3FFFFull) >> 4) | (std::uint64_t{16 >> 4} << 16) | (std::uint64_t{1024 >> 4} << 32) |
         (std::uint64_t{1} << 62);
}

/// d (m64n128, FP32) = [d +] a b with a (64 x 8 TF32) from registers, b (8 x 128) from shared memory.
/// Register layout of a (PTX "wgmma .tf32 A fragment", that of mma.m16n8k8 per warp of 16 rows):
/// a[i] = A(16 w + g + 8 (i % 2), t + 4 (i / 2)); of d: d[4 j + i] = D(16 w + g + 8 (i / 2), 8 j + 2 t + i % 2).
__device__ __forceinline__ void wgmma(float (&d)[64], const std::uint32_t (&a)[4], std::uint64_t b, bool accumulate) {
#if TALLY_WG_ARCH && defined(__CUDA_ARCH__)
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %68, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, "
      "%23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, "
      "%45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
      "{%64, %65, %66, %67}, %69, p, 1, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]),
        "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]),
        "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]),
        "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]),
        "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]),
        "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]),
        "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]),
        "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(static_cast<int>(accumulate)), "l"(b));
#endif
}
__device__ __forceinline__ void wgmma_fence() {
#if TALLY_WG_ARCH && defined(__CUDA_ARCH__)
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void wgmma_commit() {
#if TALLY_WG_ARCH && defined(__CUDA_ARCH__)
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#endif
}
template <int Pending>
__device__ __forceinline__ void wgmma_wait() {
#if TALLY_WG_ARCH && defined(__CUDA_ARCH__)
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(Pending) : "memory");
#endif
}

template <bool Specials>  // Tf32x3Of<Specials>: infinities kept IEEE's (tc_mma.cuh)
__global__ void __launch_bounds__(threads, 1)
    tiled_wgmma(const __grid_constant__ CUtensorMap ta, const __grid_constant__ CUtensorMap tb, float* __restrict__ d_c,
                idx m, idx n, idx k) {
#if TALLY_WG_ARCH
  using Split = tc::Tf32x3Of<Specials>;
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  float* smem = reinterpret_cast<float*>((reinterpret_cast<std::uintptr_t>(smem_raw) + 1023) & ~std::uintptr_t{1023});
  __shared__ std::uint64_t full[stages], ready[stages], empty[stages];
  const int tid = static_cast<int>(threadIdx.x);
  if (tid == 0)
    for (int s = 0; s < stages; ++s) {
      mbar_init(&full[s], 1);
      mbar_init(&ready[s], 128);
      mbar_init(&empty[s], 256);
    }
  __syncthreads();
  const tc::TileOrder tile(blockIdx.x, (m + BM - 1) / BM, (n + BN - 1) / BN, BM, BN);
  const idx slices = (k + BK - 1) / BK;  // K <= 2^31 - 1 (host)

  if (tid < 128) {  // ---- producer warpgroup: copies and the split of A --------------------------------
    set_max_regs<40, false>();
    constexpr int ahead = stages - 2;  // copies in flight ahead of the split; the consumers one behind it
    auto issue = [&](idx t) {
      const int s = static_cast<int>(t % stages);
      float* as = smem + s * stage_elems;
      float* bs = as + 2 * a_elems;
      const int k0 = static_cast<int>(t * BK);
      mbar_arrive_expect_tx(&full[s], static_cast<unsigned>((a_elems + b_elems) * sizeof(float)));
      tma_load_2d(as, &ta, k0, static_cast<int>(tile.row0), &full[s]);
#pragma unroll
      for (int h = 0; h < BN / 32; ++h)
        tma_load_2d(bs + h * BK * 32, &tb, static_cast<int>(tile.col0) + 32 * h, k0, &full[s]);
    };
    if (tid == 0)
      for (idx t = 0; t < ahead && t < slices; ++t) issue(t);
    for (idx t = 0; t < slices; ++t) {
      const idx next = t + ahead;
      if (tid == 0 && next < slices) {
        if (next >= stages)
          mbar_wait(&empty[next % stages], static_cast<unsigned>((next / stages - 1) & 1));  // slice next - stages read
        issue(next);
      }
      const int s = static_cast<int>(t % stages);
      mbar_wait(&full[s], static_cast<unsigned>((t / stages) & 1));
      float4* big = reinterpret_cast<float4*>(smem + s * stage_elems);
      float4* small = big + a_elems / 4;
      // The swizzle permutes 16-byte chunks: an element-wise split keeps the layout.
#pragma unroll
      for (int i = 0; i < a_elems / 4 / 128; ++i) {
        const float4 x = big[tid + 128 * i];
        std::uint32_t h[4], l[4];
        Split::split(x.x, h[0], l[0]);
        Split::split(x.y, h[1], l[1]);
        Split::split(x.z, h[2], l[2]);
        Split::split(x.w, h[3], l[3]);
        big[tid + 128 * i] =
            make_float4(__uint_as_float(h[0]), __uint_as_float(h[1]), __uint_as_float(h[2]), __uint_as_float(h[3]));
        small[tid + 128 * i] =
            make_float4(__uint_as_float(l[0]), __uint_as_float(l[1]), __uint_as_float(l[2]), __uint_as_float(l[3]));
      }
      asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");  // generic writes, read by wgmma
      mbar_arrive(&ready[s]);
    }
  } else {  // ---- consumer warpgroups: 64 columns of C each ---------------------------------------------
    set_max_regs<232, true>();
    const int wg = tid / 128 - 1, w = tid / 32 % 4, lane = tid % 32, g = lane / 4, tq = lane % 4;
    float acc[64], chain[64];
#pragma unroll
    for (int i = 0; i < 64; ++i) acc[i] = Sum::identity<float>(), chain[i] = 0.0f;
    // This lane's B elements of a slice: k = 8 q + tq + 4 (i / 2), column cl = 64 wg + 16 w + g + 8 (i % 2) of
    // the tile, in 32-column swizzled boxes: box cl / 32, row k, chunk (cl % 32 / 4) ^ (k % 8).
    int b_off[2][2];  // [i % 2][i / 2], for q = 0 (k-step q adds 8 rows: 256 floats, same k % 8)
#pragma unroll
    for (int r = 0; r < 2; ++r)
#pragma unroll
      for (int c = 0; c < 2; ++c) {
        const int cl = 64 * wg + 16 * w + g + 8 * r, kk = tq + 4 * c;
        b_off[r][c] = cl / 32 * (BK * 32) + kk * 32 + (((cl % 32 / 4) ^ kk) << 2) + cl % 4;
      }
    // Per slice: B's split into registers, 12 wgmmas, then wait for them before the stage is handed
    // back. B's loads meet 2-way bank conflicts; loading the next slice's B while the wgmmas run,
    // issuing a chain's two slices back to back and conflict-free B loads (k-step slots relabelled)
    // all ran slower (BENCHMARKS.md).
    for (idx t = 0; t < slices; ++t) {
      const int s = static_cast<int>(t % stages);
      mbar_wait(&ready[s], static_cast<unsigned>((t / stages) & 1));
      const float* big = smem + s * stage_elems;
      const float* small = big + a_elems;
      const float* bs = big + 2 * a_elems;
      std::uint32_t hi[BK / 8][4], lo[BK / 8][4];
#pragma unroll
      for (int q = 0; q < BK / 8; ++q)
#pragma unroll
        for (int i = 0; i < 4; ++i) Split::split(bs[b_off[i % 2][i / 2] + q * 256], hi[q][i], lo[q][i]);
      const bool first = t % chain_slices == 0;  // a new chain: the first wgmma ignores the accumulators
      wgmma_fence();
#pragma unroll
      for (int q = 0; q < BK / 8; ++q) {
        const std::uint64_t db = desc(big + 8 * q), ds = desc(small + 8 * q);
        wgmma(chain, lo[q], db, !(first && q == 0));  // small products first, then the large one
        wgmma(chain, hi[q], ds, true);
        wgmma(chain, hi[q], db, true);
      }
      wgmma_commit();
      wgmma_wait<0>();
      mbar_arrive(&empty[s]);
      if (t % chain_slices == chain_slices - 1 || t + 1 == slices)  // the thread level of the reduction over K
#pragma unroll
        for (int i = 0; i < 64; ++i) acc[i] = Sum::combine(acc[i], chain[i]);
    }
    // d[4 j + i]: C row row0 + 8 j + 2 tq + i % 2, column col0 + 64 wg + 16 w + g + 8 (i / 2).
    const idx c0 = tile.col0 + 64 * wg + 16 * w + g;
#pragma unroll
    for (int j = 0; j < BM / 8; ++j)
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const idx r = tile.row0 + 8 * j + 2 * tq + i % 2, c = c0 + 8 * (i / 2);
        if (r < m && c < n) d_c[r * n + c] = acc[4 * j + i];
      }
  }
#endif
}

}  // namespace

void launch_tiled(const CUtensorMap& ta, const CUtensorMap& tb, float* d_c, std::int64_t m, std::int64_t n,
                  std::int64_t k, bool specials, cudaStream_t stream) {
  auto kernel = specials ? tiled_wgmma<true> : tiled_wgmma<false>;
  TALLY_CUDA_TRY(
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem_bytes)));
  const idx tiles = ((m + BM - 1) / BM) * ((n + BN - 1) / BN);
  kernel<<<static_cast<unsigned>(tiles), threads, smem_bytes, stream>>>(ta, tb, d_c, m, n, k);
  TALLY_CHECK_LAUNCH();
}

}  // namespace tally::matmul::kernels::wg
