// reduce-bench on the CUDA backend. Every time is the median of CUDA-event timings of single calls
// after warm-up; inputs smaller than a few L2 sizes rotate among copies so that the cache does not
// serve them; inputs are random (never zeros); the D2D copy bandwidth is measured in the same run.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "bench.hpp"
#include "ladder/ladder.hpp"
#include "tally/common/copy_bandwidth.cuh"
#include "tally/common/device_buffer.cuh"
#include "tally/common/device_info.hpp"
#include "tally/common/device_timer.cuh"
#include "tally/common/interrupt.hpp"
#include "tally/reduce/dot.hpp"
#include "tally/reduce/reduce.hpp"

namespace tally::reduce::bench {

namespace {

__device__ __forceinline__ std::uint64_t mix(std::uint64_t x) {  // splitmix64
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

/// Uniform values in [lo, hi] (integers: lo + hash % span), from a counter-based hash.
template <class T>
__global__ void fill_random(T* p, std::int64_t n, double lo, double hi, std::uint64_t seed) {
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::int64_t{gridDim.x} * blockDim.x) {
    const std::uint64_t h = mix(seed ^ static_cast<std::uint64_t>(i));
    if constexpr (std::is_integral_v<T>) {
      const auto span = static_cast<std::uint64_t>(hi - lo) + 1;
      p[i] = static_cast<T>(static_cast<std::int64_t>(lo) + static_cast<std::int64_t>(h % span));
    } else {
      p[i] = static_cast<T>(lo + (hi - lo) * static_cast<double>(h >> 11) * 0x1.0p-53);
    }
  }
}

/// Does nothing: its launch, timed like a reduction, is the floor under every "call" time.
__global__ void empty_kernel() {}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

/// The loop nests of the levels, shapes and openacc suites: one list each, read by the suites and
/// by Bench's sizing of its pools.
Extents levels_extents(const Options& o) { return o.quick ? Extents{16, 64, 256} : Extents{64, 1024, 256}; }
Extents openacc_extents(const Options& o) {
  return o.quick ? Extents{16, 64, 256} : Extents{o.extents[0], o.extents[1], o.extents[2]};
}
/// The shapes suite's sizes (2^lg elements, the full reduction it is compared with) and each one's nests.
std::vector<int> shapes_logs(const Options& o) { return o.quick ? std::vector<int>{22} : std::vector<int>{26, 28}; }
std::vector<Extents> shapes_extents(std::int64_t n) {
  std::vector<Extents> list;
  for (std::int64_t nv : {std::int64_t{1}, std::int64_t{2}, std::int64_t{16}, std::int64_t{32}, std::int64_t{1000},
                          std::int64_t{1} << 20}) {
    const std::int64_t ng = 64;
    const std::int64_t nw = std::max<std::int64_t>(1, n / (ng * nv));
    list.push_back({ng, nw, nv});
  }
  list.push_back({1, n >> 10, 1024});  // outermost extent 1
  return list;
}
/// The sweep's sizes (the full reductions of floats) and the exact suite's (of floats and doubles).
std::vector<int> sweep_logs(const Options& o) {
  if (o.quick) return {10, 16, 20, 24};
  std::vector<int> logs;
  for (int lg = 10; lg <= 30; lg += 2) logs.push_back(lg);
  return logs;
}
std::vector<int> exact_logs(const Options& o) {
  return o.quick ? std::vector<int>{16, 20} : std::vector<int>{16, 18, 20, 22, 24, 26, 28};
}
/// The exact dot's sizes (each of its two arrays).
std::vector<int> exact_dot_logs(const Options& o) {
  return o.quick ? std::vector<int>{16, 20} : std::vector<int>{16, 20, 24, 26};
}
std::int64_t ladder_size(const Options& o) { return std::int64_t{1} << (o.quick ? 20 : 24); }
std::size_t copy_ceiling_bytes(const Options& o) { return o.quick ? (std::size_t{64} << 20) : (std::size_t{1} << 30); }

/// The bytes of the largest input and of the largest output the chosen suites (o.suite) reduce, so
/// that the pools hold every case of --quick, of the full table and of any --extents.
struct PoolNeeds {
  std::size_t input = 0, output = 0;
  void nest(Extents e, std::size_t elem) {  // every level set of e, elements of at most `elem` bytes
    input = std::max(input, static_cast<std::size_t>(e.size()) * elem);
    for (Levels lv : Levels::all_sets())
      output = std::max(output, static_cast<std::size_t>(output_shape(e, lv).size()) * elem);
  }
  void full(std::int64_t n, std::size_t elem) {  // a full reduction: one or two scalars out
    input = std::max(input, static_cast<std::size_t>(n) * elem);
    output = std::max(output, 2 * elem);
  }
};
PoolNeeds pool_needs(const Options& o) {
  const bool all = o.suite == "all";
  PoolNeeds need;
  need.input = 2 * copy_ceiling_bytes(o);  // the copy ceiling's source and destination
  if (all || o.suite == "sweep")
    for (int lg : sweep_logs(o)) need.full(std::int64_t{1} << lg, sizeof(float));
  if (all || o.suite == "ladder") need.full(ladder_size(o), sizeof(float));
  if (all || o.suite == "levels") need.nest(levels_extents(o), sizeof(double));
  if (all || o.suite == "shapes")
    for (int lg : shapes_logs(o)) {
      need.full(std::int64_t{1} << lg, sizeof(float));
      for (Extents e : shapes_extents(std::int64_t{1} << lg)) need.nest(e, sizeof(float));
    }
  if (all || o.suite == "openacc") need.nest(openacc_extents(o), sizeof(double));
  if (all || o.suite == "exact") {
    for (int lg : exact_logs(o)) need.full(std::int64_t{1} << lg, sizeof(double));
    for (int lg : exact_dot_logs(o)) need.full(std::int64_t{2} << lg, sizeof(double));  // a and b, one after the other
  }
  return need;
}

template <class T>
const char* type_name() {
  if constexpr (std::is_same_v<T, std::int32_t>) return "int32";
  else if constexpr (std::is_same_v<T, std::int64_t>) return "int64";
  else if constexpr (std::is_same_v<T, float>) return "float";
  else return "double";
}

class Bench {
 public:
  explicit Bench(const Options& o) : o_(o), ws_(Backend::cuda) {
    TALLY_CUDA_TRY(cudaSetDevice(o.device));
    dev_ = query_device(o.device);
    ws_ = Workspace(Backend::cuda);
    TALLY_CUDA_TRY(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    // One pool for every input (rotated copies of small ones: at least 256 MiB, --quick, or 4 GiB), one
    // for outputs, each at least what the largest case of the chosen suites needs.
    const PoolNeeds need = pool_needs(o);
    pool_bytes_ =
        std::max(need.input, o.quick ? (std::size_t{256} << 20) : (std::size_t{4} << 30) + (std::size_t{64} << 20));
    pool_ = DeviceBuffer<unsigned char>(pool_bytes_);
    out_ = DeviceBuffer<unsigned char>(std::max<std::size_t>(need.output, 256));
    rep_.backend = "cuda";
    rep_.device = dev_.summary();
  }
  ~Bench() { cudaStreamDestroy(stream_); }
  Bench(const Bench&) = delete;
  Bench& operator=(const Bench&) = delete;

  Report run() {
    copy_ceiling();
    const bool all = o_.suite == "all";
    if (all || o_.suite == "sweep") sweep();
    if (all || o_.suite == "ladder") ladder();
    if (all || o_.suite == "levels") levels();
    if (all || o_.suite == "shapes") shapes();
    if (all || o_.suite == "openacc") openacc();
    if (all || o_.suite == "exact") exact();
    return rep_;
  }

 private:
  // ---- measurement --------------------------------------------------------------------------
  int reps_for(double bytes) const {
    if (o_.quick) return 7;
    return bytes > 256e6 ? 7 : 15;
  }

  /// Median time (us) per call of f(copy) over rotating copies, after two warm-up calls. K calls are
  /// captured in a CUDA graph and each replay is timed with events, so that the host's launch
  /// latency (several us, more than a small reduction takes) is not counted as GPU time.
  double time_us(const std::function<void(int)>& f, int reps, int copies, double bytes) {
    f(0);
    f(copies > 1 ? 1 : 0);  // warm-up: module load, workspace growth (no allocation while capturing)
    TALLY_CUDA_TRY(cudaStreamSynchronize(stream_));
    const int K = static_cast<int>(std::clamp(std::floor(1073741824.0 / std::max(bytes, 1.0)), 1.0, 20.0));
    cudaGraph_t graph{};
    cudaGraphExec_t exec{};
    TALLY_CUDA_TRY(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
    for (int k = 0; k < K; ++k) f(k % copies);
    TALLY_CUDA_TRY(cudaStreamEndCapture(stream_, &graph));
    TALLY_CUDA_TRY(cudaGraphInstantiate(&exec, graph, 0));
    TALLY_CUDA_TRY(cudaGraphLaunch(exec, stream_));
    EventTimer ev;
    std::vector<double> t;
    for (int r = 0; r < reps; ++r) {
      ev.start(stream_);
      TALLY_CUDA_TRY(cudaGraphLaunch(exec, stream_));
      ev.stop(stream_);
      t.push_back(1e3 * ev.elapsed_ms() / K);
    }
    TALLY_CUDA_TRY(cudaGraphExecDestroy(exec));
    TALLY_CUDA_TRY(cudaGraphDestroy(graph));
    // The same calls one at a time between two events: what a host loop sees, launch latency included.
    std::vector<double> c;
    for (int r = 0; r < reps; ++r) {
      ev.start(stream_);
      f(r % copies);
      ev.stop(stream_);
      c.push_back(1e3 * ev.elapsed_ms());
    }
    last_call_us_ = median(c);
    return median(t);
  }

  /// Copies of an input of `bytes` that rotate (enough to span 3 L2 sizes, within the pool).
  int copies_for(std::size_t bytes) const {
    const auto l2 = static_cast<std::size_t>(std::max<std::int64_t>(dev_.l2_bytes, 1 << 20));
    if (bytes >= 3 * l2) return 1;
    const std::size_t stride = (bytes + 255) / 256 * 256;
    return static_cast<int>(
        std::clamp<std::size_t>((3 * l2 + bytes - 1) / bytes, 1, std::min<std::size_t>(64, pool_bytes_ / stride)));
  }

  template <class T>
  T* input(std::size_t n, int copy) {
    const std::size_t stride = (n * sizeof(T) + 255) / 256 * 256;
    if (static_cast<std::size_t>(copy) * stride + n * sizeof(T) > pool_bytes_)  // pool_needs() missed a case
      throw std::logic_error("reduce-bench: input copy " + std::to_string(copy) + " of " +
                             std::to_string(n * sizeof(T)) + " bytes runs past the input pool (" +
                             std::to_string(pool_bytes_) + " bytes)");
    return reinterpret_cast<T*>(pool_.data() + static_cast<std::size_t>(copy) * stride);
  }

  /// Fills the whole pool with random T suited to the operator (never zeros as data).
  template <class T>
  void fill(bool for_prod) {
    const std::string key = std::string(type_name<T>()) + (for_prod ? "*" : "+");
    if (key == filled_) return;
    const std::int64_t n = static_cast<std::int64_t>(pool_bytes_ / sizeof(T));
    double lo = -1, hi = 1;
    if constexpr (std::is_integral_v<T>) lo = for_prod ? 1 : -100, hi = for_prod ? 1 : 100;  // int prod: all ones
    else if (for_prod) lo = 0.999, hi = 1.001;
    fill_random<T><<<4096, 256, 0, stream_>>>(reinterpret_cast<T*>(pool_.data()), n, lo, hi, o_.seed + filled_count_++);
    TALLY_CHECK_LAUNCH();
    filled_ = key;
  }

  void add(Row r) {
    interrupt::check("after " + r.suite + " " + r.name);  // a safe point: between cases
    if (r.suite != "copy") r.call_us = last_call_us_;
    r.gbs = r.input_bytes / (r.time_us * 1e3);
    if (rep_.ceiling_gbs > 0) r.vs_ceiling = r.gbs / rep_.ceiling_gbs;
    rep_.rows.push_back(std::move(r));
  }

  void copy_ceiling() {
    const std::size_t bytes = copy_ceiling_bytes(o_);
    fill<float>(false);
    unsigned char* src = pool_.data();
    unsigned char* dst = pool_.data() + bytes;  // the pool holds both (pool_needs)
    rep_.ceiling_gbs =
        tally::copy_bandwidth_gbs(dst, src, bytes, o_.quick ? 5 : 15, stream_);  // plain calls: slower in a graph
    const double us = 2.0 * static_cast<double>(bytes) / (rep_.ceiling_gbs * 1e3);
    rep_.ceiling_name = "cudaMemcpy D2D " + size_name(static_cast<std::int64_t>(bytes)) + " B (read + write)";
    Row r = make_row("copy", "cudaMemcpy D2D", "", "", "bytes", "", static_cast<std::int64_t>(bytes),
                     2.0 * double(bytes), 2.0 * double(bytes), us);
    add(r);
  }

  /// Times one full reduction through reduce_with(strategy).
  template <class Op, class T, class Acc = T>
  double time_full(Strategy s, std::int64_t n, int reps = 0) {
    const auto bytes = static_cast<std::size_t>(n) * sizeof(T);
    const int copies = copies_for(bytes);
    Acc* d_out = reinterpret_cast<Acc*>(out_.data());
    return time_us(
        [&](int c) {
          reduce_with<Op, T, Acc>(s, View<const T>::flat(input<T>(static_cast<std::size_t>(n), c), n),
                                  std::span<Acc>(d_out, 1), ws_, stream_);
        },
        reps > 0 ? reps : reps_for(static_cast<double>(bytes)), copies, static_cast<double>(bytes));
  }

  template <class Op, class T, class Acc = T>
  double time_levels(Extents e, Levels lv, double* out_bytes) {
    const auto n = e.size();
    const auto bytes = static_cast<std::size_t>(n) * sizeof(T);
    const int copies = copies_for(bytes);
    const std::int64_t nout = output_shape(e, lv).size();
    *out_bytes = static_cast<double>(nout) * sizeof(Acc);
    Acc* d_out = reinterpret_cast<Acc*>(out_.data());
    if (static_cast<std::size_t>(nout) * sizeof(Acc) > out_.size())  // pool_needs() missed a case
      throw std::logic_error("reduce-bench: an output of " + std::to_string(nout * std::int64_t{sizeof(Acc)}) +
                             " bytes does not fit the output pool (" + std::to_string(out_.size()) + " bytes)");
    return time_us(
        [&](int c) {
          reduce<Op, T, Acc>(Backend::cuda,
                             View<const T>::contiguous(input<T>(static_cast<std::size_t>(n), c), e.ng, e.nw, e.nv), lv,
                             std::span<Acc>(d_out, static_cast<std::size_t>(nout)), ws_, stream_);
        },
        reps_for(static_cast<double>(bytes)), copies, static_cast<double>(bytes));
  }

  /// The timed production result must equal CUB's (max: exactly; sum: within (n+1) eps n, |x| <= 1).
  template <class Op>
  void check_against_cub(std::int64_t n) {
    float* d = reinterpret_cast<float*>(out_.data());
    const auto v = View<const float>::flat(input<float>(static_cast<std::size_t>(n), 0), n);
    reduce_with<Op, float>(Strategy::cub, v, std::span<float>(d, 1), ws_, stream_);
    reduce_with<Op, float>(Strategy::production, v, std::span<float>(d + 1, 1), ws_, stream_);
    float h[2];
    TALLY_CUDA_TRY(cudaMemcpyAsync(h, d, sizeof h, cudaMemcpyDeviceToHost, stream_));
    TALLY_CUDA_TRY(cudaStreamSynchronize(stream_));
    const double tol = std::is_same_v<Op, Sum> ? double(n + 1) * 0x1.0p-23 * double(n) : 0.0;
    if (!(std::fabs(double(h[0]) - double(h[1])) <= tol)) {
      char line[200];
      std::snprintf(line, sizeof line, "| MISMATCH float %s %s: production %.9g, cub %.9g |", Op::name,
                    size_name(n).c_str(), h[1], h[0]);
      mismatches_.push_back(line);
    }
  }

  // ---- suites ---------------------------------------------------------------------------------
  template <class Op>
  void sweep_op(const std::vector<int>& logs) {
    fill<float>(false);
    for (int lg : logs) {
      const std::int64_t n = std::int64_t{1} << lg;
      const double cub = time_full<Op, float>(Strategy::cub, n);
      const double cub_call = last_call_us_;
      Row c = make_row("sweep", "cub", "gang+worker+vector", Op::name, "float", size_name(n), n, 4.0 * double(n),
                       4.0 * double(n), cub);
      add(c);
      const double prod = time_full<Op, float>(Strategy::production, n);
      const double prod_call = last_call_us_;
      Row r = make_row("sweep", "production", "gang+worker+vector", Op::name, "float", size_name(n), n, 4.0 * double(n),
                       4.0 * double(n), prod);
      r.vs_ref = cub / prod, r.ref = "cub time / this time";
      add(r);
      check_against_cub<Op>(n);
      if (lg == 16 || lg == 24 || lg == 28 || (o_.quick && lg == logs.back())) {
        char line[256];
        std::snprintf(line, sizeof line,
                      "| float %-4s %-5s | %8.2f / %8.2f us | %8.2f / %8.2f us | %5.2fx / %5.2fx | %5.1f%% |", Op::name,
                      size_name(n).c_str(), prod, prod_call, cub, cub_call, cub / prod, cub_call / prod_call,
                      100.0 * rep_.rows.back().vs_ceiling);
        headline_.push_back(line);
      }
    }
  }

  /// An empty kernel timed as the reductions are: in graph replays (the GPU's cost of a launch) and
  /// one call between two events (the host's launch latency, which no reduction can go below).
  void launch_floor() {
    const double us = time_us(
        [&](int) {
          empty_kernel<<<1, 32, 0, stream_>>>();
          TALLY_CHECK_LAUNCH();
        },
        15, 1, 0.0);
    add(make_row("sweep", "empty kernel", "", "", "", "", 0, 0, 0, us));
    char line[160];
    std::snprintf(line, sizeof line, "| empty kernel (launch floor) | %8.2f / %8.2f us | - | - | - |", us,
                  last_call_us_);
    headline_.push_back(line);
  }

  void sweep() {
    launch_floor();
    const std::vector<int> logs = sweep_logs(o_);
    sweep_op<Sum>(logs);
    sweep_op<Max>(logs);
  }

  void ladder() {
    fill<float>(false);
    const std::int64_t n = ladder_size(o_);
    double cub = 0;
    std::vector<Row> rows;
    for (Strategy s : all_strategies) {
      const double us = time_full<Sum, float>(s, n, s == Strategy::atomic ? 3 : 0);
      if (s == Strategy::cub) cub = us;
      rows.push_back(make_row("ladder", to_string(s), "gang+worker+vector", "sum", "float", size_name(n), n,
                              4.0 * double(n), 4.0 * double(n), us));
      rows.back().call_us = last_call_us_;  // this strategy's own per-call time
    }
    for (Row& r : rows) {
      r.vs_ref = cub / r.time_us, r.ref = "cub time / this time";
      const double call = r.call_us;
      add(r);
      rep_.rows.back().call_us = call;
    }
  }

  template <class Op, class T, class Acc = T>
  void levels_case(Extents e, const std::string& shape, const std::string& suite, double full_gbs_ref = 0) {
    for (Levels lv : Levels::all_sets()) {
      double out_bytes = 0;
      const double us = time_levels<Op, T, Acc>(e, lv, &out_bytes);
      Row r = make_row(suite, "production", lv.to_string(), Op::name, type_name<T>(), shape, e.size(),
                       double(e.size()) * double(sizeof(T)), 0, us);
      r.moved_bytes = r.input_bytes + out_bytes;
      if (full_gbs_ref > 0)
        r.vs_ref = (r.input_bytes / (us * 1e3)) / full_gbs_ref, r.ref = "bandwidth / full reduction's";
      add(r);
    }
  }

  template <class T>
  void levels_type(Extents e, const std::string& shape) {
    fill<T>(false);
    levels_case<Sum, T>(e, shape, "levels");
    levels_case<Max, T>(e, shape, "levels");
    levels_case<Min, T>(e, shape, "levels");
    fill<T>(true);
    levels_case<Prod, T>(e, shape, "levels");
  }

  void levels() {
    const Extents e = levels_extents(o_);
    const std::string shape = std::to_string(e.ng) + "x" + std::to_string(e.nw) + "x" + std::to_string(e.nv);
    levels_type<std::int32_t>(e, shape);
    levels_type<std::int64_t>(e, shape);
    levels_type<float>(e, shape);
    levels_type<double>(e, shape);
  }

  void shapes() {
    fill<float>(false);
    const std::vector<int> logs = shapes_logs(o_);
    double worst = 1e9;
    std::string worst_name;
    for (int lg : logs) {
      const std::int64_t n = std::int64_t{1} << lg;
      const double full_us = time_full<Sum, float>(Strategy::production, n);
      const double full_gbs = 4.0 * double(n) / (full_us * 1e3);
      for (Extents e : shapes_extents(n)) {
        const std::string shape = std::to_string(e.ng) + "x" + std::to_string(e.nw) + "x" + std::to_string(e.nv);
        const std::size_t first = rep_.rows.size();
        levels_case<Sum, float>(e, shape, "shapes", full_gbs);
        for (std::size_t i = first; i < rep_.rows.size(); ++i) {
          if (rep_.rows[i].vs_ref < worst)
            worst = rep_.rows[i].vs_ref, worst_name = rep_.rows[i].levels + " on " + shape;
        }
      }
    }
    char line[256];
    std::snprintf(line, sizeof line, "| shapes: worst level set vs full reduction | %s | %5.1f%% |", worst_name.c_str(),
                  100.0 * worst);
    headline_.push_back(line);
  }

  template <class Op, class T>
  void openacc_cell(Extents e) {
    const std::array<Levels, 6> rows = {Levels(Level::gang),           Levels(Level::worker),
                                        Levels(Level::vector),         Level::gang | Level::worker,
                                        Level::worker | Level::vector, Levels::all()};
    const std::string shape = std::to_string(e.ng) + "x" + std::to_string(e.nw) + "x" + std::to_string(e.nv);
    for (Levels lv : rows) {
      double out_bytes = 0;
      const double us = time_levels<Op, T, T>(e, lv, &out_bytes);
      Row r = make_row("openacc", "production", lv.to_string(), std::is_same_v<Op, Sum> ? "+" : "*", type_name<T>(),
                       shape, e.size(), double(e.size()) * double(sizeof(T)), 0, us);
      r.moved_bytes = r.input_bytes + out_bytes;
      add(r);
    }
  }

  /// The exact sum (ExactSum) of 2^16 .. 2^28 floats and doubles next to the ordinary sum and CUB,
  /// each result checked bitwise against the CPU backend's exact sum of the same array (a
  /// difference is a MISMATCH line). The toolkit's CUB (CCCL of CUDA 13.0) has no gpu_to_gpu
  /// determinism requirement for DeviceReduce::Sum, so there is no row for it.
  template <class T>
  void exact_type() {
    fill<T>(false);
    const std::vector<int> logs = exact_logs(o_);
    for (int lg : logs) {
      const std::int64_t n = std::int64_t{1} << lg;
      const double bytes = double(n) * double(sizeof(T));
      const double cub = time_full<Sum, T>(Strategy::cub, n);
      Row c = make_row("exact", "cub", "gang+worker+vector", "sum", type_name<T>(), size_name(n), n, bytes, bytes, cub);
      add(c);
      const double plain = time_full<Sum, T>(Strategy::production, n);
      Row p = make_row("exact", "production", "gang+worker+vector", "sum", type_name<T>(), size_name(n), n, bytes,
                       bytes, plain);
      p.vs_ref = cub / plain, p.ref = "cub time / this time";
      add(p);
      double ob = 0;
      const double ex = time_levels<ExactSum, T, T>(Extents{1, 1, n}, Levels::all(), &ob);
      const double ex_call = last_call_us_;
      Row e = make_row("exact", "exact", "gang+worker+vector", "exact_sum", type_name<T>(), size_name(n), n, bytes,
                       bytes, ex);
      e.vs_ref = plain / ex, e.ref = "ordinary sum time / this time";
      add(e);
      // The GPU's exact sum must be the CPU backend's, bit for bit.
      T* d = reinterpret_cast<T*>(out_.data());
      const T* in = input<T>(static_cast<std::size_t>(n), 0);
      reduce<ExactSum, T, T>(Backend::cuda, View<const T>::flat(in, n), Levels::all(), std::span<T>(d, 1), ws_,
                             stream_);
      std::vector<T> host(static_cast<std::size_t>(n));
      T gpu{};
      TALLY_CUDA_TRY(
          cudaMemcpyAsync(host.data(), in, static_cast<std::size_t>(n) * sizeof(T), cudaMemcpyDeviceToHost, stream_));
      TALLY_CUDA_TRY(cudaMemcpyAsync(&gpu, d, sizeof(T), cudaMemcpyDeviceToHost, stream_));
      TALLY_CUDA_TRY(cudaStreamSynchronize(stream_));
      Workspace cpu_ws(Backend::cpu);
      const T cpu = reduce_to_host<ExactSum, T, T>(Backend::cpu, View<const T>::flat(host.data(), n), cpu_ws);
      if (std::memcmp(&cpu, &gpu, sizeof(T)) != 0) {
        char line[200];
        std::snprintf(line, sizeof line, "| MISMATCH exact %s %s: cuda %.17g, cpu %.17g |", type_name<T>(),
                      size_name(n).c_str(), double(gpu), double(cpu));
        mismatches_.push_back(line);
      }
      if (lg == 16 || lg == 28 || (o_.quick && lg == logs.back())) {
        char line[256];
        std::snprintf(line, sizeof line, "| exact %-6s %-5s | %8.2f / %8.2f us | %8.2f us | %8.2f us | %5.2fx |",
                      type_name<T>(), size_name(n).c_str(), ex, ex_call, plain, cub, plain / ex);
        exact_headline_.push_back(line);
      }
    }
  }

  /// The exact dot product (exact_dot) of two arrays of 2^16 .. 2^26 values next to the ordinary sum
  /// of the same bytes (2n values: what an ordinary dot reads, at the production sum's rate), each
  /// result checked bitwise against the CPU backend's exact dot of the same arrays.
  template <class T>
  void exact_dot_type() {
    fill<T>(false);
    for (int lg : exact_dot_logs(o_)) {
      const std::int64_t n = std::int64_t{1} << lg;
      const double bytes = 2.0 * double(n) * double(sizeof(T));
      const double plain = time_full<Sum, T>(Strategy::production, 2 * n);
      const int copies = copies_for(2 * static_cast<std::size_t>(n) * sizeof(T));
      T* d = reinterpret_cast<T*>(out_.data());
      const auto operands = [&](int c) {
        const T* a = input<T>(2 * static_cast<std::size_t>(n), c);
        return std::pair<std::span<const T>, std::span<const T>>{{a, static_cast<std::size_t>(n)},
                                                                 {a + n, static_cast<std::size_t>(n)}};
      };
      const double ex = time_us(
          [&](int c) {
            const auto [a, b] = operands(c);
            exact_dot<T, T>(Backend::cuda, a, b, std::span<T>(d, 1), ws_, stream_);
          },
          reps_for(bytes), copies, bytes);
      Row e = make_row("exact", "exact dot", "gang+worker+vector", "exact_dot", type_name<T>(), size_name(n), n, bytes,
                       bytes, ex);
      e.vs_ref = plain / ex, e.ref = "ordinary sum of the same bytes (2n values) time / this time";
      add(e);
      // The GPU's exact dot must be the CPU backend's, bit for bit.
      const auto [a, b] = operands(0);
      exact_dot<T, T>(Backend::cuda, a, b, std::span<T>(d, 1), ws_, stream_);
      std::vector<T> host(2 * static_cast<std::size_t>(n));
      T gpu{};
      TALLY_CUDA_TRY(cudaMemcpyAsync(host.data(), a.data(), host.size() * sizeof(T), cudaMemcpyDeviceToHost, stream_));
      TALLY_CUDA_TRY(cudaMemcpyAsync(&gpu, d, sizeof(T), cudaMemcpyDeviceToHost, stream_));
      TALLY_CUDA_TRY(cudaStreamSynchronize(stream_));
      Workspace cpu_ws(Backend::cpu);
      const std::span<const T> ha(host.data(), static_cast<std::size_t>(n)),
          hb(host.data() + n, static_cast<std::size_t>(n));
      const T cpu = exact_dot_to_host<T, T>(Backend::cpu, ha, hb, cpu_ws);
      if (std::memcmp(&cpu, &gpu, sizeof(T)) != 0) {
        char line[200];
        std::snprintf(line, sizeof line, "| MISMATCH exact dot %s %s: cuda %.17g, cpu %.17g |", type_name<T>(),
                      size_name(n).c_str(), double(gpu), double(cpu));
        mismatches_.push_back(line);
      }
      if (lg == exact_dot_logs(o_).back()) {
        char line[256];
        std::snprintf(line, sizeof line, "| exact dot %-6s %-5s | %8.2f / %8.2f us | %8.2f us (2n) | - | %5.2fx |",
                      type_name<T>(), size_name(n).c_str(), ex, last_call_us_, plain, plain / ex);
        exact_headline_.push_back(line);
      }
    }
  }

  void exact() {
    exact_type<float>();
    exact_type<double>();
    exact_dot_type<float>();
    exact_dot_type<double>();
  }

  void openacc() {
    const Extents e = openacc_extents(o_);
    fill<std::int32_t>(false), openacc_cell<Sum, std::int32_t>(e);
    fill<std::int32_t>(true), openacc_cell<Prod, std::int32_t>(e);
    fill<float>(false), openacc_cell<Sum, float>(e);
    fill<float>(true), openacc_cell<Prod, float>(e);
    fill<double>(false), openacc_cell<Sum, double>(e);
    fill<double>(true), openacc_cell<Prod, double>(e);
  }

 public:
  std::vector<std::string> headline_, exact_headline_, mismatches_;

 private:
  Options o_;
  DeviceInfo dev_;
  Workspace ws_;
  cudaStream_t stream_{};
  std::size_t pool_bytes_ = 0;
  DeviceBuffer<unsigned char> pool_, out_;
  std::string filled_;
  std::uint64_t filled_count_ = 0;
  double last_call_us_ = 0;
  Report rep_;
};

}  // namespace

Report run_cuda(const Options& o) {
  Bench b(o);
  Report r = b.run();
  if (!b.headline_.empty()) {
    r.summary.push_back("| case | production graph / call | cub graph / call | cub/prod graph / call | prod/copy |");
    r.summary.push_back("| --- | --- | --- | --- | --- |");
    for (auto& l : b.headline_) r.summary.push_back(l);
  }
  if (!b.exact_headline_.empty()) {
    r.summary.push_back("| exact sum | exact graph / call | ordinary sum | cub | ordinary/exact time |");
    r.summary.push_back("| --- | --- | --- | --- | --- |");
    for (auto& l : b.exact_headline_) r.summary.push_back(l);
  }
  for (auto& l : b.mismatches_) r.summary.push_back(l);

  char line[160];
  std::snprintf(line, sizeof line, "| copy ceiling | %.0f GB/s | %s |", r.ceiling_gbs, r.ceiling_name.c_str());
  r.summary.push_back(line);
  return r;
}

namespace {

__global__ void fill_rank_input(float* p, std::int64_t n, std::int64_t offset, std::uint64_t seed) {
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::int64_t{gridDim.x} * blockDim.x)
    p[i] = rank_input_value(seed, offset + i);
}

/// The ranks suite on this rank's GPU (the rank level has made it current).
class CudaRankBench final : public RankBench {
 public:
  explicit CudaRankBench(int device) : dev_(query_device(device)) {
    TALLY_CUDA_TRY(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  }
  ~CudaRankBench() override { cudaStreamDestroy(stream_); }
  CudaRankBench(const CudaRankBench&) = delete;
  CudaRankBench& operator=(const CudaRankBench&) = delete;

  void fill(std::int64_t n, std::int64_t offset, std::uint64_t seed) override {
    in_ = DeviceBuffer<float>();  // the old array goes first: the whole one and a slab never coexist
    in_ = DeviceBuffer<float>(static_cast<std::size_t>(n));
    if (n > 0) {
      fill_rank_input<<<1024, 256, 0, stream_>>>(in_.data(), n, offset, seed);
      TALLY_CHECK_LAUNCH();
    }
    TALLY_CUDA_TRY(cudaStreamSynchronize(stream_));
  }
  [[nodiscard]] const float* data() const override { return in_.data(); }
  [[nodiscard]] float* result() override { return out_.data(); }
  [[nodiscard]] float read_result() override { return out_.to_host(stream_)[0]; }
  double time_us(const std::function<void()>& f) override {
    EventTimer ev;
    ev.start(stream_);
    f();
    ev.stop(stream_);
    return 1e3 * ev.elapsed_ms();
  }
  [[nodiscard]] stream_t stream() const override { return stream_; }
  [[nodiscard]] std::string device() const override { return dev_.summary(); }

 private:
  DeviceInfo dev_;
  cudaStream_t stream_{};
  DeviceBuffer<float> in_, out_{1};
};

}  // namespace

std::unique_ptr<RankBench> make_rank_bench_cuda(int device) { return std::make_unique<CudaRankBench>(device); }

}  // namespace tally::reduce::bench
