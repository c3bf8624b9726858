// tally-checksums: checksums of results of fixed problems, to hold a tree to a recorded baseline.
// See README.md beside this file.

#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "compare.hpp"
#include "h5hash.hpp"
#include "library.hpp"
#include "memory.hpp"
#include "tally/reduce/backend.hpp"

namespace {

constexpr const char* kUsage =
    "usage:\n"
    "  tally-checksums library --backend cpu|cuda         the library's fixed cases, one line each\n"
    "  tally-checksums hash [--prefix P] FILE NAME...     HDF5 datasets (/a/b) or attributes (/a@x, @x of the root)\n"
    "  tally-checksums compare RECORDED CURRENT           case by case; names every case that differs\n"
    "exit codes: 0 done / the same, 1 a difference or a failure, 2 bad usage, 77 no usable GPU / another kind of GPU\n";

int usage(const std::string& why) {
  std::fprintf(stderr, "tally-checksums: %s\n%s", why.c_str(), kUsage);
  return 2;
}

int library(const std::vector<std::string>& args) {
  if (args.size() != 2 || args[0] != "--backend" || (args[1] != "cpu" && args[1] != "cuda"))
    return usage("library: --backend cpu or --backend cuda");
  const bool cuda = args[1] == "cuda";
  if (cuda && (!tally::reduce::cuda_built() || tally::reduce::cuda_device_count() == 0)) {
    std::printf("no usable CUDA device%s: the GPU checksums are skipped\n",
                tally::reduce::cuda_built() ? "" : " (a build without the CUDA backend)");
    return checksums::skip_code;
  }
  const auto backend = cuda ? tally::reduce::Backend::cuda : tally::reduce::Backend::cpu;
  std::printf("# tally-checksums library --backend %s\n", args[1].c_str());
  std::printf("# columns reduce/ %s\n", checksums::kLevelNames);
  if (cuda) {
    std::printf("# device-key: %s\n", checksums::device_key().c_str());
    std::printf("# device: %s\n", checksums::device_name().c_str());
  }
  for (const std::string& line : checksums::library_checksums(backend)) std::printf("%s\n", line.c_str());
  return 0;
}

int hash(std::vector<std::string> args) {
  std::string prefix;
  if (args.size() >= 2 && args[0] == "--prefix") {
    prefix = args[1];
    args.erase(args.begin(), args.begin() + 2);
  }
  if (args.size() < 2) return usage("hash: a file and at least one dataset or attribute");
  for (std::size_t i = 1; i < args.size(); ++i)
    std::printf("%s%s %s\n", prefix.c_str(), args[i].c_str(), checksums::hash_h5(args[0], args[i]).c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> all(argv + 1, argv + argc);
  if (all.empty()) return usage("a command: library, hash or compare");
  const std::string cmd = all[0];
  const std::vector<std::string> args(all.begin() + 1, all.end());
  try {
    if (cmd == "library") return library(args);
    if (cmd == "hash") return hash(args);
    if (cmd == "compare") return args.size() == 2 ? checksums::compare_files(args[0], args[1]) : usage("compare: two files");
    return usage("unknown command " + cmd);
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "tally-checksums: %s\n", e.what());
    return 1;
  }
}
