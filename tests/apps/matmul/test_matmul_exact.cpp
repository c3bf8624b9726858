// matmul --exact on the CPU: the reference (exact dot products) against big-integer arithmetic, and
// every CPU level bit for bit the same C, for several thread counts; the driver's --exact checks.
#include <omp.h>

#include <cstring>
#include <string>

#include "catch.hpp"
#include "driver.hpp"
#include "exact.hpp"
#include "exact_inputs.hpp"
#include "matmul_app_support.hpp"
#include "tally/common/error.hpp"
#include "tally/common/h5.hpp"

using namespace tally::matmul;

namespace {

template <class T>
void check_cpu_exact(Shape s, std::uint64_t salt) {
  const auto [a, b] = tally::test::exact_matmul_inputs<T>(s, salt);
  const auto oracle = tally::test::exact_matmul_oracle<T>(a, b, s);
  const Reference ref = exact_reference<T>(a, b, s);
  const std::vector<T> want(ref.c.begin(), ref.c.end());
  INFO(s.str() << " " << (sizeof(T) == 4 ? "float" : "double"));
  REQUIRE(tally::test::bit_mismatches(want, oracle) == 0);
  const int saved = omp_get_max_threads();
  for (int threads : {1, 2, 3}) {
    omp_set_num_threads(threads);
    for (Level l : all_levels) {
      std::vector<T> c(want.size(), std::numeric_limits<T>::quiet_NaN());
      exact_cpu_multiply<T>(l, a, b, c, s);
      INFO("level " << to_string(l) << ", " << threads << " threads");
      CHECK(tally::test::bit_mismatches(c, want) == 0);
    }
  }
  omp_set_num_threads(saved);
}

}  // namespace

TEST_CASE("matmul --exact on the CPU: every level and thread count gives the correctly rounded C", "[matmul][exact]") {
  std::uint64_t salt = 700;
  for (Shape s : {Shape{7, 5, 301}, Shape{16, 17, 1000}, Shape{3, 2, 5000}, Shape{1, 1, 1}}) {
    check_cpu_exact<float>(s, ++salt);
    check_cpu_exact<double>(s, ++salt);
  }
}

TEST_CASE("matmul --exact leaves tiled-tc out: 'all' is the exact levels, and asking for tiled-tc is bad input",
          "[matmul][exact][errors]") {
  using detail::resolve_levels;
  using tally::reduce::Backend;
  const std::vector<Level> exact_levels(all_levels.begin(), all_levels.end()),
      every(cuda_levels.begin(), cuda_levels.end());
  CHECK(resolve_levels({"all"}, Backend::cuda, true) == exact_levels);  // the tensor-core products are rounded
  CHECK(resolve_levels({"all"}, Backend::cuda, false) == every);
  CHECK(resolve_levels({"all"}, Backend::cpu, true) == exact_levels);
  CHECK(resolve_levels({"tiled-tc"}, Backend::cuda, false) == std::vector<Level>{Level::tiled_tc});
  try {
    (void)resolve_levels({"gang", "tiled-tc"}, Backend::cuda, true);
    FAIL("tiled-tc was accepted with --exact");
  } catch (const tally::InputError& e) {
    const std::string what = e.what();
    CHECK(what.find("--level tiled-tc") != std::string::npos);
    CHECK(what.find("--exact") != std::string::npos);
  }
  // The engine itself refuses it too, and writes nothing.
  const Shape s{2, 3, 4};
  const std::vector<float> a(8, 1.0f), b(12, 1.0f);
  std::vector<float> c(6, -7.0f);
  CHECK_THROWS_AS(exact_cpu_multiply<float>(Level::tiled_tc, a, b, c, s), tally::InputError);
  CHECK(c == std::vector<float>(6, -7.0f));
}

TEST_CASE("matmul --exact through the executable: bitwise checks pass, --bench and bad input exit 2",
          "[matmul][exact]") {
  const tally::test::ScratchDir dir("matmul-exact");
  const std::string out = dir.file("exact.h5");
  for (const char* p : {"float", "double"}) {
    const auto r = tally::test::run_matmul(std::string("--backend cpu --exact --precision ") + p +
                                           " --m 9 --n 7 --k 333 --quiet --repeats 1 --out " + out);
    INFO(p << ": " << r.output);
    CHECK(r.rc == 0);
    const auto f = tally::h5::File::open(out);
    CHECK(f.read_attr_string("status") == "ok");
    CHECK(f.read_attr<int>("exact") == 1);
  }
  const std::string never = dir.file("never.h5");
  CHECK(tally::test::run_matmul("--backend cpu --exact --bench --quiet --out " + never).rc == 2);
  CHECK_FALSE(dir.any_starting_with("never.h5"));
}
