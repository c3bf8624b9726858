// Segmented reductions: the argument checks (both backends) and the CPU backend's instantiations
// (the CPU engine is header-only: tally/reduce/segmented_generic.hpp).
#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "instantiate.hpp"
#include "tally/reduce/detail/segmented_generic.hpp"
#include "tally/reduce/reducers.hpp"
#include "tally/reduce/segmented.hpp"

namespace tally::reduce::detail {

void validate_segment_sizes(std::int64_t n, const void* in, std::int64_t n_offsets, const void* offsets,
                            std::int64_t n_out, const void* out) {
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

template void check_offsets_cpu<std::int32_t>(const std::int32_t*, std::int64_t, std::int64_t);
template void check_offsets_cpu<std::int64_t>(const std::int64_t*, std::int64_t, std::int64_t);
template void throw_bad_offsets<std::int32_t>(std::int64_t, std::int32_t, std::int32_t, std::int64_t, std::int64_t);
template void throw_bad_offsets<std::int64_t>(std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t);

#define TALLY_INSTANTIATE_SEG_CPU(Op, T, Acc)                                                                      \
  template void segmented_cpu<Op, T, Acc, std::int32_t>(const T*, std::int64_t, const std::int32_t*, std::int64_t, \
                                                        Acc*);                                                     \
  template void segmented_cpu<Op, T, Acc, std::int64_t>(const T*, std::int64_t, const std::int64_t*, std::int64_t, \
                                                        Acc*);
TALLY_REDUCE_FOR_EACH(TALLY_INSTANTIATE_SEG_CPU)
#define TALLY_INSTANTIATE_SEG_CPU_R(R, T) TALLY_INSTANTIATE_SEG_CPU(R, T, R::value_type)
TALLY_REDUCERS_FOR_EACH(TALLY_INSTANTIATE_SEG_CPU_R)

}  // namespace tally::reduce::detail
