#pragma once
// The CPU engine of segmented reductions (tally/reduce/segmented_generic.hpp is its public face).
// Segments of at most kCpuLong elements are folded one per loop iteration (a parallel loop over
// blocks of segments; fewer than kLanes elements in element order, more into kLanes interleaved
// accumulators, lane l taking elements l, l + kLanes, ..., joined in lane order). Longer segments are
// cut into chunks of kCpuLong, folded the same way over every thread, and the chunks' partials joined
// in chunk order. Both orders depend on the segment alone.

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "tally/reduce/segmented.hpp"

// OpenMP only where the includer compiles with it (nvcc's host pass usually does not): no unknown pragmas.
#if defined(_OPENMP)
#define TALLY_SEGMENTED_OMP(text) _Pragma(text)
#else
#define TALLY_SEGMENTED_OMP(text)
#endif

namespace tally::reduce {
namespace detail {

namespace seg_cpu {

constexpr std::int64_t kCpuLong = std::int64_t{1} << 15;  // longer: chunks of this over the threads
constexpr int kLanes = 8;                                 // interleaved accumulators of a short segment
constexpr std::int64_t kSegBlock = 256;                   // segments per parallel-loop iteration

// x[0, len), positions index0.. of their segment: fewer than kLanes elements in element order, more
// into kLanes interleaved accumulators (element i into lane i mod kLanes) joined in lane order.
template <class Op, class T, class Acc>
Acc fold_segment(const T* x, std::int64_t len, std::int64_t index0 = 0) {
  if (len < kLanes) {  // short: one accumulator, element order (the lanes' set-up and join would cost more)
    Acc r = op_identity<Op, Acc>();
    for (std::int64_t i = 0; i < len; ++i) r = op_combine<Op, Acc>(r, segment_load<Op, Acc>(x[i], index0 + i));
    return r;
  }
  Acc lane[kLanes];
  for (auto& l : lane) l = op_identity<Op, Acc>();
  std::int64_t i = 0;
  for (; i + kLanes <= len; i += kLanes)
    for (int l = 0; l < kLanes; ++l)
      lane[l] = op_combine<Op, Acc>(lane[l], segment_load<Op, Acc>(x[i + l], index0 + i + l));
  for (int l = 0; i < len; ++i, ++l) lane[l] = op_combine<Op, Acc>(lane[l], segment_load<Op, Acc>(x[i], index0 + i));
  Acc r = op_identity<Op, Acc>();
  for (const Acc& l : lane) r = op_combine<Op, Acc>(r, l);
  return r;
}

}  // namespace seg_cpu

template <class Op, class T, class Acc, class Off>
void segmented_cpu(const T* in, std::int64_t n, const Off* off, std::int64_t n_seg, Acc* out) {
  const std::int64_t blocks = (n_seg + seg_cpu::kSegBlock - 1) / seg_cpu::kSegBlock;
  [[maybe_unused]] const bool team = n >= (std::int64_t{1} << 16) || n_seg >= 4 * seg_cpu::kSegBlock;  // OpenMP only
  std::vector<char> has_long(static_cast<std::size_t>(blocks), 0);  // so that the second pass skips the rest
  TALLY_SEGMENTED_OMP("omp parallel for schedule(dynamic, 1) if (team)")
  for (std::int64_t b = 0; b < blocks; ++b) {
    const std::int64_t s1 = std::min(n_seg, (b + 1) * seg_cpu::kSegBlock);
    for (std::int64_t s = b * seg_cpu::kSegBlock; s < s1; ++s) {
      const std::int64_t lo = off[s], len = static_cast<std::int64_t>(off[s + 1]) - lo;
      if (len <= 0) out[s] = empty_segment<Op, Acc>();
      else if (len <= seg_cpu::kCpuLong) out[s] = seg_cpu::fold_segment<Op, T, Acc>(in + lo, len);
      else has_long[static_cast<std::size_t>(b)] = 1;
    }
  }
  // Long segments: chunks of kCpuLong over the threads, the partials joined in chunk order.
  std::vector<Acc> part;
  for (std::int64_t s = 0; s < n_seg; ++s) {
    if (!has_long[static_cast<std::size_t>(s / seg_cpu::kSegBlock)]) {
      s = (s / seg_cpu::kSegBlock + 1) * seg_cpu::kSegBlock - 1;  // the block's last: the loop steps on
      continue;
    }
    const std::int64_t lo = off[s], len = static_cast<std::int64_t>(off[s + 1]) - lo;
    if (len <= seg_cpu::kCpuLong) continue;
    const std::int64_t chunks = (len + seg_cpu::kCpuLong - 1) / seg_cpu::kCpuLong;
    part.resize(static_cast<std::size_t>(chunks));
    TALLY_SEGMENTED_OMP("omp parallel for schedule(dynamic, 1)")
    for (std::int64_t c = 0; c < chunks; ++c)
      part[static_cast<std::size_t>(c)] = seg_cpu::fold_segment<Op, T, Acc>(
          in + lo + c * seg_cpu::kCpuLong, std::min(seg_cpu::kCpuLong, len - c * seg_cpu::kCpuLong),
          c * seg_cpu::kCpuLong);
    Acc r = op_identity<Op, Acc>();
    for (const Acc& p : part) r = op_combine<Op, Acc>(r, p);
    out[s] = r;
  }
}

}  // namespace detail

}  // namespace tally::reduce
