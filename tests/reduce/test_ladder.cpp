// The seeds' ladder of strategies (reduce/bench/ladder): its names. Every rung's result is checked on
// the GPU (test_reduce_cuda.cpp, blocks/test_kernel_paths.cpp).
#include <stdexcept>
#include <string>

#include "catch.hpp"
#include "ladder/ladder.hpp"

using namespace tally::reduce::bench;

TEST_CASE("Strategy: every name parses back, unknown names list the valid ones", "[ladder]") {
  for (Strategy s : all_strategies) {
    CHECK(parse_strategy(to_string(s)) == s);
    CHECK(is_deterministic(s) == (s != Strategy::atomic));
    for (Strategy t : all_strategies)
      if (t != s) CHECK(to_string(t) != to_string(s));
  }
  CHECK(to_string(Strategy::production) == "production");
  CHECK(to_string(Strategy::cub) == "cub");
  std::string e;
  try {
    (void)parse_strategy("fastest");
  } catch (const std::invalid_argument& x) {
    e = x.what();
  }
  CHECK(e.find("'fastest'") != std::string::npos);
  CHECK(e.find("warp-shuffle") != std::string::npos);
}
