// The heat2d executable: bad input exits 2 and writes nothing; a run writes the documented HDF5
// layout, one JSON line, the XDMF sidecar; a diverged run exits 1 and its file says so.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "catch.hpp"
#include "heat2d_test_support.hpp"
#include "tally/common/device_info.hpp"
#include "tally/common/h5.hpp"
#include "tally/reduce/backend.hpp"

namespace fs = std::filesystem;
using heat2d_test::run_command;

namespace {

fs::path scratch() {
  const fs::path d = fs::temp_directory_path() / ("heat2d_cli_" + std::to_string(getpid()));
  fs::create_directories(d);
  return d;
}

std::string exe() { return HEAT2D_EXE; }

bool dir_is_empty(const fs::path& d) { return fs::is_empty(d); }

}  // namespace

TEST_CASE("heat2d refuses bad input with exit code 2 and writes nothing", "[heat2d][cli]") {
  const fs::path dir = scratch() / "bad";
  fs::create_directories(dir);
  const std::string out = (dir / "x.h5").string();
  const std::vector<std::string> bad = {
      "--nx 2",
      "--nx 16 --ny 1",
      "--tol 0",
      "--tol -1e-6",
      "--mode transient --dt 1",
      "--mode transient --nx 65 --dt 7e-5",  // r = 0.2867 > 1/4
      "--bc-top foo",
      "--bc-left 1x",
      "--init sine",
      "--check-every 0",
      "--max-iter 0",
      "--mode bogus",
      "--precision half",
      "--no-such-option",
      "--backend cpu --nx 1000000 --ny 60000",  // 6e10 points: more than the host's memory
      "--check-every 10 --sweeps-per-pass 4",   // no pass ends at sweep 10
      "--sweeps-per-pass 2",                    // --check-every 1
      "--check-every 16 --sweeps-per-pass 9",   // deeper than any pass
      "--check-every 16 --sweeps-per-pass 0",
      "--check-every 16 --sweeps-per-pass two",
  };
  for (const auto& args : bad) {
    INFO("heat2d " << args);
    std::string text;
    const int rc = run_command(exe() + " --quiet " + args + " --out " + out + " 2>&1", &text);
    INFO(text);
    CHECK(rc == 2);
    CHECK(text.find("error") != std::string::npos);
    CHECK(dir_is_empty(dir));  // neither the file nor its temporary
  }
  if (tally::cuda_device_count() == 0) {
    const int rc = run_command(exe() + " --quiet --backend cuda --out " + out + " 2>/dev/null");
    CHECK(rc == 2);
    CHECK(dir_is_empty(dir));
  }
  fs::remove_all(dir.parent_path());
}

TEST_CASE("heat2d numeric options name the option, the allowed values and the value given", "[heat2d][cli]") {
  const fs::path dir = scratch() / "numeric";
  fs::create_directories(dir);
  const std::string out = (dir / "x.h5").string();
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--nx 2", "--nx: must be an integer >= 3 (got 2)"},
      {"--ny 0", "--ny: must be an integer >= 3 (got 0)"},
      {"--tol -1", "--tol: must be a number > 0 (got -1)"},
      {"--tol abc", "--tol: must be a number > 0 (got abc)"},
      {"--max-iter 0", "--max-iter: must be a positive integer (got 0)"},
      {"--check-every 1.5", "--check-every: must be a positive integer (got 1.5)"},
      {"--alpha 0", "--alpha: must be a number > 0 (got 0)"},
      {"--dt -1e-3", "--dt: must be a number >= 0 (got -1e-3)"},
      {"--t-end nan", "--t-end: must be a number >= 0 (got nan)"},
      {"--bench --bench-sizes 64,2", "--bench-sizes: must be an integer >= 3 (got 2)"},
      {"--device -1", "--device: must be a non-negative integer (got -1)"},
  };
  for (const auto& [args, message] : cases) {
    INFO("heat2d " << args);
    std::string text;
    const int rc = run_command(exe() + " --quiet --backend cpu " + args + " --out " + out + " 2>&1", &text);
    INFO(text);
    CHECK(rc == 2);
    CHECK(text.find("heat2d: error: " + message + "\n") != std::string::npos);
    CHECK(dir_is_empty(dir));
  }
  fs::remove_all(dir.parent_path());
}

TEST_CASE("heat2d writes the documented HDF5 layout and one JSON line", "[heat2d][cli]") {
  const fs::path dir = scratch() / "good";
  fs::create_directories(dir);
  const std::string out = (dir / "run.h5").string();
  std::string text;
  const int rc =
      run_command(exe() + " --backend cpu --nx 33 --ny 29 --tol 1e-8 --check-every 4 --validate --xdmf --json --out " +
                      out + " 2>/dev/null",
                  &text);
  REQUIRE(rc == 0);
  // Exactly one line, a JSON object.
  REQUIRE(!text.empty());
  CHECK(text.find('\n') == text.size() - 1);
  CHECK(text.rfind("{\"app\":\"heat2d\"", 0) == 0);
  CHECK(text.find("\"status\":\"converged\"") != std::string::npos);

  auto f = tally::h5::File::open(out);
  CHECK(f.read_attr_string("app") == "heat2d");
  CHECK(f.read_attr<std::int64_t>("nx") == 33);
  CHECK(f.read_attr<std::int64_t>("ny") == 29);
  CHECK(f.read_attr_string("mode") == "steady");
  CHECK(f.read_attr_string("precision") == "double");
  CHECK(f.read_attr_string("backend") == "cpu");
  CHECK(f.read_attr_string("status") == "converged");
  CHECK(f.read_attr<bool>("converged"));
  CHECK(f.read_attr<std::int64_t>("check_every") == 4);
  for (const char* a : {"h", "tol", "max_iter", "alpha", "dt", "t_end", "bc_top", "bc_bottom", "bc_left", "bc_right",
                        "init", "sim_time", "final_residual"})
    CHECK(f.has_attr(a));
  const auto iterations = f.read_attr<std::int64_t>("iterations");
  CHECK(iterations % 4 == 0);
  CHECK(f.read_attr<double>("final_residual") <= 1e-8);
  tally::h5::dims_t dims;
  const auto field = f.read<double>("field", &dims);
  CHECK(dims == tally::h5::dims_t{29, 33});
  CHECK(f.is_compressed("field") == (field.size() * sizeof(double) > tally::h5::compress_threshold_bytes));
  const auto it = f.read<std::int64_t>("residual/iteration");
  const auto val = f.read<double>("residual/value");
  CHECK(it.size() == val.size());
  CHECK(static_cast<std::int64_t>(it.size()) == iterations / 4);
  CHECK(it.back() == iterations);
  CHECK(val.back() == f.read_attr<double>("final_residual"));
  const auto errors = f.open_group("errors");
  CHECK(errors.read_attr<double>("analytic_max") > 0);
  CHECK(errors.read_attr<double>("analytic_max") < 1e-3);
  CHECK(errors.has_attr("analytic_l2"));
  CHECK(errors.read_attr<double>("eigen_max_abs_diff") <= errors.read_attr<double>("eigen_tolerance"));
  const auto timings = f.open_group("timings");
  for (const char* a : {"setup", "h2d", "solve", "per_sweep", "d2h", "write", "total"}) CHECK(timings.has_attr(a));
  const auto thr = f.open_group("throughput");
  CHECK(thr.read_attr<double>("points_per_s") > 0);
  CHECK(thr.read_attr<double>("gb_per_s") > 0);
  CHECK(f.has("provenance"));
  CHECK(f.read_attr<std::int64_t>("sweeps_per_pass") ==
        tally::heat2d::resolve_sweeps_per_pass(0, 4, tally::reduce::Backend::cpu));  // auto
  // Four sweeps a pass: the same file's field and residual history, bit for bit.
  const std::string out4 = (dir / "run4.h5").string();
  REQUIRE(run_command(exe() +
                      " --backend cpu --nx 33 --ny 29 --tol 1e-8 --check-every 4 --sweeps-per-pass 4 --quiet --out " +
                      out4 + " 2>/dev/null") == 0);
  {
    auto f4 = tally::h5::File::open(out4);
    CHECK(f4.read_attr<std::int64_t>("sweeps_per_pass") == 4);
    CHECK(f4.read_attr<std::int64_t>("iterations") == iterations);
    const auto field4 = f4.read<double>("field");
    CHECK((field4.size() == field.size() &&
           std::memcmp(field4.data(), field.data(), field.size() * sizeof(double)) == 0));
    CHECK(f4.read<std::int64_t>("residual/iteration") == f.read<std::int64_t>("residual/iteration"));
    CHECK(heat2d_test::same_bits(f4.read<double>("residual/value"), f.read<double>("residual/value")));
  }

  std::ifstream xmf(dir / "run.xmf");
  REQUIRE(xmf.good());
  const std::string x((std::istreambuf_iterator<char>(xmf)), std::istreambuf_iterator<char>());
  CHECK(x.find("run.h5:/field") != std::string::npos);
  CHECK(x.find("Dimensions=\"29 33\"") != std::string::npos);
  fs::remove_all(dir.parent_path());
}

TEST_CASE("heat2d reports a diverged run: exit 1, status diverged", "[heat2d][cli]") {
  const fs::path dir = scratch() / "nan";
  fs::create_directories(dir);
  const std::string out = (dir / "nan.h5").string();
  std::string text;
  const int rc = run_command(exe() + " --backend cpu --quiet --nx 17 --init nan --out " + out + " 2>&1", &text);
  INFO(text);
  CHECK(rc == 1);
  CHECK(text.find("diverged") != std::string::npos);
  auto f = tally::h5::File::open(out);
  CHECK(f.read_attr_string("status") == "diverged");
  CHECK_FALSE(f.read_attr<bool>("converged"));
  CHECK(f.read_attr<std::int64_t>("iterations") == 1);
  fs::remove_all(dir.parent_path());
}

TEST_CASE("heat2d transient run to t-end states the simulated time", "[heat2d][cli]") {
  const fs::path dir = scratch() / "tr";
  fs::create_directories(dir);
  const std::string out = (dir / "tr.h5").string();
  std::string text;
  const int rc =
      run_command(exe() + " --backend cpu --mode transient --nx 21 --bc-top 0 --init sin --t-end 0.01 --out " + out +
                      " 2>/dev/null",
                  &text);
  REQUIRE(rc == 0);
  CHECK(text.find("reached t = 0.01") != std::string::npos);
  auto f = tally::h5::File::open(out);
  CHECK(f.read_attr_string("status") == "t-end");
  CHECK(f.read_attr<double>("sim_time") == Catch::Approx(0.01).epsilon(1e-12));
  CHECK(f.read_attr<double>("r") <= 0.25);
  CHECK(f.open_group("errors").read_attr<double>("analytic_max") < 1e-3);
  fs::remove_all(dir.parent_path());
}
