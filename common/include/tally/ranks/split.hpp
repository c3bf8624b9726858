#pragma once
// Equal parts of a range: how the apps split rows, K slabs and samples over the ranks.

#include <cstdint>

namespace tally::ranks {

/// [begin, end) of part `part` of `parts` equal parts of n items (the first n % parts parts one item
/// longer): the row blocks, K slabs and sample ranges of the apps.
struct Range {
  std::int64_t begin = 0, end = 0;
  [[nodiscard]] constexpr std::int64_t size() const { return end - begin; }
};
[[nodiscard]] constexpr Range split_range(std::int64_t n, int parts, int part) {
  const std::int64_t q = n / parts, r = n % parts, p = part;
  const std::int64_t b = p * q + (p < r ? p : r);
  return {b, b + q + (p < r ? 1 : 0)};
}

}  // namespace tally::ranks
