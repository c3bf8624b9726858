// exact::Bins (exact_bins.hpp, the CUDA flat kernel's hot loop) on the host: a thread's bins, filter
// and superaccumulator fed batch by batch as the kernel does, against the superaccumulator fed every
// value directly (a different algorithm: no windows, no remainders; it is checked against math.fsum
// in exact_checks.hpp). Every comparison is bitwise, for float -> float, float -> double and
// double -> double, on data that takes the fast path, rewindows, leaves second remainders, counts
// specials, overflows the int64 counts (doubles) and sums to zeros of either sign. exact::ProductBins
// (exact dot products of doubles) likewise against the big-integer dot reference (dot_reference.hpp).
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "catch.hpp"
#include "dot_reference.hpp"
#include "exact_inputs.hpp"
#include "tally/reduce/detail/exact_bins.hpp"
#include "test_support.hpp"

namespace {

namespace ex = tally::reduce::exact;
using tally::test::exact_inputs::wide_values;

template <class T>
struct HostSink {
  ex::Accumulator<T> acc;
  HostSink() { acc.clear(); }
  void add(double r) { acc.add(r); }
  void special(double x) { acc.special(x); }
  void product(double a, double b) { acc.product(a, b); }
};

struct Run {
  std::int64_t batches = 0, fast = 0;
};

/// The kernel's thread (device::ExactThread::add_batch): batches of B through Bins::try_add, again
/// after Bins::widen where refused, else Bins::add one by one.
template <class T, class Out, int B>
Out binned(const std::vector<T>& x, Run& run) {
  HostSink<T> sink;
  ex::Filter f;
  ex::Bins<T> bins;
  std::size_t i = 0;
  for (; i + B <= x.size(); i += B) {
    T b[B];
    for (int j = 0; j < B; ++j) b[j] = x[i + static_cast<std::size_t>(j)];
    ++run.batches;
    if (bins.try_add(b, f, sink) || (bins.widen(b, f, sink) && bins.try_add(b, f, sink))) ++run.fast;
    else
      for (int j = 0; j < B; ++j) bins.add(b[j], f, sink);
  }
  for (; i < x.size(); ++i) bins.add(x[i], f, sink);
  bins.finish(f, sink);
  f.flush_into(sink.acc, !x.empty());
  return sink.acc.template round<Out>();
}

/// Every value straight into a superaccumulator; IEEE's zero sign kept aside.
template <class T, class Out>
Out direct(const std::vector<T>& x) {
  ex::Accumulator<T> acc;
  acc.clear();
  bool nonneg = false;
  for (T v : x) {
    if (std::isfinite(v)) acc.add(static_cast<double>(v));
    else acc.special(static_cast<double>(v));  // its zero-sign count is set below
    nonneg = nonneg || !(v == 0 && std::signbit(v));
  }
  acc.w[ex::Accumulator<T>::nonneg_word] = nonneg ? 1 : 0;
  acc.w[ex::Accumulator<T>::seen_word] = x.empty() ? 0 : 1;
  return acc.template round<Out>();
}

template <class Out>
auto bits(Out v) {
  return std::bit_cast<std::conditional_t<sizeof(Out) == 4, std::uint32_t, std::uint64_t>>(v);
}

template <class T, class Out, int B>
Run check(const std::vector<T>& x, const std::string& what) {
  Run run;
  const Out got = binned<T, Out, B>(x, run), want = direct<T, Out>(x);
  INFO(what << ": " << x.size() << (sizeof(T) == 4 ? " floats" : " doubles") << " to "
            << (sizeof(Out) == 4 ? "float" : "double") << ", batches of " << B << ": binned " << got << " (bits "
            << std::hex << bits(got) << "), direct " << want << " (bits " << bits(want) << std::dec << "); " << run.fast
            << " of " << run.batches << " batches fast");
  CHECK((bits(got) == bits(want) || (std::isnan(got) && std::isnan(want))));
  return run;
}

template <class T>
std::vector<T> uniform(std::size_t n, std::uint64_t salt, double lo = -1, double hi = 1) {
  auto g = tally::test::rng(salt);
  std::uniform_real_distribution<double> d(lo, hi);
  std::vector<T> v(n);
  for (auto& e : v) e = static_cast<T>(d(g));
  return v;
}

template <class T, class Out, int B>
void check_all() {
  using L = std::numeric_limits<T>;
  std::uint64_t salt = 7700 + sizeof(T) * 10 + sizeof(Out) + B;
  // The bench's data: uniform in [-1, 1]; almost every batch must take the fast path.
  {
    const Run r = check<T, Out, B>(uniform<T>(200000, ++salt), "uniform [-1, 1]");
    CHECK(r.fast * 1000 >= r.batches * 999);
  }
  check<T, Out, B>(uniform<T>(50000, ++salt, 0, 1e6), "uniform [0, 1e6]");
  check<T, Out, B>(wide_values<T>(60000, ++salt, std::is_same_v<T, float> ? 127 : 1023),
                   "values across the exponent range");
  check<T, Out, B>(wide_values<T>(60000, ++salt, 40), "values up to 2^40 with subnormals");
  {  // growing magnitudes: a rewindow every few values
    auto g = tally::test::rng(++salt);
    std::vector<T> v;
    for (int e = std::is_same_v<T, float> ? -149 : -1074; e < L::max_exponent; e += 3)
      for (int j = 0; j < 5; ++j)
        v.push_back(static_cast<T>(std::ldexp(1.0 + static_cast<double>(g() % 1000) / 1000, e) * ((g() & 1) ? 1 : -1)));
    check<T, Out, B>(v, "growing magnitudes");
  }
  // Subnormals only (the lowest window), then with one large value.
  {
    std::vector<T> v(1000);
    auto g = tally::test::rng(++salt);
    for (auto& e : v) e = static_cast<T>(static_cast<double>(g() % 1000) * L::denorm_min() * ((g() & 1) ? 1 : -1));
    check<T, Out, B>(v, "subnormals");
    v[500] = T(3);
    check<T, Out, B>(v, "subnormals and 3");
  }
  // Cancellation: big, 1, -big among values; the largest finite values; specials.
  {
    const T big = std::is_same_v<T, float> ? T(1e30f) : T(1e300);
    std::vector<T> v = uniform<T>(4099, ++salt);
    v[7] = big, v[2000] = -big, v[3000] = T(1);
    check<T, Out, B>(v, "(big, 1, -big) among uniform values");
    v[100] = L::max(), v[101] = L::max(), v[4000] = -L::max();
    check<T, Out, B>(v, "max, max, -max among them");
    v[102] = L::max();
    check<T, Out, B>(v, "three max, one -max (may overflow)");
    v[50] = L::infinity();
    check<T, Out, B>(v, "and +Inf");
    v[51] = -L::infinity();
    check<T, Out, B>(v, "and -Inf");
    v[51] = L::quiet_NaN();
    check<T, Out, B>(v, "+Inf and NaN");
  }
  // Zero signs: all -0; -0 and +0; x and -x only; -0 with a cancelled pair.
  check<T, Out, B>(std::vector<T>(100, T(-0.0)), "all -0");
  {
    std::vector<T> v(100, T(-0.0));
    v[37] = T(0.0);
    check<T, Out, B>(v, "-0 and one +0");
    v[37] = T(-0.0), v[3] = T(2.5), v[90] = T(-2.5);
    check<T, Out, B>(v, "-0 and a cancelled pair");
    v[3] = L::denorm_min(), v[90] = -L::denorm_min();
    check<T, Out, B>(v, "-0 and a cancelled pair of subnormals");
  }
  check<T, Out, B>({}, "empty");
  // Same-sign values just under the window's bound: the int64 counts pass 2^62 (doubles: after
  // about 2^12 values) and must be flushed into the filter.
  {
    std::vector<T> v(20000, static_cast<T>(1.9999999));
    v[0] = T(1.5);
    check<T, Out, B>(v, "20000 values near the window's bound");
  }
}

/// The kernel's thread (device::ExactThread::add_product): ProductBins::try_add, again after widen_to
/// the product's own key (a warp's largest on the GPU), else the filter's add_product.
struct ProductRun {
  std::int64_t products = 0, binned = 0;
};
double binned_dot(const std::vector<double>& a, const std::vector<double>& b, ProductRun& run) {
  HostSink<ex::DoubleProducts> sink;
  ex::Filter f;
  ex::ProductBins bins;
  for (std::size_t i = 0; i < a.size(); ++i) {
    ++run.products;
    if (bins.try_add(a[i], b[i], f, sink) ||
        (bins.widen_to(ex::ProductBins::key_of(a[i] * b[i]), f, sink) && bins.try_add(a[i], b[i], f, sink)))
      ++run.binned;
    else f.add_product(a[i], b[i], sink);
  }
  bins.finish(f, sink);
  f.flush_into(sink.acc, !a.empty());
  return sink.acc.round<double>();
}

ProductRun check_dot(const std::vector<double>& a, const std::vector<double>& b, const std::string& what) {
  ProductRun run;
  const double got = binned_dot(a, b, run), want = tally::test::exact_dot_reference<double>(a, b);
  INFO(what << ": " << a.size() << " products: binned " << got << " (bits " << std::hex << bits(got) << "), reference "
            << want << " (bits " << bits(want) << std::dec << "); " << run.binned << " of " << run.products
            << " binned");
  CHECK((bits(got) == bits(want) || (std::isnan(got) && std::isnan(want))));
  return run;
}

/// Pairs with magnitudes 2^[emin, emax] (both factors), every sign, some zeros and cancelling pairs.
std::pair<std::vector<double>, std::vector<double>> pairs(std::size_t n, std::uint64_t salt, int emin, int emax) {
  auto g = tally::test::rng(salt);
  std::uniform_int_distribution<int> kind(0, 15), ex(emin, emax);
  std::uniform_real_distribution<double> m(1.0, 2.0);
  std::vector<double> a(n), b(n);
  for (std::size_t i = 0; i < n; ++i) {
    const int k = kind(g);
    const auto val = [&] { return std::ldexp(m(g), ex(g)) * ((g() & 1) ? 1 : -1); };
    if (k == 0) a[i] = (g() & 1) ? 0.0 : -0.0, b[i] = val();
    else if (k == 1 && i > 0) {
      const std::size_t j = g() % i;
      a[i] = -a[j], b[i] = b[j];
    } else a[i] = val(), b[i] = val();
  }
  return {a, b};
}

}  // namespace

TEST_CASE("exact::ProductBins: products through the bins give the big-integer reference's bits",
          "[reduce][exact][bins][dot]") {
  std::uint64_t salt = 8800;
  {  // the implicit solvers' case: full-precision factors near 1; nearly every product binned
    auto [a, b] = pairs(100000, ++salt, -3, 3);
    const ProductRun r = check_dot(a, b, "products near 1");
    CHECK(r.binned * 1000 >= r.products * 999);
  }
  {
    auto [a, b] = pairs(50000, ++salt, -30, 30);
    check_dot(a, b, "products within 2^-60 .. 2^62 (some below the window: the filter)");
  }
  {
    auto [a, b] = pairs(50000, ++salt, -1074, 1023);
    check_dot(a, b, "products far beyond a double's range both ways");
  }
  {
    auto [a, b] = pairs(20000, ++salt, -560, -440);
    check_dot(a, b, "products near the lowest windows and subnormal");
  }
  {  // growing magnitudes: a rewindow every few products; then shrinking ones (the filter)
    auto g = tally::test::rng(++salt);
    std::vector<double> a, b;
    for (int e = -1000; e < 1000; e += 3)
      for (int j = 0; j < 5; ++j) {
        a.push_back(std::ldexp(1.0 + static_cast<double>(g() % 1000003) / 1000003, e / 2) * ((g() & 1) ? 1 : -1));
        b.push_back(std::ldexp(1.0 + static_cast<double>(g() % 999983) / 999983, e - e / 2));
      }
    check_dot(a, b, "growing magnitudes");
    std::reverse(a.begin(), a.end());
    check_dot(a, b, "shrinking magnitudes");
  }
  {  // a large product that sets the window and cancels at the end, leaving products 2^-40 .. 2^-60 below
     // it whose every bit counts: those from 2^-45 down would lose bits in the bins, so the filter takes them
    auto g = tally::test::rng(++salt);
    std::uniform_real_distribution<double> m(1.0, 2.0);
    std::vector<double> a = {m(g)}, b = {m(g)};
    for (int i = 0; i < 3000; ++i) {
      a.push_back(std::ldexp(m(g), -20 - static_cast<int>(g() % 21)) * ((g() & 1) ? 1 : -1));
      b.push_back(std::ldexp(m(g), -20));
    }
    a.push_back(-a[0]), b.push_back(b[0]);
    check_dot(a, b, "small products under a large cancelled one");
    // x y - RN(x y) = fma's e exactly, with bits down to 2^(E-105), under a large cancelled product:
    // the result is e itself, so a bit the bins lost shows. E from 2^-56 to 2^-38 below the window.
    for (int k = 36; k <= 56; ++k) {
      const double x = std::ldexp(m(g), -k / 2), y = std::ldexp(m(g), -k + k / 2), big = m(g);
      check_dot({big, x, -x * y, -big}, {1.0, y, 1.0, 1.0},
                "x y - RN(x y) under a large cancelled product, 2^-" + std::to_string(k));
    }
  }
  {  // same-sign products just under the window's bound: the int64 counts pass 2^62 after about 2^12
    std::vector<double> a(20000, 1.4142135), b(20000, 1.4142133);
    a[0] = 1.5, b[0] = 1.25;
    const ProductRun r = check_dot(a, b, "20000 products near the window's bound");
    CHECK(r.binned == r.products);
  }
  {  // the bins' edges: |p| = bound exactly (rewindow), |p| = 2^(q-47) (binned) and just below (the filter)
    std::vector<double> a = {1.0, 2.0, std::ldexp(1.0, -47), std::ldexp(1.0 - 0x1p-53, -47), 0x1.fffffffffffffp-1},
                        b = {1.0, 1.0, 1.0, 1.0, 0x1.0000000000001p0};
    check_dot(a, b, "products at the window's edges");
  }
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  check_dot({1.0, inf, 2.0}, {1.0, 3.0, 0.5}, "+Inf among binned products");
  check_dot({1.0, inf, 2.0}, {1.0, 0.0, 0.5}, "Inf * 0");
  check_dot({1.0, nan}, {1.0, 1.0}, "NaN");
  check_dot({1e300, 1.0, -1e300}, {1e300, 3.0, 1e300}, "1e600 + 3 - 1e600");
  check_dot({-0.0, 0.0}, {1.0, -1.0}, "every product -0");
  check_dot({-0.0, 2.5, -2.5}, {1.0, 1.0, 1.0}, "-0 and a cancelled binned pair");
  check_dot({-0.0, 0.0}, {1.0, 1.0}, "-0 and +0");
  ProductRun run;
  CHECK(bits(binned_dot({}, {}, run)) == 0u);  // the empty sum: +0
}

TEST_CASE("exact::Bins: batches through the bins give the superaccumulator's bits", "[reduce][exact][bins]") {
  check_all<float, float, 16>();
  check_all<float, double, 16>();
  check_all<double, double, 8>();
  check_all<float, float, 3>();
  check_all<double, double, 1>();
}
