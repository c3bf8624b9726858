#pragma once
// The exact sum of a whole grid into one accumulator in global memory (exact.cuh's blocks, then
// 64-bit integer atomics per word, a ticket, and the last block's rounding): the flat kernel's
// gang level (src/cuda/exact_cuda.cu). Device code only.

#include <cstddef>
#include <cstdint>

#include "tally/reduce/device/exact.cuh"

namespace tally::reduce::device {

/// Word k of a block's share of the grid's accumulator, from its shared limbs and warp 0's gather
/// (after lane 0's serial adds): limb k (the filters' rare residuals, several windows) carried once
/// on the fly (its low 32 bits and limb k-1's carry, below 2^33 in magnitude) plus limb k's shares
/// of the bins' S u + S' u' (four below 2^32); the counters with the warps' flags. Below 2^35 in
/// magnitude: 2^28 blocks' words fit.
template <class T>
__device__ __forceinline__ std::int64_t exact_block_word(const ExactStorage<T>& s, const ExactGatheredOf<T>& g, int k) {
  using A = exact::Accumulator<T>;
  constexpr int L = A::limbs;
  std::int64_t v = s.acc.w[k];
  if (k < L - 1) v &= 0xffffffff;
  if (k > 0 && k < L) v += s.acc.w[k - 1] >> exact::limb_bits;
  if (k < L && g.p != kNoWindow)
#pragma unroll
    for (int j = 0; j < kBinLevels<T>; ++j) {
      const int bit = exact_bins_bit<T>(g.p, j);
      v += exact_bits_share(g.lo[j], bit, k) + exact_bits_share(g.hi[j], bit + 42, k);
    }
  if (k == A::seen_word) v += g.seen;
  if (k == A::nonneg_word) v += g.nonneg;
  return v;
}

/// Words of exact_gang_total's d_total lie this many int64 apart (256 bytes): the blocks' atomics on
/// one word are serialised at its L2 slice, so the words should not share one.
inline constexpr int kExactTotalStride = 32;

/// Bytes of exact_gang_total's d_total for accumulators of T.
template <class T>
constexpr std::size_t exact_total_bytes() {
  return static_cast<std::size_t>(exact::Accumulator<T>::words) * kExactTotalStride * sizeof(std::int64_t);
}

/// exact_gang_sum with the blocks' accumulators added by 64-bit integer atomics into one accumulator
/// d_total (word k at d_total[k * kExactTotalStride]; zero before the launch, left zero by the last
/// block) instead of published per block: the last block reads W words, not W per block (a float
/// grid of 396 blocks: 27 loads a merge thread, four L2 round trips; a double's: 132, seventeen).
/// Integer additions in any order: the same sum, the same bits. After the warps publish their
/// parts (one barrier) warp 0 alone finishes the block: lane k adds word k by one atomic (limb k
/// carried once on the fly plus its share of the bins' sums: below 2^35, so 2^28 blocks fit), lane 0
/// takes the ticket, and in the last block the warp reads d_total and rounds; no block-wide barrier
/// after the first (no block-wide carry step, no serial limb adds in lane 0: short arrays spend their
/// time in this tail). Whole grid only; returns true in warp 0 of the last block, whose thread 0
/// holds the result. Needs block_size() >= 32.
template <class Out, class T>
__device__ __forceinline__ bool exact_gang_total(ExactThread<T>& t, std::int64_t* d_total, unsigned int* d_ticket,
                                                 Out& result, ExactStorage<T>& s) {
  using A = exact::Accumulator<T>;
  constexpr int W = A::words;
  exact_block_publish(t, s);
  if (block_thread_rank() >= warp_size) return false;
  const int lane = static_cast<int>(block_thread_rank());
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>,
                "exact_gang_total: float or double inputs (exact_gang_sum for dot products)");
  const auto g = exact_warp0_gather(s);
  if (lane == 0 && g.several) exact_put_warps_serial(s, static_cast<int>((block_size() + warp_size - 1) / warp_size));
  const std::int64_t nblocks = grid_blocks();
  if (nblocks == 1) {
    if (lane == 0) {
      if (g.p != kNoWindow) exact_put_bins<T>(s.acc.w, g.p, g.lo, g.hi);
      s.acc.w[A::seen_word] += g.seen, s.acc.w[A::nonneg_word] += g.nonneg;
    }
  } else {
    __syncwarp();  // lane 0's serial adds, if any, before the lanes read the limbs
    // One atomic a non-zero word (exact_block_word).
    for (int k = lane; k < W; k += warp_size) {
      const std::int64_t v = exact_block_word(s, g, k);
      if (v != 0)
        atomicAdd(reinterpret_cast<unsigned long long*>(d_total + k * kExactTotalStride),
                  static_cast<unsigned long long>(v));
    }
    __syncwarp();  // the warp's atomics before lane 0's release
    bool last = false;
    if (lane == 0) last = take_ticket(d_ticket, static_cast<unsigned int>(nblocks));
    if (!__shfl_sync(0xffffffffu, last, 0)) return false;
    __syncwarp();  // lane 0's acquire before the lanes' loads
    // Every load of a lane in flight at once: a loop over k = lane, lane + 32, ... would wait for each
    // load before the next (its store to shared memory), three L2 round trips in a row for a double's
    // 72 words instead of one.
    constexpr int R = (W + warp_size - 1) / warp_size;
    std::int64_t v[R];
#pragma unroll
    for (int r = 0; r < R; ++r)
      if (lane + r * warp_size < W) v[r] = __ldcg(d_total + (lane + r * warp_size) * kExactTotalStride);
#pragma unroll
    for (int r = 0; r < R; ++r)
      if (lane + r * warp_size < W) {
        s.acc.w[lane + r * warp_size] = v[r];
        d_total[(lane + r * warp_size) * kExactTotalStride] = 0;  // ready for the next launch
      }
  }
  __syncwarp();
  const Out r = exact_output<Out>(s);
  if (lane == 0) result = r;
  return true;
}

}  // namespace tally::reduce::device
