#pragma once
// The exact dot product (reduce::exact_dot, dot.hpp) on TestBackend, included after exact_checks.hpp:
// bitwise the big-integer reference (dot_reference.hpp) on random, cancellation-heavy, wide-range,
// overflow-range, underflow-range and special inputs; the reference itself is checked against the
// fsum-based exact_reference on float products (exact in a double).

#include "dot_reference.hpp"
#include "tally/reduce/dot.hpp"

namespace tally::test::dot_checks {

using namespace tally::reduce;  // NOLINT: test code
using exact_checks::compare_bits;
using std::int64_t;

template <class A, class T, class Out>
Out run_dot(Workspace& ws, const std::vector<T>& a, const std::vector<T>& b) {
  auto da = A::upload(a), db = A::upload(b);
  return exact_dot_to_host<T, Out>(A::backend, std::span<const T>(da.data(), a.size()),
                                   std::span<const T>(db.data(), b.size()), ws, A::stream());
}

template <class A, class T, class Out>
void check_dot(Workspace& ws, const std::vector<T>& a, const std::vector<T>& b, const std::string& what) {
  INFO(TALLY_TEST_BACKEND << " exact_dot " << reduce_checks::type_name<T>() << "->" << reduce_checks::type_name<Out>()
                          << ": " << what << " (" << a.size() << " elements)");
  const Out want = exact_dot_reference<Out>(a, b);
  CHECK(compare_bits(std::vector<Out>{run_dot<A, T, Out>(ws, a, b)}, std::vector<Out>{want}) == "");
}

/// a[i] b[i] spanning T's whole exponent range (products of doubles far beyond a double's range
/// both ways), every sign, zeros, and pairs that cancel exactly (a[j] = -a[i], b[j] = b[i]).
template <class T>
std::pair<std::vector<T>, std::vector<T>> wide_pairs(std::size_t n, std::uint64_t salt, int emin, int emax) {
  auto g = tally::test::rng(salt);
  std::uniform_int_distribution<int> kind(0, 15), ex(emin, emax), narrow(-20, 20);
  std::uniform_real_distribution<double> m(1.0, 2.0);
  std::vector<T> a(n), b(n);
  for (std::size_t i = 0; i < n; ++i) {
    const int k = kind(g);
    const auto val = [&](bool wide) {
      return static_cast<T>(std::ldexp(m(g), wide ? ex(g) : narrow(g)) * ((g() & 1) ? 1 : -1));
    };
    if (k == 0) a[i] = (g() & 1) ? T(0) : T(-0.0), b[i] = val(true);
    else if (k <= 3 && i > 0) {
      const std::size_t j = g() % i;
      a[i] = -a[j], b[i] = b[j];
    } else if (k <= 9) a[i] = val(false), b[i] = val(false);
    else a[i] = val(true), b[i] = val(true);
  }
  return {a, b};
}

TEST_CASE(TALLY_TEST_BACKEND ": the big-integer dot reference agrees with fsum on float products",
          "[reduce][exact][dot]") {
  for (std::uint64_t salt = 1; salt <= 3; ++salt) {
    auto [a, b] = wide_pairs<float>(5000, 9700 + salt, -149, 127);
    std::vector<double> prod(a.size());
    for (std::size_t i = 0; i < a.size(); ++i)
      prod[i] = static_cast<double>(a[i]) * static_cast<double>(b[i]);  // exact
    CHECK(compare_bits(std::vector<double>{exact_dot_reference<double>(a, b)},
                       std::vector<double>{exact_checks::exact_reference<double>(prod)}) == "");
    CHECK(compare_bits(std::vector<float>{exact_dot_reference<float>(a, b)},
                       std::vector<float>{exact_checks::exact_reference<float>(prod)}) == "");
  }
}

TEST_CASE(TALLY_TEST_BACKEND ": exact_dot is the exact dot product correctly rounded", "[reduce][exact][dot]") {
  Workspace ws(TestBackend::backend);
  std::uint64_t salt = 9800;
  for (std::size_t n :
       {std::size_t{1}, std::size_t{7}, std::size_t{1000}, std::size_t{100003}, std::size_t{(1u << 20) + 5}}) {
    {
      auto [a, b] = wide_pairs<float>(n, ++salt, -149, 127);
      check_dot<TestBackend, float, float>(ws, a, b, "float products across the range");
      check_dot<TestBackend, float, double>(ws, a, b, "float products across the range");
    }
    {
      auto [a, b] = wide_pairs<double>(n, ++salt, -1074, 1023);  // products from 2^-2148 to 2^2048
      check_dot<TestBackend, double, double>(ws, a, b, "double products far beyond a double's range both ways");
    }
    {
      auto [a, b] = wide_pairs<double>(n, ++salt, -40, 40);
      check_dot<TestBackend, double, double>(ws, a, b, "double products near 1 (FMA splitting)");
    }
  }
  const std::vector<float> ea, eb;
  CHECK(std::bit_cast<std::uint32_t>(run_dot<TestBackend, float, float>(ws, ea, eb)) == 0u);  // the empty sum: +0
}

TEST_CASE(TALLY_TEST_BACKEND ": exact_dot of cancelling, overflowing, underflowing and special products",
          "[reduce][exact][dot]") {
  Workspace ws(TestBackend::backend);
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  const double big = std::ldexp(1.0, 600), tiny = std::ldexp(1.0, -540);
  using V = std::vector<double>;
  const auto both = [&](const V& a, const V& b, const std::string& what, double want) {
    check_dot<TestBackend, double, double>(ws, a, b, what);
    const double got = run_dot<TestBackend, double, double>(ws, a, b);
    INFO(what << ": got " << got << ", want " << want);
    CHECK((std::bit_cast<std::uint64_t>(got) == std::bit_cast<std::uint64_t>(want) ||
           (std::isnan(got) && std::isnan(want))));
  };
  both({big, 1.0, -big}, {big, 1.0, big}, "2^1200 + 1 - 2^1200 (products beyond a double)", 1.0);
  both({1e300, 1e-300, -1e300}, {1e300, 1e-300, 1e300}, "1e600 + 1e-600 - 1e600 (below half the least subnormal)", 0.0);
  both({1e300, 1e-300, -1e300, 0x1p-540}, {1e300, -1e-300, 1e300, 0x1p-534}, "1e600 - 1e-600 - 1e600 + 2^-1074",
       0x1p-1074);
  {  // 64 products of 2^-1080 each: 2^-1074, the smallest subnormal, though each rounds to 0 in double
    V a(64, tiny), b(64, tiny);
    both(a, b, "64 x 2^-1080", std::ldexp(1.0, -1074));
    a.push_back(-tiny), b.push_back(tiny);  // 63 x 2^-1080: 2^-1074 - 2^-1080, rounds to 2^-1074
    both(a, b, "63 x 2^-1080", std::ldexp(1.0, -1074));
    V c(32, tiny), d(32, tiny);  // 2^-1075: a tie between 0 and 2^-1074, to even: +0
    both(c, d, "32 x 2^-1080 (a tie at zero)", 0.0);
  }
  both({1e200, 1e200}, {1e200, 1e200}, "an exact result beyond double: Inf", inf);
  both({inf, 1.0}, {0.0, 1.0}, "Inf * 0", nan);
  both({inf, -inf}, {2.0, 3.0}, "+Inf and -Inf", nan);
  both({inf, big}, {2.0, -big}, "Inf wins over a finite -2^1200", inf);
  both({nan, 1.0}, {1.0, 1.0}, "NaN", nan);
  both({-0.0, 0.0}, {1.0, -1.0}, "every product -0", -0.0);
  both({-0.0, 0.0}, {1.0, 1.0}, "-0 and +0", 0.0);
  both({big, -big}, {big, big}, "products cancelling to zero", 0.0);
  // float: (1e20 x 1e10) + 1 - (1e20 x 1e10)
  const std::vector<float> fa = {1e20f, 1.0f, -1e20f}, fb = {1e10f, 1.0f, 1e10f};
  CHECK(run_dot<TestBackend, float, float>(ws, fa, fb) == 1.0f);
  CHECK(run_dot<TestBackend, float, double>(ws, fa, fb) == 1.0);
}

TEST_CASE(TALLY_TEST_BACKEND ": exact_dot names its bad arguments", "[reduce][exact][dot]") {
  Workspace ws(TestBackend::backend);
  const std::vector<float> a(4, 1.0f), b(3, 1.0f);
  auto da = TestBackend::upload(a), db = TestBackend::upload(b);
  float out = 0;
  float* d_out = TestBackend::backend == Backend::cpu ? &out : static_cast<float*>(ws.result_slot());
  const auto call = [&](std::size_t nb, std::size_t nout) {
    exact_dot<float, float>(TestBackend::backend, std::span<const float>(da.data(), 4),
                            std::span<const float>(db.data(), nb), std::span<float>(d_out, nout), ws);
  };
  CHECK_THROWS_WITH(call(3, 1), tally::test::contains("b: 3 elements, but a has 4"));
  CHECK_THROWS_WITH(call(4, 2), tally::test::contains("out: must hold exactly one element (got 2)"));
  const auto null_a = [&] {
    exact_dot<float, float>(TestBackend::backend, std::span<const float>(static_cast<const float*>(nullptr), 3),
                            std::span<const float>(db.data(), 3), std::span<float>(d_out, 1), ws);
  };
  CHECK_THROWS_WITH(null_a(), tally::test::contains("a: null pointer"));
  if (TestBackend::backend == Backend::cuda) {
    Workspace other(Backend::cpu);
    const auto wrong_ws = [&] {
      exact_dot<float, float>(Backend::cuda, std::span<const float>(da.data(), 3), std::span<const float>(db.data(), 3),
                              std::span<float>(d_out, 1), other);
    };
    CHECK_THROWS_WITH(wrong_ws(), tally::test::contains("workspace"));
  }
}

}  // namespace tally::test::dot_checks
