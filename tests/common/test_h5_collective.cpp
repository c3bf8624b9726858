// h5::File's collective writing (parallel HDF5) under 1, 2 and 3 ranks: every rank writes its rows
// (uneven splits, a rank with none), rank 0 finishes the file; the datasets read back bit for bit
// equal to the whole array and to one writer's file (chunked and compressed alike). Without parallel
// HDF5: create_collective refuses, and write_rows still writes a serial file's rows.
#include <unistd.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "catch.hpp"
#include "rank_support.hpp"
#include "tally/common/error.hpp"
#include "tally/common/h5.hpp"
#include "tally/ranks/split.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
using namespace tally;

namespace {

/// Random values with every rank's generator in step (rank 0's seed): NaN, -0 and infinities too.
template <class T>
std::vector<T> random_field(std::uint64_t n, std::uint64_t salt) {
  auto g = test::rng(salt);
  std::uniform_real_distribution<T> u(-10, 10);
  std::vector<T> v(n);
  for (auto& x : v) x = u(g);
  const T special[] = {std::numeric_limits<T>::quiet_NaN(), T(-0.0), std::numeric_limits<T>::infinity(),
                       -std::numeric_limits<T>::infinity(), std::numeric_limits<T>::denorm_min()};
  for (std::uint64_t k = 0; k < n && k < 5; ++k) v[g() % n] = special[k];
  return v;
}

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

/// The folder every rank uses (rank 0's pid).
std::string shared_dir(const ranks::Comm& comm, const std::string& tag) {
  std::int64_t pid = getpid();
  comm.broadcast(std::span<std::int64_t>(&pid, 1));
  const fs::path d = fs::temp_directory_path() / ("tally_h5_collective_" + tag + "_" + std::to_string(pid));
  if (comm.is_root()) fs::create_directories(d);
  comm.barrier();
  return d.string();
}

template <class T>
void check_rows(std::uint64_t ny, std::uint64_t nx, std::uint64_t salt) {
  const ranks::Comm& comm = test::world();
  INFO(comm.size() << " ranks, " << ny << " x " << nx << (sizeof(T) == 4 ? " float" : " double"));
  const std::vector<T> whole = random_field<T>(ny * nx, salt);
  const ranks::Range mine = ranks::split_range(static_cast<std::int64_t>(ny), comm.size(), comm.rank());
  const std::span<const T> rows(whole.data() + mine.begin * nx, static_cast<std::size_t>(mine.size()) * nx);
  const std::string dir = shared_dir(comm, std::to_string(ny) + "x" + std::to_string(nx));
  const std::string out = dir + "/parallel.h5", one = dir + "/one.h5";

  auto f = h5::File::create_collective(out, {comm.mpi_handle(), comm.rank(), comm.size()});
  CHECK_FALSE(fs::exists(out));  // only the temporary name until rank 0 commits
  f.write_rows<T>("field", rows, {ny, nx}, static_cast<std::uint64_t>(mine.begin));
  f.close_collective();
  comm.agree(nullptr);
  if (comm.is_root()) {
    auto g = f.reopen();
    g.attr("written_by", static_cast<std::int32_t>(comm.size()));
    g.commit();
    auto s = h5::File::create(one);  // one writer, the same data
    s.write<T>("field", whole, {ny, nx});
    s.commit();
  } else {
    f.abandon();
  }
  comm.barrier();
  // Every rank reads the finished file back.
  const auto p = h5::File::open(out);
  h5::dims_t dims;
  CHECK(same_bits(p.read<T>("field", &dims), whole));
  CHECK(dims == h5::dims_t{ny, nx});
  CHECK(p.read_attr<std::int32_t>("written_by") == comm.size());
  const auto s = h5::File::open(one);
  CHECK(same_bits(p.read<T>("field"), s.read<T>("field")));
  CHECK(p.is_compressed("field") == s.is_compressed("field"));
  CHECK(p.is_compressed("field") == (ny * nx * sizeof(T) > h5::compress_threshold_bytes));
  comm.barrier();
  if (comm.is_root()) {
    std::size_t files = 0;
    for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++files;
    CHECK(files == 2);  // no temporary left
    fs::remove_all(dir);
  }
}

}  // namespace

TEST_CASE("h5 collective: every rank's rows land bit for bit, as one writer's file", "[h5][ranks]") {
  if (!h5::parallel_built()) {
    SUCCEED("no parallel HDF5 in this build (the refusal is tested below)");
    return;
  }
  if (test::world().mpi_handle() < 0) {  // started without the launcher: no MPI
    CHECK_THROWS_AS(h5::File::create_collective("x.h5", {-1, 0, 1}), std::invalid_argument);
    return;
  }
  const int n = test::world().size();
  check_rows<double>(7, 5, 1);                                              // small: contiguous
  check_rows<float>(static_cast<std::uint64_t>(2 * n + 1), 3, 2);           // rows the ranks do not divide
  check_rows<double>(static_cast<std::uint64_t>(n > 1 ? n - 1 : 1), 4, 3);  // a rank without rows
  check_rows<double>(301, 517, 4);  // > 1 MiB: several chunks, compressed, chunk rows across ranks
  check_rows<float>(123, 257, 5);   // compressed, one chunk shared by every rank
}

TEST_CASE("h5 collective: refused without parallel HDF5; write_rows on one writer's file", "[h5][ranks]") {
  const ranks::Comm& comm = test::world();
  const std::string dir = shared_dir(comm, "serial");
  if (!h5::parallel_built()) {
    CHECK_THROWS_AS(h5::File::create_collective(dir + "/x.h5", {comm.mpi_handle(), comm.rank(), comm.size()}), Error);
  }
  if (comm.is_root()) {
    const std::vector<double> whole = random_field<double>(6 * 4, 6);
    {
      auto f = h5::File::create(dir + "/rows.h5");
      f.write_rows<double>("a/field", whole, {6, 4}, 0);
      CHECK_THROWS_AS(f.write_rows<double>("b", std::span<const double>(whole.data(), 5), {6, 4}, 0),
                      Error);                                               // not whole rows
      CHECK_THROWS_AS(f.write_rows<double>("c", whole, {6, 4}, 1), Error);  // past the end
      CHECK_THROWS_AS(f.close_collective(), Error);                         // not a collective file
      f.commit();
    }
    CHECK(same_bits(h5::File::open(dir + "/rows.h5").read<double>("a/field"), whole));
    fs::remove_all(dir);
  }
  comm.barrier();
}
