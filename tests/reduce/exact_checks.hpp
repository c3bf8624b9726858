#pragma once
// The exact sum (ExactSum, tally/reduce/exact.hpp) on TestBackend, included after reduce_checks.hpp
// by each backend's test source. The reference is independent of the library's superaccumulator:
// Shewchuk's non-overlapping expansion (Python's math.fsum: msum plus its half-way correction) gives
// the exact sum correctly rounded to double; to float, the double d = fsum(x) is rounded again, and
// where d is a float midpoint the sign of the exact remainder fsum(x, -d) breaks the tie (a double
// rounding can only go wrong at a float midpoint). Every comparison is bitwise.

#include <bit>
#include <cfloat>

#include "exact_inputs.hpp"
#include "tally/reduce/exact.hpp"

namespace tally::test::exact_checks {

using namespace tally::reduce;  // NOLINT: test code
using reduce_checks::bitwise_equal;
using reduce_checks::Layout;
using reduce_checks::make_layout;
using reduce_checks::shape_name;
using std::int64_t;

// ---- the reference --------------------------------------------------------------------------------

/// Shewchuk's msum: the exact sum of the inputs as non-overlapping partials (increasing magnitude).
struct Expansion {
  std::vector<double> p;
  void add(double x) {
    std::size_t i = 0;
    for (double y : p) {
      if (std::fabs(x) < std::fabs(y)) std::swap(x, y);
      const double hi = x + y, lo = y - (hi - x);
      if (lo != 0) p[i++] = lo;
      x = hi;
    }
    p.resize(i);
    p.push_back(x);
  }
  /// The sum correctly rounded to double (fsum's final step, ties to even across the partials).
  [[nodiscard]] double round() const {
    std::size_t n = p.size();
    if (n == 0) return 0.0;
    double hi = p[--n], lo = 0;
    while (n > 0) {
      const double x = hi, y = p[--n];
      hi = x + y;
      lo = y - (hi - x);
      if (lo != 0) break;
    }
    if (n > 0 && ((lo < 0 && p[n - 1] < 0) || (lo > 0 && p[n - 1] > 0))) {
      const double y = lo * 2, x = hi + y;
      if (y == x - hi) hi = x;
    }
    return hi;
  }
};

/// The exact sum of x rounded to Out, IEEE's rules for NaN, Inf and zero signs.
template <class Out, class T>
Out exact_reference(const std::vector<T>& x) {
  bool nan = false, pinf = false, ninf = false, all_neg_zero = true;
  Expansion e;
  for (T v : x) {
    if (std::isnan(v)) nan = true;
    else if (std::isinf(v)) (v > 0 ? pinf : ninf) = true;
    else e.add(static_cast<double>(v));
    all_neg_zero = all_neg_zero && v == 0 && std::signbit(v);
  }
  if (nan || (pinf && ninf)) return std::numeric_limits<Out>::quiet_NaN();
  if (pinf || ninf) return pinf ? std::numeric_limits<Out>::infinity() : -std::numeric_limits<Out>::infinity();
  const double d = e.round();
  if (d == 0) return (all_neg_zero && !x.empty()) ? Out(-0.0) : Out(0.0);
  if constexpr (std::is_same_v<Out, double>) {
    return d;
  } else {
    // The floats around d (an infinity standing for 2^128, where IEEE rounds to it), in double.
    const float f = static_cast<float>(d);
    const bool f_below = static_cast<double>(f) <= d;
    const float below = f_below ? f : std::nextafter(f, -INFINITY), above = f_below ? std::nextafter(f, INFINITY) : f;
    const auto as_double = [](float v) {
      return std::isinf(v) ? std::copysign(std::ldexp(1.0, 128), v) : static_cast<double>(v);
    };
    const double b = as_double(below), a = as_double(above);
    if (b == d || a == d || d != b + (a - b) / 2) return f;  // d is a float, or not halfway: one rounding
    Expansion r = e;                                         // d is halfway: the sign of the exact remainder decides
    r.add(-d);
    const double rem = r.round();
    return rem > 0 ? above : rem < 0 ? below : f;  // an exact tie: the conversion rounded to even
  }
}

// ---- inputs -------------------------------------------------------------------------------------

using exact_inputs::wide_values;

// ---- checks -------------------------------------------------------------------------------------

/// Elements of output o of reducing `lv` of the view at x (strides sw, sg), in (k, j, i) order.
template <class T>
std::vector<std::vector<T>> segments(const T* x, Extents e, int64_t sw, int64_t sg, Levels lv) {
  const bool keep[3] = {!lv.contains(Level::gang), !lv.contains(Level::worker), !lv.contains(Level::vector)};
  const int64_t ext[3] = {e.ng, e.nw, e.nv};
  int64_t mult[3] = {0, 0, 0}, m = 1;
  for (int a = 2; a >= 0; --a)
    if (keep[a]) mult[a] = m, m *= ext[a];
  std::vector<std::vector<T>> s(static_cast<std::size_t>(output_shape(e, lv).size()));
  for (int64_t k = 0; k < e.ng; ++k)
    for (int64_t j = 0; j < e.nw; ++j)
      for (int64_t i = 0; i < e.nv; ++i)
        s[static_cast<std::size_t>(k * mult[0] + j * mult[1] + i * mult[2])].push_back(x[k * sg + j * sw + i]);
  return s;
}

template <class Out>
std::string compare_bits(const std::vector<Out>& got, const std::vector<Out>& want) {
  if (got.size() != want.size())
    return "output size " + std::to_string(got.size()) + " != " + std::to_string(want.size());
  std::string msg;
  int64_t bad = 0;
  for (std::size_t o = 0; o < got.size(); ++o) {
    if (std::memcmp(&got[o], &want[o], sizeof(Out)) == 0 || (std::isnan(got[o]) && std::isnan(want[o]))) continue;
    if (++bad <= 3)
      msg += "out[" + std::to_string(o) + "] = " + reduce_checks::show(got[o]) + ", exact " +
             reduce_checks::show(want[o]) + "; ";
  }
  return bad == 0 ? "" : std::to_string(bad) + " of " + std::to_string(got.size()) + " outputs wrong: " + msg;
}

template <class A, class T, class Out>
std::vector<Out> run(Workspace& ws, Backend b, const View<const T>& in, Levels lv) {
  if (b == Backend::cpu) {
    std::vector<Out> out(static_cast<std::size_t>(output_shape(in.ext, lv).size()), Out(1234));
    reduce<ExactSum, T, Out>(b, in, lv, std::span<Out>(out), ws);
    return out;
  }
  return reduce_checks::run_once<A, ExactSum, T, Out>(ws, in, lv);
}

/// Every level set of the host array `vals` laid out as e (strided: inside a NaN-padded array):
/// bitwise the exact reference; on the CUDA backend also bitwise the CPU backend's result.
template <class A, class T, class Out>
void check_levels(Workspace& ws, Extents e, bool strided, const std::vector<T>& vals) {
  const Layout l = make_layout(e, strided);
  std::vector<T> host(static_cast<std::size_t>(l.total), std::numeric_limits<T>::quiet_NaN());
  for (int64_t k = 0, m = 0; k < e.ng; ++k)
    for (int64_t j = 0; j < e.nw; ++j)
      for (int64_t i = 0; i < e.nv; ++i)
        host[static_cast<std::size_t>(l.offset + k * l.sg + j * l.sw + i)] = vals[static_cast<std::size_t>(m++)];
  auto d_in = A::upload(host);
  const View<const T> in = View<const T>::strided(d_in.data() + l.offset, e, l.sw, l.sg);
  Workspace cpu_ws(Backend::cpu);
  for (Levels lv : Levels::all_sets()) {
    std::vector<Out> want;
    for (const auto& s : segments(host.data() + l.offset, e, l.sw, l.sg, lv)) want.push_back(exact_reference<Out>(s));
    const std::vector<Out> got = run<A, T, Out>(ws, A::backend, in, lv);
    const std::string err = compare_bits(got, want);
    INFO("exact_sum<" << reduce_checks::type_name<T>() << "->" << reduce_checks::type_name<Out>() << "> over "
                      << lv.to_string() << " of " << shape_name(e, strided) << ": " << err);
    CHECK(err.empty());
    if constexpr (A::backend == Backend::cuda) {
      const View<const T> h = View<const T>::strided(host.data() + l.offset, e, l.sw, l.sg);
      CHECK(bitwise_equal(got, run<A, T, Out>(cpu_ws, Backend::cpu, h, lv)));
    }
  }
}

template <class Out>
auto bits_of(Out v) {
  return std::bit_cast<std::conditional_t<sizeof(Out) == 4, std::uint32_t, std::uint64_t>>(v);
}

template <class A, class T, class Out>
Out full(Workspace& ws, const std::vector<T>& x) {
  auto d = A::upload(x);
  return run<A, T, Out>(ws, A::backend, View<const T>::flat(d.data(), static_cast<int64_t>(x.size())),
                        Levels::all())[0];
}

template <class A, class T, class Out>
void check_full(Workspace& ws, const std::vector<T>& x, const std::string& what) {
  const Out got = full<A, T, Out>(ws, x), want = exact_reference<Out>(x);
  INFO("exact_sum<" << reduce_checks::type_name<T>() << "->" << reduce_checks::type_name<Out>() << "> of " << what
                    << " (" << x.size() << " elements): got " << reduce_checks::show(got) << " (bits " << std::hex
                    << bits_of(got) << std::dec << "), exact " << reduce_checks::show(want));
  CHECK(compare_bits(std::vector<Out>{got}, std::vector<Out>{want}).empty());
}

template <class F>
void for_each_pair(F&& f) {
  f.template operator()<float, float>();
  f.template operator()<float, double>();
  f.template operator()<double, double>();
}

/// `v` spread over n elements at random places among zeros of random sign (so that threads, blocks
/// and chunks each see part of it), shuffled.
template <class T>
std::vector<T> spread(std::vector<T> v, std::size_t n, std::uint64_t salt) {
  auto g = tally::test::rng(salt);
  while (v.size() < n) v.push_back((g() & 1) ? T(0) : T(-0.0));
  std::shuffle(v.begin(), v.end(), g);
  return v;
}

}  // namespace tally::test::exact_checks

namespace tally::test::exact_checks {

TEST_CASE(TALLY_TEST_BACKEND ": exact sum, every level set of 3-D shapes, bitwise the correctly rounded exact sum",
          "[reduce][exact]") {
  Workspace ws(TestBackend::backend);
  std::uint64_t salt = 9000;
  for_each_pair([&]<class T, class Out>() {
    for (const Extents& e : reduce_checks::matrix_shapes())
      for (bool strided : {false, true})
        check_levels<TestBackend, T, Out>(ws, e, strided, wide_values<T>(static_cast<std::size_t>(e.size()), ++salt));
    // Long outputs, split over tasks or blocks; many short ones.
    for (const Extents& e : {Extents{3, 7, 40000}, Extents{2, 70000, 2}, Extents{300000, 1, 3}})
      check_levels<TestBackend, T, Out>(ws, e, false, wide_values<T>(static_cast<std::size_t>(e.size()), ++salt));
  });
}

TEST_CASE(TALLY_TEST_BACKEND ": exact sum, level sets reaching the same elements give the same bits",
          "[reduce][exact]") {
  Workspace ws(TestBackend::backend);
  for_each_pair([&]<class T, class Out>() {
    const int64_t n = 3 * 1021 * 257;
    const auto x = wide_values<T>(static_cast<std::size_t>(n), 9100);
    auto d = TestBackend::upload(x);
    const Out flat =
        run<TestBackend, T, Out>(ws, TestBackend::backend, View<const T>::flat(d.data(), n), Levels::all())[0];
    for (const Extents& e :
         {Extents{1, 3 * 1021, 257}, Extents{3, 1, 1021 * 257}, Extents{3 * 1021, 257, 1}, Extents{3, 1021, 257}}) {
      const auto in = View<const T>::contiguous(d.data(), e.ng, e.nw, e.nv);
      for (Levels lv : Levels::all_sets()) {
        if (output_shape(e, lv).size() != 1) continue;  // only the sets that reach every element
        INFO(shape_name(e, false) << " over " << lv.to_string());
        CHECK(bitwise_equal(std::vector<Out>{flat}, run<TestBackend, T, Out>(ws, TestBackend::backend, in, lv)));
      }
    }
    CHECK(compare_bits(std::vector<Out>{flat}, std::vector<Out>{exact_reference<Out>(x)}).empty());
  });
}

TEST_CASE(TALLY_TEST_BACKEND ": exact sum of cancellation-heavy, wide and tie-making sets", "[reduce][exact]") {
  Workspace ws(TestBackend::backend);
  std::uint64_t salt = 9200;
  for_each_pair([&]<class T, class Out>() {
    const T big = std::is_same_v<T, float> ? T(1e30f) : T(1e300);
    check_full<TestBackend, T, Out>(ws, {big, T(1), -big}, "(big, 1, -big)");
    check_full<TestBackend, T, Out>(ws, {T(1), big, T(1), -big, T(-0.5)}, "(1, big, 1, -big, -0.5)");
    for (std::size_t n : {std::size_t{3}, std::size_t{1025}, (std::size_t{1} << 20) + 7}) {
      check_full<TestBackend, T, Out>(ws, spread<T>({big, T(1), -big}, n, ++salt), "(big, 1, -big) among zeros");
      check_full<TestBackend, T, Out>(ws, wide_values<T>(n, ++salt), "values across the exponent range");
    }
    // The smallest subnormals and the largest finite values together.
    const T tiny = std::numeric_limits<T>::denorm_min(), huge = std::numeric_limits<T>::max();
    check_full<TestBackend, T, Out>(ws, spread<T>({huge, tiny, -huge, tiny, tiny}, 4099, ++salt),
                                    "(max, tiny, -max, tiny, tiny)");
    check_full<TestBackend, T, Out>(ws, spread<T>({tiny, -tiny, tiny, std::numeric_limits<T>::min()}, 77, ++salt),
                                    "subnormals");
    // Ties at the rounding point of Out: 1 + half an ulp of Out (even: stays 1), 1 + ulp + half an ulp
    // (odd: rounds up), and each with the smallest subnormal added or taken away (no longer a tie).
    constexpr int prec = std::numeric_limits<Out>::digits;
    const double half = std::ldexp(1.0, -prec);  // half an ulp of 1 in Out
    {
      for (double base : {1.0, 1.0 + 2 * half}) {
        std::vector<T> tie = {T(1), static_cast<T>(half)};
        if (base != 1.0) tie.push_back(static_cast<T>(2 * half));
        check_full<TestBackend, T, Out>(ws, spread<T>(tie, 5000, ++salt), "an exact tie");
        for (T s : {tiny, static_cast<T>(-tiny)}) {
          auto t = tie;
          t.push_back(s);
          check_full<TestBackend, T, Out>(ws, spread<T>(t, 5000, ++salt), "a tie broken by the smallest subnormal");
        }
      }
    }
  });
}

TEST_CASE(TALLY_TEST_BACKEND ": exact sum follows IEEE for NaN, Inf, overflow and zero signs", "[reduce][exact]") {
  Workspace ws(TestBackend::backend);
  std::uint64_t salt = 9300;
  for_each_pair([&]<class T, class Out>() {
    const T inf = std::numeric_limits<T>::infinity(), nan = std::numeric_limits<T>::quiet_NaN(),
            mx = std::numeric_limits<T>::max();
    const auto sum = [&](std::vector<T> v) {
      return full<TestBackend, T, Out>(ws, spread<T>(std::move(v), 3001, ++salt));
    };
    CHECK(std::isnan(sum({T(1), nan, T(2)})));
    CHECK(std::isnan(sum({inf, T(1), -inf})));
    CHECK(std::isnan(sum({inf, nan})));
    CHECK(sum({inf, T(1), -mx}) == std::numeric_limits<Out>::infinity());
    CHECK(sum({-inf, mx, mx}) == -std::numeric_limits<Out>::infinity());
    // The exact sum decides overflow, not the order of partial sums.
    CHECK(sum({mx, mx, -mx}) == static_cast<Out>(mx));
    const Out two_max = sum({mx, mx});
    if constexpr (sizeof(Out) == sizeof(T)) CHECK(two_max == std::numeric_limits<Out>::infinity());
    else CHECK(two_max == 2 * static_cast<Out>(mx));
    if constexpr (sizeof(Out) == sizeof(T)) CHECK(sum({-mx, -mx, -mx}) == -std::numeric_limits<Out>::infinity());
    // Just below the overflow threshold of Out: max + half an ulp of max rounds to... infinity (a tie: max is odd).
    if constexpr (sizeof(Out) == sizeof(T)) {
      const T ulp_half =
          static_cast<T>(std::ldexp(1.0, std::numeric_limits<T>::max_exponent - std::numeric_limits<T>::digits - 1));
      CHECK(sum({mx, ulp_half}) == std::numeric_limits<Out>::infinity());
      CHECK(sum({mx, ulp_half, -std::numeric_limits<T>::denorm_min()}) == static_cast<Out>(mx));
    }
    // Zeros: +0 unless every element is -0; x + (-x) is +0; an empty input is +0.
    const auto bits = [](Out v) { return bits_of(v); };
    CHECK(bits(full<TestBackend, T, Out>(ws, std::vector<T>(5000, T(-0.0)))) == bits(Out(-0.0)));
    CHECK(bits(sum({T(-0.0)})) == bits(Out(0.0)));  // spread() mixes in +0 too
    CHECK(bits(sum({T(3), T(-3)})) == bits(Out(0.0)));
    CHECK(bits(full<TestBackend, T, Out>(ws, std::vector<T>{})) == bits(Out(0.0)));
  });
}

}  // namespace tally::test::exact_checks
