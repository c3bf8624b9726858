// The one main() of every test executable. GPU test executables (TALLY_TEST_GPU) exit with
// tally::test::skip_code when no CUDA device is usable, so CTest shows them as skipped, never passed.
#if __has_include(<catch2/catch_session.hpp>)
#include <catch2/catch_session.hpp>
#else
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#endif

#include <cstdio>
#include <cstring>

#include "test_support.hpp"

#ifdef TALLY_TEST_GPU
#include "tally/common/device_info.hpp"
#endif

int main(int argc, char** argv) {
#ifdef TALLY_TEST_GPU
  bool listing = false;
  for (int i = 1; i < argc; ++i) listing = listing || std::strncmp(argv[i], "--list", 6) == 0;
  if (!listing && tally::cuda_device_count() == 0) {
    std::printf("no usable CUDA device: GPU tests skipped\n");
    return tally::test::skip_code;
  }
#endif
  return Catch::Session().run(argc, argv);
}
