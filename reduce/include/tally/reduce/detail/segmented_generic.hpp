#pragma once
// The CPU engine of segmented reductions (tally/reduce/segmented_generic.hpp is its public face).
// Segments of at most long_seg elements (SegmentedCpuPolicy, detail/tuning_cpu.hpp) are folded one
// per loop iteration (a parallel loop over blocks of segments; fewer than `lanes` elements in element
// order, more into `lanes` interleaved accumulators, lane l taking elements l, l + lanes, ..., joined
// in lane order). Longer segments are cut into chunks of long_seg, folded the same way over every
// thread, and the chunks' partials joined in chunk order. Both orders depend on the segment alone.

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "tally/reduce/detail/tuning_cpu.hpp"
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

// x[0, len), positions index0.. of their segment: fewer than `lanes` elements in element order, more
// into `lanes` interleaved accumulators (element i into lane i mod lanes) joined in lane order.
template <class Op, class T, class Acc>
Acc fold_segment(const T* x, std::int64_t len, std::int64_t index0 = 0) {
  if (len < SegmentedCpuPolicy::lanes) {  // short: one accumulator, element order (the lanes' set-up and join would
                                          // cost more)
    Acc r = op_identity<Op, Acc>();
    for (std::int64_t i = 0; i < len; ++i) r = op_combine<Op, Acc>(r, segment_load<Op, Acc>(x[i], index0 + i));
    return r;
  }
  Acc lane[SegmentedCpuPolicy::lanes];
  for (auto& l : lane) l = op_identity<Op, Acc>();
  std::int64_t i = 0;
  for (; i + SegmentedCpuPolicy::lanes <= len; i += SegmentedCpuPolicy::lanes)
    for (int l = 0; l < SegmentedCpuPolicy::lanes; ++l)
      lane[l] = op_combine<Op, Acc>(lane[l], segment_load<Op, Acc>(x[i + l], index0 + i + l));
  for (int l = 0; i < len; ++i, ++l) lane[l] = op_combine<Op, Acc>(lane[l], segment_load<Op, Acc>(x[i], index0 + i));
  Acc r = op_identity<Op, Acc>();
  for (const Acc& l : lane) r = op_combine<Op, Acc>(r, l);
  return r;
}

}  // namespace seg_cpu

template <class Op, class T, class Acc, class Off>
void segmented_cpu(const T* in, std::int64_t n, const Off* off, std::int64_t n_seg, Acc* out) {
  const std::int64_t blocks = (n_seg + SegmentedCpuPolicy::seg_block - 1) / SegmentedCpuPolicy::seg_block;
  [[maybe_unused]] const bool team =
      n >= SegmentedCpuPolicy::serial_below || n_seg >= 4 * SegmentedCpuPolicy::seg_block;  // OpenMP only
  std::vector<char> has_long(static_cast<std::size_t>(blocks), 0);  // so that the second pass skips the rest
  TALLY_SEGMENTED_OMP("omp parallel for schedule(dynamic, 1) if (team)")
  for (std::int64_t b = 0; b < blocks; ++b) {
    const std::int64_t s1 = std::min(n_seg, (b + 1) * SegmentedCpuPolicy::seg_block);
    for (std::int64_t s = b * SegmentedCpuPolicy::seg_block; s < s1; ++s) {
      const std::int64_t lo = off[s], len = static_cast<std::int64_t>(off[s + 1]) - lo;
      if (len <= 0) out[s] = empty_segment<Op, Acc>();
      else if (len <= SegmentedCpuPolicy::long_seg) out[s] = seg_cpu::fold_segment<Op, T, Acc>(in + lo, len);
      else has_long[static_cast<std::size_t>(b)] = 1;
    }
  }
  // Long segments: chunks of long_seg over the threads, the partials joined in chunk order.
  std::vector<Acc> part;
  for (std::int64_t s = 0; s < n_seg; ++s) {
    if (!has_long[static_cast<std::size_t>(s / SegmentedCpuPolicy::seg_block)]) {
      s = (s / SegmentedCpuPolicy::seg_block + 1) * SegmentedCpuPolicy::seg_block -
          1;  // the block's last: the loop steps on
      continue;
    }
    const std::int64_t lo = off[s], len = static_cast<std::int64_t>(off[s + 1]) - lo;
    if (len <= SegmentedCpuPolicy::long_seg) continue;
    const std::int64_t chunks = (len + SegmentedCpuPolicy::long_seg - 1) / SegmentedCpuPolicy::long_seg;
    part.resize(static_cast<std::size_t>(chunks));
    TALLY_SEGMENTED_OMP("omp parallel for schedule(dynamic, 1)")
    for (std::int64_t c = 0; c < chunks; ++c)
      part[static_cast<std::size_t>(c)] = seg_cpu::fold_segment<Op, T, Acc>(
          in + lo + c * SegmentedCpuPolicy::long_seg,
          std::min(SegmentedCpuPolicy::long_seg, len - c * SegmentedCpuPolicy::long_seg),
          c * SegmentedCpuPolicy::long_seg);
    Acc r = op_identity<Op, Acc>();
    for (const Acc& p : part) r = op_combine<Op, Acc>(r, p);
    out[s] = r;
  }
}

}  // namespace detail

}  // namespace tally::reduce
