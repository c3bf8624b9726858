// The production CUDA kernels' paths (flat, lane groups and ragged rows, split blocks, outer tiles with
// row splits; 16-byte and scalar loads; strided views) against a sequential host reference, chosen so
// that each path runs: full reductions in one block and over many, long rows with few outputs, short
// rows with many, two columns over a million rows. Also NaN propagation and bitwise reruns.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "catch.hpp"
#include "ladder/ladder.hpp"
#include "tally/common/device_buffer.cuh"
#include "tally/reduce/reduce.hpp"
#include "test_support.hpp"

using namespace tally::reduce;
using namespace tally::reduce::bench;
using tally::DeviceBuffer;

namespace {

struct Case {
  Extents e;
  std::int64_t sw, sg;  // strides (elements)
};

Case contiguous(std::int64_t ng, std::int64_t nw, std::int64_t nv) { return {{ng, nw, nv}, nv, nw * nv}; }

std::int64_t storage(const Case& c) {
  if (c.e.size() == 0) return 0;
  return (c.e.ng - 1) * c.sg + (c.e.nw - 1) * c.sw + c.e.nv;
}

/// Sequential reference: out index from the kept axes in order; Acc (double for floats) in k, j, i order.
template <class Op, class T, class R>
std::vector<R> reference(const std::vector<T>& x, const Case& c, Levels lv, std::vector<double>* abs_sum) {
  const auto shape = output_shape(c.e, lv);
  std::vector<R> out(static_cast<std::size_t>(shape.size()), Op::template identity<R>());
  abs_sum->assign(out.size(), 0.0);
  for (std::int64_t k = 0; k < c.e.ng; ++k)
    for (std::int64_t j = 0; j < c.e.nw; ++j)
      for (std::int64_t i = 0; i < c.e.nv; ++i) {
        std::int64_t o = 0;
        if (!lv.contains(Level::gang)) o = o * c.e.ng + k;
        if (!lv.contains(Level::worker)) o = o * c.e.nw + j;
        if (!lv.contains(Level::vector)) o = o * c.e.nv + i;
        const T v = x[static_cast<std::size_t>(k * c.sg + j * c.sw + i)];
        out[static_cast<std::size_t>(o)] = Op::template combine<R>(out[static_cast<std::size_t>(o)], static_cast<R>(v));
        (*abs_sum)[static_cast<std::size_t>(o)] += std::fabs(static_cast<double>(v));
      }
  return out;
}

template <class Op, class T, class Acc>
void check_case(const Case& c, Levels lv, std::uint64_t salt) {
  const std::int64_t len = storage(c);
  std::vector<T> x;
  if constexpr (std::is_integral_v<T>)
    x = tally::test::random_vector<T>(static_cast<std::size_t>(len), T(-1000), T(1000), salt);
  else x = tally::test::random_vector<T>(static_cast<std::size_t>(len), T(-1), T(1), salt);
  DeviceBuffer<T> in{std::span<const T>(x)};
  const std::int64_t nout = output_shape(c.e, lv).size();
  DeviceBuffer<Acc> out(static_cast<std::size_t>(nout));
  out.fill_bytes(0xFF);  // poison: every element must be written
  Workspace ws(Backend::cuda);
  const auto view = View<const T>::strided(in.data(), c.e, c.sw, c.sg);
  reduce<Op, T, Acc>(Backend::cuda, view, lv, out.span(), ws);
  const auto got = out.to_host();
  using R = std::conditional_t<std::is_integral_v<Acc>, Acc, double>;
  std::vector<double> abs;
  const auto ref = reference<Op, T, R>(x, c, lv, &abs);
  const std::int64_t per = c.e.size() / std::max<std::int64_t>(nout, 1);
  INFO(Op::name << " over " << lv.to_string() << " of (" << c.e.ng << ", " << c.e.nw << ", " << c.e.nv << "), strides "
                << c.sw << ", " << c.sg);
  std::int64_t bad = 0;
  for (std::size_t o = 0; o < got.size(); ++o) {
    bool ok;
    if constexpr (std::is_integral_v<Acc>) ok = got[o] == ref[o];
    else if constexpr (std::is_same_v<Op, Sum>)
      ok = std::fabs(static_cast<double>(got[o]) - ref[o]) <= tally::test::sum_tolerance<Acc>(per, abs[o]);
    else ok = static_cast<double>(got[o]) == ref[o];
    if (!ok && bad++ < 3) UNSCOPED_INFO("output " << o << ": got " << got[o] << ", reference " << ref[o]);
  }
  CHECK(bad == 0);
  // Bitwise rerun.
  DeviceBuffer<Acc> again(static_cast<std::size_t>(nout));
  reduce<Op, T, Acc>(Backend::cuda, view, lv, again.span(), ws);
  const auto got2 = again.to_host();
  CHECK(std::memcmp(got.data(), got2.data(), got.size() * sizeof(Acc)) == 0);
}

std::vector<Case> cases() {
  return {contiguous(1, 1, 1000),           // full, flat kernel in one block
          contiguous(1, 1, (1 << 20) + 7),  // full, flat kernel, scalar loads (odd length)
          contiguous(1, 1, 1 << 22),        // full, flat kernel over many blocks, 16-byte loads
          contiguous(96, 40, 1000),         // vector: ragged rows of 1000 floats (inner_row_kernel)
          contiguous(64, 256, 32),          // every family at moderate size
          contiguous(3, 5, 1 << 18),        // long rows, few outputs
          contiguous(1 << 14, 2, 2),        // short rows, many outputs; nc = 2 columns
          contiguous(2, 1 << 19, 2),        // two columns over a million rows (outer, row splits)
          contiguous(7, 33, 1025),
          {{5, 7, 33}, 40, 300},             // strided sub-array
          {{9, 300, 64}, 68, 300 * 68 + 4},  // strided, vectorizable rows but odd slab stride
          contiguous(0, 4, 4),               // empty
          contiguous(4, 0, 4)};
}

}  // namespace

TEST_CASE("production kernels: every level set on each path, float sum/max, int32->int64 sum, double min",
          "[kernels][gpu]") {
  std::uint64_t salt = 100;
  for (const Case& c : cases())
    for (Levels lv : Levels::all_sets()) {
      check_case<Sum, float, float>(c, lv, ++salt);
      check_case<Max, float, float>(c, lv, ++salt);
      check_case<Sum, std::int32_t, std::int64_t>(c, lv, ++salt);
      check_case<Min, double, double>(c, lv, ++salt);
    }
}

TEST_CASE("production kernels: float sum into double, int64 max", "[kernels][gpu]") {
  std::uint64_t salt = 5000;
  for (const Case& c : {contiguous(1, 1, 1 << 22), contiguous(64, 256, 32), contiguous(2, 1 << 19, 2)})
    for (Levels lv : Levels::all_sets()) {
      check_case<Sum, float, double>(c, lv, ++salt);
      check_case<Max, std::int64_t, std::int64_t>(c, lv, ++salt);
    }
}

TEST_CASE("production kernels and CUB propagate NaN through max and min", "[kernels][gpu][nan]") {
  const std::int64_t n = (1 << 22) + 3;
  auto x = tally::test::random_vector<float>(static_cast<std::size_t>(n), -1.f, 1.f, 77);
  for (std::int64_t pos : {std::int64_t{0}, n / 3, n - 1}) {
    auto y = x;
    y[static_cast<std::size_t>(pos)] = std::numeric_limits<float>::quiet_NaN();
    DeviceBuffer<float> in{std::span<const float>(y)}, out(1);
    Workspace ws(Backend::cuda);
    const auto v = View<const float>::flat(in.data(), n);
    CHECK(std::isnan(reduce_to_host<Max, float>(Backend::cuda, v, ws)));
    CHECK(std::isnan(reduce_to_host<Min, float>(Backend::cuda, v, ws)));
    reduce_with<Max, float>(Strategy::cub, v, out.span(), ws);
    CHECK(std::isnan(out.to_host()[0]));
  }
}

TEST_CASE("ladder strategies agree with the reference", "[kernels][gpu][ladder]") {
  for (std::int64_t n : {std::int64_t{1}, std::int64_t{1000}, std::int64_t{(1 << 20) + 7}}) {
    const auto x =
        tally::test::random_vector<float>(static_cast<std::size_t>(n), -1.f, 1.f, 900 + static_cast<std::uint64_t>(n));
    double ref = 0, abs = 0;
    float mx = -std::numeric_limits<float>::infinity();
    for (float v : x) ref += v, abs += std::fabs(v), mx = std::max(mx, v);
    DeviceBuffer<float> in{std::span<const float>(x)}, out(1);
    Workspace ws(Backend::cuda);
    const auto view = View<const float>::flat(in.data(), n);
    for (Strategy s : all_strategies) {
      INFO(to_string(s) << ", n = " << n);
      out.fill_bytes(0xFF);
      reduce_with<Sum, float>(s, view, out.span(), ws);
      CHECK(std::fabs(out.to_host()[0] - ref) <= tally::test::sum_tolerance<float>(n, abs));
      if (s != Strategy::atomic) {
        reduce_with<Max, float>(s, view, out.span(), ws);
        CHECK(out.to_host()[0] == mx);
      }
    }
  }
  DeviceBuffer<float> in(64), out(1);
  Workspace ws(Backend::cuda);
  const auto strided = View<const float>::strided(in.data(), {2, 2, 4}, 8, 16);
  const auto sum_strided = [&] { reduce_with<Sum, float>(Strategy::sequential, strided, out.span(), ws); };
  const auto atomic_max = [&] {
    reduce_with<Max, float>(Strategy::atomic, View<const float>::flat(in.data(), 64), out.span(), ws);
  };
  CHECK_THROWS_AS(sum_strided(), std::invalid_argument);
  CHECK_THROWS_AS(atomic_max(), std::invalid_argument);
}
