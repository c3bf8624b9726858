// mcpi on the GPU: hit counts identical bit for bit to the CPU backend (every generator and API the
// CPU reproduces), device API == host API where the streams coincide, splitting with persistent
// states, statistics for every generator, batching independence at large N.
#include <catch.hpp>

#include <cmath>

#include "mcpi.hpp"
#include "test_support.hpp"
#include "test_support_mcpi.hpp"

using namespace tally::mcpi;

namespace {

constexpr Generator all_generators[] = {Generator::philox, Generator::xorwow, Generator::mrg32k3a, Generator::sobol,
                                        Generator::scrambled_sobol};

Params make(Generator g, Api api, std::uint64_t seed, std::int64_t offset, std::int64_t n, std::int64_t batch) {
  Params p;
  p.generator = g;
  p.api = api;
  p.seed = seed;
  p.offset = offset;
  p.n = n;
  p.batch = batch;
  return p;
}

}  // namespace

TEST_CASE("mcpi GPU hit counts equal the CPU bit for bit for every generator and API the CPU supports") {
  auto rng = tally::test::rng(11);
  int compared = 0;
  for (Api api : {Api::device, Api::host}) {
    for (Generator g : all_generators) {
      if (!cpu_supports(g, api)) continue;
      for (int rep = 0; rep < 2; ++rep) {
        const std::uint64_t seed = rng();
        const std::int64_t offset = static_cast<std::int64_t>(rng() % (std::uint64_t{1} << 30)) + rep;  // odd and even
        const std::int64_t n = 3000001 + rep * 1000000;
        const Params p = make(g, api, seed, offset, n, 1100000);
        INFO(to_string(g) << " api " << to_string(api) << " seed " << seed << " offset " << offset << " n " << n);
        const Result gpu = run_cuda(p, 0), cpu = run_cpu(p);
        CHECK(gpu.hits == cpu.hits);
        CHECK(gpu.batch_hits == cpu.batch_hits);
        ++compared;
      }
    }
  }
  CHECK(compared >= 2);
}

TEST_CASE("mcpi GPU every fused Philox kernel equals the CPU bit for bit") {
  auto rng = tally::test::rng(15);
  for (int rep = 0; rep < 3; ++rep) {
    const std::uint64_t seed = rng();
    const std::int64_t first = static_cast<std::int64_t>(rng() % (std::uint64_t{1} << 50)) + rep;
    const std::int64_t n = 5000001 + rep;
    INFO("seed " << seed << " first " << first << " n " << n);
    const std::int64_t cpu = detail::philox_hits_cpu(seed, first, n);
    for (auto loop : {detail::PhiloxLoop::direct, detail::PhiloxLoop::direct_full, detail::PhiloxLoop::uniform4})
      CHECK(detail::philox_fused_hits_cuda(seed, first, n, loop) == cpu);
  }
}

TEST_CASE("mcpi GPU device API == host API for philox and the Sobol sequences") {
  auto rng = tally::test::rng(12);
  for (Generator g : {Generator::philox, Generator::sobol, Generator::scrambled_sobol}) {
    const Params d =
        make(g, Api::device, rng(), static_cast<std::int64_t>(rng() % 1000000) | 1, 50000001, std::int64_t{1} << 24);
    Params h = d;
    h.api = Api::host;
    INFO(to_string(g) << " seed " << d.seed << " offset " << d.offset);
    CHECK(run_cuda(d, 0).hits == run_cuda(h, 0).hits);
  }
}

TEST_CASE("mcpi GPU split run: part 1 + part 2 == whole for every generator and API") {
  auto rng = tally::test::rng(13);
  for (Api api : {Api::device, Api::host}) {
    for (Generator g : all_generators) {
      const std::uint64_t seed = rng();
      const std::int64_t offset = static_cast<std::int64_t>(rng() % 5000000) * 2 + 1;
      const Params whole = make(g, api, seed, offset, 20000003, 3000000);
      Params p1 = whole, p2 = whole;
      p1.n = 7777777;
      p2.offset = offset + p1.n;
      p2.n = whole.n - p1.n;
      INFO(to_string(g) << " api " << to_string(api) << " seed " << seed << " offset " << offset);
      const Result w = run_cuda(whole, 0);
      CHECK(run_cuda(p1, 0).hits + run_cuda(p2, 0).hits == w.hits);
      Params one_batch = whole;  // batching does not change the points
      one_batch.batch = whole.n;
      CHECK(run_cuda(one_batch, 0).hits == w.hits);
    }
  }
}

TEST_CASE("mcpi GPU estimate within its error bound of pi for every generator at several seeds and sizes") {
  auto rng = tally::test::rng(14);
  for (Api api : {Api::device, Api::host}) {
    for (Generator g : all_generators) {
      for (std::int64_t n : {std::int64_t{1000}, std::int64_t{1000000}, std::int64_t{1} << 30}) {
        const Params p = make(g, api, rng(), static_cast<std::int64_t>(rng() % 1000), n, std::int64_t{1} << 32);
        const Result r = run_cuda(p, 0);
        const double est = 4.0 * static_cast<double>(r.hits) / static_cast<double>(n);
        INFO(to_string(g) << " api " << to_string(api) << " n " << n << " seed " << p.seed << " estimate " << est);
        CHECK(std::fabs(est - pi) <= error_bound(g, p.offset, n));
      }
    }
  }
}

TEST_CASE("mcpi GPU large N in batches has 64-bit counts independent of the batch size") {
  const std::uint64_t seed = tally::test::seed();
  const std::int64_t n = (std::int64_t{1} << 37) + 3;
  const Result a = run_cuda(make(Generator::philox, Api::device, seed, 5, n, std::int64_t{1} << 35), 0);
  const Result b = run_cuda(make(Generator::philox, Api::device, seed, 5, n, std::int64_t{1} << 33), 0);
  CHECK(a.batch_n.size() == 5);
  CHECK(a.hits == b.hits);
  CHECK(a.hits > std::int64_t{1} << 32);  // beyond 32-bit counts
  CHECK(std::fabs(4.0 * static_cast<double>(a.hits) / static_cast<double>(n) - pi) <= pseudo_random_bound(n));
}

TEST_CASE("mcpi GPU reproduces data/mcpi_expected.csv") {
  int checked = 0;
  for (const auto& e : mcpi_test::read_expected(MCPI_EXPECTED_CSV)) {
    INFO(to_string(e.generator) << " " << to_string(e.api) << " seed " << e.seed << " offset " << e.offset << " n "
                                << e.n);
    CHECK(run_cuda(make(e.generator, e.api, e.seed, e.offset, e.n, std::int64_t{1} << 32), 0).hits == e.hits);
    ++checked;
  }
  CHECK(checked >= 3);
}
