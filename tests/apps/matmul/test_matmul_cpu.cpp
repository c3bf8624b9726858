// The CPU levels against a long-double triple loop, with the K-dependent tolerance; the check
// itself (relative_error, reference_cpu) against the same oracle; determinism of the CPU gang level.
#include <omp.h>

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
      CHECK(err <= tolerance<T>(s.k));
    }
  }
}

}  // namespace

TEST_CASE("CPU levels match a long-double triple loop within the K-dependent tolerance", "[matmul][cpu]") {
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
  c[7] += 2 * tolerance<double>(s.k) * ref.abs[7];
  CHECK(relative_error<double>(c, ref) > tolerance<double>(s.k));
  c[7] = std::numeric_limits<double>::quiet_NaN();
  CHECK(relative_error<double>(c, ref) == std::numeric_limits<double>::infinity());
}

TEST_CASE("the tolerance grows like sqrt(K) and never exceeds the worst-case bound", "[matmul][check]") {
  const double u = std::numeric_limits<float>::epsilon() / 2;
  CHECK(tolerance<float>(1) == Catch::Approx(2 * u));
  CHECK(tolerance<float>(50) == Catch::Approx(51 * u));  // K u below K = 100
  CHECK(tolerance<float>(1 << 26) == Catch::Approx(u * (1 + 10 * 8192.0)));
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
    for (std::size_t i = 0; i < ref.c.size(); ++i) CHECK(std::fabs(ref.c[i] - ec.c[i]) <= 2.3e-16 * std::fabs(ec.c[i]) + 1e-300);
    for (Level l : all_levels) {
      std::vector<T> c(static_cast<std::size_t>(s.m * s.n));
      cpu_multiply<T>(l, a, b, c, s);
      INFO(ec.precision << " " << s.str() << " seed " << ec.seed << " level " << to_string(l));
      CHECK(tally::test::max_scaled_error<T>(c, exact) <= tolerance<T>(s.k));
    }
  };
  for (const auto& ec : cases) {
    if (ec.precision == "float") check(ec, 0.0f);
    else check(ec, 0.0);
  }
}
