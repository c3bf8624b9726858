// The multi-rank summary (group "ranks") round trip, and its checks.
#include <filesystem>
#include <string>
#include <unistd.h>

#include "catch.hpp"
#include "tally/common/h5.hpp"
#include "tally/common/ranks_report.hpp"
#include "test_support.hpp"

using namespace tally;

TEST_CASE("ranks report: written and read back", "[h5][ranks]") {
  const auto dir = std::filesystem::temp_directory_path() / ("tally_test_ranks_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "r.h5").string();
  const int ranks = GENERATE(1, 3);
  RanksReport r;
  r.ranks = ranks;
  r.transport = ranks == 1 ? "none" : "mpi (host-staged)";
  r.shares_device = ranks > 1;
  r.decomposition = "rows 0-170 | 171-341 | 342-511";
  r.writer = ranks == 1 ? "" : writer_parallel_hdf5;  // "": the default for the rank count
  for (const char* name : {"setup", "solve"}) {
    RankPhase p;
    p.name = name;
    p.per_rank = test::random_vector<double>(static_cast<std::size_t>(ranks), 0.5, 2.0, p.name.size());
    p.min = 0.5, p.median = 1.0, p.max = 2.0;
    r.phases.push_back(p);
  }
  {
    auto f = h5::File::create(path);
    write(f, r);
    f.commit();
  }
  const auto f = h5::File::open(path);
  const RanksReport b = read_ranks_report(f);
  CHECK(b.ranks == ranks);
  CHECK(b.transport == r.transport);
  CHECK(b.shares_device == r.shares_device);
  CHECK(b.decomposition == r.decomposition);
  CHECK(b.writer == (ranks == 1 ? writer_one_rank : writer_parallel_hdf5));
  REQUIRE(b.phases.size() == 2);
  for (std::size_t i = 0; i < 2; ++i) {
    CHECK(b.phases[i].name == r.phases[i].name);
    CHECK(b.phases[i].per_rank == r.phases[i].per_rank);
    CHECK(b.phases[i].min == 0.5);
    CHECK(b.phases[i].median == 1.0);
    CHECK(b.phases[i].max == 2.0);
  }
  CHECK(f.open_group("ranks").dataset_dims("solve_s") == h5::dims_t{static_cast<std::uint64_t>(ranks)});
  std::filesystem::remove_all(dir);
}

TEST_CASE("ranks report: bad phases are refused before anything is written", "[h5][ranks]") {
  const auto dir = std::filesystem::temp_directory_path() / ("tally_test_ranks_bad_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  auto f = h5::File::create((dir / "bad.h5").string());
  RanksReport r;
  r.ranks = 2;
  r.phases = {RankPhase{"solve", 1, 1, 1, {1.0}}};  // one value for two ranks
  try {
    write(f, r);
    FAIL("no exception");
  } catch (const std::invalid_argument& e) {
    CHECK(std::string(e.what()).find("phase 'solve' has 1 values for 2 ranks") != std::string::npos);
  }
  r.phases = {RankPhase{"a,b", 1, 1, 1, {1.0, 1.0}}};
  CHECK_THROWS_AS(write(f, r), std::invalid_argument);
  r.phases = {RankPhase{"s", 1, 1, 1, {1.0, 1.0}}, RankPhase{"s", 1, 1, 1, {1.0, 1.0}}};
  CHECK_THROWS_AS(write(f, r), std::invalid_argument);
  CHECK_FALSE(f.has("ranks"));
  std::filesystem::remove_all(dir);
}
