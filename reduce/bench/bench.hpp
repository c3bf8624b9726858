#pragma once
// reduce-bench: one interface, one file per backend (bench_cuda.cu, bench_cpu.cpp); main.cpp, the
// driver, knows no backend beyond choosing one.
#include <array>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tally/reduce/backend.hpp"
#include "tally/reduce/config.hpp"

namespace tally::ranks {
class Comm;
}

namespace tally::reduce::bench {

struct Options {
  std::string suite = "all";  ///< all | sweep | ladder | levels | shapes | openacc | exact | ranks, ops (not in all)
  bool quick = false;         ///< small sizes, seconds (scripts/run.sh; works on the CPU backend)
  std::array<std::int64_t, 3> extents{256, 256, 1024};  ///< the OpenACC loop nest (ng, nw, nv)
  bool extents_given = false;                           ///< --extents was given (the ranks suite has its own default)
  std::uint64_t seed = 1;
  int device = 0;
  int threads = 0;           ///< CPU threads (0: OpenMP's default)
  std::string segment_case;  ///< --suite segments: only the case of this name (empty: all)
};

/// One measured case. time_us: median of repeated timings after warm-up; gbs: bytes of input read
/// (plus output written where `bytes_moved` says so) per second.
struct Row {
  std::string suite, name, levels, op, type, shape;
  std::int64_t n = 0;                       ///< input elements
  double input_bytes = 0, moved_bytes = 0;  ///< input read; input read + output written
  double time_us = 0, gbs = 0;              ///< GPU time per call (CUDA: graph replays); gbs = input_bytes / time_us
  double call_us =
      std::numeric_limits<double>::quiet_NaN();  ///< CUDA: one call between two events (host launch included)
  double vs_ceiling = std::numeric_limits<double>::quiet_NaN();  ///< gbs / copy (or Eigen) bandwidth
  double vs_ref = std::numeric_limits<double>::quiet_NaN();      ///< ref time / this time (or bandwidth ratio, see ref)
  std::string ref;                                               ///< what vs_ref compares with
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
/// Host wall time of f in microseconds: the median of `reps` runs after one warm-up (bench_cpu.cpp).
double median_us(const std::function<void()>& f, int reps);
/// The medians of several functions timed in turns (each rep runs every one, a different one first),
/// so that a slow phase of a noisy host, or the order of the timings, falls on all of them alike.
std::vector<double> median_us_interleaved(const std::vector<std::function<void()>>& fs, int reps);
/// --suite ops (bench_ops.cu, bench_ops_cpu.cpp): the generic reducers against tally's sum, CUB, Eigen.
Report run_cuda_ops(const Options& o);
Report run_cpu_ops(const Options& o);

// ---- --suite segments (bench_segments.cu, bench_segments_cpu.cpp) ------------------------------------

/// A segment-length mix of the segments suite, over n elements in all.
struct SegmentCase {
  std::string name;
  std::int64_t uniform = 0;  ///< segments of this length (n a multiple of it); 0: the mix below
  bool power_law =
      false;  ///< lengths with P(L > x) ~ x^-1.2 (1 <= L <= n/4); else 10^5 of length 1, then one of the rest
};
/// The suite's cases over n elements; `only` non-empty: that case alone (InputError naming the cases
/// when there is none of that name).
std::vector<SegmentCase> segment_cases(std::int64_t n, const std::string& only = {});
/// The case's n_seg + 1 offsets (0 .. n), from `seed`.
std::vector<std::int64_t> segment_offsets(const SegmentCase& c, std::int64_t n, std::uint64_t seed);
Report run_segments_cuda(const Options& o);
Report run_segments_cpu(const Options& o);

// ---- --suite ranks (bench_ranks.cpp) ---------------------------------------------------------------

/// Element i of the ranks suite's global input: in (-1, 1), never 0 (an odd multiple of 2^-23), from
/// a counter-based hash, so that each rank fills its own slab of the same global array.
TALLY_HD float rank_input_value(std::uint64_t seed, std::int64_t i) {
  std::uint64_t x = seed ^ static_cast<std::uint64_t>(i);
  x += 0x9E3779B97F4A7C15ull;  // splitmix64
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  x ^= x >> 31;
  const auto k = static_cast<std::int64_t>(x >> 41);  // 23 bits
  return static_cast<float>(2 * k + 1 - (std::int64_t{1} << 23)) * 0x1.0p-23f;
}

/// What the ranks suite needs of a backend: its input in the backend's memory and one timed call.
class RankBench {
 public:
  virtual ~RankBench() = default;
  /// (Re)allocates the input to n floats: elements [offset, offset + n) of the global array.
  virtual void fill(std::int64_t n, std::int64_t offset, std::uint64_t seed) = 0;
  [[nodiscard]] virtual const float* data() const = 0;
  /// A one-float result slot in the backend's memory, and its value on the host (waits).
  [[nodiscard]] virtual float* result() = 0;
  [[nodiscard]] virtual float read_result() = 0;
  /// Microseconds of one call of f (CUDA: events on stream(); CPU: a host timer).
  virtual double time_us(const std::function<void()>& f) = 0;
  [[nodiscard]] virtual stream_t stream() const = 0;
  [[nodiscard]] virtual std::string device() const = 0;
};
std::unique_ptr<RankBench> make_rank_bench_cuda(int device);
std::unique_ptr<RankBench> make_rank_bench_cpu(int threads);

/// The full Sum of the global array (o.extents, split along gang over the ranks): the aggregate
/// bandwidth against the number of ranks times rank 0's single-process figure. Collective.
Report run_ranks_suite(const Options& o, ranks::Comm& comm, Backend backend);

}  // namespace tally::reduce::bench
