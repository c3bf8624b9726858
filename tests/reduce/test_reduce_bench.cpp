// reduce-bench --quick on the GPU (the benchmark command of scripts/run.sh): every suite of `all`,
// then ops, segments and ranks (one process), run to the end and pass their own checks (production
// against CUB, the exact sum against the CPU backend's, the reducers and segmented sums against CUB
// and the host): exit 0 and a file. A GPU test: skipped without a usable GPU (support/main.cpp).
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "catch.hpp"

namespace {

/// reduce-bench --quick --backend cuda `args` --out `out`; its exit code (-1 when it did not exit).
int run_bench(const std::string& args, const std::filesystem::path& out) {
  const std::string cmd =
      std::string(REDUCE_BENCH_EXE) + " --quick --backend cuda " + args + " --out '" + out.string() + "'";
  const int status = std::system(cmd.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

TEST_CASE("reduce-bench --quick --backend cuda: every suite runs and passes its checks", "[bench][gpu]") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("reduce_bench_gpu_" + std::to_string(getpid()));
  fs::create_directories(dir);
  for (const char* suite : {"all", "ops", "segments", "ranks"}) {
    INFO("--suite " << suite);
    const fs::path out = dir / (std::string(suite) + ".h5");
    CHECK(run_bench(std::string("--suite ") + suite, out) == 0);
    CHECK(fs::exists(out));
  }
  fs::remove_all(dir);
}
