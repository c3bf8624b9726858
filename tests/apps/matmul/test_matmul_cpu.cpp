// The CPU levels against a long-double triple loop, each within the tolerance of its order of
// summation; the check itself (tolerance, compare, reference_cpu) against the same oracle, and on
// constant matrices at large K; determinism of the CPU gang level.
#include <omp.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "catch.hpp"
#include "matmul.hpp"
#include "naive.hpp"
#include "test_support.hpp"

using namespace tally::matmul;

namespace {

struct TestShape {
  std::int64_t m, n, k;
};

/// The tolerance of a CPU level's order on `s` with this process's threads.
template <class T>
double level_tolerance(Level l, Shape s) {
  return tolerance<T>(cpu_error_bound<T>(l, s, 0, omp_get_max_threads()));
}
const TestShape shapes[] = {{1, 1, 1}, {37, 53, 1001}, {130, 7, 300}, {16, 16, 20000}, {64, 48, 4099}};

template <class T>
void check_levels() {
  std::uint64_t salt = sizeof(T);
  for (const auto& ts : shapes) {
    const Shape s{ts.m, ts.n, ts.k};
    const auto a = tally::test::random_vector<T>(static_cast<std::size_t>(s.m * s.k), T(-1), T(1), ++salt);
    const auto b = tally::test::random_vector<T>(static_cast<std::size_t>(s.k * s.n), T(-1), T(1), ++salt);
    const auto ref = tally::test::naive_product<T>(a, b, s.m, s.n, s.k);
    for (Level l : all_levels) {
      std::vector<T> c(static_cast<std::size_t>(s.m * s.n), std::numeric_limits<T>::quiet_NaN());
      cpu_multiply<T>(l, a, b, c, s);
      const double err = tally::test::max_scaled_error<T>(c, ref);
      INFO("level " << to_string(l) << " shape " << s.str() << " error " << err);
      CHECK(err <= level_tolerance<T>(l, s));
    }
  }
}

}  // namespace

TEST_CASE("CPU levels match a long-double triple loop within their orders' tolerances", "[matmul][cpu]") {
  check_levels<float>();
  check_levels<double>();
}

TEST_CASE("the app's reference and error measure agree with the independent oracle", "[matmul][check]") {
  const Shape s{23, 31, 5003};
  const auto a = tally::test::random_vector<double>(static_cast<std::size_t>(s.m * s.k), -1.0, 1.0, 11);
  const auto b = tally::test::random_vector<double>(static_cast<std::size_t>(s.k * s.n), -1.0, 1.0, 12);
  const auto oracle = tally::test::naive_product<double>(a, b, s.m, s.n, s.k);
  const Reference ref = reference_cpu<double>(a, b, s);
  for (std::size_t i = 0; i < ref.c.size(); ++i) {
    // double-double is far more accurate than long double's 64 bits: both agree to ~k * 2^-64 |A||B|.
    REQUIRE(std::fabs(static_cast<long double>(ref.c[i]) - oracle.c[i]) <= 1e-15L * oracle.abs[i]);
    REQUIRE(ref.abs[i] == Catch::Approx(static_cast<double>(oracle.abs[i])).epsilon(1e-12));
  }
  // The check detects an error just above the tolerance in one element, and an unwritten (NaN) one.
  std::vector<double> c(ref.c.begin(), ref.c.end());
  CHECK(relative_error<double>(c, ref) == 0.0);
  const double tol = tolerance<double>(any_order(s.k));
  c[7] += 2 * tol * ref.abs[7];
  CHECK(relative_error<double>(c, ref) > tol);
  CHECK(compare<double>(c, ref, Allowance{tol}).beyond == 1);
  c[7] = std::numeric_limits<double>::quiet_NaN();
  CHECK(relative_error<double>(c, ref) == std::numeric_limits<double>::infinity());
}

TEST_CASE("the check takes NaN and infinities as values: the reference's are a pass, any other a failure",
          "[matmul][check][nan]") {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  // A row of A with NaN, one with +Inf against B's mixed signs, one where +Inf and -Inf meet (C(2, 0))
  // or add up (C(2, 1)): the reference has NaN and infinities as a long-double triple loop has them.
  const Shape s{3, 2, 3};
  const std::vector<double> a{nan, 1, 2, inf, 1, 1, inf, -inf, 1}, b{1, -1, 2, 3, 0.5, 0.25};
  const Reference ref = reference_cpu<double>(a, b, s);
  const auto oracle = tally::test::naive_product<double>(a, b, s.m, s.n, s.k);
  for (std::size_t e = 0; e < ref.c.size(); ++e) {
    INFO("element " << e);
    if (std::isnan(oracle.c[e])) CHECK(std::isnan(ref.c[e]));
    else CHECK(ref.c[e] == static_cast<double>(oracle.c[e]));
  }
  REQUIRE(std::isinf(ref.c[2]));
  REQUIRE(ref.c[2] > 0);          // inf * 1 + 1 * 2 + 1 * 0.5
  REQUIRE(ref.c[3] < 0);          // inf * -1 + ...
  REQUIRE(std::isnan(ref.c[4]));  // inf * 1 - inf * 2
  const std::vector<double> right(ref.c.begin(), ref.c.end());
  const Comparison ok = compare<double>(right, ref);
  CHECK(ok.rel_error == 0.0);
  CHECK(ok.mismatches() == 0);
  CHECK(ok.ref_nan == 3);  // row 0 (the NaN input) and C(2, 0)
  CHECK(ok.ref_inf == 3);  // row 1 and C(2, 1)
  auto with = [&](std::size_t e, double x) {
    std::vector<double> c = right;
    c[e] = x;
    return compare<double>(c, ref);
  };
  CHECK(with(0, 1.0).nan_missing == 1);  // a NaN lost
  CHECK(with(2, nan).nan_extra == 1);    // NaN for an infinity
  CHECK(with(2, -inf).inf_wrong == 1);   // the other infinity
  CHECK(with(3, 5.0).inf_wrong == 1);    // a number for an infinity
  for (const double x : {nan, inf}) {    // on a finite reference, a NaN or an infinity
    const Reference finite{{1.0, 2.0}, {1.0, 2.0}};
    const Comparison bad = compare<double>(std::vector<double>{1.0, x}, finite);
    CHECK(bad.mismatches() == 1);
    CHECK(bad.rel_error == inf);
  }
  // A finite reference beyond float's range rounds to an infinity there: a float C holding it passes.
  const Reference big{{6e38, 1.0}, {6e38, 1.0}};
  CHECK(compare<float>(std::vector<float>{std::numeric_limits<float>::infinity(), 1.0f}, big).rel_error == 0.0);
  CHECK(compare<float>(std::vector<float>{-std::numeric_limits<float>::infinity(), 1.0f}, big).inf_wrong == 1);
}

TEST_CASE("the tolerance is gamma of the order's depth, plus the reference's own error", "[matmul][check]") {
  const double u = 0x1p-24, ud = 0x1p-53;
  const auto gamma = [](double n, double unit) { return n * unit / (1 - n * unit); };
  // gamma_n u_T, the extra terms, the reference's (ranks + 1) u_d, all times 1 + 2^-20 (and gamma's
  // own rounding, 2^-40 of it).
  CHECK(tolerance<float>({1}) == Catch::Approx((gamma(1, u) + 2 * ud) * (1 + 0x1p-20)).epsilon(1e-11));
  CHECK(tolerance<float>({1000}) == Catch::Approx((gamma(1000, u) + 2 * ud) * (1 + 0x1p-20)).epsilon(1e-11));
  const double with_extra = (gamma(10, ud) + 68 * ud * (1 + gamma(10, ud)) + 2 * ud) * (1 + 0x1p-20);
  CHECK(tolerance<double>({10, 68}) == Catch::Approx(with_extra).epsilon(1e-11));
  // Three ranks: two more additions, and the reference's slabs added in double.
  CHECK(tolerance<double>({10}, 3) == Catch::Approx((gamma(12, ud) + 4 * ud) * (1 + 0x1p-20)).epsilon(1e-11));
  CHECK(tolerance<float>(across_ranks({10}, 3)) < tolerance<float>({10}, 3));  // the reference's share
  CHECK(std::isinf(tolerance<float>({1 << 23})));                              // n u = 1/2: no bound
  // The CPU orders: worker over 4 threads at K = 1001, ranges of at most 251 products, 3 additions;
  // gang at K = 70000, 64 chunks of at most 1094; vector (an `omp simd` reduction) and tiled, K.
  for (Level l : {Level::worker, Level::worker_vector})
    CHECK(cpu_error_bound<float>(l, {8, 8, 1001}, 0, 4).depth == 251 + 3);
  CHECK(cpu_error_bound<float>(Level::gang, {8, 8, 70000}, 0, 1).depth == 1094 + 63);
  CHECK(cpu_error_bound<float>(Level::gang, {8, 8, 70000}, 3, 1).depth == 23334 + 2);  // --split-k 3
  CHECK(cpu_error_bound<float>(Level::vector, {8, 8, 70000}, 0, 4).depth == 70000);
  CHECK(cpu_error_bound<float>(Level::tiled, {8, 8, 70000}, 0, 4).depth == 70000);
  // ozaki: its promise, u (1 + min(K, 10 sqrt K)).
  const ErrorBound oz = cpu_error_bound<double>(Level::ozaki, {8, 8, 10000}, 0, 4);
  CHECK(oz.depth == 0);
  CHECK(oz.extra_u == 1001);
}

TEST_CASE("constant matrices at large K: every CPU level within its order's bound, and a doubled term seen",
          "[matmul][cpu][check]") {
  // A = B = 0.1 in float, 2 x 2 x 2^20: every product is the same, so a sequential sum's roundings
  // all lean one way while its partial sum grows (the tiled level: 1.4% of |A||B|): far beyond the
  // sqrt(K) u of zero-mean inputs, within gamma_K. A statistical tolerance u (1 + 10 sqrt K) fails
  // such a correct sum; the order's bound does not.
  const Shape s{2, 2, 1 << 20};
  const std::vector<float> a(static_cast<std::size_t>(s.m * s.k), 0.1f), b(static_cast<std::size_t>(s.k * s.n), 0.1f);
  const Reference ref = reference_cpu<float>(a, b, s);
  double worst = 0;
  for (Level l : all_levels) {
    std::vector<float> c(static_cast<std::size_t>(s.m * s.n), std::numeric_limits<float>::quiet_NaN());
    cpu_multiply<float>(l, a, b, c, s);
    const double tol = level_tolerance<float>(l, s);
    const Comparison cmp = compare<float>(c, ref, Allowance{tol, underflow_allowance<float>(s.k)});
    INFO("level " << to_string(l) << ": rel. error " << cmp.rel_error << ", tolerance " << tol);
    CHECK(cmp.passed());
    worst = std::max(worst, cmp.rel_error);
  }
  CHECK(worst > 0x1p-24 * (1 + 10 * std::sqrt(static_cast<double>(s.k))));
  // In double, with a depth of about K / 64 (gang's chunks), one product counted twice (1 / K of
  // |A||B|, 1e-6) stands far above the tolerance (2e-12).
  const std::vector<double> ad(a.size(), 0.1), bd(b.size(), 0.1);
  const Reference refd = reference_cpu<double>(ad, bd, s);
  std::vector<double> c(static_cast<std::size_t>(s.m * s.n));
  cpu_multiply<double>(Level::gang, ad, bd, c, s);
  const Allowance within{level_tolerance<double>(Level::gang, s), underflow_allowance<double>(s.k)};
  CHECK(compare<double>(c, refd, within).passed());
  c[3] += 0.1 * 0.1;
  CHECK(compare<double>(c, refd, within).beyond == 1);
}

TEST_CASE("the CPU gang level gives the same bits whatever the thread count", "[matmul][cpu][determinism]") {
  const Shape s{19, 23, 70000};
  const auto a = tally::test::random_vector<float>(static_cast<std::size_t>(s.m * s.k), -1.f, 1.f, 21);
  const auto b = tally::test::random_vector<float>(static_cast<std::size_t>(s.k * s.n), -1.f, 1.f, 22);
  std::vector<float> c1(static_cast<std::size_t>(s.m * s.n)), c2(c1.size());
  const int threads = omp_get_max_threads();
  omp_set_num_threads(1);
  cpu_multiply<float>(Level::gang, a, b, c1, s);
  omp_set_num_threads(3);
  cpu_multiply<float>(Level::gang, a, b, c2, s);
  omp_set_num_threads(threads);
  CHECK(std::memcmp(c1.data(), c2.data(), c1.size() * sizeof(float)) == 0);
}

TEST_CASE("generated inputs are uniform in -1 to 1 and differ between A and B", "[matmul][inputs]") {
  std::vector<double> a(4096), b(4096);
  generate_host<double>(5, 0, a);
  generate_host<double>(5, 1, b);
  double lo = 1, hi = -1, mean = 0;
  for (double x : a) lo = std::min(lo, x), hi = std::max(hi, x), mean += x / 4096;
  CHECK(lo >= -1.0);
  CHECK(hi < 1.0);
  CHECK(lo < -0.99);
  CHECK(hi > 0.99);
  // Bernstein for 4096 uniforms on [-1, 1] (variance 1/3): P(|mean| >= 0.11) <= 2 exp(-4096 0.11^2 /
  // (2/3 + 2 0.11/3)) < 1e-22, so only a generator off centre fails this.
  CHECK(std::fabs(mean) < 0.11);
  CHECK(a != b);
}

TEST_CASE("every CPU level reproduces the exact products of data/matmul_expected.csv", "[matmul][cpu][expected]") {
  const auto cases = tally::test::read_expected(TALLY_MATMUL_DATA_DIR "/matmul_expected.csv");
  REQUIRE(cases.size() >= 4);
  auto check = [](const tally::test::ExpectedCase& ec, auto zero) {
    using T = decltype(zero);
    const Shape s{ec.m, ec.n, ec.k};
    std::vector<T> a(static_cast<std::size_t>(s.m * s.k)), b(static_cast<std::size_t>(s.k * s.n));
    generate_host<T>(ec.seed, 0, a);
    generate_host<T>(ec.seed, 1, b);
    const auto naive = tally::test::naive_product<T>(a, b, s.m, s.n, s.k);
    tally::test::NaiveProduct exact{{ec.c.begin(), ec.c.end()}, naive.abs};
    // The reference is the exact product to double-double accuracy: it rounds to the table's value
    // within one ulp of double.
    const Reference ref = reference_cpu<T>(a, b, s);
    for (std::size_t i = 0; i < ref.c.size(); ++i)
      CHECK(std::fabs(ref.c[i] - ec.c[i]) <= 2.3e-16 * std::fabs(ec.c[i]) + 1e-300);
    for (Level l : all_levels) {
      std::vector<T> c(static_cast<std::size_t>(s.m * s.n));
      cpu_multiply<T>(l, a, b, c, s);
      INFO(ec.precision << " " << s.str() << " seed " << ec.seed << " level " << to_string(l));
      CHECK(tally::test::max_scaled_error<T>(c, exact) <= level_tolerance<T>(l, s));
    }
  };
  for (const auto& ec : cases) {
    if (ec.precision == "float") check(ec, 0.0f);
    else check(ec, 0.0);
  }
}
