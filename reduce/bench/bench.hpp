#pragma once
// reduce-bench: one interface, one file per backend (bench_cuda.cu, bench_cpu.cpp); main.cpp, the
// driver, knows no backend beyond choosing one.
#include <array>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace tally::reduce::bench {

struct Options {
  std::string suite = "all";   ///< all | sweep | ladder | levels | shapes | openacc | exact
  bool quick = false;          ///< small sizes, seconds (scripts/run.sh; works on the CPU backend)
  std::array<std::int64_t, 3> extents{256, 256, 1024};  ///< the OpenACC loop nest (ng, nw, nv)
  std::uint64_t seed = 1;
  int device = 0;
  int threads = 0;             ///< CPU threads (0: OpenMP's default)
};

/// One measured case. time_us: median of repeated timings after warm-up; gbs: bytes of input read
/// (plus output written where `bytes_moved` says so) per second.
struct Row {
  std::string suite, name, levels, op, type, shape;
  std::int64_t n = 0;                 ///< input elements
  double input_bytes = 0, moved_bytes = 0;  ///< input read; input read + output written
  double time_us = 0, gbs = 0;        ///< GPU time per call (CUDA: graph replays); gbs = input_bytes / time_us
  double call_us = std::numeric_limits<double>::quiet_NaN();  ///< CUDA: one call between two events (host launch included)
  double vs_ceiling = std::numeric_limits<double>::quiet_NaN();  ///< gbs / copy (or Eigen) bandwidth
  double vs_ref = std::numeric_limits<double>::quiet_NaN();      ///< ref time / this time (or bandwidth ratio, see ref)
  std::string ref;                    ///< what vs_ref compares with
};

inline Row make_row(std::string suite, std::string name, std::string levels, std::string op, std::string type,
                    std::string shape, std::int64_t n, double input_bytes, double moved_bytes, double time_us) {
  Row r;
  r.suite = std::move(suite), r.name = std::move(name), r.levels = std::move(levels), r.op = std::move(op);
  r.type = std::move(type), r.shape = std::move(shape), r.n = n;
  r.input_bytes = input_bytes, r.moved_bytes = moved_bytes, r.time_us = time_us;
  return r;
}

struct Report {
  std::string backend, device;
  double ceiling_gbs = 0;  ///< CUDA: D2D copy (read + write) bandwidth; CPU: Eigen's sum bandwidth
  std::string ceiling_name;
  std::vector<Row> rows;
  std::vector<std::string> summary;  ///< the headline lines, printed last
};

/// Pretty size: "2^24" for powers of two, else the number.
std::string size_name(std::int64_t n);

Report run_cuda(const Options& o);
Report run_cpu(const Options& o);

}  // namespace tally::reduce::bench
