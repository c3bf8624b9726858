// matmul --level ozaki on the CPU: the plan's arithmetic (coprime moduli, K Q^2 < P / 2, the CRT
// tables, auto's count), the CRT reconstruction against 128-bit integers, and the level against
// exact dot products (big-integer arithmetic) on odd shapes, wide exponent ranges, zeros,
// subnormals, overflow, Inf and NaN; the same bits for every thread count; the app's options.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "catch.hpp"
#include "matmul.hpp"
#include "matmul_app_support.hpp"
#include "ozaki/ozaki.hpp"
#include "ozaki/ozaki_lines.hpp"
#include "ozaki_oracle.hpp"
#include "tally/common/error.hpp"
#include "test_support.hpp"

using namespace tally::matmul;
namespace oz = tally::matmul::ozaki;
__extension__ typedef __int128 i128;
__extension__ typedef unsigned __int128 u128;

namespace {

i128 product_of(int moduli) {
  i128 p = 1;
  for (int l = 0; l < moduli; ++l) p *= oz::moduli_table()[static_cast<std::size_t>(l)];
  return p;
}

template <class T>
std::vector<T> uniform(std::size_t n, std::uint64_t salt) {
  return tally::test::random_vector<T>(n, T(-1), T(1), salt);
}

template <class T>
std::vector<T> run_cpu(const std::vector<T>& a, const std::vector<T>& b, Shape s, int moduli,
                       oz::Stats* stats = nullptr) {
  std::vector<T> c(static_cast<std::size_t>(s.m * s.n), std::numeric_limits<T>::quiet_NaN());
  const oz::Stats st = oz::multiply_cpu<T>(a, b, c, s, oz::make_plan<T>(s.k, moduli));
  if (stats) *stats = st;
  return c;
}

}  // namespace

TEST_CASE("ozaki plan: coprime moduli, K Q^2 below P / 2, exact CRT tables, auto's count from the arithmetic",
          "[matmul][ozaki]") {
  const auto mods = oz::moduli_table();
  for (std::size_t x = 0; x < mods.size(); ++x) {
    CHECK(mods[x] <= 256);
    for (std::size_t y = x + 1; y < mods.size(); ++y) CHECK(std::gcd(mods[x], mods[y]) == 1);
  }
  // Exact integer checks while P fits 127 bits (15 moduli: 2^117.8).
  for (int n = 1; n <= 15; ++n)
    for (std::int64_t k : {std::int64_t{1}, std::int64_t{7}, std::int64_t{129}, std::int64_t{4096}, std::int64_t{8192},
                           std::int64_t{16384}, std::int64_t{1} << 20}) {
      const i128 p = product_of(n);
      const std::uint64_t q = oz::q_bound(n, k);
      INFO(n << " moduli, K = " << k << ", Q = " << q);
      CHECK(q <= oz::kMaxQ);
      if (q == 0) {
        CHECK(p / 2 <= 2 * static_cast<i128>(k));  // not even Q = 1 fits: P / 2 must exceed K (with its margin)
        continue;
      }
      // K Q^2 <= P (1/2 - 2^-20): the reconstruction's quotient is never near a tie (K Q^2 < 2^117 here).
      CHECK(static_cast<i128>(k) * q * q <= p / 2 - p / (i128{1} << 20));
      // ... and Q is the largest such below the cap, but for its 2^-30 margin.
      if (q < oz::kMaxQ)
        CHECK(static_cast<long double>(k) * (q + 1.0L) * (q + 1.0L) * (1 + 0x1p-25L) >
              static_cast<long double>(p) * (0.5L - 0x1p-20L));
      const oz::Plan plan = oz::make_plan<double>(k, n);
      const auto& t = plan.tables;
      CHECK(t.q == q);
      i128 p_limbs = 0;
      for (int j = 0; j < t.limbs; ++j) p_limbs += static_cast<i128>(t.p[j]);
      CHECK(p_limbs == p);
      for (int l = 0; l < n; ++l) {
        i128 ml = 0;
        for (int j = 0; j < t.limbs; ++j) {
          CHECK(t.ml[l][j] == std::floor(t.ml[l][j]));
          ml += static_cast<i128>(t.ml[l][j]);
        }
        CHECK(ml == p / mods[static_cast<std::size_t>(l)]);
        CHECK(static_cast<i128>(t.inv[l]) * (ml % mods[static_cast<std::size_t>(l)]) %
                  mods[static_cast<std::size_t>(l)] ==
              1 % mods[static_cast<std::size_t>(l)]);
      }
    }
  // auto: the fewest moduli with Q >= kAutoKappa / theta(K) (ozaki.hpp), theta the promise less
  // the roundings. Double 15, float 7 over the bench's K.
  for (std::int64_t k : {std::int64_t{4096}, std::int64_t{8192}, std::int64_t{16384}}) {
    CHECK(oz::auto_moduli<double>(k) == 15);
    CHECK(oz::auto_moduli<float>(k) == 7);
    for (int which = 0; which < 2; ++which) {
      const int n = which ? oz::auto_moduli<float>(k) : oz::auto_moduli<double>(k);
      const double theta = which ? oz::certificate_threshold<float>(k) : oz::certificate_threshold<double>(k);
      CHECK(static_cast<double>(oz::q_bound(n, k)) * theta >= oz::kAutoKappa);
      CHECK(static_cast<double>(oz::q_bound(n - 1, k)) * theta < oz::kAutoKappa);
    }
    // theta: the promise less the reconstruction's (and float's final) rounding.
    CHECK(oz::certificate_threshold<double>(k) < oz::promise<double>(k) - 0x1p-53);
    CHECK(oz::certificate_threshold<double>(k) > oz::promise<double>(k) - 0x1p-52);
    CHECK(oz::certificate_threshold<float>(k) < oz::promise<float>(k) - 0x1p-24);
  }
  CHECK_THROWS_AS(oz::make_plan<double>(4096, 1), tally::InputError);   // P = 256 < 2 K
  CHECK_THROWS_AS(oz::make_plan<double>(4096, 21), tally::InputError);  // beyond the table
  CHECK(oz::make_plan<double>(1 << 20, 0).chunks == 9);                 // 2^20 in chunks of 131056
}

TEST_CASE("ozaki CRT: the residues of an integer below P / 2 rebuild it within u |Y| + 2^(B-130)", "[matmul][ozaki]") {
  auto g = tally::test::rng(4201);
  for (int n : {2, 5, 9, 14, 15}) {
    const oz::Plan plan = oz::make_plan<double>(1000, n);
    const auto& t = plan.tables;
    const i128 p = product_of(n), half = p / 2;
    std::uniform_int_distribution<std::uint64_t> word;
    for (int trial = 0; trial < 2000; ++trial) {
      // |Y| < P / 2 at every magnitude: a random 127-bit value shifted down, reduced below P / 2.
      i128 y = static_cast<i128>(((static_cast<u128>(word(g)) << 64) | word(g)) >> (1 + word(g) % 126));
      y %= half;
      if (word(g) & 1) y = -y;
      // The INT32 product sums are any integers congruent to Y: the residue plus a multiple of m.
      std::vector<double> sums(static_cast<std::size_t>(n));
      for (int l = 0; l < n; ++l) {
        const int m = t.m_int[l];
        sums[static_cast<std::size_t>(l)] = static_cast<double>(static_cast<std::int64_t>(((y % m) + m) % m) +
                                                                m * (static_cast<std::int64_t>(word(g) % 2000) - 1000));
      }
      const double got = oz::with_limbs(t, [&](auto limbs) {
        double acc[decltype(limbs)::value] = {};
        for (int l = 0; l < n; ++l)
          oz::crt_accumulate(acc, oz::crt_digit(sums[static_cast<std::size_t>(l)], t, l), t, l);
        return oz::crt_finish(acc, t);
      });
      INFO(n << " moduli, trial " << trial);
      REQUIRE(got == std::floor(got));  // the limbs' sum of integers rounds to an integer
      const i128 diff = y - static_cast<i128>(got);
      const long double err = std::fabs(static_cast<long double>(diff)), mag = std::fabs(static_cast<long double>(y));
      REQUIRE(err <= 0x1p-53L * (1 + 0x1p-50L) * mag + std::ldexp(1.0L, t.bits - 130));
    }
  }
}

TEST_CASE("ozaki CRT digits: exact for every INT32 product sum the GPU can form (|x| <= K 2^14, K < 2^28)",
          "[matmul][ozaki]") {
  // The GPU's residues lie anywhere in [-128, 127], so a modulus' sum over K reaches K 2^14 (2^42 at
  // the largest K) where the CPU's symmetric ones stay smaller; the digit must be exact either way.
  const oz::Plan plan = oz::make_plan<double>(1000, oz::kMaxModuli);
  const auto& t = plan.tables;
  auto g = tally::test::rng(4230);
  const std::int64_t top = (std::int64_t{1} << 42) - (std::int64_t{1} << 14);  // (2^28 - 1) 2^14
  std::uniform_int_distribution<std::int64_t> any(-top, top);
  std::vector<std::int64_t> xs{0, 1, -1, top, -top, top - 1, -top + 1};
  for (int i = 0; i < 20000; ++i) xs.push_back(any(g));
  std::int64_t bad = 0;
  for (const std::int64_t x : xs)
    for (int l = 0; l < t.moduli; ++l) {
      const std::int64_t m = t.m_int[l], inv = static_cast<std::int64_t>(t.inv[l]);
      const std::int64_t want = ((x % m + m) % m * inv) % m;
      const double got = oz::crt_digit(static_cast<double>(x), t, l);
      if (got != static_cast<double>(want) && ++bad <= 5)
        FAIL_CHECK("x = " << x << ", m = " << m << ": digit " << got << ", want " << want);
    }
  CHECK(bad == 0);
}

TEST_CASE("ozaki residues: the CPU's symmetric ones and the GPU's representatives, congruent and within INT8",
          "[matmul][ozaki]") {
  const oz::Plan plan = oz::make_plan<double>(1000, oz::kMaxModuli);
  const auto& t = plan.tables;
  auto g = tally::test::rng(4250);
  std::uniform_int_distribution<std::int64_t> any(-(std::int64_t{1} << 52), std::int64_t{1} << 52);
  std::vector<std::int64_t> values{
      0, 1, -1, std::int64_t{1} << 52, -(std::int64_t{1} << 52), (std::int64_t{1} << 52) - 1};
  for (int l = 0; l < t.moduli; ++l)
    for (std::int64_t top : {std::int64_t{0}, std::int64_t{1} << 30, (std::int64_t{1} << 52) / t.m_int[l]})
      for (int off = -t.m_int[l] / 2 - 2; off <= t.m_int[l] / 2 + 2; ++off)
        values.push_back(top * t.m_int[l] + off), values.push_back(-(top * t.m_int[l] + off));
  for (int i = 0; i < 100000; ++i) values.push_back(any(g));
  std::int64_t bad = 0;
  for (const std::int64_t v : values) {
    if (v > (std::int64_t{1} << 52) || v < -(std::int64_t{1} << 52)) continue;
    for (int l = 0; l < t.moduli; ++l) {
      const int m = t.m_int[l], r = oz::residue(v, m), f = oz::residue_fast(v, static_cast<double>(v), t, l);
      const bool ok = r >= -128 && r <= 127 && f >= -128 && f <= 127 && (v - r) % m == 0 && (v - f) % m == 0 &&
                      2 * std::abs(r) <= m;
      if (!ok && ++bad <= 5) FAIL_CHECK("v = " << v << ", m = " << m << ": residue " << r << ", GPU's " << f);
    }
  }
  CHECK(bad == 0);
}

TEST_CASE("ozaki: the GPU's arithmetic (its residues, K in INT32 chunks, N and K padded) gives the CPU engine's bits",
          "[matmul][ozaki]") {
  // ozaki_cuda.cu's pipeline on the host: residues by residue_fast into planes of M x Kp and Nc x Kp
  // (zero padding), one INT32 sum per chunk of kChunkK (each must fit: |sum| < 2^31), the chunks'
  // sums added in double in chunk order, the CRT and the scaling; the same bits as multiply_cpu,
  // with K beyond one chunk and N not a multiple of 4.
  for (const Shape s : {Shape{2, 3, oz::kChunkK + 200}, Shape{5, 7, 333}}) {
    INFO(s.str());
    const auto a = uniform<double>(static_cast<std::size_t>(s.m * s.k), 4260),
               b = uniform<double>(static_cast<std::size_t>(s.k * s.n), 4261);
    const oz::Plan plan = oz::make_plan<double>(s.k, 0);
    const auto& t = plan.tables;
    oz::Stats st;
    const auto want = run_cpu<double>(a, b, s, 0, &st);
    REQUIRE(st.exact_elements == 0);  // every element from the residues
    const std::int64_t kp = (s.k + 15) / 16 * 16, nc = (s.n + 3) / 4 * 4, L = t.moduli;
    std::vector<oz::LineStats> rows, cols;
    for (std::int64_t i = 0; i < s.m; ++i) rows.push_back(oz::line_stats(a.data() + i * s.k, 1, s.k, t.q));
    for (std::int64_t j = 0; j < s.n; ++j) cols.push_back(oz::line_stats(b.data() + j, s.n, s.k, t.q));
    std::vector<std::int8_t> ra(static_cast<std::size_t>(L * s.m * kp)), rb(static_cast<std::size_t>(L * nc * kp));
    const auto fill = [&](std::int8_t* plane0, std::int64_t plane, std::int64_t line, const double* x,
                          std::int64_t stride, int scale) {
      for (std::int64_t q = 0; q < s.k; ++q) {
        const std::int64_t v = oz::scaled_integer(oz::decompose(x[q * stride]), scale);
        for (int l = 0; l < L; ++l)
          plane0[l * plane + line * kp + q] =
              static_cast<std::int8_t>(oz::residue_fast(v, static_cast<double>(v), t, l));
      }
    };
    for (std::int64_t i = 0; i < s.m; ++i)
      fill(ra.data(), s.m * kp, i, a.data() + i * s.k, 1, rows[static_cast<std::size_t>(i)].scale);
    for (std::int64_t j = 0; j < s.n; ++j)
      fill(rb.data(), nc * kp, j, b.data() + j, s.n, cols[static_cast<std::size_t>(j)].scale);
    REQUIRE(plan.chunks == (kp + oz::kChunkK - 1) / oz::kChunkK);
    std::int64_t mismatches = 0;
    for (std::int64_t i = 0; i < s.m; ++i)
      for (std::int64_t j = 0; j < s.n; ++j) {
        const double y = oz::with_limbs(t, [&](auto limbs) {
          double acc[decltype(limbs)::value] = {};
          for (int l = 0; l < L; ++l) {
            double x = 0;
            for (std::int64_t k0 = 0; k0 < kp; k0 += oz::kChunkK) {
              std::int64_t sum = 0;
              for (std::int64_t q = k0; q < std::min(kp, k0 + oz::kChunkK); ++q)
                sum += ra[static_cast<std::size_t>(l * s.m * kp + i * kp + q)] *
                       rb[static_cast<std::size_t>(l * nc * kp + j * kp + q)];
              REQUIRE(std::abs(sum) < (std::int64_t{1} << 31));  // cuBLAS's INT32 sum is exact
              x += static_cast<double>(sum);
            }
            oz::crt_accumulate(acc, oz::crt_digit(x, t, l), t, l);
          }
          return oz::crt_finish(acc, t);
        });
        const double c =
            oz::scale_pow2(y, -(rows[static_cast<std::size_t>(i)].scale + cols[static_cast<std::size_t>(j)].scale));
        mismatches += std::memcmp(&c, &want[static_cast<std::size_t>(i * s.n + j)], sizeof c) != 0;
      }
    CHECK(mismatches == 0);
  }
}

TEST_CASE("ozaki on the CPU: odd shapes within the promise and the Ozaki bound of exact products", "[matmul][ozaki]") {
  std::uint64_t salt = 4300;
  for (Shape s : {Shape{1, 1, 1}, Shape{7, 5, 129}, Shape{33, 40, 1000}, Shape{129, 7, 300}, Shape{3, 70, 16},
                  Shape{40, 33, 1027}}) {
    for (int precision = 0; precision < 2; ++precision) {
      INFO(s.str() << (precision ? " float" : " double"));
      oz::Stats st;
      if (precision) {
        const auto a = uniform<float>(static_cast<std::size_t>(s.m * s.k), ++salt),
                   b = uniform<float>(static_cast<std::size_t>(s.k * s.n), ++salt);
        const auto c = run_cpu<float>(a, b, s, 0, &st);
        const auto r = tally::test::check_ozaki_promise<float>(a, b, c, s, oz::make_plan<float>(s.k, 0).tables.q);
        CHECK(r.worst <= oz::promise<float>(s.k));
      } else {
        const auto a = uniform<double>(static_cast<std::size_t>(s.m * s.k), ++salt),
                   b = uniform<double>(static_cast<std::size_t>(s.k * s.n), ++salt);
        const auto c = run_cpu<double>(a, b, s, 0, &st);
        (void)tally::test::check_ozaki_promise<double>(a, b, c, s, oz::make_plan<double>(s.k, 0).tables.q);
      }
      // Inputs of uniform magnitude pass the certificate once K is past the smallest promises.
      if (s.k >= 1000) CHECK(st.exact_elements == 0);
    }
  }
}

TEST_CASE("ozaki on the CPU: every moduli count keeps the promise, fewer moduli by more exact elements",
          "[matmul][ozaki]") {
  const Shape s{20, 24, 700};
  const auto a = uniform<double>(static_cast<std::size_t>(s.m * s.k), 4401),
             b = uniform<double>(static_cast<std::size_t>(s.k * s.n), 4402);
  std::int64_t last = s.m * s.n;
  for (int n = 3; n <= oz::kMaxModuli; n += 3) {
    INFO(n << " moduli");
    oz::Stats st;
    const auto c = run_cpu<double>(a, b, s, n, &st);
    (void)tally::test::check_ozaki_promise<double>(a, b, c, s, oz::make_plan<double>(s.k, n).tables.q);
    CHECK(st.exact_elements <= last);  // more bits certify at least as many tiles
    last = st.exact_elements;
  }
  CHECK(last == 0);
}

namespace {
template <class T>
void check_cases(std::uint64_t salt) {
  for (const auto& c : tally::test::ozaki_cases<T>(salt)) {
    INFO(c.name << (sizeof(T) == 4 ? " (float)" : " (double)"));
    oz::Stats st;
    const auto out = run_cpu<T>(c.a, c.b, c.s, 0, &st);
    const auto r = tally::test::check_ozaki_promise<T>(c.a, c.b, out, c.s, oz::make_plan<T>(c.s.k, 0).tables.q);
    if (c.int8_only) CHECK(st.exact_elements == 0);
    if (c.all_exact) CHECK((st.exact_tiles == st.tiles && r.exact_elements == c.s.m * c.s.n));
  }
}
}  // namespace

TEST_CASE("ozaki on the CPU: wide exponent ranges, zeros, subnormals, overflow, Inf and NaN keep the promise",
          "[matmul][ozaki]") {
  // Spreads between lines stay on the INT8 path (each line has its own scale); spreads within lines
  // fail the certificate and fall back to exact dot products; Inf/NaN lines give the exact product's
  // IEEE result (the oracle compares those bit for bit).
  check_cases<double>(4500);
  check_cases<float>(4600);
}

TEST_CASE("ozaki on the CPU: Inf and NaN reach exactly their rows and columns", "[matmul][ozaki]") {
  const auto cases = tally::test::ozaki_cases<double>(4700);
  const auto& c = cases.back();
  oz::Stats st;
  const auto out = run_cpu<double>(c.a, c.b, c.s, 0, &st);
  const std::int64_t n = c.s.n;
  CHECK(std::isnan(out[static_cast<std::size_t>(2 * n)]));       // row 2's NaN
  CHECK(std::isnan(out[1]));                                     // Inf - Inf
  CHECK(std::isnan(out[static_cast<std::size_t>(30 * n + 7)]));  // Inf * 0
  CHECK(std::isinf(out[30]));
  CHECK(st.special_tiles > 0);
  CHECK(st.exact_elements == 2 * n + 2 * c.s.m - 4);  // rows 2 and 30, columns 1 and 30
}

TEST_CASE("ozaki on the CPU: the same bits for every thread count and rerun", "[matmul][ozaki][determinism]") {
  const Shape s{45, 38, 2100};
  const auto a = uniform<double>(static_cast<std::size_t>(s.m * s.k), 4801),
             b = uniform<double>(static_cast<std::size_t>(s.k * s.n), 4802);
  const int saved = omp_get_max_threads();
  omp_set_num_threads(1);
  const auto one = run_cpu<double>(a, b, s, 0);
  for (int threads : {2, 3}) {
    omp_set_num_threads(threads);
    const auto other = run_cpu<double>(a, b, s, 0);
    CHECK(std::memcmp(one.data(), other.data(), one.size() * sizeof(double)) == 0);
  }
  omp_set_num_threads(saved);
  // The level through the engine and cpu_multiply: the same bits as the direct call.
  std::vector<double> c(one.size());
  cpu_multiply<double>(Level::ozaki, a, b, c, s);
  CHECK(std::memcmp(one.data(), c.data(), one.size() * sizeof(double)) == 0);
}

TEST_CASE("matmul --level ozaki runs on the CPU backend, and --ozaki-moduli takes auto or a count",
          "[matmul][ozaki][app]") {
  const tally::test::ScratchDir dir("matmul-ozaki");
  const std::string base =
      "--backend cpu --m 33 --n 21 --k 515 --level ozaki --repeats 1 --warmup 0 --quiet "
      "--no-eigen --out " +
      dir.file("out.h5");
  const auto rc = [&](const std::string& extra) {
    const auto r = tally::test::run_matmul(base + " " + extra);
    INFO(extra << ": " << r.output);
    return r.rc;
  };
  CHECK(rc("") == 0);
  CHECK(rc("--ozaki-moduli 9 --precision float") == 0);
  CHECK(rc("--ozaki-moduli auto --exact") == 0);  // its exact form: the fallback everywhere
  for (const char* bad : {"0", "21", "many", "3.5", "''"}) CHECK(rc(std::string("--ozaki-moduli ") + bad) == 2);
  CHECK(rc("--ozaki-moduli 1") == 2);  // P = 256 cannot hold K = 515
  CHECK(oz::parse_moduli("auto") == 0);
  CHECK(oz::parse_moduli("12") == 12);
  CHECK_THROWS_AS(oz::parse_moduli("x"), tally::InputError);
}
