#pragma once
// Tensor-core block products for the gang level's Gram case (C of at most 64 x 64, K in the
// millions): the same split-K scheme as gang_level (K split over blockIdx.y, partial C tiles, the
// gang_arrive ticket, the combine in block order), with the block's product on the tensor cores.
//
//   double: DMMA (mma.sync m16n8k{4,8,16}.f64 on sm_90, two m8n8k4 per k-group of 4 before), exact
//           FP64 FMAs: the error model of the CUDA-core path.
//   float:  3xTF32: x = hi + lo with hi = tf32(x), lo = tf32(x - hi); C += lo_a hi_b + hi_a lo_b
//           + hi_a hi_b on m16n8k8 TF32 MMAs with FP32 accumulators (never plain TF32). See Tf32x3.
//
// A block stages BK-deep K slices of A (BM x BK, rows contiguous along K) and B (BK x BN, rows along
// N) in shared memory with 16-byte cp.async, `stages` deep, so that (stages - 1) slices per block are
// in flight while one is multiplied. Rows of A beyond M, columns of B beyond N and K beyond the
// block's range are zero-filled by cp.async (src-size < 16), so the MMA tiles need no bounds checks.
// On sm_90 with 16-byte rows (TcConfig::tma; float, and double with m16n8k8 DMMA), one thread fetches
// each slice with 2-D TMA tensor copies into unpadded, 128-byte-swizzled tiles instead; the tensor's
// bounds zero-fill. The same block product (TcProduct::run over the whole K) is the tiled-tc level's
// (tiled_tc.cuh).
// Warps: (BM / WM) x (BN / WN) warp tiles of C per worker group, KG groups (threadIdx.y) splitting
// each slice's K steps; the groups' tiles are combined by worker_reduce (in group order).
//
// Fragment layouts (PTX ISA, "Matrix fragments for mma.m16n8k*"; g = lane / 4, t = lane % 4): for
// m16n8kKM, A register i holds A(g + 8 (i % 2), t + 4 (i / 2)), B register j holds B(t + 4 j, g), and
// C register i holds C(g + 8 (i / 2), 2 t + i % 2). m8n8k4.f64: A(g, t), B(t, g), C(g, 2 t + i), i.e.
// the upper half of the m16n8k4 layout, so an m16n8k4 is two m8n8k4 on rows g and g + 8.

#include <cuda.h>  // CUtensorMap (a plain struct; no driver call is made here)

#include <cstdint>
#include <type_traits>

#include "kernels.cuh"

namespace tally::matmul::kernels::tc {

// ---- cp.async: global -> shared without registers, zero-filling what lies outside the matrix ------
__device__ __forceinline__ std::uint32_t smem_addr(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}
/// Copies `bytes` (0 .. Size) from src and zero-fills the rest of the Size bytes at dst. With bytes = 0
/// nothing is read (src must still be a valid address).
template <int Size>
__device__ __forceinline__ void cp_async(void* dst, const void* src, int bytes) {
#if __CUDA_ARCH__ >= 800
  if constexpr (Size == 16)  // .cg: L2 only, the stream is read once
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src), "r"(bytes) : "memory");
  else
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(smem_addr(dst)), "l"(src), "n"(Size), "r"(bytes) : "memory");
#else
  __trap();  // the host launches the tensor-core kernels on sm_80 and later only
#endif
}
__device__ __forceinline__ void cp_async_commit() {
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}
template <int Pending>
__device__ __forceinline__ void cp_async_wait() {
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;\n" ::"n"(Pending) : "memory");
#endif
}

// ---- TMA (sm_90): 2-D tensor copies into 128-byte-swizzled tiles, completion on an mbarrier -------
// A rows x 32 float tile written by a SWIZZLE_128B tensor copy (1024-byte aligned) holds element
// (r, c) at r * 32 + 4 ((c / 4) ^ (r % 8)) + c % 4: row r's 16-byte chunks permuted by XOR with r mod 8.
__device__ __forceinline__ void mbar_init(std::uint64_t* bar, unsigned count) {
#if __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(count) : "memory");
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
#else
  __trap();
#endif
}
__device__ __forceinline__ void mbar_arrive_expect_tx(std::uint64_t* bar, unsigned bytes) {
#if __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(bytes) : "memory");
#endif
}
__device__ __forceinline__ void mbar_wait(std::uint64_t* bar, unsigned parity) {
#if __CUDA_ARCH__ >= 900
  asm volatile(
      "{\n .reg .pred done;\n WAIT:\n"
      " mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      " @!done bra WAIT;\n}\n" ::"r"(smem_addr(bar)), "r"(parity) : "memory");
#endif
}
/// The box of `map` at (c0 innermost, c1) into dst; what lies outside the tensor arrives as zeros.
__device__ __forceinline__ void tma_load_2d(void* dst, const CUtensorMap* map, int c0, int c1, std::uint64_t* bar) {
#if __CUDA_ARCH__ >= 900
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n"
               ::"r"(smem_addr(dst)), "l"(map), "r"(c0), "r"(c1), "r"(smem_addr(bar)) : "memory");
#else
  __trap();
#endif
}

// ---- double: DMMA -----------------------------------------------------------------------------------
/// m16n8kKM in FP64 with the layout above (KM = 4, 8 or 16). Native on sm_90; on sm_80/86/89 as two
/// m8n8k4 per k-group of 4 (rows g and g + 8). Every product is an exact FP64 FMA (.rn).
template <int KM>
struct Dmma {
  using T = double;
  static constexpr int km = KM;
  static constexpr bool promote = false;  // FP64 MMAs round to nearest: accumulate in place
  static constexpr int max_chain = 0;     // no chains
  // Row paddings (elements) that make the fragment loads conflict-free: 8-byte loads, 16 lanes per
  // wavefront (g in 0..3, t in 0..3); A: (g sa + t) mod 16 distinct for sa = 4 (mod 16), B likewise.
  static constexpr int a_pad = 4, b_pad = 4;
  static constexpr bool a_pad_ok(int sa) { return sa % 16 == 4; }
  static constexpr bool b_pad_ok(int sb) { return sb % 16 == 4; }
  struct AFrag { double v[KM / 2]; };
  struct BFrag { double v[KM / 4]; };

  /// p: A(row0, k0) in shared memory, row stride sa.
  __device__ __forceinline__ static void load_a(AFrag& f, const double* p, int sa, int lane) {
    const int g = lane / 4, t = lane % 4;
#pragma unroll
    for (int i = 0; i < KM / 2; ++i) f.v[i] = p[(g + 8 * (i % 2)) * sa + t + 4 * (i / 2)];
  }
  /// p: B(k0, col0) in shared memory, row stride sb.
  __device__ __forceinline__ static void load_b(BFrag& f, const double* p, int sb, int lane) {
    const int g = lane / 4, t = lane % 4;
#pragma unroll
    for (int j = 0; j < KM / 4; ++j) f.v[j] = p[(t + 4 * j) * sb + g];
  }

  // TMA's 128-byte-swizzled tiles (KM = 8; rows of 16 doubles, the 16-byte chunk c of row r stored at
  // c ^ (r % 8)). K slots relabelled as in Tf32x3 (slot j of lane t, k = t + 4 j in the PTX layout, is
  // taken at physical k 2 t + j, for A and B alike): a lane's two A values of a row are one 16-byte
  // load. A: the 8 lanes of a 16-byte phase are g = 2p, 2p + 1 with t = 0..3; lane g reads row
  // tma_row(g), and rows tma_row(2p), tma_row(2p + 1) differ in bit 2, so the XOR puts them in the two
  // halves of the 128-byte row: 8 distinct chunks. B: 8-byte loads, 16 lanes a phase (g = 0..3 or
  // 4..7, t = 0..3) at rows 2t + j, columns g: chunk (g / 2) ^ (2t + j) takes 8 values, g % 2 the half
  // of the chunk: 16 distinct words. Both conflict-free. C's rows follow A's (TcProduct::row_of).
  static constexpr bool swizzled = KM == 8;
  __device__ __forceinline__ static int tma_row(int g) { return ((g & 1) << 2) | (g >> 1); }
  /// What a lane's addresses share: k-step q's A chunk is 4q ^ xa, tile n's B chunk of row 2t + j is
  /// 4n ^ xb[j] (4q, 4n and the lane's part share no bits).
  struct SwizzleLane {
    int a_off, xa, b_off[2], xb[2];
    __device__ __forceinline__ explicit SwizzleLane(int lane) {
      const int g = lane / 4, t = lane % 4, ra = tma_row(g);
      a_off = ra * 16;
      xa = t ^ ra;
      for (int j = 0; j < 2; ++j) b_off[j] = (2 * t + j) * 16 + g % 2, xb[j] = (g / 2) ^ (2 * t + j);
    }
  };
  /// tile: the A tile (rows x 16) at the MMA tile's first row (a multiple of 8); q: the k-step in it.
  __device__ __forceinline__ static void load_a_swizzled(AFrag& f, const double* tile, int q, const SwizzleLane& sl) {
    static_assert(KM == 8, "swizzled tiles: m16n8k8");
    const double* p = tile + sl.a_off + 2 * ((4 * q) ^ sl.xa);
    const double2 v0 = *reinterpret_cast<const double2*>(p);            // row g: registers 0, 2
    const double2 v1 = *reinterpret_cast<const double2*>(p + 8 * 16);   // row g + 8: registers 1, 3
    f.v[0] = v0.x, f.v[2] = v0.y, f.v[1] = v1.x, f.v[3] = v1.y;
  }
  /// tile: the B tile (K rows x 16 columns) holding the 8 columns 8 n .. 8 n + 7.
  __device__ __forceinline__ static void load_b_swizzled(BFrag& f, const double* tile, int q, int n, const SwizzleLane& sl) {
    const double* p = tile + q * 8 * 16;
    f.v[0] = p[sl.b_off[0] + 2 * ((4 * n) ^ sl.xb[0])];
    f.v[1] = p[sl.b_off[1] + 2 * ((4 * n) ^ sl.xb[1])];
  }

  __device__ __forceinline__ static void mma(double (&d)[4], const AFrag& a, const BFrag& b) {
#if __CUDA_ARCH__ >= 900
    if constexpr (KM == 4)
      asm volatile("mma.sync.aligned.m16n8k4.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};\n"
                   : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3])
                   : "d"(a.v[0]), "d"(a.v[1]), "d"(b.v[0]));
    else if constexpr (KM == 8)
      asm volatile("mma.sync.aligned.m16n8k8.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                   : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3])
                   : "d"(a.v[0]), "d"(a.v[1]), "d"(a.v[2]), "d"(a.v[3]), "d"(b.v[0]), "d"(b.v[1]));
    else
      asm volatile("mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, {%4,%5,%6,%7,%8,%9,%10,%11}, "
                   "{%12,%13,%14,%15}, {%0,%1,%2,%3};\n"
                   : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3])
                   : "d"(a.v[0]), "d"(a.v[1]), "d"(a.v[2]), "d"(a.v[3]), "d"(a.v[4]), "d"(a.v[5]), "d"(a.v[6]),
                     "d"(a.v[7]), "d"(b.v[0]), "d"(b.v[1]), "d"(b.v[2]), "d"(b.v[3]));
#elif __CUDA_ARCH__ >= 800
#pragma unroll
    for (int j = 0; j < KM / 4; ++j) {  // k-group j: A registers 2j (row g) and 2j + 1 (row g + 8)
      asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0,%1}, {%2}, {%3}, {%0,%1};\n"
                   : "+d"(d[0]), "+d"(d[1]) : "d"(a.v[2 * j]), "d"(b.v[j]));
      asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0,%1}, {%2}, {%3}, {%0,%1};\n"
                   : "+d"(d[2]), "+d"(d[3]) : "d"(a.v[2 * j + 1]), "d"(b.v[j]));
    }
#else
    __trap();
#endif
  }
};

// ---- float: 3xTF32 ----------------------------------------------------------------------------------
/// FP32 products from TF32 MMAs (m16n8k8, FP32 accumulators), error-compensated: with
/// x = hi + lo, a b ~ lo_a hi_b + hi_a lo_b + hi_a hi_b (lo_a lo_b dropped).
///
/// The split: hi = rna_tf32(x) in two integer operations (add half a TF32 ulp to the magnitude, clear
/// the 13 low bits; cvt.rna.tf32.f32 is emulated on sm_90 with 4); x - hi is exact in FP32 and passed
/// as it is: the tensor core reads an FP32 register as TF32 by dropping the 13 low bits (CUTLASS's big
/// + small 3xTF32 relies on the same), so lo enters truncated. (Truncating hi too saves one operation
/// per element and ran no faster on an H200: the kernel is not bound by the split's issue slots.)
///
/// Why the error stays within tolerance<float>(K) = u (1 + min(K, 10 sqrt K)), u = 2^-24:
///  * split: |x - hi| <= 2^-11 |x|, and lo as the tensor core reads it is within 2^-10 |x - hi| of
///    x - hi, so the dropped terms (lo_a lo_b and the two residuals) are below 5 * 2^-22 |a||b| =
///    20u |a||b|.
///  * TF32 x TF32 products (11-bit significands) are exact in the tensor core; how it adds them to C
///    is not IEEE (truncation after alignment was measured on A100 and H100), so we assume only a
///    faithful sum per MMA, error <= 2u (|C| + sum |products|), and keep its bias from building up
///    by restarting the tensor-core accumulator from zero every S k-steps (S = the k-steps a worker
///    group takes of TcConfig::chain_slices shared-memory slices, TcConfig::chain_steps; the first
///    MMA of a chain reads a zero operand, Tf32x3::mma_first): a chain of 3 S MMAs, in each step two
///    that add terms 2^-11 smaller, then the large one. With s_q = sum |a||b| over step q's 8 products
///    and |C| <= s_1 + ... + s_(q-1) before step q, the chain's error is <= 2u sum_q (3 (s_1 + ... +
///    s_(q-1)) + (1 + 2^-9) s_q) <= 2u (3 S - 2 + 2^-9) sum |a||b| over its 8 S products.
///  * each chain's result is added to an FP32 register accumulator with round-to-nearest (then
///    worker_reduce and the ordered gang combine, also RN): the model of the CUDA-core path, over
///    about K / (8 S) terms instead of K, so at most u min(K / (8 S), 10 sqrt(K / (8 S))) sum |a||b|.
///  Total <= u (20 + 6 S + min(K / 8, 3.6 sqrt K)) sum |a||b|: within the tolerance for K >= 80 at
///  S <= 8 (TcConfig asserts it); the host uses this path for K >= TcConfig::min_k = 1024 only. A
///  NaN input gives NaN (it reaches lo); an Inf input gives NaN too (inf - inf in the split) where the
///  CUDA-core path gives Inf or NaN.
struct Tf32x3 {
  using T = float;
  static constexpr int km = 8;
  static constexpr bool promote = true;  // see above: a chain per slice, folded into FP32 with RN
  static constexpr int max_chain = 8;    // k-steps per chain the error bound above is written for
  // K-slot relabelling: slot j of lane t (k = t + 4 j in the PTX layout) is taken at physical k 2 t + j,
  // for A and B alike (a permutation of the contraction index), so a lane's two A values of a row are
  // adjacent: one 8-byte load. Paddings for conflict-free loads: A, 8-byte loads of 16 lanes:
  // (g sa / 2 + t) mod 16 distinct for sa = 8 (mod 32); B, 4-byte loads of 32 lanes:
  // (2 t sb + g) mod 32 distinct for sb = 4 (mod 16).
  static constexpr int a_pad = 8, b_pad = 4;
  static constexpr bool swizzled = true;  // TMA tiles: load_a_swizzled / load_b_swizzled below
  static constexpr bool a_pad_ok(int sa) { return sa % 32 == 8; }
  static constexpr bool b_pad_ok(int sb) { return sb % 16 == 4; }
  struct AFrag { std::uint32_t hi[4], lo[4]; };
  struct BFrag { std::uint32_t hi[2], lo[2]; };

  __device__ __forceinline__ static void split(float x, std::uint32_t& hi, std::uint32_t& lo) {
    const std::uint32_t bits = __float_as_uint(x);
    hi = (bits + 0x1000u) & 0xFFFFE000u;
    lo = __float_as_uint(x - __uint_as_float(hi));
  }
  __device__ __forceinline__ static void load_a(AFrag& f, const float* p, int sa, int lane) {
    const int g = lane / 4, t = lane % 4;
    const float2 r0 = *reinterpret_cast<const float2*>(p + g * sa + 2 * t);        // registers 0, 2
    const float2 r1 = *reinterpret_cast<const float2*>(p + (g + 8) * sa + 2 * t);  // registers 1, 3
    split(r0.x, f.hi[0], f.lo[0]);
    split(r1.x, f.hi[1], f.lo[1]);
    split(r0.y, f.hi[2], f.lo[2]);
    split(r1.y, f.hi[3], f.lo[3]);
  }
  __device__ __forceinline__ static void load_b(BFrag& f, const float* p, int sb, int lane) {
    const int g = lane / 4, t = lane % 4;
    split(p[2 * t * sb + g], f.hi[0], f.lo[0]);
    split(p[(2 * t + 1) * sb + g], f.hi[1], f.lo[1]);
  }

  /// The same fragments from TMA's swizzled tiles (see TcConfig::tma and the TMA section): A from a
  /// BM x 32 tile, B from a BK x 32 tile, k-step q at K columns (rows of B) 8 q .. 8 q + 7 of the
  /// tile. A's rows are permuted: lane g reads row tma_row(g) (+ 8) of its MMA tile, so that the
  /// 8-byte loads of lanes g = 0..3 (rows 0, 2, 4, 6) fall in 8 distinct 16-byte chunks; B's rows
  /// 2t, 2t + 1 put lanes g / 4 = 0, 1 into 8 distinct chunks: both conflict-free.
  /// What a lane's addresses share, computed once: k-step q's A chunk is 2q ^ xa, tile n's B chunk
  /// for row 2t + j is 2n ^ xb[j] (2q, 2n even, so the XOR is the tile's chunk plus the lane's).
  struct SwizzleLane {
    int a_off, xa, b_off[2], xb[2];
    __device__ __forceinline__ explicit SwizzleLane(int lane) {
      const int g = lane / 4, t = lane % 4, ra = tma_row(g);
      a_off = ra * 32 + 2 * (t % 2);
      xa = (t / 2) ^ ra;
      for (int j = 0; j < 2; ++j) b_off[j] = (2 * t + j) * 32 + g % 4, xb[j] = (g / 4) ^ (2 * t + j);
    }
  };
  __device__ __forceinline__ static int tma_row(int g) { return (g % 4) * 2 + g / 4; }
  /// tile: the A tile at the MMA tile's first row (a multiple of 8).
  __device__ __forceinline__ static void load_a_swizzled(AFrag& f, const float* tile, int q, const SwizzleLane& sl) {
    const float* p = tile + sl.a_off + (((2 * q) ^ sl.xa) << 2);
    const float2 v0 = *reinterpret_cast<const float2*>(p);
    const float2 v1 = *reinterpret_cast<const float2*>(p + 8 * 32);
    split(v0.x, f.hi[0], f.lo[0]);
    split(v1.x, f.hi[1], f.lo[1]);
    split(v0.y, f.hi[2], f.lo[2]);
    split(v1.y, f.hi[3], f.lo[3]);
  }
  /// tile: the B tile holding the 8 columns 8 n .. 8 n + 7.
  __device__ __forceinline__ static void load_b_swizzled(BFrag& f, const float* tile, int q, int n, const SwizzleLane& sl) {
    const float* p = tile + q * 8 * 32;
    split(p[sl.b_off[0] + (((2 * n) ^ sl.xb[0]) << 2)], f.hi[0], f.lo[0]);
    split(p[sl.b_off[1] + (((2 * n) ^ sl.xb[1]) << 2)], f.hi[1], f.lo[1]);
  }

  __device__ __forceinline__ static void mma_tf32(float (&d)[4], const std::uint32_t (&a)[4], const std::uint32_t (&b)[2]) {
#if __CUDA_ARCH__ >= 800
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#else
    __trap();
#endif
  }
  /// chain += a b for one k-step: the small products first, then the large one (see above).
  __device__ __forceinline__ static void mma(float (&chain)[4], const AFrag& a, const BFrag& b) {
    mma_tf32(chain, a.lo, b.hi);
    mma_tf32(chain, a.hi, b.lo);
    mma_tf32(chain, a.hi, b.hi);
  }
  /// chain = a b: the same, the first MMA reading a zero accumulator operand (the same bits as
  /// zeroing the chain first, without the moves).
  __device__ __forceinline__ static void mma_first(float (&chain)[4], const AFrag& a, const BFrag& b) {
#if __CUDA_ARCH__ >= 800
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%10,%10,%10};\n"
                 : "=f"(chain[0]), "=f"(chain[1]), "=f"(chain[2]), "=f"(chain[3])
                 : "r"(a.lo[0]), "r"(a.lo[1]), "r"(a.lo[2]), "r"(a.lo[3]), "r"(b.hi[0]), "r"(b.hi[1]), "f"(0.0f));
#else
    __trap();
#endif
    mma_tf32(chain, a.hi, b.lo);
    mma_tf32(chain, a.hi, b.hi);
  }
};

// ---- the copies: a block's K range, slice by slice --------------------------------------------------
/// One operand's share of a slice for one thread: Copies 16-byte pieces, piece l from row
/// row0 + l RowStep of the slice (a row of A, or a K row of B) at column `col`, landing at element
/// dst0 + l DstStep of the operand's shared buffer. Where pieces land is the kernel's layout.
template <int Copies, int RowStep, int DstStep>
struct Pieces {
  static constexpr int copies = Copies, row_step = RowStep, dst_step = DstStep;
  int row0, col, dst0;
};

/// The cp.async side of a block's K loop over [k_begin, k_end): BK-deep slices of A (rows from
/// row0, contiguous along K) and of B (K rows, columns from col0), slice t copied by load(.., t) for
/// t = 0, 1, ... in order. Each piece has a running source pointer; a piece whose row of A lies
/// beyond M or whose columns of B lie beyond N copies 0 bytes from a clamped row or column inside the
/// matrix (zero-filling its destination), so that a full slice (all BK of K inside the range: every
/// slice but the range's last) costs its copies and pointer bumps, with no bounds arithmetic.
/// Vec: K and N are multiples of 16 bytes' worth of elements, so each piece stays inside a row and is
/// aligned; otherwise the pieces are copied element by element.
template <class T, int BK, class APieces, class BPieces, bool Vec>
struct SliceLoader {
  static constexpr int CH = 16 / static_cast<int>(sizeof(T));
  const T* a_src[APieces::copies];
  const T* b_src[BPieces::copies];
  int a_valid[APieces::copies];  // elements a full slice's piece takes: CH, or 0 beyond M
  int b_valid;                   // the same for every piece of B: its columns
  APieces ap;
  BPieces bp;
  const T* d_a;
  const T* d_b;
  idx n, range, full_slices;

  __device__ __forceinline__ SliceLoader(const T* a, const T* b, idx m, idx n_, idx k, idx row0, idx col0, idx k_begin,
                                         idx k_end, APieces ap_, BPieces bp_)
      : ap(ap_), bp(bp_), d_a(a), d_b(b), n(n_), range(k_end - k_begin), full_slices((k_end - k_begin) / BK) {
    const idx b_cols = n - col0 - bp.col;
    b_valid = b_cols <= 0 ? 0 : b_cols >= CH ? CH : static_cast<int>(b_cols);
#pragma unroll
    for (int l = 0; l < APieces::copies; ++l) {
      const idx row = row0 + ap.row0 + l * APieces::row_step;
      a_src[l] = a + (row < m ? row : row0) * k + k_begin + ap.col;
      a_valid[l] = row < m ? CH : 0;
    }
#pragma unroll
    for (int l = 0; l < BPieces::copies; ++l)
      b_src[l] = b + (k_begin + bp.row0 + l * BPieces::row_step) * n + col0 + (b_valid > 0 ? bp.col : 0);
  }

  /// Slice t into the stage buffers as (A) and bs (B).
  __device__ __forceinline__ void load(T* as, T* bs, idx t) {
    if (t < full_slices) {
#pragma unroll
      for (int l = 0; l < APieces::copies; ++l) copy(as + ap.dst0 + l * APieces::dst_step, a_src[l], a_valid[l]);
#pragma unroll
      for (int l = 0; l < BPieces::copies; ++l) copy(bs + bp.dst0 + l * BPieces::dst_step, b_src[l], b_valid);
    } else {  // the range's last slice, shorter than BK: K beyond it is zero-filled (0 bytes read from the matrix's start)
      const int left = static_cast<int>(range - t * BK);
      const int a_left = left - ap.col <= 0 ? 0 : left - ap.col >= CH ? CH : left - ap.col;
#pragma unroll
      for (int l = 0; l < APieces::copies; ++l) {
        const int valid = a_valid[l] > 0 ? a_left : 0;
        copy(as + ap.dst0 + l * APieces::dst_step, valid > 0 ? a_src[l] : d_a, valid);
      }
#pragma unroll
      for (int l = 0; l < BPieces::copies; ++l) {
        const int valid = bp.row0 + l * BPieces::row_step < left ? b_valid : 0;
        copy(bs + bp.dst0 + l * BPieces::dst_step, valid > 0 ? b_src[l] : d_b, valid);
      }
    }
#pragma unroll
    for (int l = 0; l < APieces::copies; ++l) a_src[l] += BK;
#pragma unroll
    for (int l = 0; l < BPieces::copies; ++l) b_src[l] += idx{BK} * n;
  }

 private:
  /// One piece: `valid` elements from src, zeros after; as one copy or element by element.
  __device__ __forceinline__ static void copy(T* dst, const T* src, int valid) {
    if constexpr (Vec) {
      cp_async<16>(dst, src, valid * static_cast<int>(sizeof(T)));
    } else {
#pragma unroll
      for (int q = 0; q < CH; ++q) cp_async<sizeof(T)>(dst + q, src + (q < valid ? q : 0), q < valid ? static_cast<int>(sizeof(T)) : 0);
    }
  }
};

// ---- configuration ----------------------------------------------------------------------------------
/// Tuning knobs: the C tile (BM x BN, one block), the warp tile (WM x WN, multiples of 16 x 8), KG
/// worker groups splitting each slice's K steps, BK-deep slices, `stages` slices of shared memory,
/// resident blocks per SM the registers are capped for.
/// Tma (sm_90, float, K and N multiples of 4): slices arrive by 2-D tensor copies issued by one thread
/// (A as BK / 32 tiles of BM x 32, B as BN / 32 tiles of BK x 32, 128-byte swizzled, unpadded)
/// instead of every thread's cp.async; what lies outside A or B arrives as zeros.
/// ChainSlices (3xTF32): consecutive slices one MMA chain spans (chain_steps k-steps in all).
template <class Math_, int BM_, int BN_, int WM_, int WN_, int KG_, int BK_, int Stages_, int MinBlocks_, bool Tma_ = false,
          int ChainSlices_ = 1>
struct TcConfig {
  using Math = Math_;
  using T = typename Math::T;
  static constexpr int BM = BM_, BN = BN_, WM = WM_, WN = WN_, KG = KG_, BK = BK_, stages = Stages_, min_blocks = MinBlocks_;
  static constexpr int chain_slices = ChainSlices_;
  static constexpr bool tma = Tma_;
  static constexpr int tile_w = 128 / static_cast<int>(sizeof(T));  // elements in a swizzled tile's 128-byte row
  static constexpr int MT = WM / 16, NT = WN / 8;                  // MMA tiles per warp
  static constexpr int group_threads = 32 * (BM / WM) * (BN / WN);
  static constexpr int threads = group_threads * KG;
  static constexpr int steps = BK / Math::km / KG;                 // MMA k-steps per group and slice
  static constexpr int CH = 16 / static_cast<int>(sizeof(T));      // elements per 16-byte copy
  static constexpr int sa = BK + Math::a_pad, sb = BN + Math::b_pad;
  static constexpr int a_elems = tma ? BM * BK : BM * sa, stage_elems = a_elems + BK * (tma ? BN : sb);
  static constexpr std::size_t smem_bytes = sizeof(T) * stages * stage_elems + (tma ? 1024 : 0);  // + alignment
  static constexpr int a_copies = BM * BK / CH / threads, b_copies = BK * BN / CH / threads;  // per thread and slice
  /// Below this K the gang level takes microseconds either way (and see Tf32x3 for accuracy).
  static constexpr std::int64_t min_k = 1024;
  static_assert(BM % WM == 0 && BN % WN == 0 && WM % 16 == 0 && WN % 8 == 0, "warp tiles");
  static_assert(steps >= 1 && steps * Math::km * KG == BK, "K steps split evenly over the worker groups");
  static_assert(BK % CH == 0 && BN % CH == 0 && (sa * sizeof(T)) % 16 == 0 && (sb * sizeof(T)) % 16 == 0, "16-byte copies");
  static_assert(a_copies >= 1 && a_copies * CH * threads == BM * BK, "A slice copy mapping");
  static_assert(b_copies >= 1 && b_copies * CH * threads == BK * BN, "B slice copy mapping");
  static_assert(threads % (BK / CH) == 0 && threads % (BN / CH) == 0, "a thread's copies share K offset / columns");
  static_assert(Math::a_pad_ok(sa) && Math::b_pad_ok(sb), "conflict-free fragment loads");
  static_assert(stages >= 2, "pipeline");
  static_assert(!tma || (Math::swizzled && BK % tile_w == 0 && BN % tile_w == 0 && BM <= 256 && BK <= 256 &&
                         (BM * 128) % 1024 == 0 && (BK * 128) % 1024 == 0),
                "tensor-copy tiles: fragment loads from swizzled tiles, 1024-byte aligned");
  static_assert(!tma || (steps * Math::km == tile_w && WN == tile_w),
                "tensor-copy tiles: a group's k-steps span one A tile, a warp's columns one B tile");
  static constexpr int chain_steps = steps * chain_slices;  // k-steps an MMA chain spans
  static_assert(chain_slices >= 1 && (chain_slices == 1 || (Math::promote && !tma)), "chains over several slices: 3xTF32, cp.async");
  static_assert(!Math::promote || chain_steps <= Math::max_chain, "tensor-core chains the error bound covers");
};

/// The block's product over [k_begin, k_end): acc holds, for each warp-tile MMA tile (mt, nt) and C
/// register i, the sum over the block's K range (valid in worker group 0 after run()).
template <class Cfg>
struct TcProduct {
  using M = typename Cfg::Math;
  using T = typename Cfg::T;
  T acc[Cfg::MT][Cfg::NT][4];
  T chain[M::promote ? Cfg::MT : 1][M::promote ? Cfg::NT : 1][4];  // promoting math: the open MMA chain

  __device__ __forceinline__ static int warp_row(int mt) {
    return (static_cast<int>(threadIdx.x) / 32) / (Cfg::BN / Cfg::WN) * Cfg::WM + mt * 16;
  }
  __device__ __forceinline__ static int warp_col(int nt) {
    return (static_cast<int>(threadIdx.x) / 32) % (Cfg::BN / Cfg::WN) * Cfg::WN + nt * 8;
  }
  /// Tile row and column of C register i of MMA tile (mt, nt) in this lane.
  __device__ __forceinline__ static int row_of(int mt, int i) {
    const int g = static_cast<int>(threadIdx.x) % 32 / 4;
    if constexpr (Cfg::tma) return warp_row(mt) + M::tma_row(g) + 8 * (i / 2);
    else return warp_row(mt) + g + 8 * (i / 2);
  }
  __device__ __forceinline__ static int col_of(int nt, int i) { return warp_col(nt) + 2 * (static_cast<int>(threadIdx.x) % 4) + i % 2; }
  /// The block's tile into `mine` (BM x BN, row-major), after run(): worker group 0 holds it. C
  /// registers 2h, 2h + 1 are neighbours in a row: 8- or 16-byte stores.
  __device__ __forceinline__ void store_partial(T* mine) const {
    if (threadIdx.y != 0) return;
#pragma unroll
    for (int mt = 0; mt < Cfg::MT; ++mt)
#pragma unroll
      for (int nt = 0; nt < Cfg::NT; ++nt)
#pragma unroll
        for (int h = 0; h < 2; ++h)
          *reinterpret_cast<dev::Vec<T, 2>*>(mine + row_of(mt, 2 * h) * Cfg::BN + col_of(nt, 0)) =
              dev::Vec<T, 2>{{acc[mt][nt][2 * h], acc[mt][nt][2 * h + 1]}};
  }
  /// f(mt, nt, i) for every C register of the warp tile.
  template <class F>
  __device__ __forceinline__ static void for_each_c(F&& f) {
#pragma unroll
    for (int mt = 0; mt < Cfg::MT; ++mt)
#pragma unroll
      for (int nt = 0; nt < Cfg::NT; ++nt)
#pragma unroll
        for (int i = 0; i < 4; ++i) f(mt, nt, i);
  }

  /// acc += this group's K steps (from k_first) of slice t in stage buffer `as` (A, then B).
  /// Promoting math (3xTF32) runs one chain from zero over Cfg::chain_slices slices (the first one
  /// starts it, the last one of the group, or of the range, folds it into acc with round-to-nearest);
  /// exact math (DMMA) accumulates in place.
  __device__ __forceinline__ void multiply(const T* as, int k_first, int lane, idx t, idx slices) {
    if constexpr (M::promote && Cfg::chain_slices > 1) {
      if (t % Cfg::chain_slices == 0) multiply_slice<true>(as, k_first, lane);
      else multiply_slice<false>(as, k_first, lane);
      if (t % Cfg::chain_slices == Cfg::chain_slices - 1 || t + 1 == slices) fold();
    } else {
      multiply_slice<true>(as, k_first, lane);
      if constexpr (M::promote) fold();
    }
  }
  /// The thread level of the reduction over K: each chain into acc, in order.
  __device__ __forceinline__ void fold() {
    for_each_c([&](int mt, int nt, int i) { acc[mt][nt][i] = Sum::combine(acc[mt][nt][i], chain[mt][nt][i]); });
  }
  template <bool First>
  __device__ __forceinline__ void multiply_slice(const T* as, int k_first, int lane) {
    const T* bs = as + Cfg::a_elems;
    [[maybe_unused]] const auto sl = [&] {
      if constexpr (Cfg::tma) return typename M::SwizzleLane(lane);
      else return 0;
    }();
#pragma unroll
    for (int q = 0; q < Cfg::steps; ++q) {
      const int kk = k_first + q * M::km;
      typename M::AFrag af[Cfg::MT];
      typename M::BFrag bf[Cfg::NT];
#pragma unroll
      for (int mt = 0; mt < Cfg::MT; ++mt) {
        if constexpr (Cfg::tma) M::load_a_swizzled(af[mt], as + (k_first / Cfg::tile_w * Cfg::BM + warp_row(mt)) * Cfg::tile_w, q, sl);
        else M::load_a(af[mt], as + warp_row(mt) * Cfg::sa + kk, Cfg::sa, lane);
      }
#pragma unroll
      for (int nt = 0; nt < Cfg::NT; ++nt) {
        if constexpr (Cfg::tma)
          M::load_b_swizzled(bf[nt], bs + (warp_col(0) / Cfg::tile_w * Cfg::BK + k_first) * Cfg::tile_w, q, nt, sl);
        else M::load_b(bf[nt], bs + kk * Cfg::sb + warp_col(nt), Cfg::sb, lane);
      }
#pragma unroll
      for (int mt = 0; mt < Cfg::MT; ++mt)
#pragma unroll
        for (int nt = 0; nt < Cfg::NT; ++nt) {
          if constexpr (!M::promote) M::mma(acc[mt][nt], af[mt], bf[nt]);
          else if (First && q == 0) M::mma_first(chain[mt][nt], af[mt], bf[nt]);  // a new chain
          else M::mma(chain[mt][nt], af[mt], bf[nt]);
        }
    }
  }

  /// The block's K range with tensor copies (Cfg::tma): thread 0 issues slice t + stages - 1 into the
  /// buffer every thread has left behind (after the barrier), each buffer's mbarrier counts its bytes.
  /// smem: 1024-byte aligned.
  __device__ __forceinline__ void run_tma(const CUtensorMap* ta, const CUtensorMap* tb, idx row0, idx col0, idx k_begin,
                                          idx k_end, T* smem) {
    __shared__ std::uint64_t bars[Cfg::stages];
    for_each_c([&](int mt, int nt, int i) { acc[mt][nt][i] = Sum::identity<T>(); });
    const bool issuer = dev::block_thread_rank() == 0;
    const int lane = static_cast<int>(threadIdx.x) % 32;
    if (issuer)
      for (int s = 0; s < Cfg::stages; ++s) mbar_init(&bars[s], 1);
    __syncthreads();
    const idx slices = (k_end - k_begin + Cfg::BK - 1) / Cfg::BK;  // block-uniform
    auto load = [&](int buf, idx t) {  // by the issuer
      T* as = smem + buf * Cfg::stage_elems;
      T* bs = as + Cfg::a_elems;
      const int k0 = static_cast<int>(k_begin + t * Cfg::BK);  // K <= 2^31 - 1 (host)
      mbar_arrive_expect_tx(&bars[buf], static_cast<unsigned>(Cfg::stage_elems * sizeof(T)));
#pragma unroll
      for (int h = 0; h < Cfg::BK / Cfg::tile_w; ++h)
        tma_load_2d(as + h * Cfg::BM * Cfg::tile_w, ta, k0 + Cfg::tile_w * h, static_cast<int>(row0), &bars[buf]);
#pragma unroll
      for (int h = 0; h < Cfg::BN / Cfg::tile_w; ++h)
        tma_load_2d(bs + h * Cfg::BK * Cfg::tile_w, tb, static_cast<int>(col0) + Cfg::tile_w * h, k0, &bars[buf]);
    };
    if (issuer)
      for (int s = 0; s < Cfg::stages - 1; ++s)
        if (s < slices) load(s, s);
    const int k_first = static_cast<int>(threadIdx.y) * Cfg::steps * M::km;
    int rd = 0, wr = Cfg::stages - 1;
    unsigned phases = 0;  // bit b: the parity of buffer b's next completion
    for (idx t = 0; t < slices; ++t) {
      mbar_wait(&bars[rd], (phases >> rd) & 1u);  // slice t has landed
      phases ^= 1u << rd;
      __syncthreads();  // and everyone is done with slice t - 1, whose buffer (wr) is refilled
      if (issuer && t + Cfg::stages - 1 < slices) load(wr, t + Cfg::stages - 1);
      multiply(smem + rd * Cfg::stage_elems, k_first, lane, t, slices);
      rd = rd + 1 == Cfg::stages ? 0 : rd + 1;
      wr = wr + 1 == Cfg::stages ? 0 : wr + 1;
    }
    __syncthreads();  // the shared memory is reused below
    if constexpr (Cfg::KG > 1)
      for_each_c([&](int mt, int nt, int i) { acc[mt][nt][i] = dev::worker_reduce<Sum>(acc[mt][nt][i], smem); });
  }

  /// Vec: K and N are multiples of 16 bytes' worth of elements, so each 16-byte copy stays inside a
  /// row and is aligned; otherwise the copies go element by element (a template parameter: one
  /// variant in the loop, the registers of one).
  template <bool Vec>
  __device__ __forceinline__ void run(const T* __restrict__ d_a, const T* __restrict__ d_b, idx m, idx n, idx k,
                                      idx row0, idx col0, idx k_begin, idx k_end, T* smem) {
    for_each_c([&](int mt, int nt, int i) { acc[mt][nt][i] = Sum::identity<T>(); });
    const int tid = static_cast<int>(dev::block_thread_rank());
    const int lane = static_cast<int>(threadIdx.x) % 32;
    constexpr int CH = Cfg::CH;

    // A slice: BM x BK of A with lanes along its rows (16 bytes each), BK x BN of B with lanes along
    // its rows, both in padded row-major buffers. A thread's pieces of a slice share their K offset
    // in A (rows a_r + l a_step) and their columns in B (rows b_k + l b_step).
    constexpr int a_step = Cfg::threads / (Cfg::BK / CH), b_step = Cfg::threads / (Cfg::BN / CH);
    const int a_r = tid / (Cfg::BK / CH), a_k = tid % (Cfg::BK / CH) * CH;
    const int b_k = tid / (Cfg::BN / CH), b_c = tid % (Cfg::BN / CH) * CH;
    using AP = Pieces<Cfg::a_copies, a_step, a_step * Cfg::sa>;
    using BP = Pieces<Cfg::b_copies, b_step, b_step * Cfg::sb>;
    SliceLoader<T, Cfg::BK, AP, BP, Vec> loader(d_a, d_b, m, n, k, row0, col0, k_begin, k_end, AP{a_r, a_k, a_r * Cfg::sa + a_k},
                                               BP{b_k, b_c, b_k * Cfg::sb + b_c});
    auto load = [&](int buf, idx t) {
      T* as = smem + buf * Cfg::stage_elems;
      loader.load(as, as + Cfg::a_elems, t);
    };

    const idx slices = (k_end - k_begin + Cfg::BK - 1) / Cfg::BK;  // block-uniform
    const int k_first = static_cast<int>(threadIdx.y) * Cfg::steps * M::km;  // this group's K steps of a slice
#pragma unroll
    for (int s = 0; s < Cfg::stages - 1; ++s) {
      if (s < slices) load(s, s);
      cp_async_commit();  // empty groups too: wait_group counts slices
    }
    int rd = 0, wr = Cfg::stages - 1;  // buffers of slice t and of slice t + stages - 1
    for (idx t = 0; t < slices; ++t) {
      cp_async_wait<Cfg::stages - 2>();  // slice t has landed (this thread's copies) ...
      __syncthreads();                   // ... everyone's; and slice t - 1's buffer (wr) is free again
      if (t + Cfg::stages - 1 < slices) load(wr, t + Cfg::stages - 1);
      cp_async_commit();
      multiply(smem + rd * Cfg::stage_elems, k_first, lane, t, slices);
      rd = rd + 1 == Cfg::stages ? 0 : rd + 1;
      wr = wr + 1 == Cfg::stages ? 0 : wr + 1;
    }
    cp_async_wait<0>();  // only empty groups are left; the shared memory is reused below
    __syncthreads();
    if constexpr (Cfg::KG > 1)  // the worker level: groups combined in order y = 0, 1, ...
      for_each_c([&](int mt, int nt, int i) { acc[mt][nt][i] = dev::worker_reduce<Sum>(acc[mt][nt][i], smem); });
  }
};

/// gang_level with the block product on the tensor cores; the same arguments, grid and combine, but
/// the 16-byte copies are chosen at compile time (Vec = vec_a && vec_b, which the host checks).
template <class Cfg, bool Vec>
__global__ void __launch_bounds__(Cfg::threads, Cfg::min_blocks)
    gang_level_tc(const typename Cfg::T* __restrict__ d_a, const typename Cfg::T* __restrict__ d_b,
                  typename Cfg::T* __restrict__ d_c, idx m, idx n, idx k, idx k_chunk,
                  typename Cfg::T* __restrict__ d_partials, unsigned int* d_tickets, bool /*vec_a*/, bool /*vec_b*/) {
  using T = typename Cfg::T;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  TcProduct<Cfg> p;
  split_k_gang<T, Cfg::BM, Cfg::BN, Cfg::threads>(
      p, [&](const SplitTile& st) { p.template run<Vec>(d_a, d_b, m, n, k, st.row0, st.col0, st.k_begin, st.k_end, reinterpret_cast<T*>(smem_raw)); },
      d_c, m, n, k, k_chunk, d_partials, d_tickets);
}

/// gang_level_tc fed by tensor copies (Cfg::tma): A and B reach the kernel as tensor maps.
template <class Cfg>
__global__ void __launch_bounds__(Cfg::threads, Cfg::min_blocks)
    gang_level_tma(const __grid_constant__ CUtensorMap ta, const __grid_constant__ CUtensorMap tb, typename Cfg::T* __restrict__ d_c,
                   idx m, idx n, idx k, idx k_chunk, typename Cfg::T* __restrict__ d_partials, unsigned int* d_tickets) {
  using T = typename Cfg::T;
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  T* smem = reinterpret_cast<T*>((reinterpret_cast<std::uintptr_t>(smem_raw) + 1023) & ~std::uintptr_t{1023});
  TcProduct<Cfg> p;
  split_k_gang<T, Cfg::BM, Cfg::BN, Cfg::threads>(
      p, [&](const SplitTile& st) { p.run_tma(&ta, &tb, st.row0, st.col0, st.k_begin, st.k_end, smem); }, d_c, m, n, k,
      k_chunk, d_partials, d_tickets);
}

}  // namespace tally::matmul::kernels::tc
