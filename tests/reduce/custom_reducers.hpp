#pragma once
// Two user-defined reducers for the generic engine (the README's examples): a (sum, sum of squares,
// count) triple over floats, and the bounding box of 2-D points with the index of the leftmost point
// (load() with the flat index). Host and device (TALLY_HD); plain structs, no tally internals.
#include <cstdint>
#include <span>

#include "tally/reduce/reduce.hpp"

namespace tally::test {

struct SumSqCount {
  double sum, sumsq;
  std::int64_t count;
};

/// sum, sum of squares and count in one pass (double partials for float inputs).
struct SumSq {
  using value_type = SumSqCount;
  TALLY_HD static value_type identity() { return {0.0, 0.0, 0}; }
  TALLY_HD static value_type load(float x) { return {x, static_cast<double>(x) * x, 1}; }
  TALLY_HD static value_type combine(const value_type& a, const value_type& b) {
    return {a.sum + b.sum, a.sumsq + b.sumsq, a.count + b.count};
  }
};

/// A float carried in 16 bytes: SumSq over these must give SumSq's bits over the floats (the CUDA
/// segmented engine reads elements over 8 bytes from global memory, not shared memory).
struct Wide {
  double v, pad;
};
struct SumSqWide {
  using value_type = SumSqCount;
  TALLY_HD static value_type identity() { return SumSq::identity(); }
  TALLY_HD static value_type load(Wide x) { return {x.v, x.v * x.v, 1}; }
  TALLY_HD static value_type combine(const value_type& a, const value_type& b) { return SumSq::combine(a, b); }
};

struct Point2 {
  float x, y;
};
struct Box2 {
  float xmin, ymin, xmax, ymax;
  std::int64_t leftmost;  ///< flat index of the first point with x == xmin
};

/// The bounding box of points; commutative (ties in x go to the smaller index), so the same on every backend.
struct BBox2 {
  using value_type = Box2;
  static constexpr const char* name = "bbox";
  TALLY_HD static value_type identity() {
    constexpr float inf = __builtin_huge_valf();
    return {inf, inf, -inf, -inf, reduce::no_index};
  }
  TALLY_HD static value_type load(Point2 p, std::int64_t index) { return {p.x, p.y, p.x, p.y, index}; }
  TALLY_HD static value_type combine(const value_type& a, const value_type& b) {
    const bool a_left = a.xmin < b.xmin || (a.xmin == b.xmin && a.leftmost < b.leftmost);
    return {a_left ? a.xmin : b.xmin, a.ymin < b.ymin ? a.ymin : b.ymin, a.xmax > b.xmax ? a.xmax : b.xmax,
            a.ymax > b.ymax ? a.ymax : b.ymax, a_left ? a.leftmost : b.leftmost};
  }
};

/// The CUDA engine for these two (custom_cuda.cu: generic.cuh is compiled by nvcc only).
template <class R, class T>
void custom_reduce_cuda(reduce::View<const T> in, reduce::Levels levels, std::span<typename R::value_type> d_out,
                        reduce::Workspace& ws);

}  // namespace tally::test
