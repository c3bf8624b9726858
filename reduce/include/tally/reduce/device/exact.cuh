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
//     float r;
//     if (tally::reduce::device::exact_gang_sum(t, d_partials, d_ticket, r, s) && threadIdx.x == 0) *d_sum = r;
//   }
//
// d_partials holds one Accumulator<T> per block (exact_partials_bytes), d_ticket starts at zero
// (the last block re-arms it). One block may take at most 2^29 inputs between two exact_* calls:
// its shared limbs have 31 bits of carry headroom. exact_block_sum() is the block-only form.
//
// Exact dot products of floats: ExactThread<exact::FloatProducts> and t.add_product(a[i], b[i]) (each
// product is exact in a double), then exact_gang_sum / exact_block_sum as above.

#include <cstdint>
#include <type_traits>

#include "tally/reduce/device/gang.cuh"
#include "tally/reduce/device/index.cuh"
#include "tally/reduce/exact.hpp"

namespace tally::reduce::device {

/// Shared memory of the exact blocks: the block's superaccumulator and the ticket's flag.
template <class T>
struct ExactStorage {
  exact::Accumulator<T> acc;
  bool last;
};

/// Bytes of d_partials for `blocks` blocks.
template <class T>
constexpr std::size_t exact_partials_bytes(std::int64_t blocks) {
  return static_cast<std::size_t>(blocks) * sizeof(exact::Accumulator<T>);
}

/// The filters' sink in shared memory: integer atomics on the block's accumulator.
template <class T>
struct SharedSink {
  exact::Accumulator<T>* acc;
  __device__ __forceinline__ void word_add(int k, std::int64_t v) {
    atomicAdd(reinterpret_cast<unsigned long long*>(&acc->w[k]), static_cast<unsigned long long>(v));
  }
  __device__ __forceinline__ void add(double r) {
    int i;
    std::uint64_t c[3];
    bool neg;
    if (!exact::split<exact::Accumulator<T>::emin>(r, i, c, neg)) return;
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
};

/// A thread's filter in front of its block's shared accumulator. The constructor clears the
/// accumulator and synchronises the block: every thread of the block constructs one.
template <class T>
struct ExactThread {
  exact::Filter f;
  SharedSink<T> sink;
  bool seen = false;  // took an input: an empty grid sums to +0, a grid of -0s to -0
  __device__ explicit ExactThread(ExactStorage<T>& s) : sink{&s.acc} {
    for (int k = block_thread_rank(); k < exact::Accumulator<T>::words; k += block_size()) s.acc.w[k] = 0;
    __syncthreads();
  }
  __device__ __forceinline__ void add(T x) { f.add(x, sink), seen = true; }
  /// The exact dot product's step (T = exact::FloatProducts): a * b is exact in a double.
  __device__ __forceinline__ void add_product(float a, float b) {
    static_assert(std::is_same_v<T, exact::FloatProducts>, "add_product: ExactThread<exact::FloatProducts>");
    f.add(static_cast<double>(a) * static_cast<double>(b), sink), seen = true;
  }
};

/// Adds every thread's filter into the block's shared accumulator (all threads call; a barrier
/// after). The filters of a warp are first combined by a shuffle tree of exact additions, so that
/// one lane per warp touches the shared limbs.
template <class T>
__device__ __forceinline__ void exact_block_flush(ExactThread<T>& t) {
  exact::Filter& f = t.f;
#pragma unroll
  for (int off = warp_size / 2; off > 0; off /= 2) {
    const double oh = __shfl_down_sync(0xffffffffu, f.hi, off), ol = __shfl_down_sync(0xffffffffu, f.lo, off);
    // Only the tree's receivers add: a lane that added anyway could flush a residual of a sum that
    // lane 0 also receives by another path, counting it twice.
    if ((block_thread_rank() & (warp_size - 1)) < static_cast<unsigned>(off)) {
      f.add(oh, t.sink);               // |oh| < kBig: never special; -0 + -0 stays -0
      if (ol != 0) f.add(ol, t.sink);  // lo = +0 would turn an all -0 hi into +0
    }
  }
  const bool warp_seen = __any_sync(0xffffffffu, t.seen);
  if ((block_thread_rank() & (warp_size - 1)) == 0) {
    if (warp_seen) t.sink.word_add(exact::Accumulator<T>::seen_word, 1);
    if (!f.all_negative_zero()) t.sink.word_add(exact::Accumulator<T>::nonneg_word, 1);
    t.sink.add(f.hi);
    t.sink.add(f.lo);
  }
  f = exact::Filter{};
  t.seen = false;
  __syncthreads();
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

/// The block's exact sum rounded to Out (or, Out = exact::Accumulator<T>, its normalised accumulator), in thread 0 (all threads call). Needs block_size() >= limbs.
template <class Out, class T>
__device__ __forceinline__ Out exact_block_sum(ExactThread<T>& t, ExactStorage<T>& s) {
  exact_block_flush(t);
  Out r{};
  if (block_thread_rank() == 0) r = exact::result_of<Out>(s.acc);
  return r;
}

/// The grid's (or a segment's: `nblocks` blocks numbered `block`, with their own partials and
/// ticket) exact sum rounded to Out. Returns true in every thread of the last block, whose thread 0
/// holds the result. Needs block_size() >= Accumulator<T>::words.
template <class Out, class T>
__device__ __forceinline__ bool exact_gang_sum(ExactThread<T>& t, exact::Accumulator<T>* d_partials, unsigned int* d_ticket,
                                               Out& result, ExactStorage<T>& s, std::int64_t nblocks = grid_blocks(),
                                               std::int64_t block = block_rank()) {
  constexpr int W = exact::Accumulator<T>::words;
  exact_block_flush(t);
  if (nblocks == 1) {
    if (block_thread_rank() == 0) result = exact::result_of<Out>(s.acc);
    return true;
  }
  exact_block_carry(s.acc);
  const int k = block_thread_rank();
  if (k < W) d_partials[block].w[k] = s.acc.w[k];
  if (!gang_arrive(d_ticket, static_cast<unsigned int>(nblocks), s.last)) return false;
  // Word k of every block's accumulator: integer adds, so the order does not matter. (Spreading the
  // loads over the whole block with shared atomics measured slower on an H100: 2^16 floats 7.6 us
  // against 6.3, 2^20 doubles 37.7 against 18.5.)
  if (k < W) {
    std::int64_t sum = 0;
    for (std::int64_t b = 0; b < nblocks; ++b) sum += load_coherent(&d_partials[b].w[k]);
    s.acc.w[k] = sum;
  }
  __syncthreads();
  if (k == 0) result = exact::result_of<Out>(s.acc);
  return true;
}

}  // namespace tally::reduce::device
