// matmul across ranks (K split): the real executable under the MPI launcher, on uneven splits.
// 1, 2 and 3 ranks give C within the tolerance of a long-double reference computed here and of the
// single-process C; one rank gives exactly the single-process C; a fixed rank count gives the same
// bits run to run; HDF5 inputs are read per slab; bad input and a rank failing mid-run end every rank
// with no file left.
#include <hdf5.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "app_ranks_support.hpp"
#include "catch.hpp"
#include "matmul.hpp"
#include "naive.hpp"
#include "tally/common/device_info.hpp"
#include "tally/common/h5.hpp"
#include "tally/common/ranks_report.hpp"
#include "test_support.hpp"

using namespace tally;
using tally::matmul::Shape;

namespace {

#ifdef MATMUL_TEST_GPU
const std::string backend = "cuda";
#else
const std::string backend = "cpu";
#endif

std::string matmul_cmd(const std::string& args, const std::string& out) {
  return std::string(MATMUL_EXE) + " --backend " + backend + " --quiet --repeats 1 --warmup 0 --write-c " + args +
         " --out " + out;
}

std::string shape_args(Shape s, const std::string& precision) {
  return "--m " + std::to_string(s.m) + " --n " + std::to_string(s.n) + " --k " + std::to_string(s.k) +
         " --precision " + precision;
}

template <class T>
std::vector<T> c_of(const std::string& path) {
  const auto f = h5::File::open(path);
  REQUIRE(f.read_attr_string("status") == "ok");
  return f.read<T>("C");
}

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

/// The generated inputs of the whole problem and their product in long double.
template <class T>
test::NaiveProduct reference(Shape s, std::uint64_t seed) {
  std::vector<T> a(static_cast<std::size_t>(s.m * s.k)), b(static_cast<std::size_t>(s.k * s.n));
  matmul::generate_host<T>(seed, 0, a);
  matmul::generate_host<T>(seed, 1, b);
  return test::naive_product<T>(a, b, s.m, s.n, s.k);
}

template <class T>
void check_ranks(Shape s, const std::string& level, const test::ScratchDir& dir) {
  const std::string precision = sizeof(T) == 4 ? "float" : "double";
  const std::uint64_t seed = test::seed();
  CAPTURE(s.str(), precision, level, seed);
  const std::string args = shape_args(s, precision) + " --level " + level + " --seed " + std::to_string(seed);
  const double tol = matmul::tolerance<T>(matmul::any_order(s.k));
  const auto ref = reference<T>(s, seed);
  REQUIRE(test::run_command(matmul_cmd(args, dir.file("single.h5"))).rc == 0);
  const auto c1 = c_of<T>(dir.file("single.h5"));
  CHECK(test::max_scaled_error<T>(c1, ref) <= tol);
  for (int ranks : {1, 2, 3}) {
    CAPTURE(ranks);
    const std::string out = dir.file("ranks" + std::to_string(ranks) + ".h5");
    const auto r = test::run_command(test::on_ranks(ranks, matmul_cmd(args, out)));
    INFO(r.output);
    REQUIRE(r.rc == 0);
    const auto c = c_of<T>(out);
    REQUIRE(c.size() == c1.size());
    CHECK(test::max_scaled_error<T>(c, ref) <= tol);
    // Both within tol of the exact product: within 2 tol of each other.
    test::NaiveProduct single{std::vector<long double>(c1.begin(), c1.end()), ref.abs};
    CHECK(test::max_scaled_error<T>(c, single) <= 2 * tol);
    if (ranks == 1) CHECK(same_bits(c, c1));  // one rank is the single-process program
    const auto f = h5::File::open(out);
    CHECK(f.open_group("ranks").read_attr<std::int32_t>("ranks") == ranks);
    const auto begin = f.read<std::int64_t>("ranks/part_begin"), end = f.read<std::int64_t>("ranks/part_end");
    REQUIRE(begin.size() == static_cast<std::size_t>(ranks));
    CHECK(begin.front() == 0);
    CHECK(end.back() == s.k);
    const RanksReport rr = read_ranks_report(f);
    CHECK(rr.ranks == ranks);
    bool level_phase = false;
    for (const auto& ph : rr.phases) {
      level_phase = level_phase || ph.name == "level_" + level;
      CHECK(ph.per_rank.size() == static_cast<std::size_t>(ranks));
      CHECK(ph.min <= ph.max);
    }
    CHECK(level_phase);
  }
  // A fixed rank count: the same bits run to run (partial Cs summed in rank order).
  const std::string again = dir.file("again.h5");
  REQUIRE(test::run_command(test::on_ranks(3, matmul_cmd(args, again))).rc == 0);
  CHECK(same_bits(c_of<T>(again), c_of<T>(dir.file("ranks3.h5"))));
}

}  // namespace

TEST_CASE("matmul with K split over 1, 2 and 3 ranks: C within tolerance, one rank exact, bitwise run to run",
          "[matmul][ranks]") {
  if (!test::have_mpi) {
    WARN("built without MPI: nothing to launch");
    return;
  }
  test::ScratchDir dir("matmul-ranks");
  check_ranks<float>({16, 16, 10007}, "gang", dir);
  check_ranks<double>({33, 17, 999}, "tiled", dir);
#ifndef MATMUL_TEST_GPU
  check_ranks<float>({33, 17, 999}, "vector", dir);
#else
  check_ranks<float>({64, 64, 1 << 16}, "gang", dir);  // the tensor-core Gram tile on each slab
#endif
}

#ifndef MATMUL_TEST_GPU
TEST_CASE("matmul on 3 ranks reads its slabs of HDF5 inputs", "[matmul][ranks]") {
  if (!test::have_mpi) return;
  test::ScratchDir dir("matmul-ranks-h5");
  const std::int64_t m = 9, k = 1001, n = 7;
  const auto a = test::random_vector<double>(static_cast<std::size_t>(m * k), -1.0, 1.0, 41);
  const auto b = test::random_vector<double>(static_cast<std::size_t>(k * n), -1.0, 1.0, 42);
  {
    auto f = h5::File::create(dir.file("in.h5"));
    f.write<double>("A", a, {static_cast<std::uint64_t>(m), static_cast<std::uint64_t>(k)});
    f.write<double>("B", b, {static_cast<std::uint64_t>(k), static_cast<std::uint64_t>(n)});
    f.commit();
  }
  const auto ref = test::naive_product<double>(a, b, m, n, k);
  const std::string in = dir.file("in.h5");
  for (const std::string level : {"worker", "gang"}) {
    const auto r = test::run_command(
        test::on_ranks(3, matmul_cmd("--precision double --level " + level + " --a " + in + ":/A --b " + in + ":/B",
                                     dir.file("out.h5"))));
    INFO(r.output);
    REQUIRE(r.rc == 0);
    CHECK(test::max_scaled_error<double>(c_of<double>(dir.file("out.h5")), ref) <=
          matmul::tolerance<double>(matmul::any_order(k)));
  }
}

TEST_CASE("matmul on several ranks: bad input and a failing rank end every rank, no file left", "[matmul][ranks]") {
  if (!test::have_mpi) return;
  test::ScratchDir dir("matmul-ranks-bad");
  const std::string out = dir.file("out.h5");
  auto expect_refused = [&](const std::string& command, const std::string& names) {
    const auto r = test::run_command(command);
    INFO(r.output);
    CHECK(r.rc == 2);
    CHECK(test::count_of(r.output, "matmul: error:") == 1);  // rank 0 alone reports
    CHECK(r.output.find(names) != std::string::npos);
    CHECK_FALSE(dir.any_starting_with("out.h5"));
  };
  // More ranks than K: refused (every rank needs a column of A).
  expect_refused(test::on_ranks(3, matmul_cmd("--m 4 --n 4 --k 2", out)), "--k");
  // Different options on different ranks.
  expect_refused(
      std::string(TALLY_TEST_MPIEXEC) + " 2 " + matmul_cmd("--k 100", out) + " : -n 1 " + matmul_cmd("--k 101", out),
      "differs between ranks");
  // --backend cuda where no rank has a usable GPU.
  if (tally::cuda_device_count() == 0)
    expect_refused(test::on_ranks(2, std::string(MATMUL_EXE) + " --backend cuda --out " + out), "--backend cuda");

  // A rank failing mid-run: B's last chunk made unreadable (its deflate stream zeroed), so the ranks
  // whose slab reaches it fail while reading their inputs and rank 0 waits in a collective. Every
  // rank must end non-zero within the timeout, and no file (not even a temporary one) is left.
  const std::int64_t m = 8, k = 20000, n = 16;  // B: 2.5 MB of doubles, chunked and compressed
  const auto a = test::random_vector<double>(static_cast<std::size_t>(m * k), -1.0, 1.0, 51);
  const auto b = test::random_vector<double>(static_cast<std::size_t>(k * n), -1.0, 1.0, 52);
  const std::string in = dir.file("in.h5");
  {
    auto f = h5::File::create(in);
    f.write<double>("A", a, {static_cast<std::uint64_t>(m), static_cast<std::uint64_t>(k)});
    f.write<double>("B", b, {static_cast<std::uint64_t>(k), static_cast<std::uint64_t>(n)});
    f.commit();
  }
  haddr_t addr = 0;
  hsize_t bytes = 0;
  {
    const hid_t file = H5Fopen(in.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    REQUIRE(file >= 0);
    const hid_t ds = H5Dopen2(file, "B", H5P_DEFAULT);
    REQUIRE(ds >= 0);
    const hsize_t last_row[2] = {static_cast<hsize_t>(k - 1), 0};
    unsigned mask = 0;
    REQUIRE(H5Dget_chunk_info_by_coord(ds, last_row, &mask, &addr, &bytes) >= 0);
    H5Dclose(ds);
    H5Fclose(file);
  }
  REQUIRE(bytes > 16);
  {
    std::fstream f(in, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(addr));
    const std::vector<char> zeros(16, '\0');
    f.write(zeros.data(), static_cast<std::streamsize>(zeros.size()));
  }
  const auto r = test::run_command(
      test::on_ranks(3, matmul_cmd("--precision double --level gang --a " + in + ":/A --b " + in + ":/B", out)), 60);
  INFO(r.output);
  CHECK(r.rc != 0);
  CHECK(r.rc != 124);                                          // not a hang ended by the timeout
  CHECK(r.output.find("matmul: rank ") != std::string::npos);  // the failing rank names itself
  CHECK_FALSE(dir.any_starting_with("out.h5"));
}
#endif
