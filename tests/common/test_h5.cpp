// HDF5 writer/reader: round trip of every type, attributes, compression, temp-then-rename.
#include <algorithm>
#include <filesystem>
#include <random>
#include <string>
#include <system_error>
#include <unistd.h>

#include "catch.hpp"
#include "tally/common/error.hpp"
#include "tally/common/h5.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
using namespace tally;

namespace {
// This process's scratch directory, removed when it exits (ctest runs each case as a process: a
// directory per case was left in /tmp before).
struct ScratchDir {
  fs::path path = fs::temp_directory_path() / ("tally_test_h5_" + std::to_string(getpid()));
  ScratchDir() { fs::create_directories(path); }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};
std::string temp_dir() {
  static const ScratchDir d;
  return d.path.string();
}
}  // namespace

TEMPLATE_TEST_CASE("h5 datasets round trip", "[h5]", float, double, std::int32_t, std::int64_t, std::uint8_t,
                   std::uint32_t, std::uint64_t) {
  const std::string path = temp_dir() + "/roundtrip.h5";
  const std::size_t n = GENERATE(std::size_t{1}, std::size_t{37}, std::size_t{50000});  // the last is compressed
  const auto data = test::random_vector<TestType>(n, TestType(1), TestType(100), n);
  {
    auto f = h5::File::create(path);
    f.write<TestType>("a/b/data", data, {n});
    f.write<TestType>("matrix", data, {1, n});
    f.commit();
  }
  auto f = h5::File::open(path);
  h5::dims_t dims;
  CHECK(f.read<TestType>("a/b/data", &dims) == data);
  CHECK(dims == h5::dims_t{n});
  CHECK(f.read<TestType>("matrix", &dims) == data);
  CHECK(dims == h5::dims_t{1, n});
  CHECK(f.is_compressed("matrix") == (n * sizeof(TestType) > h5::compress_threshold_bytes));
  CHECK(f.has("a/b"));
  CHECK(f.has("/a/b/data"));  // absolute paths, as in --a file.h5:/A
  CHECK(f.read<TestType>("/matrix") == data);
  CHECK_FALSE(f.has("a/c/data"));
}

TEST_CASE("h5 attributes round trip", "[h5]") {
  const std::string path = temp_dir() + "/attrs.h5";
  {
    auto f = h5::File::create(path);
    f.attr("i32", std::int32_t{-7});
    f.attr("i64", std::int64_t{1} << 40);
    f.attr("u64", std::uint64_t{18446744073709551615ull});
    f.attr("f", 0.1f);
    f.attr("d", 2.5e-300);
    f.attr("flag", true);
    f.attr("s", "heat2d: converged");
    f.attr("empty", "");
    auto g = f.group("timings");
    g.attr("solve_s", 1.25);
    f.attr("i32", std::int32_t{8});  // overwrite
    f.commit();
  }
  auto f = h5::File::open(path);
  CHECK(f.read_attr<std::int32_t>("i32") == 8);
  CHECK(f.read_attr<std::int64_t>("i64") == (std::int64_t{1} << 40));
  CHECK(f.read_attr<std::uint64_t>("u64") == 18446744073709551615ull);
  CHECK(f.read_attr<float>("f") == 0.1f);
  CHECK(f.read_attr<double>("d") == 2.5e-300);
  CHECK(f.read_attr<bool>("flag"));
  CHECK(f.read_attr_string("s") == "heat2d: converged");
  CHECK(f.read_attr_string("empty").empty());
  CHECK(f.open_group("timings").read_attr<double>("solve_s") == 1.25);
  CHECK_THROWS_AS(f.read_attr<double>("missing"), InputError);
}

TEST_CASE("h5 file is written under a temporary name and renamed on commit", "[h5]") {
  const std::string path = temp_dir() + "/commit.h5";
  fs::remove(path);
  {
    auto f = h5::File::create(path);
    CHECK(fs::exists(f.temp_path()));
    CHECK_FALSE(fs::exists(path));
    f.attr("x", 1);
    f.commit();
    CHECK_FALSE(fs::exists(f.temp_path()));
  }
  CHECK(fs::exists(path));
}

TEST_CASE("h5 file abandoned without commit leaves nothing behind", "[h5]") {
  const std::string path = temp_dir() + "/abandoned.h5";
  fs::remove(path);
  std::string temp;
  try {
    auto f = h5::File::create(path);
    temp = f.temp_path();
    f.write<double>("x", std::vector<double>(10, 1.0));
    throw std::runtime_error("the run failed");
  } catch (const std::runtime_error&) {
  }
  CHECK_FALSE(temp.empty());
  CHECK_FALSE(fs::exists(temp));
  CHECK_FALSE(fs::exists(path));
}

TEST_CASE("h5 reports unwritable and missing paths as input errors", "[h5]") {
  CHECK_THROWS_AS(h5::File::create("/proc/tally_cannot_write_here/x.h5"), InputError);
  CHECK_THROWS_AS(h5::File::create(""), InputError);
  CHECK_THROWS_AS(h5::File::create(temp_dir()), InputError);  // a directory
  CHECK_THROWS_AS(h5::File::open(temp_dir() + "/does_not_exist.h5"), InputError);
  auto f = h5::File::create(temp_dir() + "/dims.h5");
  CHECK_THROWS_AS(f.write<double>("bad", std::vector<double>(6), {4, 2}), Error);
  CHECK_THROWS_AS(f.read<double>("nothing"), InputError);
}

TEST_CASE("h5 reads a block (hyperslab) of a dataset", "[h5]") {
  // A rows x cols matrix, large enough to be chunked and compressed; random blocks against the
  // naive slice of the whole matrix read back.
  const std::string path = temp_dir() + "/block.h5";
  const std::uint64_t rows = 37, cols = 1031;
  const auto data = test::random_vector<double>(rows * cols, -1.0, 1.0, 7);
  {
    auto f = h5::File::create(path);
    f.write<double>("m", data, {rows, cols});
    f.write<double>("v", data, {rows * cols});
    f.commit();
  }
  auto f = h5::File::open(path);
  REQUIRE(f.is_compressed("m"));
  auto rng = test::rng(8);
  for (int t = 0; t < 20; ++t) {
    const std::uint64_t r0 = rng() % rows, c0 = rng() % cols;
    const std::uint64_t nr = rng() % (rows - r0 + 1), nc = rng() % (cols - c0 + 1);  // empty blocks too
    CAPTURE(r0, c0, nr, nc);
    const auto got = f.read<double>("m", {r0, c0}, {nr, nc});
    REQUIRE(got.size() == nr * nc);
    for (std::uint64_t i = 0; i < nr; ++i)
      for (std::uint64_t j = 0; j < nc; ++j) REQUIRE(got[i * nc + j] == data[(r0 + i) * cols + c0 + j]);
  }
  // A 1-D block, and the whole matrix as a block.
  const auto v = f.read<double>("v", {100}, {5000});
  CHECK(std::equal(v.begin(), v.end(), data.begin() + 100));
  CHECK(f.read<double>("m", {0, 0}, {rows, cols}) == data);
  // Blocks outside the dataset, or with the wrong number of dimensions, name the dataset.
  CHECK_THROWS_AS(f.read<double>("m", {0, cols - 3}, {1, 4}), InputError);
  CHECK_THROWS_AS(f.read<double>("m", {rows + 1, 0}, {0, 1}), InputError);
  CHECK_THROWS_WITH(f.read<double>("m", {0}, {1}), tally::test::contains("'m'"));
  CHECK_THROWS_AS(f.read<double>("nothing", {0}, {1}), InputError);
}
