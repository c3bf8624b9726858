#pragma once
// A 3-D strided view of the input: element (k, j, i) of extents (ng, nw, nv) lives at
// data[k * stride_g + j * stride_w + i]. The vector axis is contiguous; row strides let a
// sub-array of a larger array be reduced in place. Sizes and indices are 64-bit.

#include <array>
#include <cstdint>
#include <type_traits>

#include "tally/reduce/levels.hpp"

namespace tally::reduce {

struct Extents {
  std::int64_t ng = 1, nw = 1, nv = 1;
  [[nodiscard]] constexpr std::int64_t size() const { return ng * nw * nv; }
  [[nodiscard]] constexpr std::int64_t operator[](int axis) const { return axis == 0 ? ng : axis == 1 ? nw : nv; }
};

template <class T>
struct View {
  T* data = nullptr;
  Extents ext{};
  std::int64_t stride_w = 0;  ///< elements between consecutive worker rows (>= nv)
  std::int64_t stride_g = 0;  ///< elements between consecutive gang slabs (>= nw * stride_w)

  /// A contiguous (ng, nw, nv) array.
  static constexpr View contiguous(T* p, std::int64_t ng, std::int64_t nw, std::int64_t nv) {
    return View{p, {ng, nw, nv}, nv, nw * nv};
  }
  /// A contiguous 1-D array of n elements, as (1, 1, n).
  static constexpr View flat(T* p, std::int64_t n) { return contiguous(p, 1, 1, n); }
  /// A strided view; validated when it reaches reduce().
  static constexpr View strided(T* p, Extents e, std::int64_t stride_w, std::int64_t stride_g) {
    return View{p, e, stride_w, stride_g};
  }
  // A template so that View<const T> has no conversion to itself (nvcc warns about one, #554-D).
  template <class U = T>
  requires(!std::is_const_v<U>) constexpr operator View<const U>() const {
    return {data, ext, stride_w, stride_g};
  }  // NOLINT
};

/// The output of reducing `levels` of an input of extents `e`: the remaining axes, in order
/// (rank 0 = a scalar, stored as one element). `dims` holds `rank` extents.
struct OutputShape {
  int rank = 0;
  std::array<std::int64_t, 3> dims{};
  [[nodiscard]] constexpr std::int64_t size() const {
    std::int64_t n = 1;
    for (int a = 0; a < rank; ++a) n *= dims[static_cast<unsigned>(a)];
    return n;
  }
};

constexpr OutputShape output_shape(Extents e, Levels levels) {
  OutputShape s;
  constexpr Level order[3] = {Level::gang, Level::worker, Level::vector};
  for (int a = 0; a < 3; ++a)
    if (!levels.contains(order[a])) s.dims[static_cast<unsigned>(s.rank++)] = e[a];
  return s;
}

}  // namespace tally::reduce
