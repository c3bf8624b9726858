// matmul --level ozaki on the GPU: bit for bit the CPU engine's C (odd shapes, K beyond one INT8
// chunk, every moduli count, the adversarial inputs), the same bits on every rerun and from a fresh
// engine, the same statistics (which tiles and elements fell back), and the promise against exact
// products on the shapes the oracle can afford.
#include <cstring>
#include <limits>
#include <vector>

#include "catch.hpp"
#include "exact_inputs.hpp"
#include "matmul.hpp"
#include "ozaki/ozaki.hpp"
#include "ozaki_oracle.hpp"
#include "test_support.hpp"

using namespace tally::matmul;
namespace oz = tally::matmul::ozaki;

namespace {

template <class T>
std::vector<T> cpu_c(const std::vector<T>& a, const std::vector<T>& b, Shape s, int moduli, oz::Stats& st) {
  std::vector<T> c(static_cast<std::size_t>(s.m * s.n), std::numeric_limits<T>::quiet_NaN());
  st = oz::multiply_cpu<T>(a, b, c, s, oz::make_plan<T>(s.k, moduli));
  return c;
}

/// The GPU's C (through the engine, as matmul runs it) and the CPU's, bit for bit; reruns too.
template <class T>
std::vector<T> check_gpu(const std::vector<T>& a, const std::vector<T>& b, Shape s, int moduli, int reruns = 1) {
  oz::Stats cpu_stats;
  const auto want = cpu_c<T>(a, b, s, moduli, cpu_stats);
  auto engine = make_cuda_engine<T>(s, 0);
  engine->set_inputs(a, b);
  engine->set_ozaki(oz::Settings{moduli});
  std::vector<T> first;
  for (int r = 0; r < reruns; ++r) {
    engine->run(Level::ozaki);  // C is NaN-poisoned before the run
    const auto got = engine->c();
    INFO("run " << r);
    CHECK(tally::test::bit_mismatches(got, want) == 0);
    if (r == 0) first = got;
    else CHECK(std::memcmp(first.data(), got.data(), got.size() * sizeof(T)) == 0);
  }
  // A fresh engine, its run profiled: the same bits, and the CPU's statistics.
  oz::Profile prof;
  {
    auto e2 = make_cuda_engine<T>(s, 0);
    e2->set_inputs(a, b);
    e2->set_ozaki(oz::Settings{moduli, &prof});
    e2->run(Level::ozaki);
    CHECK(tally::test::bit_mismatches(e2->c(), want) == 0);  // a fresh engine: the same bits
  }
  CHECK(prof.stats.tiles == cpu_stats.tiles);
  CHECK(prof.stats.exact_tiles == cpu_stats.exact_tiles);
  CHECK(prof.stats.special_tiles == cpu_stats.special_tiles);
  CHECK(prof.stats.exact_elements == cpu_stats.exact_elements);
  return first;
}

}  // namespace

TEST_CASE("ozaki on the GPU: the CPU engine's bits on odd shapes, every rerun", "[matmul][ozaki][gpu]") {
  std::uint64_t salt = 5100;
  for (Shape s : {Shape{1, 1, 1}, Shape{7, 5, 129}, Shape{129, 7, 300}, Shape{33, 40, 1000}, Shape{130, 257, 2052},
                  Shape{3, 70, 17}}) {
    INFO(s.str());
    const auto ad = tally::test::random_vector<double>(static_cast<std::size_t>(s.m * s.k), -1.0, 1.0, ++salt);
    const auto bd = tally::test::random_vector<double>(static_cast<std::size_t>(s.k * s.n), -1.0, 1.0, ++salt);
    const auto cd = check_gpu<double>(ad, bd, s, 0, 3);
    if (s.m * s.n * s.k <= 100000)
      (void)tally::test::check_ozaki_promise<double>(ad, bd, cd, s, oz::make_plan<double>(s.k, 0).tables.q);
    const auto af = tally::test::random_vector<float>(static_cast<std::size_t>(s.m * s.k), -1.f, 1.f, ++salt);
    const auto bf = tally::test::random_vector<float>(static_cast<std::size_t>(s.k * s.n), -1.f, 1.f, ++salt);
    const auto cf = check_gpu<float>(af, bf, s, 0, 3);
    if (s.m * s.n * s.k <= 100000)
      (void)tally::test::check_ozaki_promise<float>(af, bf, cf, s, oz::make_plan<float>(s.k, 0).tables.q);
  }
}

TEST_CASE("ozaki on the GPU: K beyond one INT8 chunk, summed exactly across chunks", "[matmul][ozaki][gpu]") {
  // 131056 + 200: two INT8 GEMMs per modulus, the second one a K tail not a multiple of 16.
  const Shape s{9, 11, oz::kChunkK + 200};
  const auto a = tally::test::random_vector<double>(static_cast<std::size_t>(s.m * s.k), -1.0, 1.0, 5201);
  const auto b = tally::test::random_vector<double>(static_cast<std::size_t>(s.k * s.n), -1.0, 1.0, 5202);
  REQUIRE(oz::make_plan<double>(s.k, 0).chunks == 2);
  const auto c = check_gpu<double>(a, b, s, 0);
  (void)tally::test::check_ozaki_promise<double>(a, b, c, s, oz::make_plan<double>(s.k, 0).tables.q);
}

TEST_CASE("ozaki on the GPU: every moduli count gives the CPU's bits", "[matmul][ozaki][gpu]") {
  const Shape s{65, 70, 900};
  const auto a = tally::test::random_vector<double>(static_cast<std::size_t>(s.m * s.k), -1.0, 1.0, 5301);
  const auto b = tally::test::random_vector<double>(static_cast<std::size_t>(s.k * s.n), -1.0, 1.0, 5302);
  for (int n : {3, 6, 9, 12, 14, 15, 17, 20}) {
    INFO(n << " moduli");
    (void)check_gpu<double>(a, b, s, n);
  }
  const auto af = tally::test::random_vector<float>(static_cast<std::size_t>(s.m * s.k), -1.f, 1.f, 5303);
  const auto bf = tally::test::random_vector<float>(static_cast<std::size_t>(s.k * s.n), -1.f, 1.f, 5304);
  for (int n : {4, 6, 7, 8, 10}) {
    INFO(n << " moduli, float");
    (void)check_gpu<float>(af, bf, s, n);
  }
}

TEST_CASE(
    "ozaki on the GPU: wide exponent ranges, zeros, subnormals, overflow, Inf and NaN: the CPU's bits and the promise",
    "[matmul][ozaki][gpu]") {
  for (const auto& c : tally::test::ozaki_cases<double>(5400)) {
    INFO(c.name << " (double)");
    const auto out = check_gpu<double>(c.a, c.b, c.s, 0, 2);
    (void)tally::test::check_ozaki_promise<double>(c.a, c.b, out, c.s, oz::make_plan<double>(c.s.k, 0).tables.q);
  }
  for (const auto& c : tally::test::ozaki_cases<float>(5500)) {
    INFO(c.name << " (float)");
    const auto out = check_gpu<float>(c.a, c.b, c.s, 0, 2);
    (void)tally::test::check_ozaki_promise<float>(c.a, c.b, out, c.s, oz::make_plan<float>(c.s.k, 0).tables.q);
  }
}

TEST_CASE("ozaki on the GPU: a square product as the bench runs it, against the device reference",
          "[matmul][ozaki][gpu]") {
  for (std::int64_t n : {std::int64_t{520}, std::int64_t{1024}}) {
    const Shape s{n, n, n};
    auto engine = make_cuda_engine<double>(s, 0);
    engine->generate(20260101);
    engine->set_ozaki(oz::Settings{0});
    const Reference ref = engine->reference();
    engine->run(Level::ozaki);
    const auto c1 = engine->c();
    INFO(s.str() << ": error " << relative_error<double>(c1, ref));
    CHECK(relative_error<double>(c1, ref) <= tolerance<double>(ozaki::error_bound<double>(s.k)));
    engine->run(Level::ozaki);
    CHECK(std::memcmp(c1.data(), engine->c().data(), c1.size() * sizeof(double)) == 0);
    // The CPU engine on the same inputs: the same bits.
    oz::Stats st;
    CHECK(tally::test::bit_mismatches(cpu_c<double>(engine->a(), engine->b(), s, 0, st), c1) == 0);
    CHECK(st.exact_elements == 0);
  }
}
