// Segmented reductions: the argument checks (both backends) and the CPU backend.
//
// CPU: segments of at most kCpuLong elements are folded one per task iteration (a parallel loop over
// segments; each folds its elements into kLanes interleaved accumulators, lane l taking elements
// l, l + kLanes, ..., joined in lane order). Longer segments go, one after the other, through the
// library's own full reduction (reduce_cpu), which cuts them into fixed chunks combined in chunk order
// and uses every thread. Both orders depend on the segment alone: the bits do not depend on the
// thread count, nor on the other segments.
#include <algorithm>
#include <stdexcept>
#include <string>

#include "instantiate.hpp"
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

template <class Op, class T, class Acc>
Acc fold_segment(const T* x, std::int64_t len) {
  Acc lane[kLanes];
  for (auto& l : lane) l = Op::template identity<Acc>();
  std::int64_t i = 0;
  for (; i + kLanes <= len; i += kLanes)
    for (int l = 0; l < kLanes; ++l) lane[l] = Op::template combine<Acc>(lane[l], static_cast<Acc>(x[i + l]));
  for (int l = 0; i < len; ++i, ++l) lane[l] = Op::template combine<Acc>(lane[l], static_cast<Acc>(x[i]));
  Acc r = Op::template identity<Acc>();
  for (const Acc& l : lane) r = Op::template combine<Acc>(r, l);
  return r;
}

}  // namespace

template <class Op, class T, class Acc, class Off>
void segmented_cpu(const T* in, std::int64_t n, const Off* off, std::int64_t n_seg, Acc* out) {
  const std::int64_t blocks = (n_seg + kSegBlock - 1) / kSegBlock;
  const bool team = n >= (std::int64_t{1} << 16) || n_seg >= 4 * kSegBlock;
#pragma omp parallel for schedule(dynamic, 1) if (team)
  for (std::int64_t b = 0; b < blocks; ++b) {
    const std::int64_t s1 = std::min(n_seg, (b + 1) * kSegBlock);
    for (std::int64_t s = b * kSegBlock; s < s1; ++s) {
      const std::int64_t lo = off[s], len = static_cast<std::int64_t>(off[s + 1]) - lo;
      if (len <= kCpuLong) out[s] = fold_segment<Op, T, Acc>(in + lo, len);
    }
  }
  for (std::int64_t s = 0; s < n_seg; ++s) {
    const std::int64_t lo = off[s], len = static_cast<std::int64_t>(off[s + 1]) - lo;
    if (len > kCpuLong) reduce_cpu<Op, T, Acc>(Problem{in + lo, {1, 1, len}, len, len, Levels::all(), 1}, out + s);
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

}  // namespace tally::reduce::detail
