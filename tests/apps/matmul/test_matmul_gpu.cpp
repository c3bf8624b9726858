// Every CUDA level (tiled-tc included) against a long-double triple loop on the CPU, on fresh random
// inputs: odd sizes (not multiples of any tile or vector width), rectangular and tall-skinny shapes,
// float and double; the device reference and cuBLAS against the same oracle; the gang and tiled-tc
// levels bit for bit across reruns.
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "catch.hpp"
#include "matmul.hpp"
#include "naive.hpp"
#include "tally/common/error.hpp"
#include "test_support.hpp"

using namespace tally::matmul;

namespace {

template <class T>
void check_shape(Shape s, std::uint64_t salt) {
  const auto a = tally::test::random_vector<T>(static_cast<std::size_t>(s.m * s.k), T(-1), T(1), salt);
  const auto b = tally::test::random_vector<T>(static_cast<std::size_t>(s.k * s.n), T(-1), T(1), salt + 1);
  const auto oracle = tally::test::naive_product<T>(a, b, s.m, s.n, s.k);
  auto engine = make_cuda_engine<T>(s, 0);
  engine->set_inputs(a, b);
  for (Level l : cuda_levels) {
    engine->run(l);  // C is NaN-poisoned before the run: unwritten elements fail
    const double tol = tolerance<T>(engine->error_bound(l));  // the order this run took
    const auto c = engine->c();
    const double err = tally::test::max_scaled_error<T>(c, oracle);
    INFO("level " << to_string(l) << ", " << s.str() << ", " << (sizeof(T) == 4 ? "float" : "double") << ": error "
                  << err << ", tolerance " << tol);
    CHECK(err <= tol);
  }
  REQUIRE(engine->run_vendor().has_value());
  {
    const auto c = engine->c();
    INFO("cuBLAS, " << s.str());
    CHECK(tally::test::max_scaled_error<T>(c, oracle) <= tolerance<T>(any_order(s.k)));
  }
  const Reference ref = engine->reference();
  for (std::size_t i = 0; i < ref.c.size(); ++i) {
    REQUIRE(std::fabs(static_cast<long double>(ref.c[i]) - oracle.c[i]) <= 1e-15L * oracle.abs[i]);
    REQUIRE(ref.abs[i] == Catch::Approx(static_cast<double>(oracle.abs[i])).epsilon(1e-12));
  }
}

const Shape shapes[] = {
    {37, 53, 1001},   // odd everything
    {257, 129, 515},  // just over the 128 tile
    {128, 256, 64},   // exact tiles, vector loads throughout
    {5, 300, 3},      // K below one slice (tiled-tc: K < 56, the CUDA-core tile)
    // tiled-tc (3xTF32 / DMMA, 128 x 128 block tiles): several tile rows and columns with C padded,
    // K ending inside a 32-deep slice, with 16-byte copies (K, N multiples of 4) and element-wise;
    // 9 tile rows: a partial group of the blocks' tile order. Float with K and N multiples of 4 on
    // sm_90 (200 x 136, 1100 x 300): the wgmma kernel, its tensor copies zero-filling C's padding and
    // the K tail (1100 x 300 x 200: 7 slices, the last chain one slice long).
    {200, 136, 2052},
    {129, 257, 3001},
    {1100, 300, 200},
    {130, 260, 84},           // float, sm_90: the wgmma kernel's shortest K (3 slices, a tail of 20)
    {16, 16, (1 << 18) + 3},  // tall-skinny, 16 x 16 tile (float: tensor cores), element-wise copies
    {16, 16, 1 << 18},        // the same with 16-byte copies
    {13, 9, (1 << 16) + 8},   // C padded inside the 16 x 16 tile, K ending inside a slice
    {10, 14, (1 << 16) + 6},  // double on sm_90 (K, N even): the TMA-fed DMMA 16 x 16 tile, C padded
    {30, 17, 40000},          // tall-skinny, 32 x 32 tile
    // Tall-skinny with 32 < max(M, N) <= 64: the gang level's tensor-core path (3xTF32 / DMMA) on sm_80+;
    // in float on sm_90, K and N multiples of 4 ("16-byte copies") take the TMA-fed tile, whose tensor
    // bounds zero-fill C's padding, rows of A beyond M and the K tail.
    {64, 48, (1 << 16) + 1},   // odd K: element-wise copies, a one-element last split
    {33, 33, 100003},          // odd K and N: element-wise copies, C padded from 33 to 64
    {48, 40, (1 << 17) + 4},   // 16-byte copies, C padded, K ending inside a slice
    {36, 64, (1 << 16) + 12},  // 16-byte copies, rows of A beyond M, K ending inside a slice
    {64, 64, 1 << 16},         // exact tiles, 16-byte copies
    // 2 x 2 tiles of 64 x 64 split ~33 ways each on a GPU of 132 SMs: the split-K combine's two levels
    // (groups of 16 splits, the last group of one), four tiles' partials and tickets side by side.
    {100, 70, 40000},
};

}  // namespace

TEST_CASE("every CUDA level matches a long-double triple loop (float)", "[matmul][gpu]") {
  std::uint64_t salt = 100;
  for (const auto& s : shapes) check_shape<float>(s, salt += 2);
}

TEST_CASE("every CUDA level matches a long-double triple loop (double)", "[matmul][gpu]") {
  std::uint64_t salt = 200;
  for (const auto& s : shapes) check_shape<double>(s, salt += 2);
}

TEST_CASE("the device generator matches the host and every level reproduces data/matmul_expected.csv",
          "[matmul][gpu][expected]") {
  const auto cases = tally::test::read_expected(TALLY_MATMUL_DATA_DIR "/matmul_expected.csv");
  REQUIRE(cases.size() >= 4);
  auto check = [](const tally::test::ExpectedCase& ec, auto zero) {
    using T = decltype(zero);
    const Shape s{ec.m, ec.n, ec.k};
    std::vector<T> a(static_cast<std::size_t>(s.m * s.k)), b(static_cast<std::size_t>(s.k * s.n));
    generate_host<T>(ec.seed, 0, a);
    generate_host<T>(ec.seed, 1, b);
    auto engine = make_cuda_engine<T>(s, 0);
    engine->generate(ec.seed);
    CHECK(engine->a() == a);  // bit for bit: the same integer hash and the same roundings
    CHECK(engine->b() == b);
    const auto naive = tally::test::naive_product<T>(a, b, s.m, s.n, s.k);
    tally::test::NaiveProduct exact{{ec.c.begin(), ec.c.end()}, naive.abs};
    for (Level l : cuda_levels) {
      engine->run(l);
      const auto c = engine->c();
      INFO(ec.precision << " " << s.str() << " seed " << ec.seed << " level " << to_string(l));
      CHECK(tally::test::max_scaled_error<T>(c, exact) <= tolerance<T>(engine->error_bound(l)));
    }
  };
  for (const auto& ec : cases) {
    if (ec.precision == "float") check(ec, 0.0f);
    else check(ec, 0.0);
  }
}

namespace {

template <class T>
void check_rerun_bits(Shape s, Level level = Level::gang) {
  auto engine = make_cuda_engine<T>(s, 0);
  engine->generate(tally::test::seed());
  engine->run(level);
  const auto first = engine->c();
  for (int r = 0; r < 5; ++r) {
    engine->run(level);
    const auto again = engine->c();
    INFO(s.str() << (sizeof(T) == 4 ? " float" : " double") << " level " << to_string(level) << ", rerun " << r);
    REQUIRE(std::memcmp(first.data(), again.data(), first.size() * sizeof(T)) == 0);
  }
}

}  // namespace

TEST_CASE("the CUDA gang level gives the same bits on every rerun", "[matmul][gpu][determinism]") {
  // 64 x 64 and 48 x 33 (odd K) take the tensor-core path on sm_80+ (64 x 64 and 16 x 16 double:
  // the TMA-fed tiles on sm_90), 200 x 300 the CUDA-core tiles.
  for (const Shape s :
       {Shape{64, 64, 1 << 20}, Shape{48, 33, (1 << 18) + 1}, Shape{16, 16, 1 << 20}, Shape{200, 300, 5000}}) {
    check_rerun_bits<float>(s);
    check_rerun_bits<double>(s);
  }
}

TEST_CASE("the CUDA tiled-tc level gives the same bits on every rerun", "[matmul][gpu][determinism]") {
  // 520 x 392 x 4100 float: the wgmma kernel on sm_90 (K, N multiples of 4); the others mma.sync.
  for (const Shape s : {Shape{520, 390, 4100}, Shape{129, 257, 3001}, Shape{520, 392, 4100}}) {
    check_rerun_bits<float>(s, Level::tiled_tc);
    check_rerun_bits<double>(s, Level::tiled_tc);
  }
}

namespace {

/// A and B with NaN (nan) or infinities (inf) at places that make C's rows and columns NaN, both
/// infinities and Inf - Inf (NaN); the long-double triple loop has IEEE's values there. The infinities
/// meet finite values of every kind the 3xTF32 split makes (tc_mma.cuh): random ones, whose low part
/// has either sign, one with no low part (0.5), zero, and another infinity.
template <class T>
void check_specials(Shape s, bool nan, bool inf, std::uint64_t salt) {
  auto a = tally::test::random_vector<T>(static_cast<std::size_t>(s.m * s.k), T(-1), T(1), salt);
  auto b = tally::test::random_vector<T>(static_cast<std::size_t>(s.k * s.n), T(-1), T(1), salt + 1);
  auto A = [&](std::int64_t i, std::int64_t q) -> T& { return a[static_cast<std::size_t>(i * s.k + q)]; };
  auto B = [&](std::int64_t q, std::int64_t j) -> T& { return b[static_cast<std::size_t>(q * s.n + j)]; };
  const T big = std::numeric_limits<T>::infinity();
  if (nan) A(1, 3) = std::numeric_limits<T>::quiet_NaN(), B(s.k - 1, s.n - 1) = std::numeric_limits<T>::quiet_NaN();
  if (inf) {
    B(7, 2) = big, A(2, 7) = 0;           // column 2: +-Inf, and 0 x Inf = NaN in row 2
    A(3, 7) = T(0.5), A(4, 7) = big;      // row 3 column 2: 0.5 x Inf; row 4: Inf x B, Inf x Inf at (4, 2)
    B(9, 0) = -big, B(s.k - 2, 0) = big;  // column 0: Inf - Inf or one infinity by the signs of A
    A(s.m - 1, s.k / 2) = big;            // row M - 1
  }
  const auto oracle = tally::test::naive_product<T>(a, b, s.m, s.n, s.k);
  const auto [n_nan, n_inf] = tally::test::special_counts(oracle);
  REQUIRE(n_nan + n_inf > 0);
  auto engine = make_cuda_engine<T>(s, 0);
  engine->set_inputs(a, b);
  const Reference ref = engine->reference();
  {
    const std::vector<T> rounded(ref.c.begin(), ref.c.end());
    INFO("the device reference, " << s.str());
    CHECK(tally::test::ieee_mismatches<T>(rounded, oracle, tolerance<T>({1})) == 0);
  }
  const auto judge = [&](const std::string& who, const std::vector<T>& c, double tol) {
    const Comparison cmp = compare<T>(c, ref);
    INFO(who << ", " << s.str() << ", " << (sizeof(T) == 4 ? "float" : "double") << (nan ? ", NaN" : "")
             << (inf ? ", Inf" : "") << ": nan_extra " << cmp.nan_extra << ", nan_missing " << cmp.nan_missing
             << ", inf_wrong " << cmp.inf_wrong << ", rel. error " << cmp.rel_error);
    CHECK(cmp.ref_nan == n_nan);
    CHECK(cmp.ref_inf == n_inf);
    CHECK(cmp.nan_missing == 0);  // never a NaN lost
    CHECK(cmp.inf_wrong == 0);
    CHECK(cmp.nan_extra == 0);
    CHECK(cmp.rel_error <= tol);
    CHECK(tally::test::ieee_mismatches<T>(c, oracle, tol) == 0);
  };
  for (Level l : cuda_levels) {
    engine->run(l);
    judge("level " + to_string(l), engine->c(), tolerance<T>(engine->error_bound(l)));
  }
  REQUIRE(engine->run_vendor().has_value());
  judge("cuBLAS", engine->c(), tolerance<T>(any_order(s.k)));
  if (!inf) return;
  // Inputs with an infinity take 3xTF32's IEEE split (tc_mma.cuh), which splits finite values as the
  // plain one: where neither the row nor the column holds an infinity, C has the bits of the same
  // inputs with their infinities made 0 (the plain split), in every level whose elements are computed
  // apart (not ozaki, whose tiles are certified as a whole).
  std::vector<bool> row_inf(static_cast<std::size_t>(s.m)), col_inf(static_cast<std::size_t>(s.n));
  auto a0 = a, b0 = b;
  for (std::int64_t i = 0; i < s.m; ++i)
    for (std::int64_t q = 0; q < s.k; ++q)
      if (std::isinf(A(i, q)))
        row_inf[static_cast<std::size_t>(i)] = true, a0[static_cast<std::size_t>(i * s.k + q)] = 0;
  for (std::int64_t q = 0; q < s.k; ++q)
    for (std::int64_t j = 0; j < s.n; ++j)
      if (std::isinf(B(q, j)))
        col_inf[static_cast<std::size_t>(j)] = true, b0[static_cast<std::size_t>(q * s.n + j)] = 0;
  auto plain = make_cuda_engine<T>(s, 0);
  plain->set_inputs(a0, b0);
  for (Level l : cuda_levels) {
    if (l == Level::ozaki) continue;
    engine->run(l);
    plain->run(l);
    const auto c = engine->c(), c0 = plain->c();
    std::int64_t differ = 0;
    for (std::int64_t i = 0; i < s.m; ++i)
      for (std::int64_t j = 0; j < s.n; ++j) {
        const auto e = static_cast<std::size_t>(i * s.n + j);
        if (!row_inf[static_cast<std::size_t>(i)] && !col_inf[static_cast<std::size_t>(j)])
          differ += std::memcmp(&c[e], &c0[e], sizeof(T)) != 0 && !(std::isnan(c[e]) && std::isnan(c0[e]));
      }
    INFO("level " << to_string(l) << ", " << s.str() << (nan ? ", NaN" : "") << ": elements off the infinities' rows "
                  << "and columns whose bits differ from the plain split's: " << differ);
    CHECK(differ == 0);
  }
}

}  // namespace

TEST_CASE(
    "NaN and infinities in A and B: every CUDA level gives IEEE's NaN and infinities where the reference has them",
    "[matmul][gpu][nan]") {
  // 37 x 53 x 1001: the CUDA-core tiles in gang (K < 1024), tiled-tc on the tensor cores; 48 x 40 x
  // 4100 and 16 x 16 x 2048: the gang level's tensor-core Gram tiles (TMA-fed on sm_90: K, N multiples
  // of 4); 200 x 136 x 2052: tiled-tc's wgmma kernel on sm_90.
  std::uint64_t salt = 900;
  for (const Shape s : {Shape{37, 53, 1001}, Shape{48, 40, 4100}, Shape{16, 16, 2048}, Shape{200, 136, 2052}})
    for (const auto& [nan, inf] : {std::pair{true, false}, std::pair{false, true}, std::pair{true, true}}) {
      check_specials<float>(s, nan, inf, salt += 2);
      check_specials<double>(s, nan, inf, salt += 2);
    }
}

TEST_CASE("the CUDA engine refuses matrices that cannot fit in device memory", "[matmul][gpu][errors]") {
  const Shape huge{1 << 20, 1 << 20, 1 << 20};  // 8 TiB of float
  CHECK_THROWS_AS(make_cuda_engine<float>(huge, 0), tally::InputError);
}
