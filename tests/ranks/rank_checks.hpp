#pragma once
// What the allreduce tests share (host and device): every rank's inputs, regenerated on every rank
// from the shared seed, and the naive rank-ordered reference fold.

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "rank_support.hpp"
#include "tally/ranks/split.hpp"
#include "tally/reduce/ops.hpp"
#include "tally/reduce/ranks.hpp"
#include "test_support.hpp"

namespace tally::test {

/// A reference combine written out naively (not ops.hpp): NaN wins in Max/Min.
template <class Op, class T>
T naive_combine(T a, T b) {
  using namespace tally::reduce;
  using namespace tally::ranks;
  if constexpr (std::is_same_v<Op, Sum>) return a + b;
  else if constexpr (std::is_same_v<Op, Prod>) return a * b;
  else if constexpr (std::is_same_v<Op, Max> || std::is_same_v<Op, Min>) {
    if constexpr (std::is_floating_point_v<T>)
      if (std::isnan(a) || std::isnan(b)) return std::isnan(a) ? a : b;
    if constexpr (std::is_same_v<Op, Max>) return a < b ? b : a;
    else return b < a ? b : a;
  } else if constexpr (std::is_same_v<Op, BitAnd>) return a & b;
  else if constexpr (std::is_same_v<Op, BitOr>) return a | b;
  else if constexpr (std::is_same_v<Op, BitXor>) return a ^ b;
  else if constexpr (std::is_same_v<Op, LogicalAnd>) return T(a != 0 && b != 0);
  else return T(a != 0 || b != 0);
}

/// Rank r's `n` inputs for Op (ranges where nothing overflows: products of at most 3 small factors).
template <class Op, class T>
std::vector<T> rank_input(std::size_t n, int r, std::uint64_t salt) {
  using namespace tally::reduce;
  using namespace tally::ranks;
  const std::uint64_t s = rank_salt(salt, r);
  if constexpr (std::is_floating_point_v<T>) {
    if constexpr (std::is_same_v<Op, Prod>) return random_vector<T>(n, T(0.5), T(2), s);
    else return random_vector<T>(n, T(-1), T(1), s);
  } else if constexpr (std::is_same_v<Op, Prod>) {
    return random_vector<T>(n, T(-3), T(3), s);
  } else if constexpr (std::is_same_v<Op, LogicalAnd> || std::is_same_v<Op, LogicalOr>) {
    return random_vector<T>(n, T(-1), T(2), s);  // zeros and non-zeros, not only 0/1
  } else if constexpr (is_bitwise_op<Op>) {
    return random_vector<T>(n, std::numeric_limits<T>::lowest(), std::numeric_limits<T>::max(), s);
  } else {
    return random_vector<T>(n, T(-1000000), T(1000000), s);
  }
}

/// The rank-ordered fold of rows[0], rows[1], ... element by element.
template <class Op, class T>
std::vector<T> naive_rank_fold(const std::vector<std::vector<T>>& rows) {
  std::vector<T> out = rows.at(0);
  for (std::size_t r = 1; r < rows.size(); ++r)
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = naive_combine<Op, T>(out[i], rows[r][i]);
  return out;
}

/// Bitwise equality, except that any two NaNs are equal (payloads are not promised).
template <class T>
bool same_bits(T a, T b) {
  if constexpr (std::is_floating_point_v<T>)
    if (std::isnan(a) && std::isnan(b)) return true;
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}

/// The index of the first element where the two differ (same_bits), or -1.
template <class T>
long first_difference(const std::vector<T>& a, const std::vector<T>& b) {
  if (a.size() != b.size()) return 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!same_bits(a[i], b[i])) return static_cast<long>(i);
  return -1;
}

template <class T>
const char* type_name() {
  if constexpr (std::is_same_v<T, std::int32_t>) return "int32";
  else if constexpr (std::is_same_v<T, std::int64_t>) return "int64";
  else if constexpr (std::is_same_v<T, float>) return "float";
  else return "double";
}

}  // namespace tally::test
