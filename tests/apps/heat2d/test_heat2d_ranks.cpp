// heat2d across ranks: the real executable under the MPI launcher with 1, 2 and 3 ranks writes the
// same /field and /residual, bit for bit, as the same run in one plain process (row counts that the
// rank counts do not divide included), the field with parallel HDF5 where the build has it; bad input on several ranks
// exits 2 on every rank, rank 0 alone saying why, and writes nothing; a rank killed mid-run ends the job, which writes
// nothing. Built twice: HEAT2D_RANKS_BACKEND "cpu" (with the bad-input cases) and "cuda" (a GPU test: on one GPU the
// ranks share it and the halos go host-staged).
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "catch.hpp"
#include "heat2d_test_support.hpp"
#include "tally/common/device_info.hpp"
#include "tally/common/h5.hpp"
#include "tally/common/ranks_report.hpp"
#include "tally_test_mpiexec.hpp"

namespace fs = std::filesystem;
using heat2d_test::random_value;
using heat2d_test::run_command;
using heat2d_test::same_bits;

namespace {

const std::string backend = HEAT2D_RANKS_BACKEND;

fs::path scratch(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("heat2d_ranks_" + std::to_string(getpid())) / name;
  fs::create_directories(d);
  return d;
}

// A hang fails the test (timeout's 124) instead of blocking the suite.
const std::string limit = "timeout 120 ";

/// The launcher (its environment included: one OpenMP thread, NVLink multicast off) with N ranks.
std::string launch(int ranks) { return limit + TALLY_TEST_MPIEXEC + " " + std::to_string(ranks) + " "; }
std::string plain() { return limit + "env OMP_NUM_THREADS=1 "; }

struct Output {
  int rc = -1;
  std::string text;
  std::vector<unsigned char> field;  // the dataset's bytes
  std::vector<std::int64_t> iteration;
  std::vector<double> residual;
  std::string status;
  std::int64_t ranks = 0, ny = 0;
  std::size_t phases = 0;
  std::string writer;            // /ranks@writer
  std::vector<double> analytic;  // /errors@analytic_max, analytic_l2 (when the problem has them)
  std::vector<std::int64_t> row_begin, row_end;
};

Output run(const std::string& launcher, const std::string& args, const fs::path& out) {
  Output o;
  o.rc = run_command(launcher + HEAT2D_EXE + " --quiet " + args + " --out " + out.string() + " 2>&1", &o.text);
  if (o.rc != 0 || !fs::exists(out)) return o;
  auto f = tally::h5::File::open(out.string());
  if (f.read_attr_string("precision") == "float") {
    const auto v = f.read<float>("field");
    o.field.resize(v.size() * sizeof(float));
    std::memcpy(o.field.data(), v.data(), o.field.size());
  } else {
    const auto v = f.read<double>("field");
    o.field.resize(v.size() * sizeof(double));
    std::memcpy(o.field.data(), v.data(), o.field.size());
  }
  o.iteration = f.read<std::int64_t>("residual/iteration");
  o.residual = f.read<double>("residual/value");
  o.status = f.read_attr_string("status");
  if (const auto e = f.open_group("errors"); e.has_attr("analytic_max"))
    o.analytic = {e.read_attr<double>("analytic_max"), e.read_attr<double>("analytic_l2")};
  o.ny = f.read_attr<std::int64_t>("ny");
  const auto g = f.open_group("ranks");
  const tally::RanksReport rr = tally::read_ranks_report(f);
  o.ranks = rr.ranks;
  o.phases = rr.phases.size();
  o.writer = rr.writer;
  o.row_begin = g.read<std::int64_t>("row_begin");
  o.row_end = g.read<std::int64_t>("row_end");
  return o;
}

}  // namespace

TEST_CASE("heat2d on 1, 2 and 3 ranks writes the single-process run's field and residuals bit for bit",
          "[heat2d][ranks]") {
  auto g = tally::test::rng(15);
  const std::string bc =
      " --bc-left " + random_value(g) + " --bc-right " + random_value(g) + " --bc-bottom " + random_value(g);
  // 29 rows: 27 interior rows (2 ranks do not divide them); 64: 62 (3 ranks do not).
  std::vector<std::string> cases = {
      "--nx 37 --ny 29 --tol 1e-7" + bc,                                                   // steady, converges
      "--nx 37 --ny 29 --tol 1e-12 --max-iter 60 --check-every 7 --precision float" + bc,  // max-iter, float
      "--nx 64 --ny 64 --tol 1e-6 --check-every 3" + bc,                                   // steady, converges
      "--nx 64 --mode transient --init sin --bc-top 0 --t-end 0.01 --check-every 5 --precision float",  // t-end
      "--nx 64 --ny 31 --mode transient --init " + random_value(g) + " --tol 1e-5" + bc,                // to steady
      "--nx 40 --ny 6 --tol 1e-9" + bc,  // 4 interior rows: blocks of 1 and 2 rows (nothing between the boundary rows)
      "--nx 33 --ny 47 --tol 1e-6",      // the steady analytic case (sin on top): its errors bit for bit too
      "--nx 130 --ny 97 --max-iter 40 --check-every 9 --init " + random_value(g) + bc,  // > 64 KiB: chunked, compressed
  };
  if (backend == "cuda") cases.push_back("--nx 64 --ny 29 --tol 1e-7 --check-every 2 --cuda-kernel async" + bc);
  const fs::path dir = scratch(backend + "_same");
  for (const auto& c : cases) {
    const std::string args = "--backend " + backend + " " + c;
    INFO("heat2d " << args);
    const Output ref = run(plain(), args, dir / "one.h5");
    INFO(ref.text);
    REQUIRE(ref.rc == 0);
    REQUIRE(ref.ranks == 1);
    REQUIRE(!ref.residual.empty());
    REQUIRE(!ref.field.empty());
    if (c.find("--bc-top 0") != std::string::npos || c.find("--bc-") == std::string::npos)
      REQUIRE(ref.analytic.size() == 2);
    for (int n : {1, 2, 3}) {
      const fs::path out = dir / ("n" + std::to_string(n) + ".h5");
      const Output o = run(launch(n), args, out);
      INFO(n << " ranks: " << o.text);
      REQUIRE(o.rc == 0);
      CHECK(o.ranks == n);
      CHECK(o.phases >= 5);  // setup, h2d, solve, per_sweep, d2h, total
      CHECK(o.status == ref.status);
      CHECK(o.iteration == ref.iteration);
      CHECK(same_bits(o.residual, ref.residual));
      CHECK(same_bits(o.analytic, ref.analytic));  // rows' parts added in row order: one rank's bits
      CHECK(o.field == ref.field);
      // Several ranks write the field with parallel HDF5 where the build has it, else rank 0 alone.
      CHECK(o.writer == (n == 1                        ? tally::writer_one_rank
                         : tally::h5::parallel_built() ? tally::writer_parallel_hdf5
                                                       : tally::writer_gathered));
      // The row blocks cover the interior rows 1..ny-2 in order, each rank at least one.
      REQUIRE(o.row_begin.size() == static_cast<std::size_t>(n));
      REQUIRE(o.row_end.size() == static_cast<std::size_t>(n));
      CHECK(o.row_begin.front() == 1);
      for (int r = 0; r < n; ++r) {
        CHECK(o.row_end[r] > o.row_begin[r]);
        if (r > 0) CHECK(o.row_begin[r] == o.row_end[r - 1]);
      }
      CHECK(o.row_end.back() == o.ny - 1);
      fs::remove(out);
    }
    fs::remove(dir / "one.h5");
  }
  fs::remove_all(dir.parent_path());
}

#ifdef HEAT2D_RANKS_BAD_INPUT
namespace {

/// Runs `ranks` ranks, each reporting its own exit code; returns how many exited with `code`.
int ranks_exiting(const std::string& cmd_args, int ranks, int code, std::string& text) {
  const std::string each = "sh -c '" + std::string(HEAT2D_EXE) + " --quiet " + cmd_args + "; echo rank-exit=$?'";
  (void)run_command(launch(ranks) + each + " 2>&1", &text);
  int n = 0;
  for (std::size_t at = 0; (at = text.find("rank-exit=" + std::to_string(code) + "\n", at)) != std::string::npos; ++at)
    ++n;
  return n;
}

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (std::size_t at = 0; (at = text.find(what, at)) != std::string::npos; ++at) ++n;
  return n;
}

}  // namespace

TEST_CASE("heat2d on several ranks refuses bad input on every rank and writes nothing", "[heat2d][ranks][cli]") {
  const fs::path dir = scratch("bad");
  const std::string out = (dir / "x.h5").string();
  std::string text;

  // More ranks than interior rows: --ny 4 has 2.
  CHECK(ranks_exiting("--backend cpu --nx 16 --ny 4 --out " + out, 3, 2, text) == 3);
  INFO(text);
  CHECK(count(text, "interior rows") == 1);  // rank 0 alone says it
  CHECK(fs::is_empty(dir));

  // Options that differ between ranks (a launcher's several programs): refused, rank 0 names rank 1.
  const std::string two = std::string(HEAT2D_EXE) + " --quiet --backend cpu --out " + out;
  int rc = run_command(launch(1) + two + " --nx 33 : -n 1 " + two + " --nx 35 2>&1", &text);
  INFO(text);
  CHECK(rc == 2);
  CHECK(count(text, "differs between ranks") == 1);  // rank 0 alone says it
  CHECK(text.find("rank 1") != std::string::npos);
  CHECK(fs::is_empty(dir));

  // The same command line, different config files: the options as read are compared, not argv.
  const fs::path conf = scratch("conf");
  std::ofstream(conf / "a.ini") << "nx=40\n";
  std::ofstream(conf / "b.ini") << "nx=41\n";
  rc = run_command(launch(1) + two + " --config " + (conf / "a.ini").string() + " : -n 1 " + two + " --config " +
                       (conf / "b.ini").string() + " 2>&1",
                   &text);
  INFO(text);
  CHECK(rc == 2);
  CHECK(count(text, "differs between ranks") == 1);
  CHECK(fs::is_empty(dir));

  // A bad option on one rank only: every rank stops (no rank waits for it), nothing written.
  rc = run_command(launch(1) + two + " --nx 33 : -n 1 " + two + " --nx 33x 2>&1", &text);
  INFO(text);
  CHECK(rc == 2);
  CHECK(fs::is_empty(dir));

  // A pass deeper than the smallest block (18 interior rows on 3 ranks: 6 each) has no halo to read.
  CHECK(ranks_exiting("--backend cpu --nx 16 --ny 20 --check-every 14 --sweeps-per-pass 7 --out " + out, 3, 2, text) ==
        3);
  CHECK(count(text, "smallest block has 6 rows") == 1);
  CHECK(fs::is_empty(dir));

  // A bad value on every rank: exit 2 everywhere.
  CHECK(ranks_exiting("--backend cpu --tol -1 --out " + out, 2, 2, text) == 2);
  CHECK(fs::is_empty(dir));

  // A rank that dies mid-run (killed after a second of a long run): the job ends, no rank hangs
  // (timeout's 124), the exit is non-zero and nothing is left: the file is created after the gather.
  const std::string victim =
      "sh -c '" + std::string(HEAT2D_EXE) + " --quiet --backend cpu --nx 200 --tol 1e-15 --out " + out +
      " & p=$!; if [ \"${OMPI_COMM_WORLD_RANK:-$PMI_RANK}\" = 1 ]; then sleep 1; kill -9 $p; fi; wait $p'";
  rc = run_command(launch(2) + victim + " 2>&1", &text);
  INFO(text);
  CHECK(rc != 0);
  CHECK(rc != 124);
  CHECK(fs::is_empty(dir));

  if (tally::cuda_device_count() == 0) {
    CHECK(ranks_exiting("--backend cuda --out " + out, 2, 2, text) == 2);
    CHECK(count(text, "error") == 1);
    CHECK(fs::is_empty(dir));
  }
  fs::remove_all(dir.parent_path());
}
#endif
