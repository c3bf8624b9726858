// The device building blocks (vector/worker/gang levels) on a real GPU, against a sequential host
// reference on fresh random input (seed printed): every operator on int, float and double, odd
// block sizes (32, 96, 1000 threads), partial warps, 2-D blocks, odd grids, a ticket re-armed over
// several launches, bitwise reruns. And the host API on an input of more than 2^31 elements.
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "blocks_kernels.hpp"
#include "catch.hpp"
#include "tally/common/device_buffer.cuh"
#include "tally/reduce/exact.hpp"
#include "tally/reduce/reduce.hpp"
#include "tally/reduce/reducers.hpp"
#include "tally/reduce/segmented.hpp"
#include "test_support.hpp"

namespace blk = tally::test::blocks;
using tally::DeviceBuffer;
using tally::reduce::Max;
using tally::reduce::Min;
using tally::reduce::Prod;
using tally::reduce::Sum;

namespace {

std::uint64_t salt_counter = 1;  // a fresh input per call (test-local, not library state)

/// Random input suited to the operator: sums of small values, products of values in [0.5, 2]
/// (integers: +-1) so they neither overflow nor underflow, max/min over a wide range.
template <class Op, class T>
std::vector<T> make_input(std::size_t n) {
  const std::uint64_t salt = salt_counter++;
  if constexpr (std::is_integral_v<T>) {
    if constexpr (std::is_same_v<Op, Sum>) return tally::test::random_vector<T>(n, -100, 100, salt);
    if constexpr (std::is_same_v<Op, Prod>) {
      auto v = tally::test::random_vector<T>(n, 0, 1, salt);
      for (auto& x : v) x = 2 * x - 1;
      return v;
    }
    return tally::test::random_vector<T>(n, -1000000000, 1000000000, salt);
  } else {
    if constexpr (std::is_same_v<Op, Sum>) return tally::test::random_vector<T>(n, T(-1), T(1), salt);
    // [0.5, 2] for a few dozen factors; closer to 1 for long products, which would overflow otherwise.
    if constexpr (std::is_same_v<Op, Prod>)
      return n <= 64 ? tally::test::random_vector<T>(n, T(0.5), T(2), salt)
                     : tally::test::random_vector<T>(n, T(0.99), T(1.01), salt);
    return tally::test::random_vector<T>(n, T(-1000), T(1000), salt);
  }
}

/// Checks `got` against the sequential reduction of xs: exact for integers, max and min; for
/// floating-point sums within (n+1) eps sum|x| of a double reference, products within 2 (n+1) eps |ref|.
template <class Op, class T>
void check_value(T got, const std::vector<T>& xs, const std::string& what) {
  INFO(what << " (" << Op::name << ", n = " << xs.size() << ")");
  if constexpr (std::is_integral_v<T> || std::is_same_v<Op, Max> || std::is_same_v<Op, Min>) {
    T ref = Op::template identity<T>();
    for (T x : xs) ref = Op::template combine<T>(ref, x);
    REQUIRE(got == ref);
  } else {
    double ref = Op::template identity<double>(), abs = 0;
    for (T x : xs)
      ref = Op::template combine<double>(ref, static_cast<double>(x)), abs += std::fabs(static_cast<double>(x));
    const auto n = static_cast<std::int64_t>(xs.size());
    const double tol = std::is_same_v<Op, Sum>
                           ? tally::test::sum_tolerance<T>(n, abs)
                           : 2.0 * static_cast<double>(n + 1) * std::numeric_limits<T>::epsilon() * std::fabs(ref);
    INFO("got " << got << ", reference " << ref << ", tolerance " << tol);
    REQUIRE(std::fabs(static_cast<double>(got) - ref) <= tol);
  }
}

template <class Op, class T>
void check_block_reduce() {
  const std::array<std::array<int, 2>, 8> shapes = {
      {{32, 1}, {96, 1}, {1000, 1}, {20, 1}, {33, 1}, {16, 6}, {10, 10}, {1, 1}}};
  for (auto [bx, by] : shapes) {
    const int blocks = 7, bs = bx * by;
    const auto h = make_input<Op, T>(static_cast<std::size_t>(blocks * bs));
    DeviceBuffer<T> in{std::span<const T>(h)}, out(blocks);
    out.fill_bytes(0xFF);
    blk::block_reduce<Op, T>(in.data(), out.data(), bx, by, blocks);
    const auto got = out.to_host();
    for (int b = 0; b < blocks; ++b)
      check_value<Op, T>(
          got[b], std::vector<T>(h.begin() + b * bs, h.begin() + (b + 1) * bs),
          "block_reduce, block " + std::to_string(bx) + "x" + std::to_string(by) + ", block " + std::to_string(b));
  }
}

template <class Op, class T>
void check_group_reduce() {
  for (bool runtime : {false, true})
    for (int G : {1, 2, 4, 8, 16, 32}) {
      const int threads = 96;
      const auto h = make_input<Op, T>(threads);
      DeviceBuffer<T> in{std::span<const T>(h)}, out(threads);
      out.fill_bytes(0xFF);
      blk::group_reduce<Op, T>(in.data(), out.data(), G, runtime, threads);
      const auto got = out.to_host();
      for (int t = 0; t < threads; ++t) {
        const int g0 = t / G * G;
        check_value<Op, T>(got[t], std::vector<T>(h.begin() + g0, h.begin() + g0 + G),
                           std::string(runtime ? "group_reduce_n" : "group_reduce") + ", G = " + std::to_string(G) +
                               ", lane " + std::to_string(t));
      }
    }
}

template <class Op, class T>
void check_worker_reduce() {
  const std::array<std::array<int, 2>, 4> shapes = {{{32, 8}, {3, 7}, {33, 5}, {1, 32}}};
  for (auto [bx, by] : shapes) {
    const int blocks = 5;
    const auto h = make_input<Op, T>(static_cast<std::size_t>(blocks * bx * by));
    DeviceBuffer<T> in{std::span<const T>(h)}, out(static_cast<std::size_t>(blocks * bx));
    out.fill_bytes(0xFF);
    blk::worker_reduce<Op, T>(in.data(), out.data(), bx, by, blocks);
    const auto got = out.to_host();
    for (int b = 0; b < blocks; ++b)
      for (int x = 0; x < bx; ++x) {
        std::vector<T> col;
        for (int y = 0; y < by; ++y) col.push_back(h[static_cast<std::size_t>((b * by + y) * bx + x)]);
        check_value<Op, T>(got[static_cast<std::size_t>(b * bx + x)], col,
                           "worker_reduce, block " + std::to_string(bx) + "x" + std::to_string(by));
      }
  }
}

template <class Op, class T>
void check_gang_reduce() {
  DeviceBuffer<unsigned int> ticket(1);
  ticket.fill_bytes(0);
  const std::array<std::array<int, 2>, 4> configs = {{{1, 96}, {7, 1000}, {133, 32}, {133, 256}}};
  for (auto [blocks, threads] : configs) {
    DeviceBuffer<T> partials(static_cast<std::size_t>(blocks)), out(1);
    for (int launch = 0; launch < 3; ++launch) {  // the same ticket, re-armed by each launch's last block
      const std::size_t n = 100003 + static_cast<std::size_t>(launch) * 777;
      const auto h = make_input<Op, T>(n);
      DeviceBuffer<T> in{std::span<const T>(h)};
      out.fill_bytes(0xFF);
      blk::gang_reduce<Op, T>(in.data(), static_cast<std::int64_t>(n), partials.data(), ticket.data(), out.data(),
                              blocks, threads);
      check_value<Op, T>(out.to_host()[0], h,
                         "gang_reduce, " + std::to_string(blocks) + " blocks x " + std::to_string(threads) +
                             ", launch " + std::to_string(launch));
      REQUIRE(ticket.to_host()[0] == 0u);
    }
  }
}

template <class Op, class T>
void check_gang_segments() {
  const int nseg = 5, count = 13, width = 37;
  DeviceBuffer<unsigned int> tickets(nseg);
  tickets.fill_bytes(0);
  DeviceBuffer<T> partials(static_cast<std::size_t>(nseg * count * width)), out(static_cast<std::size_t>(nseg * width));
  for (int launch = 0; launch < 2; ++launch) {
    const auto h = make_input<Op, T>(static_cast<std::size_t>(nseg * count * width));
    DeviceBuffer<T> in{std::span<const T>(h)};
    out.fill_bytes(0xFF);
    blk::gang_segments<Op, T>(in.data(), partials.data(), tickets.data(), out.data(), nseg, count, width, 32);
    const auto got = out.to_host();
    for (int g = 0; g < nseg; ++g)
      for (int e = 0; e < width; ++e) {
        std::vector<T> xs;
        for (int b = 0; b < count; ++b) xs.push_back(h[static_cast<std::size_t>((g * count + b) * width + e)]);
        check_value<Op, T>(got[static_cast<std::size_t>(g * width + e)], xs,
                           "gang_arrive/gang_combine, segment " + std::to_string(g));
      }
    for (unsigned int t : tickets.to_host()) REQUIRE(t == 0u);
  }
}

/// gang_reduce_select on random input salted with the values whose keys are easy to get wrong
/// (+-0, +-inf, the extremes, denormals), over several grids and three launches that reuse the cell
/// and ticket; then a NaN anywhere must win.
template <class Op, class T>
void check_gang_select() {
  DeviceBuffer<unsigned int> ticket(1);
  ticket.fill_bytes(0);
  DeviceBuffer<std::uint64_t> cell(1);
  blk::gang_select_arm<Op, T>(cell.data());
  const std::array<std::array<int, 2>, 4> configs = {{{1, 96}, {7, 1000}, {133, 32}, {264, 256}}};
  for (auto [blocks, threads] : configs) {
    DeviceBuffer<T> out(1);
    for (int launch = 0; launch < 3; ++launch) {
      const std::size_t n = 100003 + static_cast<std::size_t>(launch) * 777;
      auto h = make_input<Op, T>(n);
      std::vector<T> special = {std::numeric_limits<T>::lowest(), std::numeric_limits<T>::max(), T(0), T(1), T(-1)};
      if constexpr (std::is_floating_point_v<T>)
        special.insert(special.end(), {-T(0), std::numeric_limits<T>::infinity(), -std::numeric_limits<T>::infinity(),
                                       std::numeric_limits<T>::denorm_min(), -std::numeric_limits<T>::denorm_min()});
      // Launch 0 keeps the random input (its extremes are ordinary values); later ones add specials.
      if (launch > 0)
        for (std::size_t s = 0; s < special.size(); ++s)
          h[(s * 7919 + static_cast<std::size_t>(launch)) % n] = special[s];
      DeviceBuffer<T> in{std::span<const T>(h)};
      out.fill_bytes(0xFF);
      blk::gang_select<Op, T>(in.data(), static_cast<std::int64_t>(n), cell.data(), ticket.data(), out.data(), blocks,
                              threads);
      check_value<Op, T>(out.to_host()[0], h,
                         "gang_reduce_select, " + std::to_string(blocks) + " blocks x " + std::to_string(threads) +
                             ", launch " + std::to_string(launch));
      REQUIRE(ticket.to_host()[0] == 0u);
      REQUIRE(blk::gang_select_armed<Op, T>(cell.data()));
    }
    if constexpr (std::is_floating_point_v<T>) {
      auto h = make_input<Op, T>(4099);
      h[static_cast<std::size_t>(blocks) % h.size()] = std::numeric_limits<T>::quiet_NaN();
      DeviceBuffer<T> in{std::span<const T>(h)};
      blk::gang_select<Op, T>(in.data(), static_cast<std::int64_t>(h.size()), cell.data(), ticket.data(), out.data(),
                              blocks, threads);
      INFO("gang_reduce_select with one NaN, " << blocks << " blocks x " << threads);
      REQUIRE(std::isnan(out.to_host()[0]));
      REQUIRE(blk::gang_select_armed<Op, T>(cell.data()));
    }
  }
}

template <class T>
void for_each_op_check() {
  check_block_reduce<Sum, T>(), check_block_reduce<Prod, T>(), check_block_reduce<Max, T>(),
      check_block_reduce<Min, T>();
  check_group_reduce<Sum, T>(), check_group_reduce<Prod, T>(), check_group_reduce<Max, T>(),
      check_group_reduce<Min, T>();
  check_worker_reduce<Sum, T>(), check_worker_reduce<Prod, T>(), check_worker_reduce<Max, T>(),
      check_worker_reduce<Min, T>();
  check_gang_reduce<Sum, T>(), check_gang_reduce<Prod, T>(), check_gang_reduce<Max, T>(), check_gang_reduce<Min, T>();
  check_gang_segments<Sum, T>(), check_gang_segments<Prod, T>(), check_gang_segments<Max, T>(),
      check_gang_segments<Min, T>();
  check_gang_select<Max, T>(), check_gang_select<Min, T>();
}

}  // namespace

TEST_CASE("device blocks on int: warp, group, block, worker, gang", "[blocks][gpu]") { for_each_op_check<int>(); }
TEST_CASE("device blocks on float: warp, group, block, worker, gang", "[blocks][gpu]") { for_each_op_check<float>(); }
TEST_CASE("device blocks on double: warp, group, block, worker, gang", "[blocks][gpu]") { for_each_op_check<double>(); }

TEST_CASE("gang_reduce_select on int64", "[blocks][gpu]") {
  check_gang_select<Max, std::int64_t>(), check_gang_select<Min, std::int64_t>();
}

TEST_CASE("gang_reduce is bitwise reproducible", "[blocks][gpu][determinism]") {
  const std::size_t n = (std::size_t{1} << 20) + 7;
  const auto h = make_input<Sum, float>(n);
  DeviceBuffer<float> in{std::span<const float>(h)}, partials(133), out(1);
  DeviceBuffer<unsigned int> ticket(1);
  ticket.fill_bytes(0);
  blk::gang_reduce<Sum, float>(in.data(), static_cast<std::int64_t>(n), partials.data(), ticket.data(), out.data(), 133,
                               256);
  const float first = out.to_host()[0];
  for (int rep = 0; rep < 5; ++rep) {
    out.fill_bytes(0xFF);
    blk::gang_reduce<Sum, float>(in.data(), static_cast<std::int64_t>(n), partials.data(), ticket.data(), out.data(),
                                 133, 256);
    const float again = out.to_host()[0];
    REQUIRE(std::memcmp(&first, &again, sizeof(float)) == 0);
  }
}

namespace {
/// Values of both signs over 2^-60 .. 2^60 with exact negations mixed in (cancellation).
template <class T>
std::vector<T> exact_input(std::size_t n) {
  auto g = tally::test::rng(salt_counter++);
  std::uniform_real_distribution<double> m(1.0, 2.0);
  std::uniform_int_distribution<int> e(-60, 60);
  std::vector<T> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    v[i] = static_cast<T>(std::ldexp(m(g), e(g)) * ((g() & 1) ? 1 : -1));
    if (i > 0 && g() % 4 == 0) v[i] = -v[g() % i];
  }
  return v;
}

/// Uniform values in [-1, 1]: the exact kernels' bins take them on their fast path.
template <class T>
std::vector<T> uniform_input(std::size_t n) {
  auto g = tally::test::rng(salt_counter++);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<T> v(n);
  for (auto& x : v) x = static_cast<T>(u(g));
  return v;
}

template <class T, class Out>
void check_exact_gang_on(const std::vector<T>& x) {
  const std::size_t n = x.size();
  {
    tally::reduce::Workspace cpu_ws(tally::reduce::Backend::cpu);
    const Out want = tally::reduce::reduce_to_host<tally::reduce::ExactSum, T, Out>(
        tally::reduce::Backend::cpu, tally::reduce::View<const T>::flat(x.data(), static_cast<std::int64_t>(n)),
        cpu_ws);
    DeviceBuffer<T> d{std::span<const T>(x)};
    DeviceBuffer<Out> out(1);
    DeviceBuffer<unsigned int> ticket(1);
    ticket.fill_bytes(0);
    for (int blocks : {1, 3, 200})
      for (int threads : {96, 256, 1024})
        for (int rerun = 0; rerun < 2; ++rerun) {  // the ticket is re-armed by the last block
          DeviceBuffer<unsigned char> partials(static_cast<std::size_t>(blocks) *
                                               sizeof(tally::reduce::exact::Accumulator<T>));
          out.fill_bytes(0xFF);
          blk::exact_gang_sum<T, Out>(d.data(), static_cast<std::int64_t>(n), partials.data(), ticket.data(),
                                      out.data(), blocks, threads);
          const Out got = out.to_host()[0];
          INFO("exact_gang_sum of " << n << " elements, " << blocks << " x " << threads << ": " << got
                                    << " vs CPU backend " << want);
          CHECK(std::memcmp(&got, &want, sizeof(Out)) == 0);
        }
  }
}

template <class T, class Out>
void check_exact_gang() {
  for (std::size_t n : {std::size_t{1}, std::size_t{1000}, (std::size_t{1} << 20) + 1})
    check_exact_gang_on<T, Out>(exact_input<T>(n));
  for (std::size_t n : {std::size_t{1000}, std::size_t{1} << 20}) check_exact_gang_on<T, Out>(uniform_input<T>(n));
}
}  // namespace

TEST_CASE("exact_gang_sum: the CPU backend's exact sum bit for bit, for any grid and block size",
          "[blocks][gpu][exact]") {
  check_exact_gang<float, float>();
  check_exact_gang<float, double>();
  check_exact_gang<double, double>();
}

TEST_CASE("exact dot products of floats on the device: exact::dot's bits for any grid", "[blocks][gpu][exact][dot]") {
  using tally::reduce::exact::Accumulator;
  using tally::reduce::exact::FloatProducts;
  for (std::size_t n : {std::size_t{5}, std::size_t{1} << 20}) {
    std::vector<float> a = exact_input<float>(n), b = exact_input<float>(n);
    const double want_d = tally::reduce::exact::dot<double>(a.data(), b.data(), static_cast<std::int64_t>(n));
    const float want_f = tally::reduce::exact::dot<float>(a.data(), b.data(), static_cast<std::int64_t>(n));
    DeviceBuffer<float> da{std::span<const float>(a)}, db{std::span<const float>(b)};
    DeviceBuffer<double> od(1);
    DeviceBuffer<float> of(1);
    DeviceBuffer<unsigned int> ticket(1);
    ticket.fill_bytes(0);
    for (int blocks : {1, 7, 300}) {
      DeviceBuffer<unsigned char> partials(static_cast<std::size_t>(blocks) * sizeof(Accumulator<FloatProducts>));
      blk::exact_dot<double>(da.data(), db.data(), static_cast<std::int64_t>(n), partials.data(), ticket.data(),
                             od.data(), blocks, 256);
      blk::exact_dot<float>(da.data(), db.data(), static_cast<std::int64_t>(n), partials.data(), ticket.data(),
                            of.data(), blocks, 128);
      const double gd = od.to_host()[0];
      const float gf = of.to_host()[0];
      INFO("exact dot of " << n << " elements on " << blocks << " blocks");
      CHECK(std::memcmp(&gd, &want_d, sizeof gd) == 0);
      CHECK(std::memcmp(&gf, &want_f, sizeof gf) == 0);
    }
  }
}

namespace {

/// Bitwise equality of a segment result: Sum's value, ArgMax's value and index, MeanVar's moments
/// (field by field: ValueIndex has padding).
template <class V>
bool same_result(const V& a, const V& b) {
  if constexpr (std::is_same_v<V, tally::reduce::ValueIndex<float>>) {
    return std::memcmp(&a.value, &b.value, sizeof a.value) == 0 && a.index == b.index;
  } else if constexpr (std::is_same_v<V, tally::reduce::Moments>) {
    return std::memcmp(&a.count, &b.count, sizeof a.count) == 0 && std::memcmp(&a.mean, &b.mean, sizeof a.mean) == 0 &&
           std::memcmp(&a.m2, &b.m2, sizeof a.m2) == 0;
  } else {
    return std::memcmp(&a, &b, sizeof a) == 0;
  }
}

/// A fused kernel built from the segment forms (thread, warp, block: device/segment.cuh) against
/// segmented_reduce() on the same input: the promise that such a kernel gets the host API's bits.
/// Lengths on both sides of every class boundary, one to four chunks, random ones between.
template <class Op, class T, class Acc>
void check_segment_forms(std::uint64_t salt) {
  namespace seg = tally::reduce;  // the segment classes
  const std::int64_t c = seg::segment_chunk;
  std::vector<std::int64_t> len = {0,
                                   1,
                                   2,
                                   5,
                                   seg::segment_thread_max - 1,
                                   seg::segment_thread_max,
                                   seg::segment_thread_max + 1,
                                   100,
                                   1000,
                                   seg::segment_warp_max - 1,
                                   seg::segment_warp_max,
                                   seg::segment_warp_max + 1,
                                   5000,
                                   c - 1,
                                   c,
                                   c + 1,
                                   2 * c + 3,
                                   3 * c + 7,
                                   4 * c,
                                   0};
  auto g = tally::test::rng(salt);
  for (int k = 0; k < 60; ++k)
    len.push_back(std::uniform_int_distribution<std::int64_t>(0, k % 10 == 0 ? 40000 : 3000)(g));
  std::vector<std::int64_t> off = {0};
  for (const auto l : len) off.push_back(off.back() + l);
  const std::int64_t n = off.back(), n_seg = static_cast<std::int64_t>(len.size());
  // Sums of values in [-1, 1]; ArgMax and MeanVar over quarter-steps in [-2, 2]: ties everywhere.
  auto x = tally::test::random_vector<T>(static_cast<std::size_t>(n), T(-1), T(1), salt + 1);
  if constexpr (!std::is_same_v<Op, Sum>)
    for (auto& v : x) v = std::round(v * T(8)) / T(4);
  const DeviceBuffer<T> d_x{std::span<const T>(x)};
  const DeviceBuffer<std::int64_t> d_off{std::span<const std::int64_t>(off)};
  DeviceBuffer<Acc> fused(static_cast<std::size_t>(n_seg)), api(static_cast<std::size_t>(n_seg));
  fused.fill_bytes(0xFF);
  blk::segments_by_forms<Op, T, Acc>(d_x.data(), n, d_off.data(), n_seg, fused.data());
  tally::reduce::Workspace ws(tally::reduce::Backend::cuda);
  tally::reduce::segmented_reduce<Op, T>(tally::reduce::Backend::cuda, std::span<const T>(d_x.data(), x.size()),
                                         std::span<const std::int64_t>(d_off.data(), off.size()), api.span(), ws);
  const auto a = fused.to_host(), b = api.to_host();
  std::int64_t differ = 0, first = -1;
  for (std::int64_t s = 0; s < n_seg; ++s)
    if (!same_result(a[static_cast<std::size_t>(s)], b[static_cast<std::size_t>(s)]))
      differ += 1, first = first < 0 ? s : first;
  INFO(Op::name << " on " << (sizeof(T) == 4 ? "float" : "double") << ": " << differ << " of " << n_seg
                << " segments differ (first: segment " << first << ", length "
                << (first >= 0 ? len[static_cast<std::size_t>(first)] : 0) << ")");
  CHECK(differ == 0);
  if constexpr (std::is_same_v<Op, Sum>) {  // and both right: within (L + 1) eps sum|x| of a long double sum
    for (std::int64_t s = 0; s < n_seg; ++s) {
      long double ref = 0, mag = 0;
      for (std::int64_t i = off[static_cast<std::size_t>(s)]; i < off[static_cast<std::size_t>(s) + 1]; ++i)
        ref += x[static_cast<std::size_t>(i)],
            mag += std::fabs(static_cast<long double>(x[static_cast<std::size_t>(i)]));
      const long double L = static_cast<long double>(len[static_cast<std::size_t>(s)]);
      INFO("segment " << s << ", length " << len[static_cast<std::size_t>(s)]);
      REQUIRE(std::fabs(static_cast<long double>(a[static_cast<std::size_t>(s)]) - ref) <=
              (L + 1) * static_cast<long double>(std::numeric_limits<T>::epsilon()) * mag);
    }
  }
}

}  // namespace

TEST_CASE("a fused kernel from the segment forms gets segmented_reduce's bits",
          "[blocks][gpu][segmented][determinism]") {
  check_segment_forms<Sum, float, float>(71);
  check_segment_forms<Sum, double, double>(72);
  check_segment_forms<tally::reduce::ArgMax<float>, float, tally::reduce::ValueIndex<float>>(73);
  check_segment_forms<tally::reduce::MeanVar, float, tally::reduce::Moments>(74);
}

TEST_CASE("host API on more than 2^31 elements: exact int32 sum in int64, max", "[blocks][gpu][large]") {
  const std::int64_t n = (std::int64_t{1} << 31) + 17;
  std::vector<std::int32_t> h(static_cast<std::size_t>(n));
  // Small values (the int64 sum is exact), and the largest one in the very last element, beyond 2^31.
  std::uint64_t state = tally::test::seed() | 1u;
  std::int64_t ref = 0;
  for (auto& x : h) {
    state ^= state << 13, state ^= state >> 7, state ^= state << 17;  // xorshift64
    x = static_cast<std::int32_t>(state % 4);
    ref += x;
  }
  ref += 9 - h.back();
  h.back() = 9;
  DeviceBuffer<std::int32_t> in{std::span<const std::int32_t>(h)};
  h.clear();
  h.shrink_to_fit();
  using namespace tally::reduce;
  Workspace ws(Backend::cuda);
  const auto view = View<const std::int32_t>::flat(in.data(), n);
  CHECK(reduce_to_host<Sum, std::int32_t, std::int64_t>(Backend::cuda, view, ws) == ref);
  CHECK(reduce_to_host<Max, std::int32_t>(Backend::cuda, view, ws) == 9);
  // The same array as (2, 2^30 + ..., ) rows: worker+vector per gang, through the strided path.
  const std::int64_t half = (n - 1) / 2;  // two rows of `half`, the last element left out
  DeviceBuffer<std::int64_t> out(2);
  reduce<Sum, std::int32_t, std::int64_t>(Backend::cuda,
                                          View<const std::int32_t>::strided(in.data(), {2, 1, half}, half, half),
                                          Levels(Level::worker) | Level::vector, out.span(), ws);
  const auto rows = out.to_host();
  CHECK(rows[0] + rows[1] + 9 == ref);
}
