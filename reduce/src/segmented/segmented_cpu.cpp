// Segmented reductions: the argument checks (both backends) and the CPU backend.
//
// CPU: segments of at most kCpuLong elements are folded one per task iteration (a parallel loop over
// blocks of segments; fewer than kLanes elements in element order, more into kLanes interleaved
// accumulators, lane l taking elements l, l + kLanes, ..., joined in lane order). Longer segments are cut into chunks of kCpuLong,
// folded the same way over every thread, and the chunks' partials joined in chunk order. Both orders
// depend on the segment alone: the bits depend neither on the thread count nor on the other segments.
// Op: an operator of ops.hpp or a Reducer (reducer.hpp), loaded with its position in the segment.
#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "instantiate.hpp"
#include "tally/reduce/reducers.hpp"
#include "tally/reduce/segmented.hpp"

namespace tally::reduce::detail {

void validate_segment_sizes(std::int64_t n, const void* in, std::int64_t n_offsets, const void* offsets, std::int64_t n_out,
                            const void* out) {
  const auto fail = [](const std::string& m) { throw std::invalid_argument("tally::reduce: " + m); };
  if (n > 0 && in == nullptr) fail("in: null pointer with " + std::to_string(n) + " elements");
  if (n_offsets != n_out + 1 && !(n_out == 0 && n_offsets == 0))
    fail("offsets: has " + std::to_string(n_offsets) + " entries for " + std::to_string(n_out) +
         " segments in out (want out.size() + 1 = " + std::to_string(n_out + 1) + ")");
  if (n_offsets > 0 && offsets == nullptr) fail("offsets: null pointer with " + std::to_string(n_offsets) + " entries");
  if (n_out > 0 && out == nullptr) fail("out: null pointer for " + std::to_string(n_out) + " segments");
}

template <class Off>
void throw_bad_offsets(std::int64_t i, Off at, Off next, std::int64_t n_seg, std::int64_t n) {
  const auto s = [](auto v) { return std::to_string(v); };
  std::string m = "tally::reduce: offsets: ";
  if (i == 0 && at < 0) m += "offsets[0] = " + s(at) + " is negative";
  else if (i < n_seg && at > next)
    m += "offsets[" + s(i) + "] = " + s(at) + " > offsets[" + s(i + 1) + "] = " + s(next) + " (must be non-decreasing)";
  else m += "offsets[" + s(n_seg) + "] = " + s(at) + " runs past the input (" + s(n) + " elements)";
  throw std::invalid_argument(m);
}

template <class Off>
void check_offsets_cpu(const Off* off, std::int64_t n_seg, std::int64_t n) {
  if (off[0] < 0) throw_bad_offsets<Off>(0, off[0], off[std::min<std::int64_t>(1, n_seg)], n_seg, n);
  for (std::int64_t i = 0; i < n_seg; ++i)
    if (off[i] > off[i + 1]) throw_bad_offsets<Off>(i, off[i], off[i + 1], n_seg, n);
  if (static_cast<std::int64_t>(off[n_seg]) > n) throw_bad_offsets<Off>(n_seg, off[n_seg], off[n_seg], n_seg, n);
}

namespace {

constexpr std::int64_t kCpuLong = std::int64_t{1} << 15;  // longer: the full reduction's chunks and threads
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
    for (int l = 0; l < kLanes; ++l) lane[l] = op_combine<Op, Acc>(lane[l], segment_load<Op, Acc>(x[i + l], index0 + i + l));
  for (int l = 0; i < len; ++i, ++l) lane[l] = op_combine<Op, Acc>(lane[l], segment_load<Op, Acc>(x[i], index0 + i));
  Acc r = op_identity<Op, Acc>();
  for (const Acc& l : lane) r = op_combine<Op, Acc>(r, l);
  return r;
}

}  // namespace

template <class Op, class T, class Acc, class Off>
void segmented_cpu(const T* in, std::int64_t n, const Off* off, std::int64_t n_seg, Acc* out) {
  const std::int64_t blocks = (n_seg + kSegBlock - 1) / kSegBlock;
  const bool team = n >= (std::int64_t{1} << 16) || n_seg >= 4 * kSegBlock;
  std::vector<char> has_long(static_cast<std::size_t>(blocks), 0);  // so that the second pass skips the rest
#pragma omp parallel for schedule(dynamic, 1) if (team)
  for (std::int64_t b = 0; b < blocks; ++b) {
    const std::int64_t s1 = std::min(n_seg, (b + 1) * kSegBlock);
    for (std::int64_t s = b * kSegBlock; s < s1; ++s) {
      const std::int64_t lo = off[s], len = static_cast<std::int64_t>(off[s + 1]) - lo;
      if (len <= 0) out[s] = empty_segment<Op, Acc>();
      else if (len <= kCpuLong) out[s] = fold_segment<Op, T, Acc>(in + lo, len);
      else has_long[static_cast<std::size_t>(b)] = 1;
    }
  }
  // Long segments: chunks of kCpuLong over the threads, the partials joined in chunk order.
  std::vector<Acc> part;
  for (std::int64_t s = 0; s < n_seg; ++s) {
    if (!has_long[static_cast<std::size_t>(s / kSegBlock)]) {
      s = (s / kSegBlock + 1) * kSegBlock - 1;  // the block's last segment: the loop steps to the next block
      continue;
    }
    const std::int64_t lo = off[s], len = static_cast<std::int64_t>(off[s + 1]) - lo;
    if (len <= kCpuLong) continue;
    const std::int64_t chunks = (len + kCpuLong - 1) / kCpuLong;
    part.resize(static_cast<std::size_t>(chunks));
#pragma omp parallel for schedule(dynamic, 1)
    for (std::int64_t c = 0; c < chunks; ++c)
      part[static_cast<std::size_t>(c)] = fold_segment<Op, T, Acc>(in + lo + c * kCpuLong, std::min(kCpuLong, len - c * kCpuLong), c * kCpuLong);
    Acc r = op_identity<Op, Acc>();
    for (const Acc& p : part) r = op_combine<Op, Acc>(r, p);
    out[s] = r;
  }
}

template void check_offsets_cpu<std::int32_t>(const std::int32_t*, std::int64_t, std::int64_t);
template void check_offsets_cpu<std::int64_t>(const std::int64_t*, std::int64_t, std::int64_t);
template void throw_bad_offsets<std::int32_t>(std::int64_t, std::int32_t, std::int32_t, std::int64_t, std::int64_t);
template void throw_bad_offsets<std::int64_t>(std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t);

#define TALLY_INSTANTIATE_SEG_CPU(Op, T, Acc)                                                                        \
  template void segmented_cpu<Op, T, Acc, std::int32_t>(const T*, std::int64_t, const std::int32_t*, std::int64_t, Acc*); \
  template void segmented_cpu<Op, T, Acc, std::int64_t>(const T*, std::int64_t, const std::int64_t*, std::int64_t, Acc*);
TALLY_REDUCE_FOR_EACH(TALLY_INSTANTIATE_SEG_CPU)
#define TALLY_INSTANTIATE_SEG_CPU_R(R, T) TALLY_INSTANTIATE_SEG_CPU(R, T, R::value_type)
TALLY_REDUCERS_FOR_EACH(TALLY_INSTANTIATE_SEG_CPU_R)

}  // namespace tally::reduce::detail
