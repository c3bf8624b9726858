#pragma once
// A superaccumulator rounded by a warp (device/exact.cuh's exact_output and the exact matmul's
// worker level): the same bits as exact::Accumulator::round(), from every lane's share of the work.

#include <cstdint>

#include "tally/reduce/detail/exact.hpp"
#include "tally/reduce/device/index.cuh"
#include "tally/reduce/device/vector.cuh"

namespace tally::reduce::device {

/// The exact sum held in `acc` rounded to Out, in lane 0 of the calling warp (all 32 lanes call).
/// The fast path: every limb is an exact double (|limb| < 2^53, its scale in range), the warp adds
/// them in a shuffle tree of filters, and when no residual is left (the sum fits in hi + lo: the
/// common case) one rounding of hi + lo is the answer. Anything else (a wide or zero sum, NaN, Inf)
/// goes to the serial exact::Accumulator::round() in lane 0: the same bits either way.
template <class Out, class T>
__device__ __forceinline__ Out exact_warp_round(const exact::Accumulator<T>& acc) {
  using A = exact::Accumulator<T>;
  struct Flag {  // a filter's sink that only notes that something was left over
    bool hit = false;
    __device__ void add(double) { hit = true; }
    __device__ void special(double) { hit = true; }
  } flag;
  const unsigned lane = block_thread_rank() & (warp_size - 1);
  exact::Filter f;
  for (int k = static_cast<int>(lane); k < A::limbs; k += warp_size) {
    const std::int64_t v = acc.w[k];
    const int scale = exact::limb_bits * k + A::emin;
    if (v == 0) continue;
    if (v >= (std::int64_t{1} << 53) || v <= -(std::int64_t{1} << 53) || scale < -1074) flag.hit = true;
    else f.add(::ldexp(static_cast<double>(v), scale), flag);  // exact; Inf beyond range: special
  }
#pragma unroll
  for (int off = warp_size / 2; off > 0; off /= 2) {
    const double oh = __shfl_down_sync(0xffffffffu, f.hi, off), ol = __shfl_down_sync(0xffffffffu, f.lo, off);
    if (lane < static_cast<unsigned>(off)) {
      if (oh != 0) f.add(oh, flag);
      if (ol != 0) f.add(ol, flag);
    }
  }
  const bool slow = __any_sync(0xffffffffu, flag.hit);
  Out r{};
  if (lane == 0) {
    const bool special = acc.w[A::nan_word] != 0 || acc.w[A::pos_inf_word] != 0 || acc.w[A::neg_inf_word] != 0;
    if (slow || special || (f.hi == 0 && f.lo == 0) || !exact::round_pair(f.hi, f.lo, r)) r = acc.template round<Out>();
  }
  return r;
}

/// acc (no NaN or Inf counted; non-zero limbs lo .. hi, hi - lo <= warp_size - 3) rounded to Out in
/// every lane of the calling warp, the warp's lanes holding one limb each: carry steps on all limbs
/// at once until every limb below the top one is in [0, 2^32) (the first leaves carries below 2^31
/// in magnitude, the second of at most 1, which ripple on through limbs of 2^32 - 1, a borrow through
/// zeros; each step settles the lowest limb out of range, so at most n steps), the magnitude of a
/// negative sum is its two's complement by one ballot (the lowest non-zero limb), and Accumulator's
/// rounding tail (round_magnitude) reads its digits by shuffles. The same bits as round_window: it is
/// the same exact value, normalised, rounded by the same code; a dependent chain of a few shuffles
/// and ballots, not 64-bit carry chains and digit selects in one lane.
/// Ripples are common, not rare: a negative bins' sum S = -1 enters three limbs as 2^32 - 1,
/// 2^32 - 1, -1, so blocks of both signs leave limbs of 2^32 - 1 that a carry must cross (any sum of
/// values of both signs, e.g. uniform in (-1, 1), has them).
template <class Out, class T>
__device__ __forceinline__ Out exact_warp_round_window(const exact::Accumulator<T>& acc, int lo, int hi) {
  using A = exact::Accumulator<T>;
  constexpr std::int64_t M = 0xffffffff;
  const int j = static_cast<int>(block_thread_rank() & (warp_size - 1));
  const int n = (hi + 1 < A::limbs ? hi + 1 : hi) - lo + 1;  // lanes 0 .. n-1: limbs lo .. top, the top one signed
  const bool below_top = j < n - 1;
  std::int64_t v = j < n ? acc.w[lo + j] : 0;
  const auto step = [&] {
    const std::int64_t c = below_top ? v >> exact::limb_bits : 0;
    if (below_top) v &= M;
    const std::int64_t cin = __shfl_up_sync(0xffffffffu, c, 1);
    if (j > 0) v += cin;  // nothing below limb lo
  };
  step(), step();  // |carry| < 2^31, then at most 1
  while (__ballot_sync(0xffffffffu, below_top && (v < 0 || v > M)) != 0) step();
  const bool neg = __shfl_sync(0xffffffffu, v, n - 1) < 0;
  if (neg) {  // -sum: 2^32 - d at the lowest non-zero limb z, 2^32 - 1 - d above it, -t - 1 at the top (-t if none)
    const unsigned nz = __ballot_sync(0xffffffffu, below_top && v != 0);
    const int z = nz != 0 ? __ffs(static_cast<int>(nz)) - 1 : n - 1;
    if (below_top) v = j < z ? 0 : j == z ? (M + 1) - v : M - v;
    else if (j == n - 1) v = -v - (z < n - 1 ? 1 : 0);
  }
  // 32-bit digits: lanes below the top as they are, the top limb's two words in lanes n-1 and n.
  const std::int64_t tm = __shfl_sync(0xffffffffu, v, n - 1);
  const std::uint32_t dig = j < n    ? static_cast<std::uint32_t>(v)
                            : j == n ? static_cast<std::uint32_t>(static_cast<std::uint64_t>(tm) >> 32)
                                     : 0u;
  const unsigned nzd = __ballot_sync(0xffffffffu, dig != 0);
  if (nzd == 0)  // an exact zero: -0 only if every input was -0
    return acc.w[A::nonneg_word] == 0 && acc.w[A::seen_word] > 0 ? Out(-0.0) : Out(0.0);
  const int hl = 31 - __clz(static_cast<int>(nzd));
  const int b = 32 * (lo + hl) + 31 - __clz(static_cast<int>(__shfl_sync(0xffffffffu, dig, hl)));
  return exact::round_magnitude<Out, A::emin>(
      b, neg,
      [&](int k) -> std::uint32_t {  // warp-uniform k: every lane shuffles
        const int l = k - lo;
        const std::uint32_t x = __shfl_sync(0xffffffffu, dig, l & (warp_size - 1));
        return l >= 0 && l < warp_size ? x : 0u;
      },
      [&](int ir) {
        const int l = ir - lo;
        return l > 0 && (nzd & (l >= warp_size ? 0xffffffffu : (1u << l) - 1u)) != 0;
      });
}

}  // namespace tally::reduce::device
