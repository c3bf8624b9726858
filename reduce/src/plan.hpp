#pragma once
// Canonical form of a reduction, shared by the CPU and CUDA backends.
//
// Axes of extent 1 are dropped and adjacent axes that are both reduced (or both kept) and
// contiguous with each other are merged. What is left falls into one of two families:
//
//  inner: the contiguous axis is reduced.
//         out[o] = reduce_{q < rows, i < n} in[koff(o) + roff(q) + i]
//  outer: the contiguous axis is kept (nc columns); reduced axes are strided rows.
//         out[b * nc + c] = reduce_{q < rows} in[b * sb + roff(q) + c]
//
// with koff(o) = (o / k_ext2) * k_s1 + (o % k_ext2) * k_s2 and roff(q) = (q / r_ext2) * r_s1 + (q % r_ext2) * r_s2.
// A contiguous full reduction is inner with n_out = rows = 1; vector-only is inner with rows = 1; gang
// is outer with nb = 1, and so on.

#include <cstdint>
#include <string>

#include "tally/reduce/reduce.hpp"

namespace tally::reduce::detail {

struct Plan {
  enum class Kind { inner, outer };
  Kind kind = Kind::inner;
  std::int64_t n_out = 1;  ///< output elements
  bool empty = false;      ///< nothing to reduce: every output is the identity

  // inner family
  std::int64_t n = 1;  ///< contiguous reduced row length
  std::int64_t k_ext2 = 1, k_s1 = 0, k_s2 = 0;

  // outer family
  std::int64_t nb = 1, sb = 0, nc = 1;

  // reduced rows (both families)
  std::int64_t rows = 1, r_ext2 = 1, r_s1 = 0, r_s2 = 0;

  [[nodiscard]] TALLY_HD constexpr std::int64_t koff(std::int64_t o) const {
    return (o / k_ext2) * k_s1 + (o % k_ext2) * k_s2;
  }
  [[nodiscard]] TALLY_HD constexpr std::int64_t roff(std::int64_t q) const {
    return (q / r_ext2) * r_s1 + (q % r_ext2) * r_s2;
  }
  /// Elements reduced into each output.
  [[nodiscard]] TALLY_HD constexpr std::int64_t per_output() const { return kind == Kind::inner ? rows * n : rows; }
  [[nodiscard]] std::string to_string() const;
};

/// `p` must have passed validate().
Plan make_plan(const Problem& p);

}  // namespace tally::reduce::detail
