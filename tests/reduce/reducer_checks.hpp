#pragma once
// The generic reducers' tests (ArgMax, ArgMin, MinMax, MeanVar and two user reducers), written once
// for every backend like reduce_checks.hpp (include that first: TestBackend, TALLY_TEST_BACKEND).
//
// References are independent of reducers.hpp: a naive sequential walk of the view in (k, j, i) order,
// which meets each output's elements in increasing flat index; arg-reductions replace their best
// only on a strictly better value (so the first index wins) or a first NaN; min/max written out with
// the -0 < +0 and NaN rules; mean and M2 by the two-pass formula in long double. Arg-reductions and
// MinMax must match bit for bit (hence CPU == GPU); MeanVar within (n + 1) eps(double) of the scale.

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "custom_reducers.hpp"
#include "tally/reduce/reduce.hpp"

namespace tally::test::reducer_checks {

using namespace tally::reduce;  // NOLINT: test code
using std::int64_t;
using reduce_checks::type_name;

template <class T>
bool same_bits(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(a) && std::isnan(b)) return true;  // MinMax's NaN is checked for canonical bits separately
    return std::memcmp(&a, &b, sizeof(T)) == 0;
  } else {
    return a == b;
  }
}

/// A (ng, nw, nv) input in a host vector, contiguous or with padded rows and slabs.
template <class T>
struct Input {
  std::vector<T> data;
  Extents e;
  int64_t sw, sg;
  [[nodiscard]] const T& at(int64_t k, int64_t j, int64_t i) const {
    return data[static_cast<std::size_t>(k * sg + j * sw + i)];
  }
};

/// Values from a small set (many ties) or continuous, per `ties`; NaN nowhere.
template <class T>
Input<T> make_input(Extents e, bool strided, bool ties, std::uint64_t salt) {
  Input<T> in{{}, e, strided ? e.nv + 3 : e.nv, 0};
  in.sg = strided ? std::max<int64_t>(e.nw, 1) * in.sw + 5 : e.nw * e.nv;
  const auto n = static_cast<std::size_t>(std::max<int64_t>(e.ng, 1) * in.sg + 8);
  if constexpr (std::is_integral_v<T>)
    in.data = random_vector<T>(n, ties ? T(-6) : T(-1000000), ties ? T(6) : T(1000000), salt);
  else {
    in.data = random_vector<T>(n, T(-4), T(4), salt);
    if (ties)
      for (auto& x : in.data) x = std::round(x);  // integers -4..4, with +-0
  }
  return in;
}

/// f(out index, flat index, element) over the view in (k, j, i) order.
template <class T, class F>
void naive_walk(const Input<T>& in, Levels lv, F&& f) {
  const bool red[3] = {lv.contains(Level::gang), lv.contains(Level::worker), lv.contains(Level::vector)};
  const int64_t ext[3] = {in.e.ng, in.e.nw, in.e.nv};
  for (int64_t k = 0; k < in.e.ng; ++k)
    for (int64_t j = 0; j < in.e.nw; ++j)
      for (int64_t i = 0; i < in.e.nv; ++i) {
        const int64_t c[3] = {k, j, i};
        int64_t o = 0, flat = 0;
        for (int a = 0; a < 3; ++a) (red[a] ? flat : o) = (red[a] ? flat : o) * ext[a] + c[a];
        f(o, flat, in.at(k, j, i));
      }
}

template <bool Greater, class T>
std::vector<ValueIndex<T>> ref_arg(const Input<T>& in, Levels lv) {
  std::vector<ValueIndex<T>> r(static_cast<std::size_t>(output_shape(in.e, lv).size()), ValueIndex<T>{T(0), -1});
  naive_walk(in, lv, [&](int64_t o, int64_t flat, T x) {
    auto& b = r[static_cast<std::size_t>(o)];
    const bool xn = std::isnan(static_cast<double>(x)), bn = std::isnan(static_cast<double>(b.value));
    const bool better = b.index < 0 || (xn && !bn) || (!xn && !bn && (Greater ? x > b.value : x < b.value));
    if (better) b = {x, flat};
  });
  return r;
}

template <class T>
std::vector<MinMaxPair<T>> ref_minmax(const Input<T>& in, Levels lv) {
  const T inf = std::is_floating_point_v<T> ? std::numeric_limits<T>::infinity() : std::numeric_limits<T>::max();
  const T ninf = std::is_floating_point_v<T> ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::lowest();
  const auto n = static_cast<std::size_t>(output_shape(in.e, lv).size());
  std::vector<MinMaxPair<T>> r(n, MinMaxPair<T>{inf, ninf});
  std::vector<char> nan(n, 0);
  naive_walk(in, lv, [&](int64_t o, int64_t, T x) {
    auto& b = r[static_cast<std::size_t>(o)];
    if (std::isnan(static_cast<double>(x))) nan[static_cast<std::size_t>(o)] = 1;
    if (x < b.min || (x == b.min && std::signbit(static_cast<double>(x)))) b.min = x;
    if (x > b.max || (x == b.max && !std::signbit(static_cast<double>(x)))) b.max = x;
  });
  for (std::size_t o = 0; o < n; ++o)
    if (nan[o]) r[o] = {std::numeric_limits<T>::quiet_NaN(), std::numeric_limits<T>::quiet_NaN()};
  return r;
}

struct RefMoments {
  int64_t count = 0;
  long double sum = 0, mean = 0, m2 = 0, sq = 0;  // sq: sum of x^2 (the scale of M2's rounding)
};
template <class T>
std::vector<RefMoments> ref_moments(const Input<T>& in, Levels lv) {
  std::vector<RefMoments> r(static_cast<std::size_t>(output_shape(in.e, lv).size()));
  naive_walk(in, lv, [&](int64_t o, int64_t, T x) {
    auto& m = r[static_cast<std::size_t>(o)];
    ++m.count, m.sum += static_cast<long double>(x), m.sq += static_cast<long double>(x) * x;
  });
  for (auto& m : r) m.mean = m.count ? m.sum / m.count : 0;
  naive_walk(in, lv, [&](int64_t o, int64_t, T x) {
    auto& m = r[static_cast<std::size_t>(o)];
    m.m2 += (x - m.mean) * (x - m.mean);
  });
  return r;
}

template <class A, class R, class T>
std::vector<typename R::value_type> run(Workspace& ws, const Input<T>& in, Levels lv) {
  using Val = typename R::value_type;
  const auto d = A::template upload<T>(in.data);
  const auto view = View<const T>::strided(d.data(), in.e, in.sw, in.sg);
  auto out = A::template poisoned<Val>(static_cast<std::size_t>(output_shape(in.e, lv).size()), 0xA5);
  reduce<R, T>(A::backend, view, lv, std::span<Val>(out.data(), out.size()), ws, A::stream());
  return A::template download<Val>(out);
}

/// Every compiled reducer of T on one shape, every level set, against the references.
template <class A, class T>
void check_shape(Workspace& ws, Extents e, bool strided, bool ties, std::uint64_t salt) {
  const auto in = make_input<T>(e, strided, ties, salt);
  for (Levels lv : Levels::all_sets()) {
    const int64_t per = in.e.size() / std::max<int64_t>(output_shape(in.e, lv).size(), 1);
    const bool empty = output_shape(in.e, lv).size() > 0 && (per == 0 || in.e.size() == 0);
    INFO(type_name<T>() << " on (" << e.ng << ", " << e.nw << ", " << e.nv << ")" << (strided ? " strided" : "")
                        << (ties ? " with ties" : "") << ", levels " << lv.to_string() << ", salt " << salt);
    if (empty) {
      CHECK_THROWS_AS((run<A, ArgMax<T>>(ws, in, lv)), std::invalid_argument);
    } else {
      const auto amax = run<A, ArgMax<T>>(ws, in, lv), rmax = ref_arg<true>(in, lv);
      const auto amin = run<A, ArgMin<T>>(ws, in, lv), rmin = ref_arg<false>(in, lv);
      REQUIRE(amax.size() == rmax.size());
      // Every output is checked; one assertion per kind, naming the first output that differs.
      std::string arg_bad;
      for (std::size_t o = 0; o < rmax.size() && arg_bad.empty(); ++o) {
        // unflatten() of the output's position (kept axes) and of the index (reduced axes) lead back to the element
        const auto c = unflatten(amax[o].index, in.e, lv);
        const auto oc = unflatten(static_cast<int64_t>(o), in.e, Levels::from_bits(~lv.bits() & 7u));
        if (amax[o].index != rmax[o].index || !same_bits(amax[o].value, rmax[o].value) ||
            amin[o].index != rmin[o].index || !same_bits(amin[o].value, rmin[o].value) ||
            !same_bits(in.at(c[0] + oc[0], c[1] + oc[1], c[2] + oc[2]), amax[o].value))
          arg_bad = "output " + std::to_string(o) + ": argmax " + std::to_string(amax[o].index) + " (reference " +
                    std::to_string(rmax[o].index) + "), argmin " + std::to_string(amin[o].index) + " (reference " +
                    std::to_string(rmin[o].index) + ")";
      }
      INFO(arg_bad);
      CHECK(arg_bad.empty());
    }
    const auto mm = run<A, MinMax<T>>(ws, in, lv);
    const auto rmm = ref_minmax(in, lv);
    std::string mm_bad;
    for (std::size_t o = 0; o < rmm.size() && mm_bad.empty(); ++o)
      if (!same_bits(mm[o].min, rmm[o].min) || !same_bits(mm[o].max, rmm[o].max))
        mm_bad = "minmax output " + std::to_string(o);
    INFO(mm_bad);
    CHECK(mm_bad.empty());
    const auto mv = run<A, MeanVar, T>(ws, in, lv);
    const auto rmv = ref_moments(in, lv);
    constexpr double eps = std::numeric_limits<double>::epsilon();
    std::string mv_bad;
    for (std::size_t o = 0; o < rmv.size() && mv_bad.empty(); ++o) {
      const auto& r = rmv[o];
      bool ok = mv[o].count == static_cast<double>(r.count);
      if (r.count == 0) {
        ok = ok && std::isnan(mv[o].mean_or_nan()) && std::isnan(mv[o].variance());
      } else {
        const double scale = static_cast<double>(std::sqrt(r.sq / r.count));  // rms |x|
        ok = ok &&
             std::abs(mv[o].mean - static_cast<double>(r.mean)) <= 4 * static_cast<double>(r.count + 1) * eps * scale &&
             std::abs(mv[o].m2 - static_cast<double>(r.m2)) <=
                 8 * static_cast<double>(r.count + 1) * eps * static_cast<double>(r.sq);
      }
      if (!ok)
        mv_bad = "meanvar output " + std::to_string(o) + ": count " + std::to_string(mv[o].count) + ", mean " +
                 std::to_string(mv[o].mean) + ", m2 " + std::to_string(mv[o].m2) + " (reference " +
                 std::to_string(r.count) + ", " + std::to_string(static_cast<double>(r.mean)) + ", " +
                 std::to_string(static_cast<double>(r.m2)) + ")";
    }
    INFO(mv_bad);
    CHECK(mv_bad.empty());
  }
}

/// Full 1-D reductions of n elements at an offset (unaligned when off > 0), against the references.
template <class A, class T>
void check_flat(Workspace& ws, int64_t n, int64_t off, bool ties, std::uint64_t salt) {
  Input<T> in = make_input<T>(Extents{1, 1, n + off}, false, ties, salt);
  in.data.erase(in.data.begin(), in.data.begin() + off);
  in.e = Extents{1, 1, n};
  in.sw = n, in.sg = n;
  INFO(type_name<T>() << " flat n = " << n << " offset " << off << (ties ? " with ties" : "") << ", salt " << salt);
  const auto amax = run<A, ArgMax<T>>(ws, in, Levels::all()), rmax = ref_arg<true>(in, Levels::all());
  const auto amin = run<A, ArgMin<T>>(ws, in, Levels::all()), rmin = ref_arg<false>(in, Levels::all());
  CHECK(amax[0].index == rmax[0].index);
  CHECK(same_bits(amax[0].value, rmax[0].value));
  CHECK(amin[0].index == rmin[0].index);
  CHECK(same_bits(amin[0].value, rmin[0].value));
  const auto mm = run<A, MinMax<T>>(ws, in, Levels::all());
  const auto rmm = ref_minmax(in, Levels::all());
  CHECK(same_bits(mm[0].min, rmm[0].min));
  CHECK(same_bits(mm[0].max, rmm[0].max));
  const auto mv = run<A, MeanVar, T>(ws, in, Levels::all());
  const auto rmv = ref_moments(in, Levels::all());
  constexpr double eps = std::numeric_limits<double>::epsilon();
  CHECK(mv[0].count == static_cast<double>(n));
  const double scale = static_cast<double>(std::sqrt(rmv[0].sq / n));
  CHECK(std::abs(mv[0].mean - static_cast<double>(rmv[0].mean)) <= 4 * static_cast<double>(n + 1) * eps * scale);
  CHECK(std::abs(mv[0].m2 - static_cast<double>(rmv[0].m2)) <=
        8 * static_cast<double>(n + 1) * eps * static_cast<double>(rmv[0].sq));
}

template <class A, class T>
ValueIndex<T> arg_of(Workspace& ws, const std::vector<T>& x, bool max) {
  Input<T> in{x, Extents{1, 1, static_cast<int64_t>(x.size())}, static_cast<int64_t>(x.size()),
              static_cast<int64_t>(x.size())};
  return max ? run<A, ArgMax<T>>(ws, in, Levels::all())[0] : run<A, ArgMin<T>>(ws, in, Levels::all())[0];
}
template <class A, class T>
MinMaxPair<T> minmax_of(Workspace& ws, const std::vector<T>& x) {
  Input<T> in{x, Extents{1, 1, static_cast<int64_t>(x.size())}, static_cast<int64_t>(x.size()),
              static_cast<int64_t>(x.size())};
  return run<A, MinMax<T>>(ws, in, Levels::all())[0];
}
template <class A, class T>
Moments moments_of(Workspace& ws, const std::vector<T>& x) {
  Input<T> in{x, Extents{1, 1, static_cast<int64_t>(x.size())}, static_cast<int64_t>(x.size()),
              static_cast<int64_t>(x.size())};
  return run<A, MeanVar, T>(ws, in, Levels::all())[0];
}

/// check_shape for every input type, shape, layout (contiguous, strided) and ties or not, each call
/// with the next salt after `salt`.
template <class A>
void check_shapes(const std::vector<Extents>& shapes, std::uint64_t salt) {
  Workspace ws(A::backend);
  const auto each_type = [&](auto f) { f(std::int32_t{}), f(std::int64_t{}), f(float{}), f(double{}); };
  each_type([&](auto t) {
    using T = decltype(t);
    for (const Extents& e : shapes)
      for (bool strided : {false, true})
        for (bool ties : {false, true}) check_shape<A, T>(ws, e, strided, ties, ++salt);
  });
}

}  // namespace tally::test::reducer_checks

// ==== the test cases, for TestBackend =============================================================

namespace tally::test::reducer_checks {

TEST_CASE(TALLY_TEST_BACKEND
          ": arg-max/min, min-max, mean-var x type x level set on 3-D shapes against naive references",
          "[reduce][reducers]") {
  check_shapes<TestBackend>(reduce_checks::matrix_shapes(), 16000);
}

TEST_CASE(TALLY_TEST_BACKEND
          ": long rows, contiguous or strided, every row aligned or not (the GPU's vector loads and their tails)",
          "[reduce][reducers]") {
  // Rows of 20000 and 16387 elements: on the GPU a contiguous row aligned to 16 bytes is read in
  // batches of whole vectors with a tail of < V elements; 16387 leaves three of four rows unaligned.
  check_shapes<TestBackend>({Extents{2, 3, 20000}, Extents{1, 4, 16387}}, 16300);
}

TEST_CASE(TALLY_TEST_BACKEND ": full reductions of 1-D arrays up to 2^20+7, aligned or not", "[reduce][reducers]") {
  Workspace ws(TestBackend::backend);
  std::uint64_t salt = 16500;
  const auto each_type = [&](auto f) { f(std::int32_t{}), f(std::int64_t{}), f(float{}), f(double{}); };
  each_type([&](auto t) {
    using T = decltype(t);
    for (int64_t n : {int64_t{1}, int64_t{3}, int64_t{33}, int64_t{1025}, int64_t{4099}, (int64_t{1} << 20) + 7})
      for (int64_t off : {int64_t{0}, int64_t{1}})
        for (bool ties : {false, true}) check_flat<TestBackend, T>(ws, n, off, ties, ++salt);
  });
}

TEST_CASE(TALLY_TEST_BACKEND ": ties give the first index, every level set", "[reduce][reducers]") {
  Workspace ws(TestBackend::backend);
  for (const Extents& e : {Extents{1, 1, (int64_t{1} << 20) + 3}, Extents{37, 65, 129}, Extents{4, 3, 70001}}) {
    Input<float> in{std::vector<float>(static_cast<std::size_t>(e.size()), 2.5f), e, e.nv, e.nw * e.nv};
    for (Levels lv : Levels::all_sets()) {
      INFO("(" << e.ng << ", " << e.nw << ", " << e.nv << "), levels " << lv.to_string());
      int64_t bad = 0;
      for (const auto& r : run<TestBackend, ArgMax<float>>(ws, in, lv)) bad += !(r.index == 0 && r.value == 2.5f);
      for (const auto& r : run<TestBackend, ArgMin<float>>(ws, in, lv)) bad += !(r.index == 0 && r.value == 2.5f);
      CHECK(bad == 0);
    }
  }
  // -inf everywhere ties with the identity's value: a real element still wins, the first.
  const std::vector<double> ninf(5000, -std::numeric_limits<double>::infinity());
  CHECK(arg_of<TestBackend>(ws, ninf, true).index == 0);
  const std::vector<std::int32_t> lowest(3000, std::numeric_limits<std::int32_t>::lowest());
  CHECK(arg_of<TestBackend>(ws, lowest, true).index == 0);
  const std::vector<std::int64_t> highest(3000, std::numeric_limits<std::int64_t>::max());
  CHECK(arg_of<TestBackend>(ws, highest, false).index == 0);
}

TEST_CASE(TALLY_TEST_BACKEND ": NaN first, last and everywhere", "[reduce][reducers][nan]") {
  Workspace ws(TestBackend::backend);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (std::size_t n : {std::size_t{7}, std::size_t{100003}}) {
    INFO("n = " << n);
    auto x = random_vector<float>(n, -1.0f, 1.0f, 16900 + n);
    auto first = x, last = x, both = x;
    first[0] = nan, last[n - 1] = nan, both[n / 3] = nan, both[n - 2] = nan;
    const std::vector<float> all(n, nan);
    for (bool max : {true, false}) {
      CHECK(arg_of<TestBackend>(ws, first, max).index == 0);
      CHECK(arg_of<TestBackend>(ws, last, max).index == static_cast<int64_t>(n - 1));
      CHECK(arg_of<TestBackend>(ws, both, max).index == static_cast<int64_t>(n / 3));
      CHECK(arg_of<TestBackend>(ws, all, max).index == 0);
      CHECK(std::isnan(arg_of<TestBackend>(ws, all, max).value));
    }
    for (const std::vector<float>* v : std::initializer_list<const std::vector<float>*>{&first, &last, &both, &all}) {
      const auto mm = minmax_of<TestBackend>(ws, *v);
      // the canonical quiet NaN in both: the same bits whichever NaN came first
      CHECK(std::bit_cast<std::uint32_t>(mm.min) == std::bit_cast<std::uint32_t>(nan));
      CHECK(std::bit_cast<std::uint32_t>(mm.max) == std::bit_cast<std::uint32_t>(nan));
      CHECK(std::isnan(moments_of<TestBackend>(ws, *v).mean));
    }
  }
}

TEST_CASE(TALLY_TEST_BACKEND ": +-0 and infinities", "[reduce][reducers]") {
  Workspace ws(TestBackend::backend);
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<double> zeros{-0.0, 0.0, -0.0, 0.0};
  CHECK(arg_of<TestBackend>(ws, zeros, true).index == 0);  // +0 == -0: a tie, the first wins
  CHECK(std::signbit(arg_of<TestBackend>(ws, zeros, true).value));
  CHECK(arg_of<TestBackend>(ws, zeros, false).index == 0);
  const auto mz = minmax_of<TestBackend>(ws, zeros);
  CHECK((mz.min == 0.0 && std::signbit(mz.min)));  // -0 < +0
  CHECK((mz.max == 0.0 && !std::signbit(mz.max)));
  const auto mz2 = minmax_of<TestBackend>(ws, std::vector<double>{0.0, -0.0});
  CHECK((std::signbit(mz2.min) && !std::signbit(mz2.max)));
  const std::vector<double> infs{1.0, inf, -inf, inf, 3.0, -inf};
  CHECK(arg_of<TestBackend>(ws, infs, true).index == 1);
  CHECK(arg_of<TestBackend>(ws, infs, false).index == 2);
  const auto mi = minmax_of<TestBackend>(ws, infs);
  CHECK((mi.min == -inf && mi.max == inf));
  CHECK(std::isnan(moments_of<TestBackend>(ws, infs).mean));  // inf - inf
  CHECK(moments_of<TestBackend>(ws, std::vector<double>{1.0, inf}).mean == inf);
  // One element's M2 is (x - x)^2: a lone NaN or infinity has a NaN variance (NumPy's var), not 0.
  for (const double v : {std::numeric_limits<double>::quiet_NaN(), inf, -inf}) {
    const Moments one = moments_of<TestBackend>(ws, std::vector<double>{v});
    CHECK((one.count == 1 && std::isnan(one.variance()) && std::isnan(one.m2)));
  }
  CHECK(moments_of<TestBackend>(ws, std::vector<double>{-3.0}).m2 == 0.0);
  CHECK(!std::signbit(moments_of<TestBackend>(ws, std::vector<double>{-3.0}).m2));
}

TEST_CASE(TALLY_TEST_BACKEND ": MinMax of long runs: an infinity, signed zeros, a sum that overflows",
          "[reduce][reducers]") {
  // The CPU folds runs in blocks of thousands whose NaN/infinity check is a sum of the values: each
  // case here takes its slow path (or would, wrongly, skip it) inside one long block.
  Workspace ws(TestBackend::backend);
  const float inf = std::numeric_limits<float>::infinity(), big = 3e38f;
  const std::size_t n = 100003;
  auto x = random_vector<float>(n, 1.0f, 2.0f, 17100);
  auto with_inf = x, zeros = x, huge = x;
  with_inf[4099] = inf, with_inf[77777] = -inf;
  zeros[5000] = 0.0f, zeros[5001] = -0.0f, zeros[70000] = 0.0f;
  for (float& v : huge) v *= big / 2;  // in [1.5e38, 3e38]: finite, but the block sums overflow
  huge[12345] = big, huge[54321] = 1.5e38f;
  auto mm = minmax_of<TestBackend>(ws, with_inf);
  CHECK((mm.min == -inf && mm.max == inf));
  mm = minmax_of<TestBackend>(ws, zeros);
  CHECK((mm.min == 0.0f && std::signbit(mm.min)));  // -0 < +0, though +0 comes first
  CHECK(mm.max == *std::max_element(zeros.begin(), zeros.end()));
  mm = minmax_of<TestBackend>(ws, huge);
  CHECK(mm.min == *std::min_element(huge.begin(), huge.end()));
  CHECK(mm.max == big);
}

TEST_CASE(TALLY_TEST_BACKEND ": empty reductions: arg-reductions throw, MinMax gives its identity, mean is NaN",
          "[reduce][reducers][errors]") {
  Workspace ws(TestBackend::backend);
  const auto d = TestBackend::upload<float>(std::vector<float>(8, 1.0f));
  auto out = TestBackend::poisoned<ValueIndex<float>>(3, 0);
  const auto empty_rows = View<const float>::contiguous(d.data(), 3, 0, 4);
  const std::span<ValueIndex<float>> o(out.data(), 3);
  CHECK_THROWS_WITH(
      (reduce<ArgMax<float>, float>(TestBackend::backend, empty_rows, Level::worker | Level::vector, o, ws)),
      contains("argmax of an empty set"));
  CHECK_THROWS_AS(
      (reduce<ArgMin<float>, float>(TestBackend::backend, empty_rows, Level::worker | Level::vector, o, ws)),
      std::invalid_argument);
  CHECK_THROWS_WITH(
      (reduce_to_host<ArgMax<float>, float>(TestBackend::backend, View<const float>::flat(d.data(), 0), ws)),
      contains("argmax of an empty set"));
  // nothing written on the error
  for (const auto& v : TestBackend::download<ValueIndex<float>>(out)) CHECK(v.index == 0);
  const Moments m = reduce_to_host<MeanVar, float>(TestBackend::backend, View<const float>::flat(d.data(), 0), ws);
  CHECK(m.count == 0);
  CHECK(std::isnan(m.mean_or_nan()));
  CHECK(std::isnan(m.variance()));
  CHECK(std::isnan(m.variance(VarianceKind::sample)));
  const Moments one = reduce_to_host<MeanVar, float>(TestBackend::backend, View<const float>::flat(d.data(), 1), ws);
  CHECK((one.mean_or_nan() == 1.0 && one.variance() == 0.0 && std::isnan(one.variance(VarianceKind::sample))));
  const auto mm = reduce_to_host<MinMax<float>, float>(TestBackend::backend, View<const float>::flat(d.data(), 0), ws);
  CHECK((mm.min == std::numeric_limits<float>::infinity() && mm.max == -std::numeric_limits<float>::infinity()));
  // bad arguments, as for the operators
  CHECK_THROWS_WITH((reduce<MinMax<float>, float>(TestBackend::backend, View<const float>::flat(d.data(), 8),
                                                  Levels::all(), std::span<MinMaxPair<float>>(), ws)),
                    contains("out: has 0 elements"));
}

TEST_CASE(TALLY_TEST_BACKEND
          ": variance of values near 1e8 with spread 1: Welford/Chan right, naive sum of squares wrong",
          "[reduce][reducers][variance]") {
  Workspace ws(TestBackend::backend);
  const std::size_t n = 1000003;
  auto g = rng(16777);
  std::uniform_int_distribution<int> dk(0, 8);
  std::vector<double> xd(n);
  std::vector<float> xf(n);
  std::vector<int> k(n);
  for (std::size_t i = 0; i < n; ++i) k[i] = dk(g);
  // Exact reference from the integer offsets: var(c + k s) = s^2 var(k).
  long double sk = 0, skk = 0;
  for (int v : k) sk += v, skk += static_cast<long double>(v) * v;
  const long double var_k = (skk - sk * sk / n) / n;
  for (std::size_t i = 0; i < n; ++i) xd[i] = 1e8 + k[i] / 8.0, xf[i] = 1e8f + 8.0f * static_cast<float>(k[i]);
  const double exact_d = static_cast<double>(var_k / 64), exact_f = static_cast<double>(var_k * 64);
  // naive: E[x^2] - E[x]^2 in double, the textbook one-pass formula
  const auto naive = [](const auto& x) {
    double s = 0, ss = 0;
    for (auto v : x) s += v, ss += static_cast<double>(v) * v;
    const double m = s / static_cast<double>(x.size());
    return ss / static_cast<double>(x.size()) - m * m;
  };
  const double nd = naive(xd), nf = naive(xf);
  const auto d = TestBackend::upload<double>(xd);
  const auto f = TestBackend::upload<float>(xf);
  const double wd = reduce_to_host<MeanVar, double>(TestBackend::backend,
                                                    View<const double>::flat(d.data(), static_cast<int64_t>(n)), ws)
                        .variance();
  const double wf = reduce_to_host<MeanVar, float>(TestBackend::backend,
                                                   View<const float>::flat(f.data(), static_cast<int64_t>(n)), ws)
                        .variance();
  INFO("double: exact " << exact_d << ", naive " << nd << ", tally " << wd << "; float: exact " << exact_f << ", naive "
                        << nf << ", tally " << wf);
  CHECK(std::abs(nd - exact_d) > 0.1 * exact_d);  // the naive formula has lost (nearly) every digit
  CHECK(std::abs(nf - exact_f) > 0.1 * exact_f);
  CHECK(std::abs(wd - exact_d) <= 1e-6 * exact_d);
  CHECK(std::abs(wf - exact_f) <= 1e-6 * exact_f);
}

TEST_CASE(TALLY_TEST_BACKEND ": MeanVar: two runs give bitwise equal results", "[reduce][reducers][determinism]") {
  Workspace ws(TestBackend::backend);
  for (const Extents& e : {Extents{1, 1, (int64_t{1} << 21) + 5}, Extents{3, 1025, 1023}, Extents{1023, 33, 2}}) {
    const auto in = make_input<float>(e, false, false, 16600 + static_cast<std::uint64_t>(e.nv));
    for (Levels lv : Levels::all_sets()) {
      const auto a = run<TestBackend, MeanVar, float>(ws, in, lv), b = run<TestBackend, MeanVar, float>(ws, in, lv);
      int64_t differ = 0;
      for (std::size_t o = 0; o < a.size(); ++o)
        differ += std::bit_cast<std::uint64_t>(a[o].mean) != std::bit_cast<std::uint64_t>(b[o].mean) ||
                  std::bit_cast<std::uint64_t>(a[o].m2) != std::bit_cast<std::uint64_t>(b[o].m2);
      CHECK(differ == 0);
    }
  }
}

TEST_CASE(TALLY_TEST_BACKEND
          ": user reducers through the header-only engine (sum/sum of squares/count, 2-D bounding box)",
          "[reduce][reducers][custom]") {
  Workspace ws(TestBackend::backend);
  for (const Extents& e : {Extents{1, 1, (int64_t{1} << 20) + 9}, Extents{5, 301, 77}, Extents{2049, 3, 5}}) {
    const auto n = static_cast<std::size_t>(e.size());
    const auto xs = random_vector<float>(n, -3.0f, 3.0f, 16700 + n),
               ys = random_vector<float>(n, -3.0f, 3.0f, 16800 + n);
    std::vector<Point2> pts(n);
    for (std::size_t i = 0; i < n; ++i) pts[i] = {std::round(xs[i] * 4) / 4, ys[i]};  // x ties: the leftmost rule
    const auto dx = TestBackend::upload<float>(xs);
    const auto dp = TestBackend::upload<Point2>(pts);
    for (Levels lv : Levels::all_sets()) {
      INFO("(" << e.ng << ", " << e.nw << ", " << e.nv << "), levels " << lv.to_string());
      const auto n_out = static_cast<std::size_t>(output_shape(e, lv).size());
      auto o1 = TestBackend::poisoned<SumSqCount>(n_out, 0x5A);
      auto o2 = TestBackend::poisoned<Box2>(n_out, 0x5A);
      TestBackend::reduce_custom<SumSq, float>(View<const float>::contiguous(dx.data(), e.ng, e.nw, e.nv), lv,
                                               std::span<SumSqCount>(o1.data(), n_out), ws);
      TestBackend::reduce_custom<BBox2, Point2>(View<const Point2>::contiguous(dp.data(), e.ng, e.nw, e.nv), lv,
                                                std::span<Box2>(o2.data(), n_out), ws);
      const auto r1 = TestBackend::download<SumSqCount>(o1);
      const auto r2 = TestBackend::download<Box2>(o2);
      Input<float> ix{xs, e, e.nv, e.nw * e.nv};
      Input<Point2> ip{pts, e, e.nv, e.nw * e.nv};
      std::vector<long double> s(n_out, 0), ss(n_out, 0), sa(n_out, 0), saa(n_out, 0);
      std::vector<int64_t> cnt(n_out, 0);
      naive_walk(ix, lv, [&](int64_t o, int64_t, float x) {
        const auto u = static_cast<std::size_t>(o);
        s[u] += x, ss[u] += static_cast<long double>(x) * x, sa[u] += std::abs(x),
            saa[u] += static_cast<long double>(x) * x, ++cnt[u];
      });
      std::vector<Box2> box(n_out, Box2{INFINITY, INFINITY, -INFINITY, -INFINITY, -1});
      naive_walk(ip, lv, [&](int64_t o, int64_t flat, Point2 p) {
        auto& b = box[static_cast<std::size_t>(o)];
        if (b.leftmost < 0 || p.x < b.xmin) b.xmin = p.x, b.leftmost = flat;
        b.ymin = std::min(b.ymin, p.y), b.xmax = std::max(b.xmax, p.x), b.ymax = std::max(b.ymax, p.y);
      });
      constexpr double eps = std::numeric_limits<double>::epsilon();
      std::string bad;
      for (std::size_t o = 0; o < n_out && bad.empty(); ++o) {
        if (r1[o].count != cnt[o] ||
            !(std::abs(r1[o].sum - static_cast<double>(s[o])) <=
              static_cast<double>(cnt[o] + 1) * eps * static_cast<double>(sa[o])) ||
            !(std::abs(r1[o].sumsq - static_cast<double>(ss[o])) <=
              static_cast<double>(cnt[o] + 1) * eps * static_cast<double>(saa[o])))
          bad = "sumsq output " + std::to_string(o);
        if (!(r2[o].xmin == box[o].xmin && r2[o].ymin == box[o].ymin && r2[o].xmax == box[o].xmax &&
              r2[o].ymax == box[o].ymax) ||
            r2[o].leftmost != box[o].leftmost)
          bad = "bbox output " + std::to_string(o) + ": leftmost " + std::to_string(r2[o].leftmost) + " (reference " +
                std::to_string(box[o].leftmost) + ")";
      }
      INFO(bad);
      CHECK(bad.empty());
    }
  }
}

}  // namespace tally::test::reducer_checks
