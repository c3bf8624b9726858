// tally-checksums: checksums of results of fixed problems, to hold a tree to a recorded baseline.
// See README.md beside this file.

#include <cstdio>
#include <exception>
#include <fstream>
#include <string>
#include <vector>

#include "compare.hpp"
#include "h5hash.hpp"
#include "library.hpp"
#include "memory.hpp"
#include "tally/common/device_info.hpp"
#include "tally/reduce/reduce.hpp"  // Backend, cuda_built(), cuda_device_count()

namespace {

constexpr const char* kUsage =
    "usage:\n"
    "  tally-checksums library --backend cpu|cuda         the library's fixed cases, one line each\n"
    "  tally-checksums hash [--prefix P] FILE NAME... [--prefix P2 FILE2 NAME...]...\n"
    "                                                     HDF5 datasets (/a/b) or attributes (/a@x, @x of the root)\n"
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
  if (cuda && (!tally::reduce::cuda_built() || tally::cuda_device_count() == 0)) {
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

// Groups of "[--prefix P] FILE NAME...": one line per NAME; a file or an object that cannot be read
// gives the value "no-file" or "unreadable" (and a message), so that the comparison names it.
int hash(const std::vector<std::string>& args) {
  int rc = 0;
  std::size_t i = 0;
  while (i < args.size()) {
    std::string prefix;
    if (args[i] == "--prefix") {
      if (i + 1 >= args.size()) return usage("hash: --prefix without a value");
      prefix = args[i + 1];
      i += 2;
    }
    if (i >= args.size()) return usage("hash: a file after --prefix " + prefix);
    const std::string file = args[i++];
    const bool exists = std::ifstream(file).good();
    std::size_t names = 0;
    for (; i < args.size() && args[i] != "--prefix"; ++i, ++names) {
      std::string value = "no-file";
      if (exists) {
        try {
          value = checksums::hash_h5(file, args[i]);
        } catch (const std::exception& e) {
          std::fprintf(stderr, "tally-checksums: %s\n", e.what());
          value = "unreadable";
        }
      }
      if (value == "no-file" || value == "unreadable") rc = 1;
      std::printf("%s%s %s\n", prefix.c_str(), args[i].c_str(), value.c_str());
    }
    if (names == 0) return usage("hash: no dataset or attribute named for " + file);
    if (!exists) std::fprintf(stderr, "tally-checksums: %s: no such file\n", file.c_str());
  }
  if (args.empty()) return usage("hash: a file and at least one dataset or attribute");
  return rc;
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
    if (cmd == "compare")
      return args.size() == 2 ? checksums::compare_files(args[0], args[1]) : usage("compare: two files");
    return usage("unknown command " + cmd);
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "tally-checksums: %s\n", e.what());
    return 1;
  }
}
