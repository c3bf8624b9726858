#pragma once
// The tensor cores' arithmetic for the tensor-core block products (tensor_core.cuh): the MMA
// instructions, their fragment loads from padded (cp.async) or 128-byte-swizzled (TMA) shared-memory
// tiles, and, for float, the 3xTF32 split with its error bound.
//
//   double: DMMA (mma.sync m16n8k{4,8,16}.f64 on sm_90, two m8n8k4 per k-group of 4 before), exact
//           FP64 FMAs: the error model of the CUDA-core path.
//   float:  3xTF32: x = hi + lo with hi = tf32(x), lo = tf32(x - hi); C += lo_a hi_b + hi_a lo_b
//           + hi_a hi_b on m16n8k8 TF32 MMAs with FP32 accumulators (never plain TF32).
//
// Fragment layouts (PTX ISA, "Matrix fragments for mma.m16n8k*"; g = lane / 4, t = lane % 4): for
// m16n8kKM, A register i holds A(g + 8 (i % 2), t + 4 (i / 2)), B register j holds B(t + 4 j, g), and
// C register i holds C(g + 8 (i / 2), 2 t + i % 2). m8n8k4.f64: A(g, t), B(t, g), C(g, 2 t + i), i.e.
// the upper half of the m16n8k4 layout, so an m16n8k4 is two m8n8k4 on rows g and g + 8.

#include <cstdint>

namespace tally::matmul::kernels::tc {

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
  struct AFrag {
    double v[KM / 2];
  };
  struct BFrag {
    double v[KM / 4];
  };

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
    const double2 v0 = *reinterpret_cast<const double2*>(p);           // row g: registers 0, 2
    const double2 v1 = *reinterpret_cast<const double2*>(p + 8 * 16);  // row g + 8: registers 1, 3
    f.v[0] = v0.x, f.v[2] = v0.y, f.v[1] = v1.x, f.v[3] = v1.y;
  }
  /// tile: the B tile (K rows x 16 columns) holding the 8 columns 8 n .. 8 n + 7.
  __device__ __forceinline__ static void load_b_swizzled(BFrag& f, const double* tile, int q, int n,
                                                         const SwizzleLane& sl) {
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
      asm volatile(
          "mma.sync.aligned.m16n8k8.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
          : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3])
          : "d"(a.v[0]), "d"(a.v[1]), "d"(a.v[2]), "d"(a.v[3]), "d"(b.v[0]), "d"(b.v[1]));
    else
      asm volatile(
          "mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, {%4,%5,%6,%7,%8,%9,%10,%11}, "
          "{%12,%13,%14,%15}, {%0,%1,%2,%3};\n"
          : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3])
          : "d"(a.v[0]), "d"(a.v[1]), "d"(a.v[2]), "d"(a.v[3]), "d"(a.v[4]), "d"(a.v[5]), "d"(a.v[6]), "d"(a.v[7]),
            "d"(b.v[0]), "d"(b.v[1]), "d"(b.v[2]), "d"(b.v[3]));
#elif __CUDA_ARCH__ >= 800
#pragma unroll
    for (int j = 0; j < KM / 4; ++j) {  // k-group j: A registers 2j (row g) and 2j + 1 (row g + 8)
      asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0,%1}, {%2}, {%3}, {%0,%1};\n"
                   : "+d"(d[0]), "+d"(d[1])
                   : "d"(a.v[2 * j]), "d"(b.v[j]));
      asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0,%1}, {%2}, {%3}, {%0,%1};\n"
                   : "+d"(d[2]), "+d"(d[3])
                   : "d"(a.v[2 * j + 1]), "d"(b.v[j]));
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
/// + small 3xTF32 relies on the same), so lo enters truncated. hi is rounded, not truncated: the
/// kernels are not bound by the split's issue slots, and rounding halves hi's error.
///
/// The error bound (u = 2^-24; matmul.hpp, ErrorBound: extra_u = chain_error_u(S), depth the folds):
///  * split: |x - hi| <= 2^-11 |x|, and lo as the tensor core reads it is within 2^-10 |x - hi| of
///    x - hi, so the dropped terms (lo_a lo_b and the two residuals) are below 5 * 2^-22 |a||b| =
///    20u |a||b|.
///  * TF32 x TF32 products (11-bit significands) are exact in the tensor core; how it adds them to C
///    is not IEEE (sm_80 and sm_90 truncate after alignment), so we assume only a
///    faithful sum per MMA, error <= 2u (|C| + sum |products|), and keep its bias from building up
///    by restarting the tensor-core accumulator from zero every S k-steps (S = the k-steps a worker
///    group takes of TcConfig::chain_slices shared-memory slices, TcConfig::chain_steps; the first
///    MMA of a chain reads a zero operand, Tf32x3::mma_first): a chain of 3 S MMAs, in each step two
///    that add terms 2^-11 smaller, then the large one. With s_q = sum |a||b| over step q's 8 products
///    and |C| <= s_1 + ... + s_(q-1) before step q, the chain's error is <= 2u sum_q (3 (s_1 + ... +
///    s_(q-1)) + (1 + 2^-9) s_q) <= 2u (3 S - 2 + 2^-9) sum |a||b| over its 8 S products.
///  * each chain's result is added to an FP32 register accumulator with round-to-nearest (then
///    worker_reduce and the ordered gang combine, also RN): a sum of the ceil(K / (8 S)) chains in
///    turn, then the groups and splits, of depth D, within gamma_D of the chains' |sums|.
///  Total <= ((20 + 6 S) u + gamma_D (1 + (20 + 6 S) u)) sum |a||b|, D about K / (8 S): a K-term
///  FP32 sum's gamma_K is larger from K = 70 at S = 8 on (tiled_tc.cuh: tf32x3_pays); the gang
///  level uses this path for K >= TcConfig::min_k = 1024 only.
///
/// NaN and infinities, by IEEE as on the CUDA cores. A NaN x reaches lo (x - hi is NaN), so every
/// product with it is NaN. The plain split (Specials = false) turns an infinite x into hi = x and
/// lo = inf - inf = NaN, and an infinite b's hi meets a finite a's lo, which may be 0 or of the other
/// sign (0 x Inf, or Inf - Inf): NaN where IEEE gives an infinity. With Specials, an infinite x splits
/// into hi = +-1 and lo = x instead: then a b = lo_a hi_b + hi_a lo_b + hi_a hi_b is (finite) +
/// hi_a (+-Inf) + (finite) for a finite a, an infinity of a b's sign (NaN for a = 0), and two
/// infinities give two infinities of the same sign. (A subnormal a below 2^-137, whose hi is 0, times
/// an infinity gives NaN.) Finite and NaN inputs split bit for bit as without; the select costs two
/// instructions a split and registers in the main loops, so the engines take this variant only for
/// inputs that hold an infinity (matmul_cuda.cu).
template <bool Specials>
struct Tf32x3Of {
  using T = float;
  static constexpr int km = 8;
  static constexpr bool promote = true;  // see above: a chain per slice, folded into FP32 with RN
  static constexpr int max_chain = 8;    // k-steps per chain the error bound above is written for
  /// The split's and a chain of `steps` k-steps' error, in units of u of the chain's sum |a||b| (above).
  static constexpr double chain_error_u(int steps) { return 20.0 + 6.0 * steps; }
  // K-slot relabelling: slot j of lane t (k = t + 4 j in the PTX layout) is taken at physical k 2 t + j,
  // for A and B alike (a permutation of the contraction index), so a lane's two A values of a row are
  // adjacent: one 8-byte load. Paddings for conflict-free loads: A, 8-byte loads of 16 lanes:
  // (g sa / 2 + t) mod 16 distinct for sa = 8 (mod 32); B, 4-byte loads of 32 lanes:
  // (2 t sb + g) mod 32 distinct for sb = 4 (mod 16).
  static constexpr int a_pad = 8, b_pad = 4;
  static constexpr bool swizzled = true;  // TMA tiles: load_a_swizzled / load_b_swizzled below
  static constexpr bool a_pad_ok(int sa) { return sa % 32 == 8; }
  static constexpr bool b_pad_ok(int sb) { return sb % 16 == 4; }
  struct AFrag {
    std::uint32_t hi[4], lo[4];
  };
  struct BFrag {
    std::uint32_t hi[2], lo[2];
  };

  __device__ __forceinline__ static void split(float x, std::uint32_t& hi, std::uint32_t& lo) {
    const std::uint32_t bits = __float_as_uint(x);
    hi = (bits + 0x1000u) & 0xFFFFE000u;
    if constexpr (Specials)
      if (fabsf(x) == __uint_as_float(0x7F800000u)) hi ^= 0x40000000u;  // +-Inf: hi = +-1, and lo = x - hi = x
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
  __device__ __forceinline__ static void load_b_swizzled(BFrag& f, const float* tile, int q, int n,
                                                         const SwizzleLane& sl) {
    const float* p = tile + q * 8 * 32;
    split(p[sl.b_off[0] + (((2 * n) ^ sl.xb[0]) << 2)], f.hi[0], f.lo[0]);
    split(p[sl.b_off[1] + (((2 * n) ^ sl.xb[1]) << 2)], f.hi[1], f.lo[1]);
  }

  __device__ __forceinline__ static void mma_tf32(float (&d)[4], const std::uint32_t (&a)[4],
                                                  const std::uint32_t (&b)[2]) {
#if __CUDA_ARCH__ >= 800
    asm volatile(
        "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
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
    asm volatile(
        "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%10,%10,%10};\n"
        : "=f"(chain[0]), "=f"(chain[1]), "=f"(chain[2]), "=f"(chain[3])
        : "r"(a.lo[0]), "r"(a.lo[1]), "r"(a.lo[2]), "r"(a.lo[3]), "r"(b.hi[0]), "r"(b.hi[1]), "f"(0.0f));
#else
    __trap();
#endif
    mma_tf32(chain, a.hi, b.lo);
    mma_tf32(chain, a.hi, b.hi);
  }
};
/// 3xTF32 for finite (and NaN) inputs; with infinities kept IEEE's.
using Tf32x3 = Tf32x3Of<false>;
using Tf32x3Specials = Tf32x3Of<true>;

}  // namespace tally::matmul::kernels::tc
