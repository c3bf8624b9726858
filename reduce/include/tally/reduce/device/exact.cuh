#pragma once
// Exact sum building blocks (tally/reduce/exact.hpp for the algorithm): each thread runs an
// expansion filter; the rare residual goes into its block's superaccumulator in shared memory by
// 64-bit integer atomics (exact, order-free); blocks publish their accumulators and the last one to
// take the ticket adds them word by word and rounds once. The result is the exact sum correctly
// rounded, whatever the grid, the block size or the order of arrival: bitwise the host API's.
//
//   __global__ void kernel(const float* x, int64_t n, exact::Accumulator<float>* d_partials,
//                          unsigned* d_ticket, float* d_sum) {
//     __shared__ tally::reduce::device::ExactStorage<float> s;
//     tally::reduce::device::ExactThread<float> t(s);          // clears s (a barrier)
//     for (int64_t i = global_thread_id(); i < n; i += grid_stride()) t.add(x[i]);
//     // or, faster, batches through the bins: float b[16] = {...}; t.add_batch(b);
//     float r;
//     if (tally::reduce::device::exact_gang_sum(t, d_partials, d_ticket, r, s) && threadIdx.x == 0) *d_sum = r;
//   }
//
// d_partials holds one Accumulator<T> per block (exact_partials_bytes), d_ticket starts at zero
// (the last block re-arms it). One block may take at most 2^29 inputs between two exact_* calls:
// its shared limbs have 31 bits of carry headroom. exact_block_sum() is the block-only form;
// exact_gang_total() (exact_total.cuh) takes one zero-kept accumulator (exact_total_bytes) instead of d_partials.
//
// Exact dot products: ExactThread<exact::products_of<U>> (U = float or double) and
// t.add_product(a[i], b[i]) (exact: a double holds a float product; a double product is p + e by
// FMA splitting, binned by exact::ProductBins when in its window), then exact_gang_sum /
// exact_block_sum as above.

#include <cstdint>
#include <type_traits>

#include "tally/reduce/detail/exact.hpp"
#include "tally/reduce/detail/exact_bins.hpp"
#include "tally/reduce/device/exact_round.cuh"
#include "tally/reduce/device/gang.cuh"
#include "tally/reduce/device/index.cuh"
#include "tally/reduce/device/thread.cuh"

namespace tally::reduce::device {

/// Threads of the last block that merge the blocks' accumulators (groups of `words` threads), and
/// the independent loads each keeps in flight (a power of two).
inline constexpr int kExactMergeThreads = 256;
inline constexpr int kExactMergeLoads = 8;

/// The bins in front of a thread's filter: Bins<T> for sums, ProductBins for dot products of doubles,
/// none for products of floats (exact in a double: the filter takes them with one addition).
struct NoBins {
  static constexpr int levels = 0;
};
template <class T>
using BinsOf =
    std::conditional_t<std::is_same_v<T, float> || std::is_same_v<T, double>, exact::Bins<T>,
                       std::conditional_t<std::is_same_v<T, exact::DoubleProducts>, exact::ProductBins, NoBins>>;
/// The levels of T's bins, at least one (the arrays that hold them).
template <class T>
inline constexpr int kBinLevels = BinsOf<T>::levels > 0 ? BinsOf<T>::levels : 1;

/// Shared memory of the exact blocks: the block's superaccumulator, the last block's merge groups'
/// sums and the ticket's flag.
template <class T>
struct ExactStorage {
  static constexpr int W = exact::Accumulator<T>::words;
  static constexpr int groups = kExactMergeThreads / W > 1 ? kExactMergeThreads / W : 1;
  exact::Accumulator<T> acc;
  std::int64_t part[groups > 1 ? groups - 1 : 1][W];
  // The rounding's scratch for wide windows (Accumulator::round_window): in shared memory, not a
  // stack frame, whose local arrays would cost the kernel's unrelated main loop its residency.
  std::int64_t round_a[exact::Accumulator<T>::limbs];
  std::uint32_t round_d[exact::Accumulator<T>::limbs + 1];
  // Per warp (exact_block_flush): its bins' common window and count sums, and whether it saw an
  // input or anything but -0. Warp 0 combines them after a barrier and lane 0 adds them with plain
  // adds: the shared 64-bit atomics are compare-and-swap loops (ATOMS.CAST.SPIN.64) that the warps'
  // lane 0 would contend on.
  struct WarpPart {
    std::int64_t lo[kBinLevels<T>], hi[kBinLevels<T>];
    int p, flags;
  } warp[32];
  bool last;
};

/// Bytes of d_partials for `blocks` blocks.
template <class T>
constexpr std::size_t exact_partials_bytes(std::int64_t blocks) {
  return static_cast<std::size_t>(blocks) * sizeof(exact::Accumulator<T>);
}

/// The filters' sink: integer atomics on an accumulator in shared memory (the block's) or in global
/// memory (one that several blocks add to).
template <class T>
struct SharedSink {
  exact::Accumulator<T>* acc;
  __device__ __forceinline__ void word_add(int k, std::int64_t v) {
    atomicAdd(reinterpret_cast<unsigned long long*>(&acc->w[k]), static_cast<unsigned long long>(v));
  }
  __device__ __forceinline__ void add(double r, int scale = 0) {
    int i;
    std::uint64_t c[3];
    bool neg;
    if (!exact::split<exact::Accumulator<T>::emin>(r, i, c, neg, scale)) return;
#pragma unroll
    for (int k = 0; k < 3; ++k)
      if (c[k] != 0) word_add(i + k, neg ? -static_cast<std::int64_t>(c[k]) : static_cast<std::int64_t>(c[k]));
  }
  __device__ __forceinline__ void special(double x) {
    using A = exact::Accumulator<T>;
    if (x != x) word_add(A::nan_word, 1);
    else if (x > 1.7976931348623157e308) word_add(A::pos_inf_word, 1);
    else if (x < -1.7976931348623157e308) word_add(A::neg_inf_word, 1);
    else add(x);
    word_add(A::nonneg_word, 1);
  }
  /// A double product the filter cannot take (exact::Accumulator::product's rules), out of line.
  __device__ __forceinline__ void product(double a, double b);
};

/// SharedSink::product's body: a function of its own taking the accumulator's address by value, so
/// that no pointer into the calling thread's ExactThread escapes (one would keep the whole thread's
/// filter, bins and counts in local memory, stored at every update).
template <class T>
__device__ __noinline__ void exact_sink_product(exact::Accumulator<T>* acc, double a, double b) {
  SharedSink<T> sink{acc};
  if (!(exact::abs(a) <= 1.7976931348623157e308) || !(exact::abs(b) <= 1.7976931348623157e308))
    return sink.special(a * b);
  exact::product_pieces(a, b, [&sink](double x, int scale) { sink.add(x, scale); });
  sink.word_add(exact::Accumulator<T>::nonneg_word, 1);
}
template <class T>
__device__ __forceinline__ void SharedSink<T>::product(double a, double b) {
  exact_sink_product(acc, a, b);
}

/// Limb k's share of v 2^q (q >= 0: a bit index above 2^emin), v 2^q = the shares of limbs q/32,
/// q/32 + 1 (each in [0, 2^32)) and q/32 + 2 (signed, small), zero elsewhere.
__device__ __forceinline__ std::int64_t exact_bits_share(std::int64_t v, int q, int k) {
  const int i = k - (q >> 5), s = q & 31;
  const std::uint64_t lo = static_cast<std::uint64_t>(v) << s;  // v 2^s = lo + hi 2^64
  const std::int64_t hi = s > 0 ? v >> (64 - s) : (v < 0 ? -1 : 0);
  return i == 0   ? static_cast<std::int64_t>(lo & 0xffffffffu)
         : i == 1 ? static_cast<std::int64_t>(lo >> 32)
         : i == 2 ? hi
                  : 0;
}

/// Adds v 2^q exactly to the limbs w (exact_bits_share's three limbs). Plain adds: one thread at a time.
__device__ __forceinline__ void exact_add_bits(std::int64_t* w, std::int64_t v, int q) {
  if (v == 0) return;
#pragma unroll
  for (int i = 0; i < 3; ++i) w[(q >> 5) + i] += exact_bits_share(v, q, (q >> 5) + i);
}

/// A superaccumulator in the thread's own (local) memory, cleared on first use: the sink of a
/// filter that sums a whole output alone (a thread per output).
template <class T>
struct LocalSink {
  exact::Accumulator<T> acc;
  bool used = false;
  __device__ void touch() {
    if (!used) acc.clear(), used = true;
  }
  __device__ void add(double r) { touch(), acc.add(r); }
  __device__ void special(double x) { touch(), acc.special(x); }
  __device__ void product(double a, double b) { touch(), acc.product(a, b); }
};

/// The largest of the lanes' Bins::batch_key (lanes `mask`): for doubles by its high word, which
/// holds the exponent (all a window needs; Bins::widen_to's test against a power of two is the same).
__device__ __forceinline__ std::uint32_t warp_max_key(unsigned mask, std::uint32_t key) {
  return __reduce_max_sync(mask, key);
}
__device__ __forceinline__ std::uint64_t warp_max_key(unsigned mask, std::uint64_t key) {
  return static_cast<std::uint64_t>(__reduce_max_sync(mask, static_cast<std::uint32_t>(key >> 32))) << 32;
}

/// A thread's filter in front of its block's shared accumulator. The constructor clears the
/// accumulator and synchronises the block: every thread of the block constructs one.
/// add(x) takes one value into the filter; add_batch(x) takes B values through the bins
/// (exact_bins.hpp: about eight additions of T a value instead of the filter's FP64 work).
template <class T>
struct ExactThread {
  exact::Filter f;
  SharedSink<T> sink;
  bool seen = false;  // took an input: an empty grid sums to +0, a grid of -0s to -0
  BinsOf<T> bins;
  __device__ explicit ExactThread(ExactStorage<T>& s) : sink{&s.acc} {
    for (int k = block_thread_rank(); k < exact::Accumulator<T>::words; k += block_size()) s.acc.w[k] = 0;
    __syncthreads();
  }
  __device__ __forceinline__ void add(T x) { f.add(x, sink), seen = true; }
  template <int B>
  __device__ __forceinline__ void add_batch(const T (&x)[B]) {
    // The first batch: the window at once (nothing fits the initial lowest one), the warp's
    // largest value's as below, instead of a try_add bound to fail.
    if (!seen) bins.widen_to(warp_max_key(__activemask(), bins.batch_key(x)), f, sink);
    seen = true;
    if (bins.try_add(x, f, sink)) return;
    // A batch did not fit (a larger value: every lane's first batch): the lanes here raise their
    // windows to the largest value among them, not only their own, so that a warp keeps one window
    // and exact_warp_bins sums its bins as integers, not through the filters (a double's batch of 8
    // below 0.5 while another lane's reached it split one warp in eight of a 2^16 sum). Taking
    // the maximum over all lanes instead cost registers (spills) in the hot loop.
    if (bins.widen_to(warp_max_key(__activemask(), bins.batch_key(x)), f, sink) && bins.try_add(x, f, sink)) return;
    // Rare (a value beyond the window, a tiny one, NaN or Inf): one at a time, one copy of the code.
    T y[B];
#pragma unroll
    for (int i = 0; i < B; ++i) y[i] = x[i];
#pragma unroll 1
    for (int i = 0; i < B; ++i) bins.add(y[i], f, sink);
  }
  /// The exact dot product's step (T = exact::products_of<U>): a * b exactly (exact::Filter::add_product).
  template <class U>
  __device__ __forceinline__ void add_product(U a, U b) {
    static_assert(std::is_same_v<T, exact::products_of<U>>, "add_product: ExactThread<exact::products_of<U>>");
    seen = true;
    if constexpr (std::is_same_v<BinsOf<T>, exact::ProductBins>) {
      if (bins.try_add(a, b, f, sink)) return;
      // Not in the window: raise it to the largest product among the lanes here (one window for
      // the warp, as add_batch), and try again; a product still outside goes to the filter (tiny
      // against the window, zero, NaN, Inf, or beyond the top).
      if (bins.widen_to(warp_max_key(__activemask(), exact::ProductBins::key_of(a * b)), f, sink) &&
          bins.try_add(a, b, f, sink))
        return;
    }
    f.add_product(a, b, sink);
  }
};

/// Adds one thread's filter into its sink's accumulator by atomics (`seen`: the filter took an
/// input), leaving the filter empty: for kernels where each thread sums its own output's share.
template <class T>
__device__ __forceinline__ void exact_thread_flush(exact::Filter& f, SharedSink<T>& sink, bool seen) {
  if (seen) sink.word_add(exact::Accumulator<T>::seen_word, 1);
  if (!f.all_negative_zero()) sink.word_add(exact::Accumulator<T>::nonneg_word, 1);
  sink.add(f.hi);
  sink.add(f.lo);
  f = exact::Filter{};
}

inline constexpr int kNoWindow = -0x7fffffff - 1;

/// The batches of U vectors of V values at in + i, in + i + step, ... (while i + (U - 1) step < n)
/// into t's add_batch; returns the first i it did not add. Prefetch: the next batch's loads are issued
/// before this one is binned, so that the binning's arithmetic (about 8 operations a value) does not
/// leave a warp with nothing in flight; without Prefetch fewer registers, for threads with one batch
/// (nothing to prefetch).
template <bool Prefetch, int U, int V, class T>
__device__ __forceinline__ std::int64_t exact_add_batches(ExactThread<T>& t, const T* __restrict__ in, std::int64_t i,
                                                          std::int64_t n, std::int64_t step) {
  if constexpr (!Prefetch) {
    for (; i + (U - 1) * step < n; i += U * step) {
      T x[U * V];
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const auto v = load_vec<V>(in + i + u * step);
#pragma unroll
        for (int k = 0; k < V; ++k) x[u * V + k] = v.v[k];
      }
      t.add_batch(x);
    }
  } else if (i + (U - 1) * step < n) {
    Vec<T, V> v[U];
#pragma unroll
    for (int u = 0; u < U; ++u) v[u] = load_vec<V>(in + i + u * step);
    for (;;) {
      T x[U * V];
#pragma unroll
      for (int u = 0; u < U; ++u)
#pragma unroll
        for (int k = 0; k < V; ++k) x[u * V + k] = v[u].v[k];
      i += U * step;
      const bool more = i + (U - 1) * step < n;
      if (more)
#pragma unroll
        for (int u = 0; u < U; ++u) v[u] = load_vec<V>(in + i + u * step);
      t.add_batch(x);
      if (!more) break;
    }
  }
  return i;
}

/// The warp's bins: when every lane has the same window (the usual case) their counts summed in
/// 32-bit pieces by warp reductions (S = a 2^42 + m 2^21 + l with l, m in [0, 2^21), |a| <= 2^20
/// as |S| <= 2^62: 32 lanes' sums fit), returned as that window and, per level, lo = sum of
/// m 2^21 + l and hi = sum of a (S = hi 2^42 + lo); otherwise each lane's bins go into its filter
/// and the window is kNoWindow. All 32 lanes call; the bins are empty after.
template <class T, int L = kBinLevels<T>>
__device__ __forceinline__ int exact_warp_bins(ExactThread<T>& t, std::int64_t (&lo)[L], std::int64_t (&hi)[L]) {
  auto& b = t.bins;
  int same = 0, p = kNoWindow;
  __match_all_sync(0xffffffffu, b.p, &same);
  if (!same) {
    b.flush(t.f, t.sink);
  } else {
    p = b.p;
#pragma unroll
    for (int j = 0; j < L; ++j) {
      const std::int64_t v = b.s[j];
      const unsigned l = __reduce_add_sync(0xffffffffu, static_cast<unsigned>(v & 0x1fffff));
      const unsigned m = __reduce_add_sync(0xffffffffu, static_cast<unsigned>((v >> 21) & 0x1fffff));
      const int a = static_cast<int>(__reduce_add_sync(0xffffffffu, static_cast<unsigned>(static_cast<int>(v >> 42))));
      lo[j] = (static_cast<std::int64_t>(m) << 21) + l, hi[j] = a;
      b.s[j] = 0;
    }
  }
  b.settle_zero(t.f);
  return p;
}

template <class T>
using WarpPartOf = typename ExactStorage<T>::WarpPart;

/// Bit (above 2^emin) of level j's unit in window q (BinsOf<T>::level_exp).
template <class T>
__device__ __forceinline__ int exact_bins_bit(int q, int j) {
  return BinsOf<T>::level_exp(q, j) - exact::Accumulator<T>::emin;
}

/// A window's summed counts into the limbs w (one thread): the sum of S_j u_j with S_j = hi 2^42 + lo
/// per level.
template <class T, int L = kBinLevels<T>>
__device__ __forceinline__ void exact_put_bins(std::int64_t* w, int q, const std::int64_t (&l)[L],
                                               const std::int64_t (&h)[L]) {
#pragma unroll
  for (int j = 0; j < L; ++j) {
    const int bit = exact_bins_bit<T>(q, j);
    exact_add_bits(w, l[j], bit), exact_add_bits(w, h[j], bit + 42);
  }
}

template <class T>
__device__ void exact_put_warps_serial(ExactStorage<T>& s, int nw);

/// The first half of exact_block_flush: every warp's bins, filters and flags to s.warp (the filters'
/// rare residuals into s.acc by atomics), then a barrier. All threads call. The filters of a warp
/// are combined by a shuffle tree of exact additions, skipped when every filter of the warp is zero
/// (binned sums leave them so), and lane 0 adds what is left by atomics (rare).
template <class T>
__device__ __forceinline__ void exact_block_publish(ExactThread<T>& t, ExactStorage<T>& s) {
  const unsigned lane = block_thread_rank() & (warp_size - 1), warp = block_thread_rank() / warp_size;
  constexpr int L = kBinLevels<T>;
  std::int64_t lo[L] = {}, hi[L] = {};
  int p = kNoWindow;
  if constexpr (!std::is_same_v<BinsOf<T>, NoBins>) p = exact_warp_bins(t, lo, hi);
  exact::Filter& f = t.f;
  // A warp's sum is -0 only if every filter is (the tree keeps that: -0 + -0 alone stays -0).
  const bool warp_nonneg = __any_sync(0xffffffffu, !f.all_negative_zero());
  const bool warp_seen = __any_sync(0xffffffffu, t.seen);
  if (__any_sync(0xffffffffu, f.hi != 0 || f.lo != 0)) {
#pragma unroll
    for (int off = warp_size / 2; off > 0; off /= 2) {
      const double oh = __shfl_down_sync(0xffffffffu, f.hi, off), ol = __shfl_down_sync(0xffffffffu, f.lo, off);
      // Only the tree's receivers add: a lane that added anyway could flush a residual of a sum that
      // lane 0 also receives by another path, counting it twice.
      if (lane < static_cast<unsigned>(off)) {
        f.add(oh, t.sink);               // |oh| < kBig: never special; -0 + -0 stays -0
        if (ol != 0) f.add(ol, t.sink);  // lo = +0 would turn an all -0 hi into +0
      }
    }
  }
  if (lane == 0) {
    t.sink.add(f.hi);  // nothing for zeros
    t.sink.add(f.lo);
    auto& w = s.warp[warp];
#pragma unroll
    for (int j = 0; j < L; ++j) w.lo[j] = lo[j], w.hi[j] = hi[j];
    w.p = p, w.flags = (warp_seen ? 1 : 0) | (warp_nonneg ? 2 : 0);
  }
  f = exact::Filter{};
  t.seen = false;
  __syncthreads();
}

/// What warp 0 reads from the warps' parts (exact_block_publish), in every lane of warp 0: the
/// counts of warps that saw an input and that saw anything but -0, and, when every warp that binned
/// has one window p (the usual case), their bins summed per level as S = hi 2^42 + lo (32 warps'
/// sums fit: lo < 2^53, |hi| < 2^30); p is kNoWindow if no warp binned or `several` windows occur
/// (then exact_put_warps_serial adds them). L: the bins' levels (kBinLevels).
template <int L>
struct ExactGathered {
  std::int64_t lo[L], hi[L];
  int p, seen, nonneg;
  bool several;
};
template <class T>
using ExactGatheredOf = ExactGathered<kBinLevels<T>>;

template <class T>
__device__ __forceinline__ ExactGatheredOf<T> exact_warp0_gather(const ExactStorage<T>& s) {
  constexpr int L = kBinLevels<T>;
  const unsigned lane = block_thread_rank() & (warp_size - 1);
  const int nw = static_cast<int>((block_size() + warp_size - 1) / warp_size);
  const WarpPartOf<T> w = lane < static_cast<unsigned>(nw) ? s.warp[lane] : WarpPartOf<T>{{}, {}, kNoWindow, 0};
  ExactGatheredOf<T> g{{}, {}, kNoWindow, 0, 0, false};
  g.seen = __popc(__ballot_sync(0xffffffffu, (w.flags & 1) != 0));
  g.nonneg = __popc(__ballot_sync(0xffffffffu, (w.flags & 2) != 0));
  if constexpr (!std::is_same_v<BinsOf<T>, NoBins>) {
    const unsigned binned = __ballot_sync(0xffffffffu, w.p != kNoWindow);
    if (binned != 0) {
      const int p0 = __shfl_sync(0xffffffffu, w.p, __ffs(binned) - 1);
      if (__all_sync(0xffffffffu, w.p == kNoWindow || w.p == p0)) {
        std::int64_t l[L], h[L];  // zero where no window
#pragma unroll
        for (int j = 0; j < L; ++j) l[j] = w.lo[j], h[j] = w.hi[j];
#pragma unroll
        for (int off = warp_size / 2; off > 0; off /= 2)
#pragma unroll
          for (int j = 0; j < L; ++j)
            l[j] += __shfl_xor_sync(0xffffffffu, l[j], off), h[j] += __shfl_xor_sync(0xffffffffu, h[j], off);
        g.p = p0;
#pragma unroll
        for (int j = 0; j < L; ++j) g.lo[j] = l[j], g.hi[j] = h[j];
      } else {
        g.several = true;
      }
    }
  }
  return g;
}

/// Adds every thread's bins and filter into the block's shared accumulator (all threads call;
/// barriers inside and after): exact_block_publish, then warp 0 reads the warps' parts
/// (exact_warp0_gather) and lane 0 adds them to the limbs with plain integer adds.
template <class T>
__device__ __forceinline__ void exact_block_flush(ExactThread<T>& t, ExactStorage<T>& s) {
  using A = exact::Accumulator<T>;
  exact_block_publish(t, s);
  if (block_thread_rank() < warp_size) {
    const auto g = exact_warp0_gather(s);
    if (block_thread_rank() == 0) {
      if constexpr (!std::is_same_v<BinsOf<T>, NoBins>) {
        if (g.p != kNoWindow) exact_put_bins<T>(s.acc.w, g.p, g.lo, g.hi);
        if (g.several) exact_put_warps_serial(s, static_cast<int>((block_size() + warp_size - 1) / warp_size));
      }
      s.acc.w[A::seen_word] += g.seen, s.acc.w[A::nonneg_word] += g.nonneg;
    }
  }
  __syncthreads();
}

/// Thread 0's form of exact_block_flush's bins step for warps of several windows: warps of one
/// window in a row summed first, each sum added to the limbs.
template <class T>
__device__ void exact_put_warps_serial(ExactStorage<T>& s, int nw) {
  if constexpr (!std::is_same_v<BinsOf<T>, NoBins>) {
    {
      // Warps of one window are summed first (32 warps' sums fit: lo < 2^53, |hi| < 2^30).
      constexpr int L = kBinLevels<T>;
      const auto put = [&](int q, const std::int64_t(&l)[L], const std::int64_t(&h)[L]) {
        exact_put_bins<T>(s.acc.w, q, l, h);
      };
      int cur = kNoWindow;
      std::int64_t sl[L] = {}, sh[L] = {};
      for (int k = 0; k < nw; ++k) {
        const auto& w = s.warp[k];
        if (w.p == kNoWindow) continue;
        if (w.p != cur) {
          if (cur != kNoWindow) put(cur, sl, sh);
          cur = w.p;
#pragma unroll
          for (int j = 0; j < L; ++j) sl[j] = sh[j] = 0;
        }
#pragma unroll
        for (int j = 0; j < L; ++j) sl[j] += w.lo[j], sh[j] += w.hi[j];
      }
      if (cur != kNoWindow) put(cur, sl, sh);
    }
  }
}

/// One carry step on every limb at once (limb k keeps its low 32 bits and takes limb k-1's carry):
/// the same value, every limb below 2^33 in magnitude, so that many blocks' limbs can be added.
/// All threads call; barriers inside.
template <class T>
__device__ __forceinline__ void exact_block_carry(exact::Accumulator<T>& acc) {
  constexpr int L = exact::Accumulator<T>::limbs;
  std::int64_t v = 0;
  const int k = block_thread_rank();
  if (k < L) {
    const std::int64_t own = acc.w[k], below = k > 0 ? acc.w[k - 1] : 0;
    const std::int64_t carry_in = below >> exact::limb_bits;
    v = (k == L - 1 ? own : own - ((own >> exact::limb_bits) << exact::limb_bits)) + carry_in;
  }
  __syncthreads();
  if (k < L) acc.w[k] = v;
  __syncthreads();
}

/// `s.acc` as the output Out: the window of non-zero limbs found by the warp's ballots (one per 32
/// limbs, not a serial scan of a double accumulator's 67), then rounded by the warp
/// (exact_warp_round_window) or, for NaN, Inf and windows wider than a warp, by
/// thread 0 (Accumulator::round_window, inline, a narrow window in registers, else on s's shared
/// scratch), or for Out = exact::Accumulator<T> normalised by thread 0. Warp 0 calls; the result is
/// in thread 0.
template <class Out, class T>
__device__ __forceinline__ Out exact_output(ExactStorage<T>& s) {
  if constexpr (std::is_same_v<Out, exact::Accumulator<T>>) {
    Out r{};
    if (block_thread_rank() == 0) r = exact::result_of<Out>(s.acc);
    return r;
  } else {
    using A = exact::Accumulator<T>;
    constexpr int L = A::limbs;
    const int lane = static_cast<int>(block_thread_rank() & (warp_size - 1));
    int lo = -1, hi = -1;
#pragma unroll
    for (int base = 0; base < L; base += warp_size) {
      const unsigned m = __ballot_sync(0xffffffffu, base + lane < L && s.acc.w[base + lane] != 0);
      if (m != 0) {
        if (lo < 0) lo = base + __ffs(m) - 1;
        hi = base + 31 - __clz(m);
      }
    }
    Out r{};
    const bool special = s.acc.w[A::nan_word] != 0 || s.acc.w[A::pos_inf_word] != 0 || s.acc.w[A::neg_inf_word] != 0;
    const bool warp = !special && hi >= 0 && hi - lo <= warp_size - 3;  // warp-uniform
    if (warp) r = exact_warp_round_window<Out>(s.acc, lo, hi);
    else if (lane == 0) r = s.acc.template round_window<Out>(lo, hi, s.round_a, s.round_d);
    return r;
  }
}

/// The block's exact sum rounded to Out (or, Out = exact::Accumulator<T>, its normalised accumulator), in thread 0 (all
/// threads call). Needs block_size() >= 32.
template <class Out, class T>
__device__ __forceinline__ Out exact_block_sum(ExactThread<T>& t, ExactStorage<T>& s) {
  exact_block_flush(t, s);
  Out r{};
  if (block_thread_rank() < warp_size) r = exact_output<Out>(s);
  return r;
}

/// The grid's (or a segment's: `nblocks` blocks numbered `block`, with their own partials and
/// ticket) exact sum rounded to Out. Returns true in every thread of the last block, whose thread 0
/// holds the result. Needs block_size() >= Accumulator<T>::words.
template <class Out, class T>
__device__ __forceinline__ bool exact_gang_sum(ExactThread<T>& t, exact::Accumulator<T>* d_partials,
                                               unsigned int* d_ticket, Out& result, ExactStorage<T>& s,
                                               std::int64_t nblocks = grid_blocks(),
                                               std::int64_t block = block_rank()) {
  constexpr int W = exact::Accumulator<T>::words;
  exact_block_flush(t, s);
  const int k = static_cast<int>(block_thread_rank());
  if (nblocks == 1) {
    if (k < warp_size) {
      const Out r = exact_output<Out>(s);
      if (k == 0) result = r;
    }
    return true;
  }
  exact_block_carry(s.acc);
  if (k < W) d_partials[block].w[k] = s.acc.w[k];
  if (!gang_arrive(d_ticket, static_cast<unsigned int>(nblocks), s.last)) return false;
  // Word k of every block's accumulator, integer adds (the order does not matter): `groups` groups
  // of W threads, group g adding blocks g, g + groups, ... with kExactMergeLoads independent L2 loads in flight
  // (ld.cg: the ticket's acquire made them visible; L1 never holds them), then word k's thread adds
  // the groups' sums. (A double accumulator's 72 words leave 3 groups: a grid of 396 blocks is 132
  // loads a thread, latency-bound with fewer in flight; sixteen make the kernels spill.)
  const int groups = min(ExactStorage<T>::groups, static_cast<int>(block_size()) / W);
  const int g = k / W, kk = k - g * W;
  if (g < groups) {
    constexpr int D = kExactMergeLoads;
    std::int64_t a[D] = {};
    for (std::int64_t b = g; b < nblocks; b += D * groups)
#pragma unroll
      for (int u = 0; u < D; ++u)
        if (b + u * groups < nblocks) a[u] += __ldcg(&d_partials[b + u * groups].w[kk]);
#pragma unroll
    for (int h = D / 2; h > 0; h /= 2)
#pragma unroll
      for (int u = 0; u < h; ++u) a[u] += a[u + h];
    const std::int64_t sum = a[0];
    if (g > 0) s.part[g - 1][kk] = sum;
    else s.acc.w[kk] = sum;
  }
  __syncthreads();
  if (k < W)
    for (int h = 1; h < groups; ++h) s.acc.w[k] += s.part[h - 1][k];
  __syncthreads();
  if (k < warp_size) {
    const Out r = exact_output<Out>(s);
    if (k == 0) result = r;
  }
  return true;
}

}  // namespace tally::reduce::device
