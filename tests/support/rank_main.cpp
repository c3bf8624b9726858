// The main() of the multi-rank test executables (ConfigureRankTest): the job runs under run_ranks,
// every rank runs every test case (the collectives in them pair up), and rank 0's random seed is
// every rank's (TALLY_TEST_SEED), so per-rank inputs are reproducible from one printed number.
// GPU executables exit with skip_code before MPI starts when no CUDA device is usable (on every
// rank alike: they share a node).
#if __has_include(<catch2/catch_session.hpp>)
#include <catch2/catch_session.hpp>
#else
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#endif

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "rank_support.hpp"
#include "tally/common/device_info.hpp"
#include "tally/ranks/session.hpp"
#include "test_support.hpp"

namespace tally::test {
namespace {
ranks::Comm* g_world = nullptr;
}
ranks::Comm& world() { return *g_world; }
}  // namespace tally::test

int main(int argc, char** argv) {
#ifdef TALLY_TEST_GPU
  bool listing = false;
  for (int i = 1; i < argc; ++i) listing = listing || std::strncmp(argv[i], "--list", 6) == 0;
  if (!listing && tally::cuda_device_count() == 0) {
    std::printf("no usable CUDA device: GPU tests skipped\n");
    return tally::test::skip_code;
  }
#endif
  return tally::ranks::run_ranks("rank test", argc, argv, [&](tally::ranks::Comm& w) {
    tally::test::g_world = &w;
    std::uint64_t s = w.is_root() ? tally::test::seed() : 0;
    w.broadcast(std::span<std::uint64_t>(&s, 1));
    if (!w.is_root()) setenv("TALLY_TEST_SEED", std::to_string(s).c_str(), 1);
    return Catch::Session().run(argc, argv);
  });
}
