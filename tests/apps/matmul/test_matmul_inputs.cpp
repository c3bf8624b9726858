// Inputs a user can get wrong, through the matmul executable on the CPU: HDF5 datasets of a type
// matmul cannot multiply as stored (complex, strings, wide integers) are refused by name with exit 2
// and nothing written; NaN and infinities in A and B give IEEE's NaN and infinities in C at the
// places a long-double triple loop has them, and the check passes and says so.
#include <hdf5.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "catch.hpp"
#include "matmul.hpp"
#include "matmul_app_support.hpp"
#include "naive.hpp"
#include "ozaki/ozaki.hpp"
#include "tally/common/h5.hpp"
#include "test_support.hpp"

using tally::test::run_matmul;

namespace {

/// A rows x cols dataset `name` of HDF5 type `type` with `data` (rows * cols elements of it).
void write_raw(const std::string& path, const char* name, hid_t type, const void* data, hsize_t rows, hsize_t cols) {
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  REQUIRE(file >= 0);
  const hsize_t dims[2] = {rows, cols};
  const hid_t space = H5Screate_simple(2, dims, nullptr);
  const hid_t ds = H5Dcreate2(file, name, type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  REQUIRE(ds >= 0);
  REQUIRE(H5Dwrite(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) >= 0);
  H5Dclose(ds);
  H5Sclose(space);
  H5Fclose(file);
}

/// in.h5 with a 4 x 3 A of many types and a 3 x 2 double B.
std::string write_typed_inputs(const tally::test::ScratchDir& dir) {
  const std::string path = dir.file("types.h5");
  {
    auto f = tally::h5::File::create(path);
    f.write<double>("B", std::vector<double>{1, 2, 3, 4, 5, 6}, {3, 2});
    f.write<std::int64_t>("I64", std::vector<std::int64_t>(12, 3), {4, 3});
    f.write<std::int32_t>("I32", std::vector<std::int32_t>{1, -2, 3, -4, 5, -6, 7, -8, 9, -10, 11, -12}, {4, 3});
    f.write<std::uint8_t>("U8", std::vector<std::uint8_t>(12, 200), {4, 3});
    f.commit();
  }
  // Complex numbers as h5py and NumPy store them: a compound of two doubles, r and i.
  struct Complex {
    double r, i;
  };
  const std::vector<Complex> z(12, Complex{1.0, -1.0});
  const hid_t ct = H5Tcreate(H5T_COMPOUND, sizeof(Complex));
  H5Tinsert(ct, "r", HOFFSET(Complex, r), H5T_NATIVE_DOUBLE);
  H5Tinsert(ct, "i", HOFFSET(Complex, i), H5T_NATIVE_DOUBLE);
  write_raw(path, "Z", ct, z.data(), 4, 3);
  H5Tclose(ct);
  // Fixed-length strings of 4 bytes.
  const hid_t st = H5Tcopy(H5T_C_S1);
  H5Tset_size(st, 4);
  const std::string text(12 * 4, 'x');
  write_raw(path, "S", st, text.data(), 4, 3);
  H5Tclose(st);
  const std::vector<std::int16_t> i16{1, -2, 3, -4, 5, -6, 7, -8, 9, -10, 11, -12};
  write_raw(path, "I16", H5T_NATIVE_INT16, i16.data(), 4, 3);
  return path;
}

}  // namespace

TEST_CASE("matmul refuses datasets it cannot multiply as stored, naming the type and what it reads",
          "[matmul][app][errors]") {
  const tally::test::ScratchDir dir("matmul-types");
  const std::string in = write_typed_inputs(dir), out = dir.file("never.h5");
  struct Bad {
    std::string args, type;
  };
  const std::vector<Bad> bad = {
      {"--a " + in + ":/Z --b " + in + ":/B", "holds complex numbers (a compound of two 64-bit floats)"},
      {"--a " + in + ":/S --b " + in + ":/B", "holds strings"},
      {"--a " + in + ":/I64 --b " + in + ":/B", "holds 64-bit signed integers"},
      {"--a " + in + ":/I32 --b " + in + ":/B --precision float", "holds 32-bit signed integers"},  // float has 24 bits
      {"--b " + in + ":/Z --k 4", "holds complex numbers"},
  };
  for (const auto& [args, type] : bad) {
    INFO("matmul " << args);
    const auto r = run_matmul(args + " --backend cpu --quiet --out " + out);
    INFO(r.output);
    CHECK(r.rc == 2);
    CHECK(r.output.find(type) != std::string::npos);
    CHECK(r.output.find("matmul reads floating-point numbers") != std::string::npos);
    CHECK(r.output.find("HDF5: cannot") == std::string::npos);
    CHECK_FALSE(dir.any_starting_with("never.h5"));
  }
}

TEST_CASE("matmul reads integers its precision holds exactly and multiplies them exactly", "[matmul][app]") {
  const tally::test::ScratchDir dir("matmul-ints");
  const std::string in = write_typed_inputs(dir);
  // Integer products and sums of a few terms: exact in either precision, so every level gives them.
  for (const std::string a : {"I32 --precision double", "I16 --precision float", "U8 --precision float"}) {
    INFO("--a " << a);
    const std::string out = dir.file("ints.h5");
    const auto r = run_matmul("--a " + in + ":/" + a + " --b " + in +
                              ":/B --backend cpu --write-c --quiet --repeats 1 --out " + out);
    INFO(r.output);
    REQUIRE(r.rc == 0);
    const auto f = tally::h5::File::open(out), file = tally::h5::File::open(in);
    const auto av = file.read<double>(a.substr(0, a.find(' '))), bv = file.read<double>("B");
    const auto want = tally::test::naive_product<double>(av, bv, 4, 2, 3);
    const auto c = f.read<double>("C");
    REQUIRE(c.size() == want.c.size());
    for (std::size_t e = 0; e < c.size(); ++e) CHECK(c[e] == static_cast<double>(want.c[e]));
  }
}

namespace {

/// A (m x k) and B (k x n) uniform in [-1, 1], with NaN and infinities placed so that C has NaN rows
/// and columns, infinities of both signs and an Inf - Inf (see the comments).
template <class T>
void special_inputs(std::vector<T>& a, std::vector<T>& b, std::int64_t m, std::int64_t k, std::int64_t n) {
  a = tally::test::random_vector<T>(static_cast<std::size_t>(m * k), T(-1), T(1), 51);
  b = tally::test::random_vector<T>(static_cast<std::size_t>(k * n), T(-1), T(1), 52);
  const T inf = std::numeric_limits<T>::infinity(), nan = std::numeric_limits<T>::quiet_NaN();
  auto A = [&](std::int64_t i, std::int64_t q) -> T& { return a[static_cast<std::size_t>(i * k + q)]; };
  auto B = [&](std::int64_t q, std::int64_t j) -> T& { return b[static_cast<std::size_t>(q * n + j)]; };
  A(1, 3) = nan;                   // row 1 of C: NaN
  B(7, 2) = inf;                   // column 2: +-Inf by the sign of A(i, 7)
  A(2, 7) = 0;                     // ... and 0 x Inf = NaN in row 2
  B(9, 4) = -inf, B(11, 4) = inf;  // column 4: Inf - Inf where A(i, 9) and A(i, 11) have one sign
  A(3, 9) = 0.5, A(3, 11) = -0.5;  // ... and -Inf in row 3
  A(0, 9) = 0.5, A(0, 11) = 0.5;   // ... and NaN in row 0
}

template <class T>
void check_specials_through_the_app(const std::string& precision) {
  const tally::test::ScratchDir dir("matmul-nan-" + precision);
  constexpr std::int64_t m = 6, k = 40, n = 5;
  std::vector<T> a, b;
  special_inputs<T>(a, b, m, k, n);
  const auto oracle = tally::test::naive_product<T>(a, b, m, n, k);
  const auto [nan, inf] = tally::test::special_counts(oracle);
  REQUIRE(nan >= n + 2);  // row 1, C(2, 2), C(0, 4) and more
  REQUIRE(inf >= 2);
  const std::string in = dir.file("in.h5"), out = dir.file("out.h5");
  {
    auto f = tally::h5::File::create(in);
    f.write<T>("A", a, {m, k});
    f.write<T>("B", b, {k, n});
    f.commit();
  }
  const auto r = run_matmul("--a " + in + ":/A --b " + in + ":/B --precision " + precision +
                            " --backend cpu --write-c --repeats 1 --warmup 0 --out " + out);
  INFO(r.output);
  REQUIRE(r.rc == 0);
  CHECK(r.output.find("all within tolerance") != std::string::npos);
  CHECK(r.output.find("NaN at the " + std::to_string(nan) + " places the reference has NaN") != std::string::npos);
  CHECK(r.output.find("Inf of the same sign at the " + std::to_string(inf) + " places it has Inf") !=
        std::string::npos);
  const auto f = tally::h5::File::open(out);
  CHECK(f.read_attr_string("status") == "ok");
  CHECK(f.read_attr<std::int64_t>("reference_nan") == nan);
  CHECK(f.read_attr<std::int64_t>("reference_inf") == inf);
  for (const char* l : {"vector", "worker", "worker+vector", "gang", "tiled", "ozaki"}) {
    INFO("level " << l);
    const auto g = f.open_group(std::string("levels/") + l);
    CHECK(g.read_attr<int>("passed") == 1);
    CHECK(std::isfinite(g.read_attr<double>("rel_error")));
    CHECK_FALSE(g.has_attr("nan_extra"));
  }
  CHECK(f.open_group("eigen").read_attr<int>("passed") == 1);
  const auto c = f.read<T>("C");  // the last level's (ozaki: its exact dot products on Inf and NaN lines)
  CHECK(tally::test::ieee_mismatches<T>(c, oracle,
                                        tally::matmul::tolerance<T>(tally::matmul::ozaki::error_bound<T>(k))) == 0);
}

}  // namespace

TEST_CASE("NaN and infinities in A and B: C has IEEE's NaN and infinities where the reference has them, and passes",
          "[matmul][app][nan]") {
  check_specials_through_the_app<double>("double");
  check_specials_through_the_app<float>("float");
}
