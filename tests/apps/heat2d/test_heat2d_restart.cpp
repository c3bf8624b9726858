// heat2d --restart: the executable run for N sweeps equals, bit for bit (/field, /residual), a run
// of N/2 sweeps continued with --restart to N (check intervals that do not divide N/2, steady and
// transient, to --max-iter and to --t-end), also when the one-process file is continued on 2 and 3
// ranks; bad restarts (missing file, not a heat2d solve, another grid, precision or problem) exit 2
// and write nothing. Built twice: HEAT2D_RESTART_BACKEND "cpu" (with the ranks and bad-input cases)
// and "cuda" (a GPU test).
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "catch.hpp"
#include "heat2d_test_support.hpp"
#include "tally/common/h5.hpp"
#include "tally_test_mpiexec.hpp"

namespace fs = std::filesystem;
using heat2d_test::random_value;
using heat2d_test::run_command;
using heat2d_test::same_bits;

namespace {

const std::string backend = HEAT2D_RESTART_BACKEND;

fs::path scratch(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("heat2d_restart_" + std::to_string(getpid())) / name;
  fs::create_directories(d);
  return d;
}

const std::string limit = "timeout 120 ";  // a hang fails the test instead of blocking the suite

struct Output {
  int rc = -1;
  std::string text;
  std::vector<unsigned char> field;  // the dataset's bytes
  std::vector<std::int64_t> iteration;
  std::vector<double> residual;
  std::string status;
  std::int64_t iterations = 0;
  double sim_time = 0;
};

Output run(const std::string& launcher, const std::string& args, const fs::path& out) {
  Output o;
  o.rc = run_command(
      limit + launcher + HEAT2D_EXE + " --quiet --backend " + backend + " " + args + " --out " + out.string() + " 2>&1",
      &o.text);
  if (o.rc != 0 || !fs::exists(out)) return o;
  auto f = tally::h5::File::open(out.string());
  auto bytes = [&](auto v) {
    o.field.resize(v.size() * sizeof(v[0]));
    std::memcpy(o.field.data(), v.data(), o.field.size());
  };
  if (f.read_attr_string("precision") == "float") bytes(f.read<float>("field"));
  else bytes(f.read<double>("field"));
  o.iteration = f.read<std::int64_t>("residual/iteration");
  o.residual = f.read<double>("residual/value");
  o.status = f.read_attr_string("status");
  o.iterations = f.read_attr<std::int64_t>("iterations");
  o.sim_time = f.read_attr<double>("sim_time");
  return o;
}

void check_same(const Output& a, const Output& b) {
  CHECK(a.status == b.status);
  CHECK(a.iterations == b.iterations);
  CHECK(a.iteration == b.iteration);
  CHECK(same_bits(a.residual, b.residual));
  CHECK(a.field == b.field);
  CHECK(a.sim_time == b.sim_time);
}

}  // namespace

TEST_CASE("heat2d: N sweeps equal N/2 sweeps and a --restart to N, bit for bit", "[heat2d][restart]") {
  auto g = tally::test::rng(41);
  const std::string grid = "--nx " + std::to_string(30 + g() % 30) + " --ny " + std::to_string(25 + g() % 30);
  const std::string bc =
      " --bc-left " + random_value(g) + " --bc-right " + random_value(g) + " --bc-bottom " + random_value(g);
  struct Case {
    std::string args;        // the problem
    std::string full, half;  // the stop of the whole run and of its first half
    bool ranks = true;       // also continued on 2 and 3 ranks (a few cases: each launch costs)
  };
  const std::vector<Case> cases = {
      // --tol 1e-300: never converges, so both parts run their sweeps.
      {grid + bc + " --tol 1e-300 --check-every 7", "--max-iter 1000", "--max-iter 500"},
      {grid + bc + " --tol 1e-300 --check-every 1 --precision float", "--max-iter 1000", "--max-iter 500", false},
      {grid + bc + " --tol 1e-300 --check-every 7 --mode transient --init " + random_value(g), "--max-iter 1000",
       "--max-iter 500"},
      // To --t-end (status t-end, sim_time continued), checks every 3.
      {grid + " --mode transient --init sin --bc-top 0 --t-end 0.05 --check-every 3", "", "--max-iter 77"},
      // Converges after the restart (the first half stopped at --max-iter).
      {grid + bc + " --tol 1e-6 --check-every 5", "", "--max-iter 101", false},
  };
  const fs::path dir = scratch(backend + "_same");
  for (const auto& c : cases) {
    INFO("heat2d " << c.args << ": " << c.full << " against " << c.half << " + --restart");
    const Output whole = run("", c.args + " " + c.full, dir / "whole.h5");
    INFO(whole.text);
    REQUIRE(whole.rc == 0);
    const Output half = run("", c.args + " " + c.half, dir / "half.h5");
    REQUIRE(half.rc == 0);
    REQUIRE(half.iterations < whole.iterations);
    const Output rest = run("", c.args + " " + c.full + " --restart " + (dir / "half.h5").string(), dir / "rest.h5");
    INFO(rest.text);
    REQUIRE(rest.rc == 0);
    check_same(rest, whole);
#if TALLY_TEST_HAS_MPI
    if (backend == "cpu" && c.ranks)
      for (int n : {2, 3}) {  // the one-process file continued on several ranks
        INFO(n << " ranks");
        const Output on_ranks =
            run(std::string(TALLY_TEST_MPIEXEC) + " " + std::to_string(n) + " ",
                c.args + " " + c.full + " --restart " + (dir / "half.h5").string(), dir / "ranks.h5");
        INFO(on_ranks.text);
        REQUIRE(on_ranks.rc == 0);
        check_same(on_ranks, whole);
      }
#endif
    // A chain of two restarts gives the same again (the middle one ending off the check schedule).
    if (half.iterations + 13 >= whole.iterations) continue;
    const Output third = run(
        "", c.args + " --max-iter " + std::to_string(half.iterations + 13) + " --restart " + (dir / "half.h5").string(),
        dir / "third.h5");
    REQUIRE(third.rc == 0);
    const Output chained =
        run("", c.args + " " + c.full + " --restart " + (dir / "third.h5").string(), dir / "chained.h5");
    REQUIRE(chained.rc == 0);
    check_same(chained, whole);
  }
  fs::remove_all(dir.parent_path());
}

TEST_CASE("heat2d --restart refuses what does not continue the run: exit 2, nothing written",
          "[heat2d][restart][cli]") {
  if (backend != "cpu") return;  // the checks come before any backend work
  const fs::path dir = scratch("bad");
  const fs::path in = dir / "in";
  const fs::path out = dir / "out";
  fs::create_directories(in);
  fs::create_directories(out);
  const std::string problem = "--nx 33 --ny 30 --tol 1e-300 --check-every 4";
  REQUIRE(run("", problem + " --max-iter 40", in / "half.h5").rc == 0);
  {
    auto f = tally::h5::File::create((in / "mcpi.h5").string());
    f.attr("app", "mcpi");
    f.commit();
  }
  std::ofstream(in / "text.h5") << "not an HDF5 file\n";
  REQUIRE(run_command(std::string(HEAT2D_EXE) + " --quiet --backend cpu --bench --bench-sizes 8 --out " +
                      (in / "bench.h5").string() + " >/dev/null 2>&1") == 0);
  const std::string half = (in / "half.h5").string();
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"--restart " + (in / "missing.h5").string() + " " + problem, "no such file"},
      {"--restart " + (in / "mcpi.h5").string() + " " + problem, "not a heat2d output"},
      {"--restart " + (in / "text.h5").string() + " " + problem, "--restart"},
      {"--restart " + (in / "bench.h5").string() + " " + problem, "--bench"},
      {"--restart " + half + " --nx 34 --ny 30 --tol 1e-300", "--nx 34"},
      {"--restart " + half + " --nx 33 --ny 31 --tol 1e-300", "--ny 31"},
      {"--restart " + half + " " + problem + " --precision float", "--precision float"},
      {"--restart " + half + " " + problem + " --mode transient", "--mode transient"},
      {"--restart " + half + " " + problem + " --bc-top 1", "--bc-top 1"},
      {"--restart " + half + " " + problem + " --init 0.5", "--init 0.5"},
      {"--restart " + half + " " + problem + " --max-iter 40", "40 sweeps already"},
      {"--restart " + half + " " + problem + " --bench", "--bench"},
  };
  for (const auto& [args, says] : bad) {
    INFO("heat2d " << args);
    const Output o = run("", args, out / "x.h5");
    INFO(o.text);
    CHECK(o.rc == 2);
    CHECK(o.text.find("error") != std::string::npos);
    CHECK(o.text.find(says) != std::string::npos);
    CHECK(fs::is_empty(out));  // neither the file nor its temporary
  }
  // A transient file with another dt (another --t-end fit) is another problem.
  REQUIRE(run("", "--nx 33 --mode transient --init sin --t-end 0.01 --max-iter 10", in / "tr.h5").rc == 0);
  const Output o =
      run("", "--nx 33 --mode transient --init sin --t-end 0.0101 --restart " + (in / "tr.h5").string(), out / "x.h5");
  INFO(o.text);
  CHECK(o.rc == 2);
  CHECK(o.text.find("--dt") != std::string::npos);
  CHECK(fs::is_empty(out));
  fs::remove_all(dir.parent_path());
}
