// mcpi across ranks: the real executable under the MPI launcher. Every rank count gives the hits of
// the single-process run (and of two --offset runs that split it), for an uneven split; bad input on
// several ranks exits 2 with one message and no file.
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "app_ranks_support.hpp"
#include "catch.hpp"
#include "mcpi.hpp"
#include "tally/common/device_info.hpp"
#include "tally/common/h5.hpp"
#include "tally/common/ranks_report.hpp"
#include "test_support.hpp"

using namespace tally;

namespace {

#ifdef MCPI_TEST_GPU
const std::string backend = "cuda";
#else
const std::string backend = "cpu";
#endif

std::string mcpi_cmd(const std::string& args, const std::string& out) {
  return std::string(MCPI_EXE) + " --backend " + backend + " --quiet " + args + " --out " + out;
}

std::int64_t hits_of(const std::string& path) { return h5::File::open(path).read_attr<std::int64_t>("hits"); }

}  // namespace

TEST_CASE("mcpi on 1, 2 and 3 ranks counts the hits of the single-process run", "[mcpi][ranks]") {
  if (!test::have_mpi) {
    WARN("built without MPI: nothing to launch");
    return;
  }
  test::ScratchDir dir("mcpi-ranks");
  const std::uint64_t seed = test::seed() % 1000000007;
  const std::int64_t n = 1000007, offset = 12345;  // uneven splits; a stretch starting mid-block
  // philox everywhere; on a GPU xorwow's device streams too; sobol where the CPU backend has cuRAND's
  // host generator (builds with the CUDA toolkit).
  std::vector<std::string> generators{"philox"};
#ifdef MCPI_TEST_GPU
  generators.push_back("xorwow");
#endif
  if (mcpi::detail::curand_host_available()) generators.push_back("sobol");
  for (const auto& g : generators) {
    CAPTURE(g, seed);
    const std::string common = "--generator " + g + " --seed " + std::to_string(seed) + " --batch 300001";
    auto args = [&](std::int64_t off, std::int64_t count) {
      return common + " --offset " + std::to_string(off) + " --n " + std::to_string(count);
    };
    const auto single = test::run_command(mcpi_cmd(args(offset, n), dir.file("single.h5")));
    REQUIRE(single.rc == 0);
    const std::int64_t hits = hits_of(dir.file("single.h5"));
    if (g == "philox") CHECK(hits == mcpi::detail::philox_hits_cpu(seed, offset, n));  // in-process count on the CPU
    // Two continuation runs add up to it (the stream layout the ranks rely on).
    const std::int64_t n1 = 400003;
    REQUIRE(test::run_command(mcpi_cmd(args(offset, n1), dir.file("a.h5"))).rc == 0);
    REQUIRE(test::run_command(mcpi_cmd(args(offset + n1, n - n1), dir.file("b.h5"))).rc == 0);
    CHECK(hits_of(dir.file("a.h5")) + hits_of(dir.file("b.h5")) == hits);
    for (int ranks : {1, 2, 3}) {
      CAPTURE(ranks);
      const std::string out = dir.file("ranks" + std::to_string(ranks) + ".h5");
      const auto r = test::run_command(test::on_ranks(ranks, mcpi_cmd(args(offset, n), out)));
      INFO(r.output);
      REQUIRE(r.rc == 0);
      const auto f = h5::File::open(out);
      CHECK(f.read_attr<std::int64_t>("hits") == hits);
      CHECK(f.read_attr_string("status") == "ok");
      // The decomposition: consecutive stretches covering [offset, offset + n).
      const auto ranks_group = f.open_group("ranks");
      CHECK(ranks_group.read_attr<std::int32_t>("ranks") == ranks);
      const auto begin = ranks_group.read<std::int64_t>("part_begin"), end = ranks_group.read<std::int64_t>("part_end");
      REQUIRE(begin.size() == static_cast<std::size_t>(ranks));
      CHECK(begin.front() == offset);
      CHECK(end.back() == offset + n);
      for (int q = 1; q < ranks; ++q) CHECK(begin[static_cast<std::size_t>(q)] == end[static_cast<std::size_t>(q) - 1]);
      // Every rank's batches, gathered in rank order, account for every sample and hit.
      const auto bn = f.read<std::int64_t>("batches/n"), bh = f.read<std::int64_t>("batches/hits");
      CHECK(std::accumulate(bn.begin(), bn.end(), std::int64_t{0}) == n);
      CHECK(std::accumulate(bh.begin(), bh.end(), std::int64_t{0}) == hits);
      const auto per_rank = f.read<std::int64_t>("batches/per_rank");
      CHECK(per_rank.size() == static_cast<std::size_t>(ranks));
      const RanksReport rr = read_ranks_report(f);
      CHECK(rr.ranks == ranks);
      REQUIRE(rr.phases.size() == 3);  // setup, generate_count, total
      for (const auto& ph : rr.phases) {
        CAPTURE(ph.name);
        CHECK(ph.per_rank.size() == static_cast<std::size_t>(ranks));
        CHECK(ph.min <= ph.median);
        CHECK(ph.median <= ph.max);
      }
    }
  }
}

#ifndef MCPI_TEST_GPU
TEST_CASE("mcpi on several ranks refuses bad input with one message, exit 2 and no file", "[mcpi][ranks]") {
  if (!test::have_mpi) {
    WARN("built without MPI: nothing to launch");
    return;
  }
  test::ScratchDir dir("mcpi-ranks-bad");
  const std::string out = dir.file("bad.h5");
  auto expect_refused = [&](const std::string& command, const std::string& names) {
    const auto r = test::run_command(command);
    INFO(r.output);
    CHECK(r.rc == 2);
    CHECK(test::count_of(r.output, "mcpi: error:") == 1);  // rank 0 alone reports
    CHECK(r.output.find(names) != std::string::npos);
    CHECK_FALSE(dir.any_starting_with("bad.h5"));
  };
  // Different options on different ranks (an MPMD launch): checked before anything runs.
  const std::string a = mcpi_cmd("--n 1000", out), b = mcpi_cmd("--n 1001", out);
  expect_refused(std::string(TALLY_TEST_MPIEXEC) + " 1 " + a + " : -n 2 " + b, "differs between ranks");
  // An input error every rank finds.
  expect_refused(test::on_ranks(3, mcpi_cmd("--n 0", out)), "--n");
  expect_refused(test::on_ranks(2, mcpi_cmd("--generator sobol --n 2^32 --offset 1", out)), "--offset/--n");
  // --backend cuda where no rank has a usable GPU.
  if (tally::cuda_device_count() == 0)
    expect_refused(test::on_ranks(2, std::string(MCPI_EXE) + " --backend cuda --n 1000 --out " + out),
                   "--backend cuda");
}
#endif
