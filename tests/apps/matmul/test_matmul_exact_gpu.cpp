// matmul --exact on the GPU: every CUDA level gives the CPU's correctly rounded C bit for bit
// (checked against big-integer arithmetic on the small shapes), rerun after rerun.
#include <cstring>

#include "catch.hpp"
#include "tally/common/error.hpp"
#include "exact.hpp"
#include "exact_inputs.hpp"

using namespace tally::matmul;

namespace {

template <class T>
void check_gpu_exact(Shape s, std::uint64_t salt, bool oracle) {
  const auto [a, b] = tally::test::exact_matmul_inputs<T>(s, salt);
  const Reference ref = exact_reference<T>(a, b, s);
  const std::vector<T> want(ref.c.begin(), ref.c.end());
  INFO(s.str() << " " << (sizeof(T) == 4 ? "float" : "double"));
  if (oracle) REQUIRE(tally::test::bit_mismatches(want, tally::test::exact_matmul_oracle<T>(a, b, s)) == 0);
  auto engine = make_cuda_engine<T>(s, 0);
  engine->set_inputs(a, b);
  engine->set_exact(true);
  for (Level l : all_levels)
    for (int rerun = 0; rerun < 2; ++rerun) {  // the tiled level's accumulators are cleared for the next run
      engine->run(l);                          // C is NaN-poisoned before the run
      INFO("level " << to_string(l) << ", run " << rerun);
      CHECK(tally::test::bit_mismatches(engine->c(), want) == 0);
    }
  // tiled-tc has no exact form: the engine refuses it (the driver never asks), and stays usable.
  CHECK_THROWS_AS(engine->run(Level::tiled_tc), tally::InputError);
  engine->run(Level::gang);
  CHECK(tally::test::bit_mismatches(engine->c(), want) == 0);
}

}  // namespace

TEST_CASE("matmul --exact on the GPU: every level gives the CPU's correctly rounded C", "[matmul][gpu][exact]") {
  std::uint64_t salt = 800;
  for (Shape s : {Shape{7, 5, 301}, Shape{37, 29, 5001}, Shape{3, 2, 70000}, Shape{1, 1, 1}}) {
    check_gpu_exact<float>(s, ++salt, s.k <= 5001);
    check_gpu_exact<double>(s, ++salt, s.k <= 5001);
  }
  check_gpu_exact<float>(Shape{64, 64, 1 << 16}, ++salt, false);  // the Gram shape
}
