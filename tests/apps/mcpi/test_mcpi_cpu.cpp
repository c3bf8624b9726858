// mcpi on the CPU: our Philox4x32-10 against the published test vectors and (where the toolkit
// exists) against cuRAND's host-side generator, which needs no GPU; splitting; statistics; bad input.
#include <catch.hpp>

#include <array>
#include <cmath>
#include <random>

#include "mcpi.hpp"
#include "mcpi_output.hpp"
#include "philox_cpu.hpp"
#include "sample.hpp"
#include "tally/common/error.hpp"
#include "test_support.hpp"
#include "test_support_mcpi.hpp"

using namespace tally::mcpi;

namespace {

/// The naive reference: sample k one at a time from the layout's definition (uniform u of block u/4).
std::int64_t naive_philox_hits(std::uint64_t seed, std::int64_t first, std::int64_t n) {
  auto uniform = [&](std::uint64_t u) { return uniform_from_bits(Philox4x32::host_order_block(seed, u / 4)[u % 4]); };
  std::int64_t h = 0;
  for (std::int64_t k = first; k < first + n; ++k)
    h += in_quarter_disc(uniform(2 * static_cast<std::uint64_t>(k)), uniform(2 * static_cast<std::uint64_t>(k) + 1));
  return h;
}

std::vector<Generator> cpu_generators(Api api) {
  std::vector<Generator> gs;
  for (Generator g :
       {Generator::philox, Generator::xorwow, Generator::mrg32k3a, Generator::sobol, Generator::scrambled_sobol})
    if (cpu_supports(g, api)) gs.push_back(g);
  return gs;
}

}  // namespace

TEST_CASE("mcpi Philox4x32-10 reproduces the Random123 known-answer vectors") {
  using A = std::array<std::uint32_t, 4>;
  CHECK(Philox4x32::block(A{0, 0, 0, 0}, 0, 0) == A{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u});
  CHECK(Philox4x32::block(A{~0u, ~0u, ~0u, ~0u}, ~0u, ~0u) == A{0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu});
  CHECK(Philox4x32::block(A{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}, 0xa4093822u, 0x299f31d0u) ==
        A{0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u});
}

TEST_CASE("mcpi uniform conversion gives 2^-33 at zero and 1 at the top") {
  CHECK(uniform_from_bits(0) == std::ldexp(1.0f, -33));
  CHECK(uniform_from_bits(0xffffffffu) == 1.0f);
  CHECK(uniform_from_bits(0x80000000u) == 0.5f + std::ldexp(1.0f, -33));
}

TEST_CASE("mcpi CPU Philox hits equal the naive per-sample reference with odd offsets and sizes") {
  auto rng = tally::test::rng(1);
  for (int rep = 0; rep < 6; ++rep) {
    const std::uint64_t seed = rng();
    const std::int64_t offset = static_cast<std::int64_t>(rng() % (std::uint64_t{1} << 50)) + rep % 2;
    const std::int64_t n = 1 + static_cast<std::int64_t>(rng() % 300000);
    INFO("seed " << seed << " offset " << offset << " n " << n);
    CHECK(detail::philox_hits_cpu(seed, offset, n) == naive_philox_hits(seed, offset, n));
  }
  for (std::int64_t n = 1; n <= 5; ++n)  // the half-block edges
    for (std::int64_t off = 0; off <= 3; ++off)
      CHECK(detail::philox_hits_cpu(7, off, n) == naive_philox_hits(7, off, n));
}

TEST_CASE("mcpi CPU split run: part 1 + part 2 == whole for every supported generator and API") {
  auto rng = tally::test::rng(2);
  for (Api api : {Api::device, Api::host}) {
    for (Generator g : cpu_generators(api)) {
      Params whole;
      whole.generator = g;
      whole.api = api;
      whole.seed = rng();
      whole.offset = static_cast<std::int64_t>(rng() % 100000) * 2 + 1;  // odd on purpose
      whole.n = 900001;
      whole.batch = 250000;
      Params p1 = whole, p2 = whole;
      p1.n = 123457;
      p2.offset = whole.offset + p1.n;
      p2.n = whole.n - p1.n;
      INFO(to_string(g) << " api " << to_string(api) << " seed " << whole.seed << " offset " << whole.offset);
      const Result w = run_cpu(whole), a = run_cpu(p1), b = run_cpu(p2);
      CHECK(a.hits + b.hits == w.hits);
      REQUIRE(w.batch_n.size() == 4);
      std::int64_t sum = 0;
      for (auto h : w.batch_hits) sum += h;
      CHECK(sum == w.hits);
      CHECK(w.batch_n.back() == 900001 - 3 * 250000);
    }
  }
}

TEST_CASE("mcpi CPU estimate within its error bound of pi for several seeds and sizes") {
  auto rng = tally::test::rng(3);
  for (std::int64_t n : {std::int64_t{1000}, std::int64_t{100000}, std::int64_t{10000000}}) {
    for (int rep = 0; rep < 3; ++rep) {
      Params p;
      p.n = n;
      p.seed = rng();
      p.offset = static_cast<std::int64_t>(rng() % 1000000);
      const Result r = run_cpu(p);
      const double est = 4.0 * static_cast<double>(r.hits) / static_cast<double>(n);
      INFO("n " << n << " seed " << p.seed << " estimate " << est);
      CHECK(std::fabs(est - pi) <= error_bound(p.generator, p.offset, n));
    }
  }
  for (Generator g : cpu_generators(Api::host)) {  // cuRAND's host generator, 2e6 points
    Params p;
    p.n = 2000000;
    p.generator = g;
    p.api = Api::host;
    p.seed = rng();
    const Result r = run_cpu(p);
    const double est = 4.0 * static_cast<double>(r.hits) / static_cast<double>(p.n);
    INFO(to_string(g) << " seed " << p.seed << " estimate " << est);
    CHECK(std::fabs(est - pi) <= error_bound(g, p.offset, p.n));
  }
}

TEST_CASE("mcpi error bound: Bernstein's tail for pseudo-random points, the nets' cells for Sobol") {
  // Pseudo-random: t = bound / 4 solves 2 exp(-n t^2 / (2 p (1 - p) + 2 t / 3)) = delta (p = pi/4).
  const double p = pi / 4;
  for (std::int64_t n : {std::int64_t{1}, std::int64_t{1000}, std::int64_t{1} << 40}) {
    for (double delta : {1e-20, 1e-3}) {
      const double t = pseudo_random_bound(n, delta) / 4, nn = static_cast<double>(n);
      INFO("n " << n << " delta " << delta);
      CHECK(2 * std::exp(-nn * t * t / (2 * p * (1 - p) + 2 * t / 3)) == Catch::Approx(delta).epsilon(1e-9));
    }
  }
  // About 9.7 standard errors for large n at the default 1e-20: sqrt(2 ln(2e20)).
  const std::int64_t big = std::int64_t{1} << 40;
  CHECK(pseudo_random_bound(big) / std_error(big) == Catch::Approx(std::sqrt(2 * std::log(2e20))).epsilon(1e-4));
  // Sobol: [0, 2^10) is one net of 1024 points (32 + 32 - 1 cells crossed); [3, 8) the blocks 3 and
  // 4-7 (1 + 3 cells); plus the rounding band of 6e-7 a point.
  CHECK(sobol_bound(0, 1024) == Catch::Approx(4 * (63 + 6e-7 * 1024) / 1024).epsilon(1e-15));
  CHECK(sobol_bound(3, 5) == Catch::Approx(4 * (1 + 3 + 6e-7 * 5) / 5).epsilon(1e-15));
  CHECK(error_bound(Generator::sobol, 3, 5) == sobol_bound(3, 5));
  CHECK(error_bound(Generator::scrambled_sobol, 0, 1024) == sobol_bound(0, 1024));
  CHECK(error_bound(Generator::philox, 7, 1000) == pseudo_random_bound(1000));
  CHECK(error_bound(Generator::mrg32k3a, 0, 1000) == pseudo_random_bound(1000));
}

TEST_CASE("mcpi verdict: a count within the error bound passes, one beyond it fails") {
  Params p;
  p.n = 1000000;
  const auto exact = static_cast<std::int64_t>(std::llround(static_cast<double>(p.n) * pi / 4));
  const auto off = static_cast<std::int64_t>(std::ceil(error_bound(p.generator, p.offset, p.n) / 4 * 1e6));
  CHECK(judge(p, exact).ok);
  CHECK(judge(p, exact + off - 2).ok);
  CHECK_FALSE(judge(p, exact + off + 1).ok);
  CHECK_FALSE(judge(p, exact - off - 1).ok);
  CHECK(judge(p, exact).error_bound == error_bound(p.generator, p.offset, p.n));
  // A 6-sigma miss, which the old 5-sigma check failed, is a pass: a correct run may land there.
  const auto six_sigma = static_cast<std::int64_t>(6 * std_error(p.n) / 4 * 1e6);
  CHECK(judge(p, exact + six_sigma).ok);
}

TEST_CASE("mcpi own Philox reproduces cuRAND host generator bit for bit without a GPU") {
  if (!detail::curand_host_available()) {
    WARN("this build has no cuRAND: the exactness check against curandCreateGeneratorHost does not apply");
    return;
  }
  auto rng = tally::test::rng(4);
  for (std::uint64_t first :
       {std::uint64_t{0}, std::uint64_t{7}, rng() % (std::uint64_t{1} << 40), rng() >> 1, ~std::uint64_t{0} - 300000}) {
    const std::uint64_t seed = rng();
    const std::size_t count = 262147;
    INFO("seed " << seed << " first uniform " << first);
    const auto ref = detail::curand_host_uniforms(Generator::philox, seed, first, count);
    std::size_t bad = 0;
    for (std::size_t i = 0; i < count; ++i) {
      const std::uint64_t u = first + i;
      bad += uniform_from_bits(Philox4x32::host_order_block(seed, u / 4)[u % 4]) != ref[i];
    }
    CHECK(bad == 0);
  }
  // And the hit counts: device API (own Philox) == host API (cuRAND's host generator).
  for (int rep = 0; rep < 3; ++rep) {
    Params p;
    p.seed = rng();
    p.offset = static_cast<std::int64_t>(rng() % (std::uint64_t{1} << 45)) | 1;
    p.n = 1000003;
    p.batch = 400000;
    Params h = p;
    h.api = Api::host;
    INFO("seed " << p.seed << " offset " << p.offset);
    const Result a = run_cpu(p), b = run_cpu(h);
    CHECK(a.hits == b.hits);
    CHECK(a.batch_hits == b.batch_hits);
  }
}

TEST_CASE("mcpi CPU reproduces data/mcpi_expected.csv") {
  int checked = 0;
  for (const auto& e : mcpi_test::read_expected(MCPI_EXPECTED_CSV)) {
    if (!cpu_supports(e.generator, e.api)) continue;
    Params p;
    p.generator = e.generator;
    p.api = e.api;
    p.seed = e.seed;
    p.offset = e.offset;
    p.n = e.n;
    INFO(to_string(e.generator) << " " << to_string(e.api) << " seed " << e.seed << " offset " << e.offset << " n "
                                << e.n);
    CHECK(run_cpu(p).hits == e.hits);
    ++checked;
  }
  CHECK(checked >= 3);
}

TEST_CASE("mcpi bad input throws InputError") {
  Params p;
  p.n = 0;
  CHECK_THROWS_AS(validate(p), tally::InputError);
  CHECK_THROWS_WITH(validate(p), "--n: must be a positive integer (got 0)");  // reads like every numeric option
  p.n = -3;
  CHECK_THROWS_AS(validate(p), tally::InputError);
  p.n = 10;
  p.offset = -1;
  CHECK_THROWS_AS(validate(p), tally::InputError);
  CHECK_THROWS_WITH(validate(p), "--offset: must be a non-negative integer (got -1)");
  p.offset = 0;
  p.batch = 0;
  CHECK_THROWS_WITH(validate(p), "--batch: must be an integer in [1, 2^40] (got 0)");
  p.batch = std::int64_t{1} << 40;
  CHECK_NOTHROW(validate(p));
  p.generator = Generator::sobol;
  p.n = sobol_points;
  CHECK_NOTHROW(validate(p));
  p.offset = 1;
  CHECK_THROWS_AS(validate(p), tally::InputError);
  p.generator = Generator::philox;
  p.offset = std::numeric_limits<std::int64_t>::max() - 5;
  CHECK_THROWS_AS(validate(p), tally::InputError);
  CHECK_THROWS_AS(parse_generator("mt19937"), tally::InputError);
  CHECK_THROWS_AS(parse_api("gpu"), tally::InputError);
  CHECK(parse_count("1e8", "--n") == 100000000);
  CHECK(parse_count("2^40", "--n") == (std::int64_t{1} << 40));
  CHECK(parse_count("12345", "--n") == 12345);
  CHECK_THROWS_AS(parse_count("1.5", "--n"), tally::InputError);
  CHECK_THROWS_AS(parse_count("abc", "--n"), tally::InputError);
  CHECK_THROWS_AS(parse_count("3^4", "--n"), tally::InputError);
  CHECK(std_error(100) == Catch::Approx(std::sqrt(pi * (4 - pi) / 100)));
}
