// The host collectives of Comm.
#include "catch.hpp"
#include "rank_support.hpp"

using namespace tally::reduce;

TEST_CASE("ranks and split_range") {
  const Comm& c = tally::test::world();
  REQUIRE(c.size() >= 1);
  CHECK(c.rank() < c.size());
  CHECK(c.local_rank() < c.local_size());
  const std::vector<int> ranks = c.allgather(c.rank());
  for (int r = 0; r < c.size(); ++r) CHECK(ranks[static_cast<std::size_t>(r)] == r);
}
