#pragma once
// The tally::reduce test suite, written once and instantiated for every backend (Kokkos style).
// A test source defines, before including this header,
//
//   #define TALLY_TEST_BACKEND "cpu"      // prefix of the test names
//   using TestBackend = <adapter>;        // see backend_cpu.hpp / test_reduce_cuda.cpp
//
// An adapter provides: `backend` and `other` (Backend values), `Buffer<T>` (with data() and size()),
// `upload(std::vector<T>)`, `poisoned<T>(n, byte)` (every byte set to `byte`), `download(buffer)`
// (waits for the work queued before it) and `stream()`.
//
// References are independent of the library: the naive sequential loop of reduce_reference.hpp
// (with the cases, inputs and shapes); Eigen's Tensor reductions are a second oracle for float and
// double. Tolerances: exact for integers, max and min; (n + 1) eps(Acc) sum|x|
// for floating-point sums; (n + 1) eps(Acc) |p| for products (inputs in [0.5, 2]).

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include <unsupported/Eigen/CXX11/Tensor>

#include "catch.hpp"
#include "tally/reduce/reduce.hpp"
#include "reduce_reference.hpp"
#include "test_support.hpp"

namespace tally::test::reduce_checks {

using namespace tally::reduce;  // NOLINT: test code
using std::int32_t;
using std::int64_t;

// ---- one case on one shape, all seven level sets ---------------------------------------------------

template <class A, class Op, class T, class Acc>
void check_all_level_sets(Workspace& ws, Extents e, bool strided, std::uint64_t salt) {
  const Layout l = make_layout(e, strided);
  std::vector<T> host(static_cast<std::size_t>(l.total), pad_value<Op, T>());
  const std::vector<T> vals = make_input<Op, T, Acc>(static_cast<std::size_t>(e.size()), e.size(), salt);
  for (int64_t k = 0, m = 0; k < e.ng; ++k)
    for (int64_t j = 0; j < e.nw; ++j)
      for (int64_t i = 0; i < e.nv; ++i)
        host[static_cast<std::size_t>(l.offset + k * l.sg + j * l.sw + i)] = vals[static_cast<std::size_t>(m++)];
  auto d_in = A::upload(host);
  const View<const T> in = View<const T>::strided(d_in.data() + l.offset, e, l.sw, l.sg);
  for (Levels lv : Levels::all_sets()) {
    const auto ref = reference<Op, T, Acc>(host.data() + l.offset, e, l.sw, l.sg, lv);
    auto d_out = A::template poisoned<Acc>(ref.value.size(), std::is_floating_point_v<Acc> ? 0xFF : 0x5A);
    reduce<Op, T, Acc>(A::backend, in, lv, std::span<Acc>(d_out.data(), d_out.size()), ws, A::stream());
    const std::string err = compare<Op>(A::download(d_out), ref);
    INFO((case_name<Op, T, Acc>()) << " over " << lv.to_string() << " of " << shape_name(e, strided) << ": " << err);
    CHECK(err.empty());
  }
}

template <class A, class Op, class T, class Acc>
void check_full_1d(Workspace& ws, int64_t n, std::uint64_t salt) {
  const auto host = make_input<Op, T, Acc>(static_cast<std::size_t>(n), n, salt);
  auto d_in = A::upload(host);
  const auto ref = reference<Op, T, Acc>(host.data(), {1, 1, n}, n, n, Levels::all());
  auto d_out = A::template poisoned<Acc>(1, std::is_floating_point_v<Acc> ? 0xFF : 0x5A);
  reduce<Op, T, Acc>(A::backend, View<const T>::flat(d_in.data(), n), Levels::all(), std::span<Acc>(d_out.data(), 1),
                     ws, A::stream());
  const std::string err = compare<Op>(A::download(d_out), ref);
  INFO((case_name<Op, T, Acc>()) << " full reduction of " << n << " elements: " << err);
  CHECK(err.empty());
}

// ---- Eigen's Tensor reductions as a second oracle --------------------------------------------------

template <class Op, class T, int K>
std::vector<T> eigen_reduce(const std::vector<T>& x, Extents e, const Eigen::array<Eigen::Index, K>& dims) {
  const Eigen::TensorMap<const Eigen::Tensor<T, 3, Eigen::RowMajor>> t(x.data(), e.ng, e.nw, e.nv);
  Eigen::Tensor<T, 3 - K, Eigen::RowMajor> r;
  if constexpr (std::is_same_v<Op, Sum>) r = t.sum(dims);
  else if constexpr (std::is_same_v<Op, Max>) r = t.maximum(dims);
  else r = t.minimum(dims);
  return std::vector<T>(r.data(), r.data() + r.size());
}

template <class Op, class T>
std::vector<T> eigen_reduce(const std::vector<T>& x, Extents e, Levels lv) {
  std::vector<Eigen::Index> d;
  for (int a = 0; a < 3; ++a)
    if (lv.contains(static_cast<Level>(1 << a))) d.push_back(a);
  if (d.size() == 1) return eigen_reduce<Op, T, 1>(x, e, {d[0]});
  if (d.size() == 2) return eigen_reduce<Op, T, 2>(x, e, {d[0], d[1]});
  return eigen_reduce<Op, T, 3>(x, e, {0, 1, 2});
}

template <class A, class Op, class T>
void check_against_eigen(Workspace& ws, Extents e, std::uint64_t salt) {
  const auto host = make_input<Op, T, T>(static_cast<std::size_t>(e.size()), e.size(), salt);
  auto d_in = A::upload(host);
  const auto in = View<const T>::contiguous(d_in.data(), e.ng, e.nw, e.nv);
  for (Levels lv : Levels::all_sets()) {
    const std::vector<T> want = eigen_reduce<Op, T>(host, e, lv);
    const auto ref = reference<Op, T, T>(host.data(), e, e.nv, e.nw * e.nv, lv);  // for the tolerance
    auto d_out = A::template poisoned<T>(want.size(), 0xFF);
    reduce<Op, T, T>(A::backend, in, lv, std::span<T>(d_out.data(), d_out.size()), ws, A::stream());
    const std::vector<T> got = A::download(d_out);
    int64_t bad = 0;
    std::string first;
    for (std::size_t o = 0; o < want.size() && o < got.size(); ++o) {
      // Both sums are within (n + 1) eps sum|x| of the exact one, so within twice that of each other.
      const long double tol = std::is_same_v<Op, Sum> ? 2.0L * static_cast<long double>(ref.count[o] + 1) *
                                                            std::numeric_limits<T>::epsilon() * ref.abs_sum[o]
                                                      : 0.0L;
      if (std::fabs(static_cast<long double>(got[o]) - static_cast<long double>(want[o])) <= tol) continue;
      if (++bad == 1) first = "out[" + std::to_string(o) + "] = " + show(got[o]) + ", Eigen " + show(want[o]);
    }
    INFO(Op::name << "<" << type_name<T>() << "> over " << lv.to_string() << " of " << shape_name(e, false)
                  << " vs Eigen: " << bad << " wrong, " << first);
    CHECK(got.size() == want.size());
    CHECK(bad == 0);
  }
}

// ---- NaN propagation ----------------------------------------------------------------------------

/// NaNs at `where` (positions in the view): every output whose elements include one is NaN, the
/// others equal the naive max/min exactly.
template <class A, class Op, class T, class Acc>
void check_nan(Workspace& ws, Extents e, bool strided, const std::vector<int64_t>& where, std::uint64_t salt,
               std::vector<Levels> sets = {}) {
  static constexpr auto all_sets = Levels::all_sets();
  if (sets.empty()) sets.assign(all_sets.begin(), all_sets.end());
  const Layout l = make_layout(e, strided);
  std::vector<T> host(static_cast<std::size_t>(l.total), T(0));
  auto vals = make_input<Op, T, Acc>(static_cast<std::size_t>(e.size()), e.size(), salt);
  for (int64_t w : where) vals[static_cast<std::size_t>(w)] = std::numeric_limits<T>::quiet_NaN();
  if (vals.size() > 2) vals[1] = -std::numeric_limits<T>::infinity(), vals[2] = std::numeric_limits<T>::infinity();
  for (int64_t w : where)
    vals[static_cast<std::size_t>(w)] = std::numeric_limits<T>::quiet_NaN();  // wins over the infinities
  for (int64_t k = 0, m = 0; k < e.ng; ++k)
    for (int64_t j = 0; j < e.nw; ++j)
      for (int64_t i = 0; i < e.nv; ++i)
        host[static_cast<std::size_t>(l.offset + k * l.sg + j * l.sw + i)] = vals[static_cast<std::size_t>(m++)];
  auto d_in = A::upload(host);
  const View<const T> in = View<const T>::strided(d_in.data() + l.offset, e, l.sw, l.sg);
  for (Levels lv : sets) {
    const auto ref = reference<Op, T, Acc>(host.data() + l.offset, e, l.sw, l.sg, lv);
    auto d_out = A::template poisoned<Acc>(ref.value.size(), 0x5A);  // poison with a number, not a NaN
    reduce<Op, T, Acc>(A::backend, in, lv, std::span<Acc>(d_out.data(), d_out.size()), ws, A::stream());
    const std::vector<Acc> got = A::download(d_out);
    int64_t bad = 0, nans = 0;
    std::string first;
    for (std::size_t o = 0; o < got.size(); ++o) {
      nans += ref.has_nan[o];
      const bool ok = ref.has_nan[o] ? std::isnan(got[o]) : got[o] == static_cast<Acc>(ref.value[o]);
      if (!ok && ++bad == 1)
        first = "out[" + std::to_string(o) + "] = " + show(got[o]) + ", expected " +
                (ref.has_nan[o] ? "NaN" : show(ref.value[o]));
    }
    INFO((case_name<Op, T, Acc>()) << " over " << lv.to_string() << " of " << shape_name(e, strided) << " with "
                                   << where.size() << " NaN: " << nans << " NaN outputs expected, " << bad << " wrong; "
                                   << first);
    CHECK(nans > 0);
    CHECK(bad == 0);
  }
}

// ---- determinism ----------------------------------------------------------------------------------

/// Runs the reduction and returns its output's bytes.
template <class A, class Op, class T, class Acc>
std::vector<Acc> run_once(Workspace& ws, const View<const T>& in, Levels lv) {
  auto d_out = A::template poisoned<Acc>(static_cast<std::size_t>(output_shape(in.ext, lv).size()), 0xFF);
  reduce<Op, T, Acc>(A::backend, in, lv, std::span<Acc>(d_out.data(), d_out.size()), ws, A::stream());
  return A::download(d_out);
}

template <class T>
bool bitwise_equal(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);  // memcmp: no null
}

}  // namespace tally::test::reduce_checks

// ==== the test cases, for TestBackend =============================================================

#ifndef TALLY_TEST_BACKEND
#error "define TALLY_TEST_BACKEND and TestBackend before including reduce_checks.hpp"
#endif

namespace tally::test::reduce_checks {

TEST_CASE(TALLY_TEST_BACKEND ": every operator x type x level set on 3-D shapes (contiguous and strided)", "[reduce]") {
  Workspace ws(TestBackend::backend);
  std::uint64_t salt = 1000;
  for_each_case(ReduceCases{}, [&](auto c) {
    using C = decltype(c);
    for (const Extents& e : matrix_shapes())
      for (bool strided : {false, true})
        check_all_level_sets<TestBackend, typename C::Op, typename C::T, typename C::Acc>(ws, e, strided, ++salt);
  });
}

TEST_CASE(TALLY_TEST_BACKEND ": every operator x type for full reductions of 1-D arrays up to 2^20+7", "[reduce]") {
  Workspace ws(TestBackend::backend);
  std::uint64_t salt = 2000;
  for_each_case(ReduceCases{}, [&](auto c) {
    using C = decltype(c);
    for (int64_t n : full_sizes())
      check_full_1d<TestBackend, typename C::Op, typename C::T, typename C::Acc>(ws, n, ++salt);
  });
}

TEST_CASE(TALLY_TEST_BACKEND ": agrees with Eigen's Tensor reductions", "[reduce][eigen]") {
  Workspace ws(TestBackend::backend);
  std::uint64_t salt = 3000;
  for (const Extents& e : {Extents{31, 33, 1025}, Extents{1025, 3, 32}, Extents{2, 1023, 2}}) {
    check_against_eigen<TestBackend, Sum, float>(ws, e, ++salt);
    check_against_eigen<TestBackend, Sum, double>(ws, e, ++salt);
    check_against_eigen<TestBackend, Max, float>(ws, e, ++salt);
    check_against_eigen<TestBackend, Min, double>(ws, e, ++salt);
  }
}

TEST_CASE(TALLY_TEST_BACKEND ": max and min propagate NaN to the whole result and to each output row",
          "[reduce][nan]") {
  Workspace ws(TestBackend::backend);
  std::uint64_t salt = 4000;
  auto g = tally::test::rng(4000);
  for_each_case(FloatMaxMinCases{}, [&](auto c) {
    using C = decltype(c);
    for (const Extents& e : {Extents{31, 33, 32}, Extents{3, 1025, 33}, Extents{1025, 31, 2}}) {
      const int64_t n = e.size();
      std::uniform_int_distribution<int64_t> pos(0, n - 1);
      for (bool strided : {false, true}) {
        check_nan<TestBackend, typename C::Op, typename C::T, typename C::Acc>(ws, e, strided, {pos(g)}, ++salt);
        check_nan<TestBackend, typename C::Op, typename C::T, typename C::Acc>(ws, e, strided,
                                                                               {0, n - 1, pos(g), pos(g)}, ++salt);
      }
    }
    // One NaN in a long 1-D array: first, last (the tail of the vector loop), anywhere.
    const int64_t big = (int64_t{1} << 20) + 7;
    for (int64_t w : {int64_t{0}, big - 1, std::uniform_int_distribution<int64_t>(0, big - 1)(g)})
      check_nan<TestBackend, typename C::Op, typename C::T, typename C::Acc>(ws, {1, 1, big}, false, {w}, ++salt,
                                                                             {Levels::all()});
  });
}

TEST_CASE(TALLY_TEST_BACKEND ": an empty input gives the identity of each operator", "[reduce]") {
  Workspace ws(TestBackend::backend);
  for_each_case(ReduceCases{}, [&](auto c) {
    using Op = typename decltype(c)::Op;
    using T = typename decltype(c)::T;
    using Acc = typename decltype(c)::Acc;
    const Acc id = static_cast<Acc>(ref_identity<Op, RefType<Op, Acc>>());
    for (const Extents& e : {Extents{0, 0, 0}, Extents{0, 4, 5}, Extents{3, 0, 5}, Extents{3, 4, 0}}) {
      const View<const T> in = View<const T>::contiguous(nullptr, e.ng, e.nw, e.nv);  // null is fine with no elements
      for (Levels lv : Levels::all_sets()) {
        const std::vector<Acc> got = run_once<TestBackend, Op, T, Acc>(ws, in, lv);
        INFO((case_name<Op, T, Acc>()) << " over " << lv.to_string() << " of " << shape_name(e, false));
        CHECK(static_cast<int64_t>(got.size()) == output_shape(e, lv).size());
        if constexpr (std::is_same_v<Op, Mean>) {  // the mean of nothing is NaN (not the sum's identity)
          CHECK(std::all_of(got.begin(), got.end(), [](Acc v) { return std::isnan(v); }));
          continue;
        }
        CHECK(bitwise_equal(got, std::vector<Acc>(got.size(), id)));
      }
    }
  });
}

TEST_CASE(TALLY_TEST_BACKEND ": two runs give bitwise equal results", "[reduce][determinism]") {
  Workspace ws(TestBackend::backend);
  const Extents e{5, 1023, 341};
  const auto host = make_input<Sum, float, float>(static_cast<std::size_t>(e.size()), e.size(), 5000);
  auto d_in = TestBackend::upload(host);
  const auto in = View<const float>::contiguous(d_in.data(), e.ng, e.nw, e.nv);
  for (Levels lv : Levels::all_sets()) {
    INFO("sum<float> and sum<float->double> over " << lv.to_string() << " of " << shape_name(e, false));
    CHECK(bitwise_equal(run_once<TestBackend, Sum, float, float>(ws, in, lv),
                        run_once<TestBackend, Sum, float, float>(ws, in, lv)));
    CHECK(bitwise_equal(run_once<TestBackend, Sum, float, double>(ws, in, lv),
                        run_once<TestBackend, Sum, float, double>(ws, in, lv)));
  }
}

TEST_CASE(TALLY_TEST_BACKEND ": reduce_to_host returns the full reduction", "[reduce]") {
  Workspace ws(TestBackend::backend);
  const int64_t n = (int64_t{1} << 20) + 7;
  const auto xf = make_input<Sum, float, double>(static_cast<std::size_t>(n), n, 6000);
  const auto xi = make_input<Sum, int32_t, int64_t>(static_cast<std::size_t>(n), n, 6001);
  auto d_f = TestBackend::upload(xf);
  auto d_i = TestBackend::upload(xi);
  const auto vf = View<const float>::flat(d_f.data(), n);
  const auto vi = View<const int32_t>::flat(d_i.data(), n);
  const auto rs = reference<Sum, float, double>(xf.data(), {1, 1, n}, n, n, Levels::all());
  const auto rm = reference<Max, float, float>(xf.data(), {1, 1, n}, n, n, Levels::all());
  const auto ri = reference<Sum, int32_t, int64_t>(xi.data(), {1, 1, n}, n, n, Levels::all());
  CHECK(matches<Sum>(reduce_to_host<Sum, float, double>(TestBackend::backend, vf, ws, TestBackend::stream()),
                     rs.value[0], rs.abs_sum[0], n));
  CHECK(reduce_to_host<Max, float>(TestBackend::backend, vf, ws, TestBackend::stream()) == rm.value[0]);
  CHECK(reduce_to_host<Sum, int32_t, int64_t>(TestBackend::backend, vi, ws, TestBackend::stream()) == ri.value[0]);
  // A strided sub-array: rows 1..1023 of a 1025 x 1024 array, columns 3..1001.
  const Extents e{1, 1023, 999};
  const auto ref = reference<Sum, float, double>(xf.data() + 1024 + 3, e, 1024, 1023 * 1024, Levels::all());
  CHECK(matches<Sum>(reduce_to_host<Sum, float, double>(
                         TestBackend::backend, View<const float>::strided(d_f.data() + 1024 + 3, e, 1024, 1023 * 1024),
                         ws, TestBackend::stream()),
                     ref.value[0], ref.abs_sum[0], e.size()));
}

TEST_CASE(TALLY_TEST_BACKEND ": bad arguments throw std::invalid_argument naming the argument", "[reduce][errors]") {
  Workspace ws(TestBackend::backend);
  const std::vector<float> host(6 * 7 * 8, 1.0f);
  auto d_in = TestBackend::upload(host);
  auto d_out = TestBackend::template poisoned<float>(64, 0xFF);
  const auto in = View<const float>::contiguous(d_in.data(), 6, 7, 8);
  const auto call = [&](View<const float> v, Levels lv, std::size_t out_n) {
    reduce<Sum, float>(TestBackend::backend, v, lv, std::span<float>(d_out.data(), out_n), ws, TestBackend::stream());
  };
  const auto expect_error = [&](auto&& f, const std::string& needle) {
    try {
      f();
      FAIL("no exception; expected one naming '" << needle << "'");
    } catch (const std::invalid_argument& ex) {
      INFO(ex.what());
      CHECK(std::string(ex.what()).find(needle) != std::string::npos);
    }
  };
  expect_error([&] { call(in, Level::gang, 55); }, "out:");   // wants 7 * 8 = 56
  expect_error([&] { call(in, Levels::all(), 0); }, "out:");  // wants 1
  expect_error([&] { call(in, Levels{}, 64); }, "levels:");
  expect_error([&] { call(View<const float>::contiguous(nullptr, 6, 7, 8), Levels::all(), 1); }, "null data pointer");
  expect_error([&] { call(View<const float>::strided(d_in.data(), {6, 7, 8}, 7, 56), Levels::all(), 1); }, "stride_w");
  expect_error([&] { call(View<const float>::strided(d_in.data(), {6, 7, 8}, 8, 55), Levels::all(), 1); }, "stride_g");
  expect_error([&] { call(View<const float>::contiguous(d_in.data(), 6, -7, 8), Levels::all(), 1); },
               "negative extent");
  expect_error(
      [&] {
        reduce<Sum, float>(TestBackend::backend, in, Level::vector, std::span<float>(static_cast<float*>(nullptr), 42),
                           ws);
      },
      "out: null");
  // A workspace made for this backend, used with the other one.
  expect_error(
      [&] { reduce<Sum, float>(TestBackend::other, in, Levels::all(), std::span<float>(d_out.data(), 1), ws); },
      "workspace");
  // The error left nothing half-done: a valid call still works.
  call(in, Levels::all(), 1);
  CHECK(TestBackend::download(d_out)[0] == 336.0f);
}

}  // namespace tally::test::reduce_checks
