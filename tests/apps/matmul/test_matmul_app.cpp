// The matmul executable: HDF5 input, --write-c, the output layout, and bad input (exit 2, nothing written).
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "catch.hpp"
#include "matmul.hpp"
#include "matmul_app_support.hpp"
#include "naive.hpp"
#include "tally/common/device_info.hpp"
#include "tally/common/h5.hpp"
#include "tally/reduce/backend.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
using tally::test::run_matmul;

namespace {

// A (m x k) as /A and B (k2 x n) as /B.
void write_inputs(const std::string& path, std::int64_t m, std::int64_t k, std::int64_t k2, std::int64_t n,
                  std::vector<double>& a, std::vector<double>& b) {
  a = tally::test::random_vector<double>(static_cast<std::size_t>(m * k), -1.0, 1.0, 31);
  b = tally::test::random_vector<double>(static_cast<std::size_t>(k2 * n), -1.0, 1.0, 32);
  auto f = tally::h5::File::create(path);
  f.write<double>("A", a, {static_cast<std::uint64_t>(m), static_cast<std::uint64_t>(k)});
  f.write<double>("B", b, {static_cast<std::uint64_t>(k2), static_cast<std::uint64_t>(n)});
  f.commit();
}

}  // namespace

TEST_CASE("matmul reads A and B from HDF5 and writes C and the documented layout", "[matmul][app]") {
  const tally::test::ScratchDir dir("matmul-app");
  std::vector<double> a, b;
  write_inputs(dir.file("in.h5"), 37, 211, 211, 19, a, b);
  const std::string out = dir.file("out.h5");
  const auto r = run_matmul("--backend cpu --precision double --a " + dir.file("in.h5") + ":/A --b " +
                            dir.file("in.h5") + ":/B --write-c --quiet --repeats 1 --out " + out);
  INFO(r.output);
  REQUIRE(r.rc == 0);
  const auto f = tally::h5::File::open(out);
  CHECK(f.read_attr_string("app") == "matmul");
  CHECK(f.read_attr_string("status") == "ok");
  CHECK(f.read_attr_string("backend") == "cpu");
  CHECK(f.read_attr_string("precision") == "double");
  CHECK(f.read_attr_string("timing") == "rounds");
  CHECK(f.read_attr_string("levels") == "vector,worker,worker+vector,gang,tiled,ozaki");
  CHECK(f.read_attr<std::int64_t>("m") == 37);
  CHECK(f.read_attr<std::int64_t>("n") == 19);
  CHECK(f.read_attr<std::int64_t>("k") == 211);
  for (const char* l : {"vector", "worker", "worker+vector", "gang", "tiled", "ozaki"}) {
    const auto g = f.open_group(std::string("levels/") + l);
    CHECK(g.read_attr<int>("passed") == 1);
    CHECK(g.read_attr<double>("rel_error") <= g.read_attr<double>("tolerance"));
    CHECK(g.read_attr<double>("gflops") > 0);
    // both within their tolerances of the reference: Eigen's, any order of K products
    CHECK(g.read_attr<double>("rel_diff_eigen") <=
          g.read_attr<double>("tolerance") + tally::matmul::tolerance<double>(tally::matmul::any_order(211)));
  }
  CHECK(f.has("eigen"));
  CHECK(f.has("timings"));
  CHECK(f.has("provenance"));
  tally::h5::dims_t dims;
  const auto c = f.read<double>("C", &dims);
  REQUIRE(dims == tally::h5::dims_t{37, 19});
  const auto ref = tally::test::naive_product<double>(a, b, 37, 19, 211);
  // C is the last level's (ozaki), whose promise at K = 211 is below any order's bound.
  CHECK(tally::test::max_scaled_error<double>(c, ref) <=
        tally::matmul::tolerance<double>(tally::matmul::any_order(211)));
}

TEST_CASE("matmul rejects bad input with exit code 2 and writes nothing", "[matmul][app][errors]") {
  const tally::test::ScratchDir dir("matmul-bad");
  std::vector<double> a, b;
  write_inputs(dir.file("bad.h5"), 8, 5, 6, 4, a, b);  // A is 8 x 5, B is 6 x 4
  const std::string in = dir.file("bad.h5"), out = dir.file("never.h5");
  auto rejects = [&](const std::string& args) {
    INFO("matmul " << args);
    const auto r = run_matmul(args + " --backend cpu --quiet --out " + out);
    INFO(r.output);
    CHECK(r.rc == 2);
    CHECK_FALSE(dir.any_starting_with("never.h5"));
  };
  rejects("--a " + in + ":/A --b " + in + ":/B");   // inner dimensions 5 vs 6
  rejects("--a " + in + ":/missing");               // no such dataset
  rejects("--a " + dir.file("absent.h5") + ":/A");  // no such file
  rejects("--a " + in);                             // no dataset named
  rejects("--a " + in + ":/A --k 7");               // --k disagrees with the file
  rejects("--b " + in + ":/B --k 5");               // B has 6 rows
  rejects("--level diagonal");                      // unknown level
  rejects("--level gang,tiled-tc");                 // the tensor-core level: CUDA only
  rejects("--m 0");                                 // empty matrix
  rejects("--repeats 0");
  rejects("--timing interleaved");                                 // rounds or sequential
  if (tally::cuda_device_count() == 0) rejects("--backend cuda");  // no GPU here
}

TEST_CASE("matmul numeric options name the option, the allowed values and the value given", "[matmul][app][errors]") {
  const tally::test::ScratchDir dir("matmul-numbers");
  const std::string out = dir.file("never.h5");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--m 0", "--m: must be a positive integer (got 0)"},
      {"--n -4", "--n: must be a positive integer (got -4)"},
      {"--k x", "--k: must be a positive integer (got x)"},
      {"--size 0", "--size: must be a positive integer (got 0)"},
      {"--repeats 0", "--repeats: must be an integer in [1, 1000] (got 0)"},
      {"--warmup 101", "--warmup: must be an integer in [0, 100] (got 101)"},
      {"--split-k 65536", "--split-k: must be an integer in [0, 65535] (got 65536)"},
      {"--seed -1", "--seed: must be a non-negative integer (got -1)"},
  };
  for (const auto& [args, message] : cases) {
    INFO("matmul " << args);
    const auto r = run_matmul(args + " --backend cpu --quiet --out " + out);
    INFO(r.output);
    CHECK(r.rc == 2);
    CHECK(r.output.find("matmul: error: " + message + "\n") != std::string::npos);
    CHECK_FALSE(fs::exists(out));
  }
}

TEST_CASE("a subset of levels given as a list runs only those levels", "[matmul][app]") {
  const tally::test::ScratchDir dir("matmul-subset");
  const std::string out = dir.file("one.h5");
  REQUIRE(run_matmul("--backend cpu --precision float --m 33 --n 17 --k 129 --level gang,tiled --quiet --no-eigen "
                     "--timing sequential "
                     "--repeats 3 --out " +
                     out)
              .rc == 0);
  const auto f = tally::h5::File::open(out);
  CHECK(f.read_attr_string("levels") == "gang,tiled");
  CHECK(f.read_attr_string("timing") == "sequential");
  for (const char* l : {"levels/gang", "levels/tiled"}) CHECK(f.open_group(l).read_attr<int>("passed") == 1);
  CHECK(f.has("levels/gang"));
  CHECK_FALSE(f.has("levels/vector"));
  CHECK_FALSE(f.has("eigen"));
}
