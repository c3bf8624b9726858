#pragma once
// Tensor-core block products for the gang level's Gram case (C of at most 64 x 64, K in the
// millions): the same split-K scheme as gang_level (K split over blockIdx.y, partial C tiles, the
// gang_arrive tickets, the combine in block order, in two levels beyond 32 splits), with the block's
// product on the tensor cores.
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
// The MMA arithmetic and fragment loads (Dmma, Tf32x3) are in tc_mma.cuh.

#include <cuda.h>  // CUtensorMap (a plain struct; no driver call is made here)

#include <cstdint>
#include <type_traits>

#include "kernels.cuh"
#include "tc_mma.cuh"

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
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src), "r"(bytes)
                 : "memory");
  else
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(smem_addr(dst)), "l"(src), "n"(Size),
                 "r"(bytes)
                 : "memory");
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
      " @!done bra WAIT;\n}\n" ::"r"(smem_addr(bar)),
      "r"(parity)
      : "memory");
#endif
}
/// One arrival (release) on a barrier whose count is the number of arriving threads.
__device__ __forceinline__ void mbar_arrive(std::uint64_t* bar) {
#if __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem_addr(bar)) : "memory");
#endif
}
/// setmaxnreg (sm_90a code only; elsewhere nothing): a warpgroup's register budget raised (Inc) or
/// lowered to Regs, so that warps with different roles share the register file unevenly. It takes
/// effect only with a register cap at entry (__launch_bounds__(threads, 1)) and when each
/// warpgroup's role is one branch of a single if / else.
template <int Regs, bool Inc>
__device__ __forceinline__ void set_max_regs() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  if constexpr (Inc) asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(Regs));
  else asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(Regs));
#endif
}
/// The box of `map` at (c0 innermost, c1) into dst; what lies outside the tensor arrives as zeros.
__device__ __forceinline__ void tma_load_2d(void* dst, const CUtensorMap* map, int c0, int c1, std::uint64_t* bar) {
#if __CUDA_ARCH__ >= 900
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n" ::"r"(
          smem_addr(dst)),
      "l"(map), "r"(c0), "r"(c1), "r"(smem_addr(bar))
      : "memory");
#else
  __trap();
#endif
}

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
    } else {  // the range's last slice, shorter than BK: K beyond it is zero-filled (0 bytes read from the matrix's
              // start)
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
      for (int q = 0; q < CH; ++q)
        cp_async<sizeof(T)>(dst + q, src + (q < valid ? q : 0), q < valid ? static_cast<int>(sizeof(T)) : 0);
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
/// RollSteps: a group's k-steps of a slice in a loop that is not unrolled, so that one k-step's
/// fragments are held at a time (unrolled, the compiler loads the next step's early and may spill).
/// EarlyIssue (Tma): slice t + stages - 1 is issued as soon as every warp is done with slice t - 1,
/// before waiting for slice t, so that `stages` slices are in flight while the block waits (not
/// stages - 1, issued only once slice t has landed): the same barriers and registers.
template <class Math_, int BM_, int BN_, int WM_, int WN_, int KG_, int BK_, int Stages_, int MinBlocks_,
          bool Tma_ = false, int ChainSlices_ = 1, bool RollSteps_ = false, bool EarlyIssue_ = false>
struct TcConfig {
  using Math = Math_;
  using T = typename Math::T;
  static constexpr int BM = BM_, BN = BN_, WM = WM_, WN = WN_, KG = KG_, BK = BK_, stages = Stages_,
                       min_blocks = MinBlocks_;
  static constexpr int chain_slices = ChainSlices_;
  static constexpr bool roll_steps = RollSteps_;
  static constexpr bool early_issue = EarlyIssue_;
  static constexpr bool tma = Tma_;
  static constexpr int tile_w = 128 / static_cast<int>(sizeof(T));  // elements in a swizzled tile's 128-byte row
  static constexpr int MT = WM / 16, NT = WN / 8;                   // MMA tiles per warp
  static constexpr int group_threads = 32 * (BM / WM) * (BN / WN);
  static constexpr int threads = group_threads * KG;
  static constexpr int steps = BK / Math::km / KG;             // MMA k-steps per group and slice
  static constexpr int CH = 16 / static_cast<int>(sizeof(T));  // elements per 16-byte copy
  static constexpr int sa = BK + Math::a_pad, sb = BN + Math::b_pad;
  static constexpr int a_elems = tma ? BM * BK : BM * sa, stage_elems = a_elems + BK * (tma ? BN : sb);
  static constexpr std::size_t smem_bytes = sizeof(T) * stages * stage_elems + (tma ? 1024 : 0);  // + alignment
  static constexpr int a_copies = BM * BK / CH / threads, b_copies = BK * BN / CH / threads;  // per thread and slice
  /// Below this K the gang level takes microseconds either way (and see Tf32x3 for accuracy).
  static constexpr std::int64_t min_k = 1024;
  static_assert(BM % WM == 0 && BN % WN == 0 && WM % 16 == 0 && WN % 8 == 0, "warp tiles");
  static_assert(steps >= 1 && steps * Math::km * KG == BK, "K steps split evenly over the worker groups");
  static_assert(BK % CH == 0 && BN % CH == 0 && (sa * sizeof(T)) % 16 == 0 && (sb * sizeof(T)) % 16 == 0,
                "16-byte copies");
  static_assert(a_copies >= 1 && a_copies * CH * threads == BM * BK, "A slice copy mapping");
  static_assert(b_copies >= 1 && b_copies * CH * threads == BK * BN, "B slice copy mapping");
  static_assert(tma || (threads % (BK / CH) == 0 && threads % (BN / CH) == 0),
                "a thread's copies share K offset / columns");
  static_assert(Math::a_pad_ok(sa) && Math::b_pad_ok(sb), "conflict-free fragment loads");
  static_assert(stages >= 2, "pipeline");
  static_assert(!tma || (Math::swizzled && BK % tile_w == 0 && BN % tile_w == 0 && BM <= 256 && BK <= 256 &&
                         (BM * 128) % 1024 == 0 && (BK * 128) % 1024 == 0),
                "tensor-copy tiles: fragment loads from swizzled tiles, 1024-byte aligned");
  static_assert(!tma || (tile_w % Math::km == 0 && (WN % tile_w == 0 || tile_w % WN == 0)),
                "tensor-copy tiles: k-steps inside A tiles, a warp's columns whole B tiles or part of one");
  static constexpr int chain_steps = steps * chain_slices;  // k-steps an MMA chain spans
  /// The same tile on other MMA arithmetic (Tf32x3Specials for inputs with infinities).
  template <class OtherMath>
  using with_math = TcConfig<OtherMath, BM_, BN_, WM_, WN_, KG_, BK_, Stages_, MinBlocks_, Tma_, ChainSlices_,
                             RollSteps_, EarlyIssue_>;
  static_assert(chain_slices >= 1 && (chain_slices == 1 || (Math::promote && !tma)),
                "chains over several slices: 3xTF32, cp.async");
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
  __device__ __forceinline__ static int col_of(int nt, int i) {
    return warp_col(nt) + 2 * (static_cast<int>(threadIdx.x) % 4) + i % 2;
  }
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
    if constexpr (Cfg::roll_steps) {  // one k-step's fragments live at a time (see TcConfig)
#pragma unroll 1
      for (int q = 0; q < Cfg::steps; ++q) step<First>(as, bs, k_first, q, lane, sl);
    } else {
#pragma unroll
      for (int q = 0; q < Cfg::steps; ++q) step<First>(as, bs, k_first, q, lane, sl);
    }
  }
  /// k-step q of multiply_slice.
  template <bool First, class Lane>
  __device__ __forceinline__ void step(const T* as, const T* bs, int k_first, int q, int lane, const Lane& sl) {
    const int kk = k_first + q * M::km;
    typename M::AFrag af[Cfg::MT];
    typename M::BFrag bf[Cfg::NT];
#pragma unroll
    for (int mt = 0; mt < Cfg::MT; ++mt) {
      if constexpr (Cfg::tma)  // k-step kk: A tile kk / tile_w, k-step (kk % tile_w) / km in it
        M::load_a_swizzled(af[mt], as + (kk / Cfg::tile_w * Cfg::BM + warp_row(mt)) * Cfg::tile_w,
                           kk % Cfg::tile_w / M::km, sl);
      else M::load_a(af[mt], as + warp_row(mt) * Cfg::sa + kk, Cfg::sa, lane);
    }
#pragma unroll
    for (int nt = 0; nt < Cfg::NT; ++nt) {
      if constexpr (Cfg::tma)  // columns c..c+7: B tile c / tile_w, its 8-column group (c % tile_w) / 8
        M::load_b_swizzled(bf[nt], bs + (warp_col(nt) / Cfg::tile_w * Cfg::BK + k_first) * Cfg::tile_w, q,
                           warp_col(nt) % Cfg::tile_w / 8, sl);
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

  /// Tensor copies of the slice at K offset k0 into stage buffer `as` (A's BK / tile_w tiles of
  /// BM x tile_w, then B's BN / tile_w tiles of BK x tile_w), completing on `bar`, which is told
  /// the stage's bytes (the boxes' whole bytes: what lies outside A or B arrives as zeros). One thread.
  __device__ __forceinline__ static void issue_slice(T* as, const CUtensorMap* ta, const CUtensorMap* tb, idx row0,
                                                     idx col0, idx k0, std::uint64_t* bar) {
    T* bs = as + Cfg::a_elems;
    const int k = static_cast<int>(k0);  // K <= 2^31 - 1 (host)
    mbar_arrive_expect_tx(bar, static_cast<unsigned>(Cfg::stage_elems * sizeof(T)));
#pragma unroll
    for (int h = 0; h < Cfg::BK / Cfg::tile_w; ++h)
      tma_load_2d(as + h * Cfg::BM * Cfg::tile_w, ta, k + Cfg::tile_w * h, static_cast<int>(row0), bar);
#pragma unroll
    for (int h = 0; h < Cfg::BN / Cfg::tile_w; ++h)
      tma_load_2d(bs + h * Cfg::BK * Cfg::tile_w, tb, static_cast<int>(col0) + Cfg::tile_w * h, k, bar);
  }

  /// The block's K range with tensor copies (Cfg::tma): thread 0 issues slice t + stages - 1 into the
  /// buffer every thread has left behind (after the barrier; with Cfg::early_issue before waiting for
  /// slice t), each buffer's mbarrier counts its bytes. smem: 1024-byte aligned.
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
    auto load = [&](int buf, idx t) {                              // by the issuer
      issue_slice(smem + buf * Cfg::stage_elems, ta, tb, row0, col0, k_begin + t * Cfg::BK, &bars[buf]);
    };
    if (issuer)
      for (int s = 0; s < Cfg::stages - 1; ++s)
        if (s < slices) load(s, s);
    const int k_first = static_cast<int>(threadIdx.y) * Cfg::steps * M::km;
    int rd = 0, wr = Cfg::stages - 1;
    unsigned phases = 0;  // bit b: the parity of buffer b's next completion
    for (idx t = 0; t < slices; ++t) {
      if constexpr (Cfg::early_issue) {
        __syncthreads();  // everyone is done with slice t - 1, whose buffer (wr) is refilled ...
        if (issuer && t + Cfg::stages - 1 < slices) load(wr, t + Cfg::stages - 1);
        mbar_wait(&bars[rd], (phases >> rd) & 1u);  // ... while slice t lands
      } else {
        mbar_wait(&bars[rd], (phases >> rd) & 1u);  // slice t has landed
        __syncthreads();  // and everyone is done with slice t - 1, whose buffer (wr) is refilled
        if (issuer && t + Cfg::stages - 1 < slices) load(wr, t + Cfg::stages - 1);
      }
      phases ^= 1u << rd;
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
    SliceLoader<T, Cfg::BK, AP, BP, Vec> loader(d_a, d_b, m, n, k, row0, col0, k_begin, k_end,
                                                AP{a_r, a_k, a_r * Cfg::sa + a_k}, BP{b_k, b_c, b_k * Cfg::sb + b_c});
    auto load = [&](int buf, idx t) {
      T* as = smem + buf * Cfg::stage_elems;
      loader.load(as, as + Cfg::a_elems, t);
    };

    const idx slices = (k_end - k_begin + Cfg::BK - 1) / Cfg::BK;            // block-uniform
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
      p,
      [&](const SplitTile& st) {
        p.template run<Vec>(d_a, d_b, m, n, k, st.row0, st.col0, st.k_begin, st.k_end, reinterpret_cast<T*>(smem_raw));
      },
      d_c, m, n, k, k_chunk, d_partials, d_tickets);
}

/// gang_level_tc fed by tensor copies (Cfg::tma): A and B reach the kernel as tensor maps.
template <class Cfg>
__global__ void __launch_bounds__(Cfg::threads, Cfg::min_blocks)
    gang_level_tma(const __grid_constant__ CUtensorMap ta, const __grid_constant__ CUtensorMap tb,
                   typename Cfg::T* __restrict__ d_c, idx m, idx n, idx k, idx k_chunk,
                   typename Cfg::T* __restrict__ d_partials, unsigned int* d_tickets) {
  using T = typename Cfg::T;
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  T* smem = reinterpret_cast<T*>((reinterpret_cast<std::uintptr_t>(smem_raw) + 1023) & ~std::uintptr_t{1023});
  TcProduct<Cfg> p;
  split_k_gang<T, Cfg::BM, Cfg::BN, Cfg::threads>(
      p, [&](const SplitTile& st) { p.run_tma(&ta, &tb, st.row0, st.col0, st.k_begin, st.k_end, smem); }, d_c, m, n, k,
      k_chunk, d_partials, d_tickets);
}

}  // namespace tally::matmul::kernels::tc
