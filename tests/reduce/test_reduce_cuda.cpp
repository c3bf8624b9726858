// The generic suite (reduce_checks.hpp) on the CUDA backend, plus what only the GPU has: an input
// of more than 2^31 elements, user streams, a workspace that stops growing, the ladder of strategies.
// Built only with the CUDA backend; exits 77 (skipped) without a usable device.
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstring>
#include <random>
#include <span>
#include <vector>

#include "tally/common/cuda_check.cuh"
#include "tally/common/device_buffer.cuh"
#include "custom_reducers.hpp"
#include "ladder/ladder.hpp"
#include "segmented_custom.hpp"
#include "tally/reduce/detail/tuning_cuda.hpp"
#include "tally/reduce/reduce.hpp"

namespace tally::test {

/// The CUDA backend's adapter for reduce_checks.hpp: buffers are device memory, work goes to the
/// legacy default stream, downloads wait for it.
struct CudaBackend {
  static constexpr reduce::Backend backend = reduce::Backend::cuda;
  static constexpr reduce::Backend other = reduce::Backend::cpu;
  template <class T>
  using Buffer = tally::DeviceBuffer<T>;

  template <class T>
  static Buffer<T> upload(const std::vector<T>& host) {
    return Buffer<T>(std::span<const T>(host));
  }
  template <class T>
  static Buffer<T> poisoned(std::size_t n, unsigned char byte) {
    Buffer<T> b(n);
    b.fill_bytes(byte);
    return b;
  }
  template <class T>
  static std::vector<T> download(const Buffer<T>& b) {
    return b.to_host();
  }
  static stream_t stream() { return nullptr; }
  template <class R, class T>
  static void reduce_custom(reduce::View<const T> in, reduce::Levels levels, std::span<typename R::value_type> out,
                            reduce::Workspace& ws) {
    custom_reduce_cuda<R, T>(in, levels, out, ws);
  }
  template <class R, class T, class Off>
  static void segmented_custom(std::span<const T> in, std::span<const Off> offsets,
                               std::span<typename R::value_type> out, reduce::Workspace& ws) {
    custom_segmented_cuda<R, T, Off>(in, offsets, out, ws);
  }
};

}  // namespace tally::test

#define TALLY_TEST_BACKEND "cuda"
using TestBackend = tally::test::CudaBackend;
#include "reduce_checks.hpp"
#include "mean_checks.hpp"
#include "exact_checks.hpp"
#include "dot_checks.hpp"
#include "reducer_checks.hpp"
#include "segmented_checks.hpp"
#include "segmented_reducer_checks.hpp"

namespace tally::test::reduce_checks {

TEST_CASE("cuda: an input of more than 2^31 elements", "[reduce][large]") {
  // int32, M = 2^30 + 2^19 + 3 per row, two rows: N = 2^31 + 2^20 + 6 elements (8.6 GB). Bytes 0x01
  // below element 2^31 and 0x02 from there on, so an index that wraps at 2^31 reads the wrong half;
  // two single elements stand out beyond 2^31.
  const int64_t M = (int64_t{1} << 30) + (int64_t{1} << 19) + 3, N = 2 * M, half = int64_t{1} << 31;
  std::size_t free_bytes = 0, total_bytes = 0;
  TALLY_CUDA_TRY(cudaMemGetInfo(&free_bytes, &total_bytes));
  if (free_bytes < static_cast<std::size_t>(N) * sizeof(int32_t) + (std::size_t{1} << 30)) {
    WARN("not enough device memory for the 2^31+ element test (" << free_bytes << " bytes free): not run");
    return;
  }
  const int64_t a = 0x01010101, b = 0x02020202, p_min = half + 5, p_max = N - 1;
  const int32_t v_min = -5, v_max = std::numeric_limits<int32_t>::max();
  DeviceBuffer<int32_t> d(static_cast<std::size_t>(N));
  TALLY_CUDA_TRY(cudaMemset(d.data(), 0x01, static_cast<std::size_t>(half) * sizeof(int32_t)));
  TALLY_CUDA_TRY(cudaMemset(d.data() + half, 0x02, static_cast<std::size_t>(N - half) * sizeof(int32_t)));
  TALLY_CUDA_TRY(cudaMemcpy(d.data() + p_min, &v_min, sizeof(int32_t), cudaMemcpyHostToDevice));
  TALLY_CUDA_TRY(cudaMemcpy(d.data() + p_max, &v_max, sizeof(int32_t), cudaMemcpyHostToDevice));
  const auto value = [&](int64_t e) {
    return e == p_min ? int64_t{v_min} : e == p_max ? int64_t{v_max} : e < half ? a : b;
  };
  const auto range_sum = [&](int64_t lo, int64_t hi) {  // sum of elements [lo, hi), analytically
    const int64_t na = std::max<int64_t>(0, std::min(hi, half) - lo), nb = (hi - lo) - na;
    int64_t s = na * a + nb * b;
    for (int64_t p : {p_min, p_max})
      if (p >= lo && p < hi) s += value(p) - (p < half ? a : b);
    return s;
  };
  Workspace ws(Backend::cuda);
  const auto flat = View<const int32_t>::flat(d.data(), N);
  CHECK(reduce_to_host<Sum, int32_t, int64_t>(Backend::cuda, flat, ws) == range_sum(0, N));
  CHECK(reduce_to_host<Max, int32_t>(Backend::cuda, flat, ws) == v_max);
  CHECK(reduce_to_host<Min, int32_t>(Backend::cuda, flat, ws) == v_min);
  // Per row: the second row starts below 2^31 and ends above it.
  const auto rows = View<const int32_t>::contiguous(d.data(), 1, 2, M);
  DeviceBuffer<int64_t> d_sum(2);
  DeviceBuffer<int32_t> d_max(2);
  reduce<Sum, int32_t, int64_t>(Backend::cuda, rows, Level::vector, d_sum.span(), ws);
  reduce<Max, int32_t>(Backend::cuda, rows, Level::worker | Level::vector, std::span<int32_t>(d_max.data(), 1), ws);
  const auto sums = d_sum.to_host();
  CHECK(sums[0] == range_sum(0, M));
  CHECK(sums[1] == range_sum(M, N));
  CHECK(d_max.to_host()[0] == v_max);

  // The generic reducers' int64 indices past 2^31. Without the last element the maximum is b, tied
  // from element 2^31 on: the first index, exactly 2^31, must win across the blocks.
  const auto amax =
      reduce_to_host<ArgMax<int32_t>, int32_t>(Backend::cuda, View<const int32_t>::flat(d.data(), N - 1), ws);
  CHECK((amax.index == half && amax.value == b));
  const auto amax_all = reduce_to_host<ArgMax<int32_t>, int32_t>(Backend::cuda, flat, ws);
  CHECK((amax_all.index == p_max && amax_all.value == v_max));
  const auto amin = reduce_to_host<ArgMin<int32_t>, int32_t>(Backend::cuda, flat, ws);
  CHECK((amin.index == p_min && amin.value == v_min));
  const auto mm = reduce_to_host<MinMax<int32_t>, int32_t>(Backend::cuda, flat, ws);
  CHECK((mm.min == v_min && mm.max == v_max));
  const auto mv = reduce_to_host<MeanVar, int32_t>(Backend::cuda, flat, ws);
  CHECK(mv.count == static_cast<double>(N));
  CHECK(std::abs(mv.mean - static_cast<double>(range_sum(0, N)) / static_cast<double>(N)) <=
        1e-9 * static_cast<double>(b));
  // Per row (a block per output): row 1 runs across 2^31.
  DeviceBuffer<ValueIndex<int32_t>> d_arg(2);
  reduce<ArgMax<int32_t>, int32_t>(Backend::cuda, rows, Level::vector, d_arg.span(), ws);
  auto args = d_arg.to_host();
  CHECK((args[0].index == 0 && args[0].value == a));  // row 0: all a, the first
  CHECK((args[1].index == p_max - M && args[1].value == v_max));
  reduce<ArgMin<int32_t>, int32_t>(Backend::cuda, rows, Level::vector, d_arg.span(), ws);
  args = d_arg.to_host();
  CHECK((args[1].index == p_min - M && args[1].value == v_min));
  // All levels of the two rows (a strided walk when the rows are padded: here one contiguous run of N).
  const auto arg2 = reduce_to_host<ArgMin<int32_t>, int32_t>(Backend::cuda, rows, ws);
  CHECK(arg2.index == p_min);
}

TEST_CASE("cuda: reductions on a user stream, results left on the device", "[reduce][stream]") {
  cudaStream_t s = nullptr;
  TALLY_CUDA_TRY(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  {
    const Extents e{17, 1025, 33};
    const auto x = make_input<Sum, double, double>(static_cast<std::size_t>(e.size()), e.size(), 8000);
    DeviceBuffer<double> d_x(std::span<const double>(x), s);
    DeviceBuffer<double> d_out(static_cast<std::size_t>(e.nw));
    d_out.fill_bytes(0xFF, s);
    Workspace ws(Backend::cuda);
    const auto in = View<const double>::contiguous(d_x.data(), e.ng, e.nw, e.nv);
    reduce<Sum, double>(Backend::cuda, in, Level::gang | Level::vector, d_out.span(), ws, s);
    const auto ref = reference<Sum, double, double>(x.data(), e, e.nv, e.nw * e.nv, Level::gang | Level::vector);
    CHECK(compare<Sum>(d_out.to_host(s), ref).empty());
    const auto full = reference<Max, double, double>(x.data(), e, e.nv, e.nw * e.nv, Levels::all());
    CHECK(reduce_to_host<Max, double>(Backend::cuda, in, ws, s) == full.value[0]);
  }
  TALLY_CUDA_TRY(cudaStreamDestroy(s));
}

TEST_CASE("cuda: a reduction reads what the kernel before it wrote (programmatic launch)", "[reduce][stream]") {
  // Each production kernel may start while its predecessor on the stream is finishing, and lets its
  // own successor start at once: B must wait for A's output before reading it. A reduces 2^24 ones
  // (several microseconds), B reduces the array A writes into, at once; without the wait, B reads
  // A's slot before it is written. Pairs cover the flat, block-per-chunk and outer kernels.
  constexpr int K = 24;
  constexpr std::int64_t n = std::int64_t{1} << 24;
  cudaStream_t s = nullptr;
  TALLY_CUDA_TRY(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  {
    const std::vector<std::int32_t> ones(static_cast<std::size_t>(n), 1);
    DeviceBuffer<std::int32_t> d_x(std::span<const std::int32_t>(ones), s);
    DeviceBuffer<std::int64_t> d_y(4 * K), d_full(K), d_cols(4 * K);
    d_y.fill_bytes(0, s);
    Workspace ws(Backend::cuda);
    const auto x = View<const std::int32_t>::flat(d_x.data(), n);
    const auto x4 = View<const std::int32_t>::contiguous(d_x.data(), 1, 4, n / 4);
    for (int k = 0; k < K; ++k) {
      // A: flat (full sum into y[4k]) or block-per-chunk (4 row sums into y[4k..4k+4)).
      if (k % 2 == 0)
        reduce<Sum, std::int32_t, std::int64_t>(Backend::cuda, x, Levels::all(), d_y.span().subspan(4 * k, 1), ws, s);
      else
        reduce<Sum, std::int32_t, std::int64_t>(Backend::cuda, x4, Level::vector, d_y.span().subspan(4 * k, 4), ws, s);
      // B: the full sum of y[0, 4k + 4) (flat), then its columns (gang over (k+1) x 4: outer).
      const auto y = View<const std::int64_t>::contiguous(d_y.data(), k + 1, 1, 4);
      reduce<Sum, std::int64_t>(Backend::cuda, y, Levels::all(), d_full.span().subspan(k, 1), ws, s);
      reduce<Sum, std::int64_t>(Backend::cuda, y, Level::gang, d_cols.span().subspan(4 * k, 4), ws, s);
    }
    const auto full = d_full.to_host(s), cols = d_cols.to_host(s);
    std::int64_t expect_full = 0, expect_col[4] = {0, 0, 0, 0};
    for (int k = 0; k < K; ++k) {
      if (k % 2 == 0) expect_full += n, expect_col[0] += n;
      else
        for (auto& c : expect_col) c += n / 4, expect_full += n / 4;
      INFO("pair " << k);
      CHECK(full[static_cast<std::size_t>(k)] == expect_full);
      for (int c = 0; c < 4; ++c) CHECK(cols[static_cast<std::size_t>(4 * k + c)] == expect_col[c]);
    }
  }
  TALLY_CUDA_TRY(cudaStreamDestroy(s));
}

TEST_CASE("cuda: the workspace stops growing once sized", "[reduce][workspace]") {
  Workspace ws(Backend::cuda);
  const Extents e{9, 1025, 1023};
  const auto x = make_input<Sum, float, float>(static_cast<std::size_t>(e.size()), e.size(), 9000);
  DeviceBuffer<float> d_x{std::span<const float>(x)};
  DeviceBuffer<double> d_out(static_cast<std::size_t>(e.size()));
  const auto in = View<const float>::contiguous(d_x.data(), e.ng, e.nw, e.nv);
  const auto run_all = [&] {
    for (Levels lv : Levels::all_sets())
      reduce<Sum, float, double>(Backend::cuda, in, lv,
                                 std::span<double>(d_out.data(), static_cast<std::size_t>(output_shape(e, lv).size())),
                                 ws);
  };
  run_all();  // warm-up: the workspace grows to what these need
  const int grown = ws.allocations();
  run_all();
  run_all();
  TALLY_CUDA_TRY(cudaDeviceSynchronize());
  CHECK(ws.allocations() == grown);
}

TEST_CASE("cuda: every strategy of the ladder computes the full sum", "[reduce][ladder]") {
  using namespace tally::reduce::bench;
  Workspace ws(Backend::cuda);
  const int64_t n = (int64_t{1} << 22) + 7;
  const auto x = make_input<Sum, float, float>(static_cast<std::size_t>(n), n, 10000);
  DeviceBuffer<float> d_x{std::span<const float>(x)};
  const auto ref = reference<Sum, float, float>(x.data(), {1, 1, n}, n, n, Levels::all());
  for (Strategy s : all_strategies) {
    INFO("strategy " << to_string(s));
    DeviceBuffer<float> d_out(1);
    d_out.fill_bytes(0xFF);
    std::string err;
    try {
      reduce_with<Sum, float>(s, View<const float>::flat(d_x.data(), n), d_out.span(), ws);
      err = compare<Sum>(d_out.to_host(), ref);
    } catch (const std::exception& e) {
      err = e.what();
    }
    INFO(err);
    CHECK(err.empty());
    if (err.empty() && is_deterministic(s)) {
      const float first = d_out.to_host()[0];
      reduce_with<Sum, float>(s, View<const float>::flat(d_x.data(), n), d_out.span(), ws);
      CHECK(std::memcmp(&first, d_out.to_host().data(), sizeof(float)) == 0);
    }
  }
}

}  // namespace tally::test::reduce_checks

namespace tally::test::exact_checks {

TEST_CASE("cuda: the exact sum of more than 2^31 floats", "[reduce][exact][large]") {
  // N = 2^31 + 5 floats (8.6 GB): bytes 0x01 below element 2^31 (a = 0x01010101, 0x810101 2^-148)
  // and 0x02 from there (b = 0x02020202, 0x820202 2^-146), so an index that wraps at 2^31 changes the
  // sum; beyond 2^31 a cancelling pair 1e30, -1e30 and a 1 that the float sum would lose.
  const int64_t half = int64_t{1} << 31, N = half + 5;
  std::size_t free_bytes = 0, total_bytes = 0;
  TALLY_CUDA_TRY(cudaMemGetInfo(&free_bytes, &total_bytes));
  if (free_bytes < static_cast<std::size_t>(N) * sizeof(float) + (std::size_t{1} << 30)) {
    WARN("not enough device memory for the 2^31+ element exact sum (" << free_bytes << " bytes free): not run");
    return;
  }
  DeviceBuffer<float> d(static_cast<std::size_t>(N));
  TALLY_CUDA_TRY(cudaMemset(d.data(), 0x01, static_cast<std::size_t>(half) * sizeof(float)));
  TALLY_CUDA_TRY(cudaMemset(d.data() + half, 0x02, static_cast<std::size_t>(N - half) * sizeof(float)));
  const float big = 1e30f, one = 1.0f, nbig = -1e30f;
  TALLY_CUDA_TRY(cudaMemcpy(d.data() + half + 1, &big, sizeof(float), cudaMemcpyHostToDevice));
  TALLY_CUDA_TRY(cudaMemcpy(d.data() + half + 3, &one, sizeof(float), cudaMemcpyHostToDevice));
  TALLY_CUDA_TRY(cudaMemcpy(d.data() + N - 1, &nbig, sizeof(float), cudaMemcpyHostToDevice));
  // Exact: 2^31 a + 2 b + 1 (each term exact in double), rounded by the independent reference.
  const std::vector<double> terms = {std::ldexp(double(0x810101), 31 - 148), 2.0 * std::ldexp(double(0x820202), -146),
                                     1.0};
  Workspace ws(Backend::cuda);
  const auto in = View<const float>::flat(d.data(), N);
  const float f = reduce_to_host<ExactSum, float, float>(Backend::cuda, in, ws);
  const double g = reduce_to_host<ExactSum, float, double>(Backend::cuda, in, ws);
  CHECK(bits_of(f) == bits_of(exact_reference<float>(terms)));
  CHECK(bits_of(g) == bits_of(exact_reference<double>(terms)));
}

TEST_CASE("cuda: the exact sum of small grids (a batch a thread or less) is the exact sum correctly rounded",
          "[reduce][exact]") {
  // The flat kernel's small grids (less than a wave: each thread one batch of ReducePolicy::unroll 16-byte
  // vectors, the plain loop) around their edges, with ragged ends: wide values, cancellation and
  // specials, against the independent reference.
  Workspace ws(Backend::cuda);
  std::uint64_t salt = 9600;
  for_each_pair([&]<class T, class Out>() {
    using tally::reduce::detail::ReducePolicy;
    constexpr std::size_t blk = ReducePolicy::block * 16 / sizeof(T) * ReducePolicy::unroll;  // a block's batch
    const T big = std::is_same_v<T, float> ? T(1e30f) : T(1e300);
    // Values the bins take whole (the tail's path where a block's shared words are all zero), and
    // the same with strays (2^-60 and 2^80 scaled) that leave residues in some blocks' shared limbs.
    const auto binned = [&](std::size_t n, int strays) {
      auto g = tally::test::rng(++salt);
      std::uniform_real_distribution<double> u(-1.0, 1.0);
      std::vector<T> v(n);
      for (auto& x : v) x = static_cast<T>(u(g));
      for (int k = 0; k < strays; ++k) v[g() % n] = static_cast<T>(std::ldexp(u(g), k % 2 == 0 ? -60 : 80));
      return v;
    };
    for (std::size_t n :
         {blk + 1, 3 * blk - 5, 16 * blk, 16 * blk + 7, 17 * blk, 31 * blk + 3, 32 * blk, 32 * blk + 1}) {
      check_full<TestBackend, T, Out>(ws, wide_values<T>(n, ++salt), "values across the exponent range");
      check_full<TestBackend, T, Out>(ws, spread<T>({big, T(1), -big, T(-0.25)}, n, ++salt),
                                      "(big, 1, -big, -0.25) among zeros");
      check_full<TestBackend, T, Out>(ws, binned(n, 0), "uniform in (-1, 1)");
      check_full<TestBackend, T, Out>(ws, binned(n, 5), "uniform in (-1, 1) and five strays");
    }
    const T inf = std::numeric_limits<T>::infinity(), mx = std::numeric_limits<T>::max();
    CHECK(std::isnan(full<TestBackend, T, Out>(ws, spread<T>({inf, T(1), -inf}, 16 * blk, ++salt))));
    CHECK(full<TestBackend, T, Out>(ws, spread<T>({mx, mx, -mx}, 20 * blk, ++salt)) == static_cast<Out>(mx));
    CHECK(bits_of(full<TestBackend, T, Out>(ws, std::vector<T>(16 * blk, T(-0.0)))) == bits_of(Out(-0.0)));
  });
}

TEST_CASE("cuda: the exact sum is bitwise the same for any grid size (tuning) and equals the CPU backend",
          "[reduce][exact][determinism]") {
  Workspace ws(Backend::cuda);
  Workspace cpu_ws(Backend::cpu);
  // The grids are sized from the workspace's tuning: pretend devices of 1, 7 and 1000 SMs. The
  // workspace owns its Tuning; changing it here is the test's way to vary the launch shape.
  auto& tune = const_cast<Tuning&>(ws.tuning());
  const Tuning real = tune;
  std::uint64_t salt = 9500;
  for (const Extents& e : {Extents{1, 1, (int64_t{1} << 22) + 3}, Extents{3, 1025, 1023}, Extents{2, 16411, 8},
                           Extents{1023, 33, 2}, Extents{64, 3, 5000}}) {
    const auto x = wide_values<double>(static_cast<std::size_t>(e.size()), ++salt);
    std::vector<float> xf(x.begin(), x.end());
    auto d = TestBackend::upload(x);
    auto df = TestBackend::upload(xf);
    for (Levels lv : Levels::all_sets()) {
      const auto want = run<TestBackend, double, double>(
          cpu_ws, Backend::cpu, View<const double>::contiguous(x.data(), e.ng, e.nw, e.nv), lv);
      const auto want_f = run<TestBackend, float, float>(
          cpu_ws, Backend::cpu, View<const float>::contiguous(xf.data(), e.ng, e.nw, e.nv), lv);
      for (int sms : {1, 7, real.sm_count, 1000}) {
        tune.sm_count = sms;
        INFO("exact sum over " << lv.to_string() << " of " << shape_name(e, false) << " sized for " << sms << " SMs");
        CHECK(bitwise_equal(
            want, run<TestBackend, double, double>(ws, Backend::cuda,
                                                   View<const double>::contiguous(d.data(), e.ng, e.nw, e.nv), lv)));
        CHECK(bitwise_equal(
            want_f, run<TestBackend, float, float>(ws, Backend::cuda,
                                                   View<const float>::contiguous(df.data(), e.ng, e.nw, e.nv), lv)));
      }
      tune = real;
    }
  }
}

}  // namespace tally::test::exact_checks

namespace tally::test::reduce_checks {

/// What lane 0 of a group of G lanes computes for one row of L elements read as V-element vectors
/// (inner_lanes.cuh): each lane folds its vector from the identity with thread.cuh's pairwise tree, then
/// the lanes' values are joined by the xor tree (level w: lane i < w takes combine(own, lane i + w)).
template <class Acc, class T>
Acc lane_group_order(const T* row, int64_t L, int V) {
  int64_t G = 1;
  while (G * V < L) G *= 2;
  std::vector<Acc> x(static_cast<std::size_t>(G), Acc{0});
  for (int64_t i = 0; i * V < L; ++i) {
    std::vector<Acc> t(row + i * V, row + i * V + V);
    for (int w = 1; w < V; w *= 2)
      for (int k = 0; k + w < V; k += 2 * w) t[static_cast<std::size_t>(k)] += t[static_cast<std::size_t>(k + w)];
    x[static_cast<std::size_t>(i)] = Acc{0} + t[0];
  }
  for (int64_t w = G / 2; w > 0; w /= 2)
    for (int64_t i = 0; i < w; ++i) x[static_cast<std::size_t>(i)] += x[static_cast<std::size_t>(i + w)];
  return x[0];
}

TEST_CASE("cuda: short rows (up to 4 vectors, a thread each) are summed in the lane-group order",
          "[reduce][determinism]") {
  // Rows of up to 4 vectors are reduced one a thread (inner_thread_kernel), computing what a group
  // of lanes and its shuffle tree compute for longer rows; checked against that order written out.
  Workspace ws(Backend::cuda);
  std::uint64_t salt = 9100;
  const auto check = [&]<class T, class Acc>(int64_t L) {
    const int64_t rows = 3001;
    const auto x = make_input<Sum, T, Acc>(static_cast<std::size_t>(rows * L), L, ++salt);
    auto d = CudaBackend::upload(x);
    constexpr int V16 = static_cast<int>(16 / sizeof(T));  // the plan's vectors: 16 bytes, else 8 (4-byte T), else 1
    const int V = L % V16 == 0 ? V16 : (V16 / 2 > 1 && L % (V16 / 2) == 0 ? V16 / 2 : 1);
    DeviceBuffer<Acc> out(static_cast<std::size_t>(rows));
    segmented_reduce_fixed<Sum, T, Acc>(Backend::cuda, std::span<const T>(d.data(), x.size()), L, out.span(), ws);
    const auto got = out.to_host();
    int64_t differ = 0;
    for (int64_t r = 0; r < rows; ++r) {
      const Acc want = lane_group_order<Acc>(x.data() + r * L, L, V);
      differ += std::memcmp(&want, &got[static_cast<std::size_t>(r)], sizeof(Acc)) != 0;
    }
    INFO("rows of " << L << " " << (sizeof(T) == 4 ? "float" : "double") << " into "
                    << (sizeof(Acc) == 4 ? "float" : "double") << ", vectors of " << V << " (seed "
                    << tally::test::seed() << ", salt " << salt << "): " << differ << " rows differ");
    CHECK(differ == 0);
  };
  for (int64_t L : {1, 2, 3, 4, 6, 8, 12, 16, 32}) {
    check.template operator()<float, float>(L);
    check.template operator()<float, double>(L);
    check.template operator()<double, double>(L);
  }
}

}  // namespace tally::test::reduce_checks
