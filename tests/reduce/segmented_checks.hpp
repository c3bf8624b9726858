#pragma once
// Segmented reductions (segmented.hpp), written once for every backend: included by each backend's
// test source after reduce_checks.hpp, whose adapter (TestBackend), inputs and naive reference it uses.
// The reference reduces each segment alone with reduce_checks' sequential loop (long double sums and
// products, the operators written out again), so every tolerance is the one derived there for a
// reduction of the segment's length.

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backend_cpu.hpp"
#include "custom_reducers.hpp"
#include "tally/reduce/segmented.hpp"

namespace tally::test::segmented_checks {

using namespace tally::reduce;               // NOLINT: test code
using namespace tally::test::reduce_checks;  // NOLINT
using std::int32_t;
using std::int64_t;

/// Segment lengths that cross every class boundary of the backends (CUDA: 32, 2048, 16384 per chunk;
/// CPU: 2^15), with empty segments and segments of one element among them.
inline std::vector<int64_t> mix_lengths(int mix, std::uint64_t salt) {
  auto g = tally::test::rng(salt);
  const auto uni = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(g); };
  std::vector<int64_t> len;
  switch (mix) {
    case 0:  // zeros and ones
      for (int s = 0; s < 3001; ++s) len.push_back(uni(0, 5) == 0 ? 2 : uni(0, 1));
      break;
    case 1:  // short, across the one-thread limit
      for (int s = 0; s < 2003; ++s) len.push_back(uni(0, 40));
      break;
    case 2:  // medium, across the one-warp limit
      for (int s = 0; s < 301; ++s) len.push_back(uni(25, 2100));
      break;
    case 3:  // long: one and several chunks, the CPU's long limit, among empty and tiny ones
      len = {0, 1, 16384, 16385, 2049, 0, 40000, 3 * 16384 + 7, 5, 32768, 32769, 2048, 33, 32, 0};
      break;
    case 5:  // sparse rows, 3% of them medium: CUDA's pair kernel, its half warps on medium pairs
      for (int s = 0; s < 3001; ++s) len.push_back(uni(0, 99) < 3 ? uni(33, 90) : uni(0, 2));
      break;
    case 6:  // sparse rows with long ones among them: CUDA's pair kernel listing tiles for the long kernel
      for (int s = 0; s < 60000; ++s) len.push_back(uni(0, 999) < 3 ? uni(33, 300) : uni(0, 2));
      for (const int s : {3, 9000, 9001, 31000, 59998}) len[static_cast<std::size_t>(s)] = uni(2049, 20000);
      len[40000] = 3 * 16384 + 5;  // four chunks
      break;
    default: {  // power law: P(L > x) ~ x^-1.1, capped, a third of the segments empty
      std::uniform_real_distribution<double> u(0.0, 1.0);
      for (int s = 0; s < 3000; ++s)
        len.push_back(s % 3 == 0 ? 0
                                 : std::min<int64_t>(60000, static_cast<int64_t>(std::pow(1.0 - u(g), -1.0 / 1.1))));
      len[1500] = 70001;  // one segment longer than all the others together would be uncommon: one sure long one
    }
  }
  return len;
}
inline const char* mix_name(int mix) {
  static const char* names[] = {"zeros and ones", "short (0-40)",      "medium (25-2100)",     "long",
                                "power law",      "sparse, 3% medium", "sparse with long rows"};
  return names[std::min(mix, 6)];
}
inline constexpr int kMixes = 7;

/// A segmented problem on the host: offsets from `lead` (elements before the first segment), the
/// input padded before and after with values that change Op's result if read.
template <class Op, class T, class Acc>
struct Problem {
  std::vector<T> x;  ///< lead + sum(len) + 5 elements
  std::vector<int64_t> offsets;
  int64_t lead = 0;
  Problem(const std::vector<int64_t>& len, int64_t lead_, std::uint64_t salt, bool nans) : lead(lead_) {
    offsets.push_back(lead);
    for (int64_t l : len) offsets.push_back(offsets.back() + l);
    const int64_t used = offsets.back() - lead, per = std::max<int64_t>(1, *std::max_element(len.begin(), len.end()));
    x.assign(static_cast<std::size_t>(offsets.back() + 5), pad_value<Op, T>());
    const auto vals = make_input<Op, T, Acc>(static_cast<std::size_t>(used), per, salt);
    std::copy(vals.begin(), vals.end(), x.begin() + lead);
    if constexpr (std::is_floating_point_v<T>) {
      if (nans) {  // the first, the last or a middle element of every 7th non-empty segment
        for (std::size_t s = 0; s < len.size(); s += 7) {
          if (len[s] == 0) continue;
          const int64_t at = (s / 7) % 3 == 0 ? 0 : (s / 7) % 3 == 1 ? len[s] - 1 : len[s] / 2;
          x[static_cast<std::size_t>(offsets[s] + at)] = std::numeric_limits<T>::quiet_NaN();
        }
      }
    }
  }
  [[nodiscard]] int64_t segments() const { return static_cast<int64_t>(offsets.size()) - 1; }
  [[nodiscard]] Reference<RefType<Op, Acc>> reference() const {
    Reference<RefType<Op, Acc>> r;
    for (int64_t s = 0; s < segments(); ++s) {
      const int64_t b = offsets[static_cast<std::size_t>(s)], l = offsets[static_cast<std::size_t>(s) + 1] - b;
      const auto one = reduce_checks::reference<Op, T, Acc>(x.data() + b, {1, 1, l}, l, l, Levels::all());
      r.value.push_back(one.value[0]), r.abs_sum.push_back(one.abs_sum[0]), r.count.push_back(one.count[0]);
      r.has_nan.push_back(one.has_nan[0]);
    }
    return r;
  }
};

/// Runs segmented_reduce on backend A; the input is shifted by `shift` elements in its buffer (an
/// unaligned start when shift is odd), the offsets by `off_shift`.
template <class A, class Op, class T, class Acc, class Off>
std::vector<Acc> run_segments(Workspace& ws, const Problem<Op, T, Acc>& p, int64_t shift = 0,
                              SegmentCheck check = SegmentCheck::full, bool to_last_offset = false,
                              int64_t off_shift = 0) {
  std::vector<T> shifted(static_cast<std::size_t>(shift), pad_value<Op, T>());
  shifted.insert(shifted.end(), p.x.begin(), p.x.end());
  auto d_x = A::upload(shifted);
  std::vector<Off> off(static_cast<std::size_t>(off_shift), Off{0});
  off.insert(off.end(), p.offsets.begin(), p.offsets.end());
  auto d_off_buffer = A::upload(off);
  const std::span<const Off> d_off(d_off_buffer.data() + off_shift, p.offsets.size());
  auto d_out = A::template poisoned<Acc>(static_cast<std::size_t>(p.segments()), 0x5A);
  // The input ends where the last segment does (to_last_offset) or after the problem's padding.
  const auto n = to_last_offset ? static_cast<std::size_t>(p.offsets.back()) : p.x.size();
  segmented_reduce<Op, T, Acc, Off>(A::backend, std::span<const T>(d_x.data() + shift, n), d_off,
                                    std::span<Acc>(d_out.data(), d_out.size()), ws, A::stream(), check);
  return A::download(d_out);
}

/// Bitwise equal, where any NaN equals any NaN (the backends' NaNs may differ in payload).
template <class T>
bool same_results(const std::vector<T>& a, const std::vector<T>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if constexpr (std::is_floating_point_v<T>)
      if (std::isnan(a[i]) && std::isnan(b[i])) continue;
    if (std::memcmp(&a[i], &b[i], sizeof(T)) != 0) return false;
  }
  return true;
}

template <class Op, class T, class Acc>
constexpr bool order_free = !std::is_floating_point_v<Acc> || std::is_same_v<Op, Max> || std::is_same_v<Op, Min>;

// ---- the library's reducers (reducers.hpp), segmented ----------------------------------------------

/// Values with many ties (integers in [-20, 20], as T) and, for floating point, NaNs in some segments,
/// +-0 and infinities: the arg-reductions' first-index rule and the NaN rule are exercised everywhere.
template <class T>
std::vector<T> tie_values(const std::vector<int64_t>& off, std::uint64_t salt) {
  auto g = tally::test::rng(salt);
  std::uniform_int_distribution<int> d(-20, 20);
  std::vector<T> x(static_cast<std::size_t>(off.back()));
  for (auto& v : x) v = static_cast<T>(d(g));
  if constexpr (std::is_floating_point_v<T>) {
    for (std::size_t s = 0; s + 1 < off.size(); s += 5) {
      const int64_t b = off[s], l = off[s + 1] - b;
      if (l == 0) continue;
      const int kind = static_cast<int>((s / 5) % 4);
      if (kind == 0) x[static_cast<std::size_t>(b + l - 1)] = std::numeric_limits<T>::quiet_NaN();  // last
      if (kind == 1) x[static_cast<std::size_t>(b)] = -T(0);
      if (kind == 2) x[static_cast<std::size_t>(b + l / 2)] = std::numeric_limits<T>::infinity();
      if (kind == 3 && l > 2)
        x[static_cast<std::size_t>(b + 1)] = std::numeric_limits<T>::quiet_NaN(),
                                       x[static_cast<std::size_t>(b + l - 1)] = std::numeric_limits<T>::quiet_NaN();
    }
  }
  return x;
}

template <class T>
bool nan_of(T v) {
  if constexpr (std::is_floating_point_v<T>) return std::isnan(v);
  else return false;
}

/// The naive arg-reduction of x[0, len): first NaN, else the first index of the largest (smallest);
/// empty: (the identity's value, -1).
template <bool Greater, class T>
ValueIndex<T> ref_arg(const T* x, int64_t len) {
  if (len == 0) {
    T id;
    if constexpr (std::is_floating_point_v<T>)
      id = Greater ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::infinity();
    else id = Greater ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max();
    return {id, -1};
  }
  ValueIndex<T> best{x[0], 0};
  for (int64_t i = 0; i < len && !nan_of(best.value); ++i) {
    if (nan_of(x[i])) best = {x[i], i};
    else if (Greater ? x[i] > best.value : x[i] < best.value) best = {x[i], i};
  }
  return best;
}

/// The naive min and max: NaN anywhere gives NaN in both; -0 counts below +0.
template <class T>
MinMaxPair<T> ref_minmax(const T* x, int64_t len) {
  MinMaxPair<T> r;
  if constexpr (std::is_floating_point_v<T>)
    r = {std::numeric_limits<T>::infinity(), -std::numeric_limits<T>::infinity()};
  else r = {std::numeric_limits<T>::max(), std::numeric_limits<T>::lowest()};
  const auto below = [](T a, T b) {
    return a < b || (a == b && std::signbit(static_cast<double>(a)) && !std::signbit(static_cast<double>(b)));
  };
  for (int64_t i = 0; i < len; ++i) {
    if (nan_of(x[i])) return {x[i], x[i]};
    if (below(x[i], r.min)) r.min = x[i];
    if (below(r.max, x[i])) r.max = x[i];
  }
  return r;
}

template <class T>
bool same_value(T a, T b) {
  return (nan_of(a) && nan_of(b)) || std::memcmp(&a, &b, sizeof(T)) == 0;
}

template <class A, class R, class T, class Off>
std::vector<typename R::value_type> run_reducer(Workspace& ws, const std::vector<T>& x,
                                                const std::vector<int64_t>& off) {
  auto d_x = A::upload(x);
  auto d_off = A::upload(std::vector<Off>(off.begin(), off.end()));
  auto d_out = A::template poisoned<typename R::value_type>(off.size() - 1, 0x5A);
  segmented_reduce<R, T>(A::backend, std::span<const T>(d_x.data(), x.size()),
                         std::span<const Off>(d_off.data(), d_off.size()),
                         std::span<typename R::value_type>(d_out.data(), d_out.size()), ws, A::stream());
  return A::download(d_out);
}

/// Checks every segment of every reducer for T; returns "" or the first failures.
template <class A, class T>
std::string check_reducers(Workspace& ws, const std::vector<int64_t>& off, std::uint64_t salt) {
  const auto x = tie_values<T>(off, salt);
  const auto am = run_reducer<A, ArgMax<T>, T, int64_t>(ws, x, off);
  const auto an = run_reducer<A, ArgMin<T>, T, int32_t>(ws, x, off);
  const auto mm = run_reducer<A, MinMax<T>, T, int64_t>(ws, x, off);
  const auto mv = run_reducer<A, MeanVar, T, int32_t>(ws, x, off);
  std::string err;
  int bad = 0;
  const auto fail = [&](const std::string& what) {
    if (++bad <= 4) err += what + "; ";
  };
  for (std::size_t s = 0; s + 1 < off.size(); ++s) {
    const T* seg = x.data() + off[s];
    const int64_t len = off[s + 1] - off[s];
    const std::string at = "segment " + std::to_string(s) + " (" + std::to_string(len) + " elements): ";
    const auto ra = ref_arg<true>(seg, len), rn = ref_arg<false>(seg, len);
    if (!same_value(am[s].value, ra.value) || am[s].index != ra.index)
      fail(at + "argmax (" + show(am[s].value) + ", " + std::to_string(am[s].index) + ") != (" + show(ra.value) + ", " +
           std::to_string(ra.index) + ")");
    if (!same_value(an[s].value, rn.value) || an[s].index != rn.index)
      fail(at + "argmin (" + show(an[s].value) + ", " + std::to_string(an[s].index) + ") != (" + show(rn.value) + ", " +
           std::to_string(rn.index) + ")");
    const auto rm = ref_minmax(seg, len);
    if (!same_value(mm[s].min, rm.min) || !same_value(mm[s].max, rm.max))
      fail(at + "minmax (" + show(mm[s].min) + ", " + show(mm[s].max) + ") != (" + show(rm.min) + ", " + show(rm.max) +
           ")");
    // Moments against a two-pass long double reference; Chan's merge in double errs by a few
    // eps(double) per level of its tree: 1e-12 relative to the data's scale (20, 20^2 len) is generous.
    long double sum = 0, m2 = 0;
    bool has_nan = false;
    for (int64_t i = 0; i < len; ++i)
      sum += static_cast<long double>(seg[i]),
          has_nan = has_nan || nan_of(seg[i]) || std::isinf(static_cast<double>(seg[i]));
    const long double mean = len > 0 ? sum / len : 0;
    for (int64_t i = 0; i < len; ++i)
      m2 += (static_cast<long double>(seg[i]) - mean) * (static_cast<long double>(seg[i]) - mean);
    if (mv[s].count != static_cast<double>(len)) fail(at + "meanvar count " + show(mv[s].count));
    else if (!has_nan && len > 0 &&
             (std::fabs(mv[s].mean - static_cast<double>(mean)) > 1e-12 * 20 ||
              std::fabs(mv[s].m2 - static_cast<double>(m2)) > 1e-12 * 400 * static_cast<double>(len)))
      fail(at + "meanvar (" + show(mv[s].mean) + ", " + show(mv[s].m2) + ") != (" + show(mean) + ", " + show(m2) + ")");
  }
  return bad == 0 ? "" : std::to_string(bad) + " wrong: " + err;
}

inline std::vector<int64_t> offsets_of(const std::vector<int64_t>& len) {
  std::vector<int64_t> off = {0};
  for (int64_t l : len) off.push_back(off.back() + l);
  return off;
}

}  // namespace tally::test::segmented_checks

// ==== the test cases, for TestBackend =============================================================

namespace tally::test::segmented_checks {

TEST_CASE(TALLY_TEST_BACKEND
          ": segmented reductions: every operator x type, int32 and int64 offsets, against the naive reference",
          "[reduce][segmented]") {
  Workspace ws(TestBackend::backend);
  std::uint64_t salt = 20000;
  for_each_case(AllCases{}, [&]<class C>(C) {
    using Op = typename C::Op;
    using T = typename C::T;
    using Acc = typename C::Acc;
    for (int mix = 0; mix < kMixes; ++mix) {
      salt += 2;
      const Problem<Op, T, Acc> p(mix_lengths(mix, salt), mix % 2 == 0 ? 0 : 3, salt + 1, false);
      const auto ref = p.reference();
      // Odd mixes put the int64 call's input pointer off the 16-byte grid; int32 offsets run on both
      // (CUDA: aligned input takes a staged kernel, the pair kernel for the zeros and ones).
      const int64_t shift = mix % 2;
      const std::string e64 = compare<Op>(run_segments<TestBackend, Op, T, Acc, int64_t>(ws, p, shift), ref);
      const std::string e32 = compare<Op>(run_segments<TestBackend, Op, T, Acc, int32_t>(ws, p, 0), ref);
      const std::string e32s = compare<Op>(run_segments<TestBackend, Op, T, Acc, int32_t>(ws, p, 1), ref);
      // Offsets off the 16-byte grid (a slice of a larger CSR array): the CUDA kernels copy or load
      // them 4 bytes at a time.
      const std::string e32o =
          compare<Op>(run_segments<TestBackend, Op, T, Acc, int32_t>(ws, p, 0, SegmentCheck::full, false, 1), ref);
      INFO((case_name<Op, T, Acc>()) << ", " << mix_name(mix) << " (" << p.segments() << " segments): int64 offsets: "
                                     << e64 << " int32 offsets: " << e32 << " int32, input off the grid: " << e32s
                                     << " int32, offsets off the grid: " << e32o);
      CHECK(e64.empty());
      CHECK(e32.empty());
      CHECK(e32s.empty());
      CHECK(e32o.empty());
    }
  });
}

TEST_CASE(TALLY_TEST_BACKEND ": segmented reductions propagate NaN to exactly the segments holding one",
          "[reduce][segmented][nan]") {
  Workspace ws(TestBackend::backend);
  std::uint64_t salt = 21000;
  using Cases = CaseList<Case<Max, float>, Case<Min, float>, Case<Max, float, double>, Case<Min, double>,
                         Case<Sum, float>, Case<Sum, double>, Case<Prod, float, double>>;
  for_each_case(Cases{}, [&]<class C>(C) {
    using Op = typename C::Op;
    using T = typename C::T;
    using Acc = typename C::Acc;
    for (int mix = 0; mix < kMixes; ++mix) {
      salt += 2;
      const Problem<Op, T, Acc> p(mix_lengths(mix, salt), 0, salt + 1, true);
      const auto ref = p.reference();
      const auto got = run_segments<TestBackend, Op, T, Acc, int64_t>(ws, p);
      int64_t nan_segments = 0, wrong = 0;
      for (std::size_t s = 0; s < got.size(); ++s) {
        nan_segments += ref.has_nan[s];
        wrong += (ref.has_nan[s] != 0) != std::isnan(got[s]);
      }
      INFO((case_name<Op, T, Acc>()) << ", " << mix_name(mix) << ": " << nan_segments << " segments hold a NaN, "
                                     << wrong << " disagree; " << compare<Op>(got, ref));
      CHECK(nan_segments > 0);
      CHECK(wrong == 0);
      CHECK(compare<Op>(got, ref).empty());
    }
  });
}

TEST_CASE(TALLY_TEST_BACKEND ": segmented reductions are bitwise reproducible, whatever the launch shape",
          "[reduce][segmented][determinism]") {
  Workspace ws(TestBackend::backend);
  // The CUDA grids are sized from the workspace's tuning: pretend devices of 1, 7 and 1000 SMs (the
  // CPU backend ignores it). The workspace owns its Tuning; changing it is the test's way in.
  auto& tune = const_cast<Tuning&>(ws.tuning());
  const Tuning real = tune;
  std::uint64_t salt = 22000;
  for (int mix : {0, 1, 2, 3, 4, 5}) {
    salt += 2;
    const Problem<Sum, float, float> p(mix_lengths(mix, salt), 0, salt + 1, false);
    salt += 2;
    const Problem<Sum, float, double> pd(mix_lengths(mix, salt), 0, salt + 1, false);
    const auto first = run_segments<TestBackend, Sum, float, float, int64_t>(ws, p);
    const auto first_d = run_segments<TestBackend, Sum, float, double, int32_t>(ws, pd);
    for (int sms : {1, 7, real.sm_count, 1000}) {
      tune.sm_count = sms;
      INFO(mix_name(mix) << ", grids sized for " << sms << " SMs");
      CHECK(bitwise_equal(first, run_segments<TestBackend, Sum, float, float, int64_t>(ws, p)));
      CHECK(bitwise_equal(first_d, run_segments<TestBackend, Sum, float, double, int32_t>(ws, pd)));
      // The input pointer off the 16-byte grid (other loads, the same order): the same bits; and with
      // int32 offsets (CUDA: aligned input takes the staged kernel, shifted input the tile kernel).
      CHECK(bitwise_equal(first, run_segments<TestBackend, Sum, float, float, int64_t>(ws, p, 3)));
      CHECK(bitwise_equal(first, run_segments<TestBackend, Sum, float, float, int32_t>(ws, p)));
      CHECK(bitwise_equal(first, run_segments<TestBackend, Sum, float, float, int32_t>(ws, p, 1)));
      CHECK(bitwise_equal(first_d, run_segments<TestBackend, Sum, float, double, int32_t>(ws, pd, 2)));
    }
    tune = real;
  }
}

TEST_CASE(TALLY_TEST_BACKEND ": a segment's bits depend on its own values and length, not on its neighbours",
          "[reduce][segmented][determinism]") {
  // Tile 0 (32 short segments and a medium one, a short span) is repeated as tile 1 with one segment
  // made 1500 long and as tile 2 unchanged: whatever path a tile takes (CUDA: tiles of 32 segments per
  // warp; a kernel that special-cases short spans must keep the orders), equal segments give equal bits.
  Workspace ws(TestBackend::backend);
  constexpr std::size_t kSegs = 32;
  std::vector<int64_t> group;
  for (std::size_t i = 0; i < kSegs; ++i) group.push_back(i == 5 ? 40 : static_cast<int64_t>(i * 7 % 9));
  std::vector<int64_t> len;
  for (int k = 0; k < 3; ++k) len.insert(len.end(), group.begin(), group.end());
  constexpr std::size_t kChanged = 20;
  len[kSegs + kChanged] = 1500;
  const auto check = [&]<class Acc, class Off>(std::uint64_t salt) {
    Problem<Sum, float, Acc> p(len, 3, salt, false);
    for (std::size_t k = 1; k < 3; ++k)
      for (std::size_t s = 0; s < kSegs; ++s) {
        if (k == 1 && s == kChanged) continue;
        const auto from = p.x.begin() + p.offsets[s];
        std::copy(from, from + len[s], p.x.begin() + p.offsets[kSegs * k + s]);
      }
    const auto got = run_segments<TestBackend, Sum, float, Acc, Off>(ws, p);
    INFO("seed " << tally::test::seed() << ", salt " << salt << ", accumulator "
                 << (sizeof(Acc) == 4 ? "float" : "double"));
    for (std::size_t s = 0; s < kSegs; ++s) {
      INFO("segment " << s << " of length " << len[s]);
      if (s != kChanged) CHECK(bitwise_equal(std::vector<Acc>{got[s]}, std::vector<Acc>{got[kSegs + s]}));
      CHECK(bitwise_equal(std::vector<Acc>{got[s]}, std::vector<Acc>{got[2 * kSegs + s]}));
    }
  };
  check.template operator()<float, int32_t>(22500);
  check.template operator()<double, int64_t>(22501);
}

/// Segments on each side of the edge of a staged window of `w` elements over tiles of `tile`
/// segments (CUDA's staged kernels: a window from a tile's first segment's 16-byte block): a medium
/// segment across it; short segments past it behind a medium one; empties among 17-32; a tile ending
/// with a 255-element segment; then `filler` segments of 0 and 1 (bringing the mean length down to
/// where the pair kernel runs) and a last segment of 3 (lengthened by the caller).
inline std::vector<int64_t> window_edge_lengths(int64_t tile, int64_t w, int64_t filler) {
  std::vector<int64_t> len;
  const int64_t l0 = (w - 20 + tile - 2) / (tile - 1);  // tile 0: tile - 1 of these end within 20 of w
  for (int64_t s = 0; s + 1 < tile; ++s) len.push_back(l0);
  len.push_back(33);
  len.push_back(w - 12);  // tile 1: a medium segment, then short ones from 1 to 31 elements past the edge
  for (int64_t s = 1; s < tile; ++s) len.push_back((s - 1) % 31 + 1);
  for (int64_t s = 0; s < tile; ++s) len.push_back(s % 3 == 0 ? 0 : 17 + s % 16);
  for (int64_t s = 0; s < tile; ++s) len.push_back(s == tile - 1 ? 255 : 7);
  for (int64_t s = 0; s < filler; ++s) len.push_back(s % 2);
  len.push_back(3);
  return len;
}

TEST_CASE(TALLY_TEST_BACKEND ": segments at the edges of a tile's staged window, and input ending at the last segment",
          "[reduce][segmented][determinism]") {
  // CUDA's staged kernel copies 2 KB from a tile of 32 segments, its pair kernel (segments of at most
  // 32 bytes on average) 3 KB from a tile of 64, and reads the segments lying inside from there, the
  // others from global memory. The layouts put segments on each side of those edges, in windows that
  // start at and off a 16-byte block, with an input that ends at n = 3 mod 4, inside a 16-byte block.
  // Every segment is checked against the naive reference, and the bits against the same call off the
  // 16-byte grid (the tile kernel) and with int64 offsets.
  const auto check = [&]<class T, class Acc>(std::uint64_t salt, int64_t lead, bool pair) {
    const int64_t w = (pair ? 3072 : 2048) / static_cast<int64_t>(sizeof(T));
    std::vector<int64_t> l = window_edge_lengths(pair ? 64 : 32, w, pair ? 64 * 16 : 0);
    l.back() += ((3 - (lead + offsets_of(l).back()) % 4) + 4) % 4;
    const Problem<Sum, T, Acc> p(l, lead, salt, false);
    REQUIRE(p.offsets.back() % 4 == 3);
    // Which CUDA kernel: the pair kernel where the mean segment is at most 32 bytes.
    REQUIRE(pair == ((p.offsets.back() - lead) * static_cast<int64_t>(sizeof(T)) <= 32 * p.segments()));
    const auto ref = p.reference();
    Workspace ws(TestBackend::backend);
    const auto aligned = run_segments<TestBackend, Sum, T, Acc, int32_t>(ws, p, 0, SegmentCheck::full, true);
    INFO("seed " << tally::test::seed() << ", salt " << salt << ", " << (sizeof(T) == 4 ? "float" : "double")
                 << " input, lead " << lead << (pair ? ", pair layout" : ", tile layout"));
    CHECK(compare<Sum>(aligned, ref).empty());
    CHECK(bitwise_equal(aligned, run_segments<TestBackend, Sum, T, Acc, int32_t>(ws, p, 1, SegmentCheck::full, true)));
    CHECK(bitwise_equal(aligned, run_segments<TestBackend, Sum, T, Acc, int64_t>(ws, p, 0, SegmentCheck::full, true)));
  };
  for (bool pair : {false, true})
    for (int64_t lead : {0, 2, 5}) {  // windows starting at, and off, a 16-byte block
      const auto salt = 22700 + static_cast<std::uint64_t>(lead) + (pair ? 100 : 0);
      check.template operator()<float, float>(salt, lead, pair);
      check.template operator()<float, double>(salt + 10, lead, pair);
      check.template operator()<double, double>(salt + 20, lead, pair);
    }
}

TEST_CASE(TALLY_TEST_BACKEND ": segmented max, min and integer operators give the CPU backend's bits",
          "[reduce][segmented][determinism]") {
  Workspace ws(TestBackend::backend), cpu_ws(Backend::cpu);
  std::uint64_t salt = 23000;
  for_each_case(AllCases{}, [&]<class C>(C) {
    using Op = typename C::Op;
    using T = typename C::T;
    using Acc = typename C::Acc;
    if constexpr (order_free<Op, T, Acc>) {
      for (int mix : {0, 3, 4, 5}) {
        salt += 2;
        const Problem<Op, T, Acc> p(mix_lengths(mix, salt), 0, salt + 1, true);
        const auto cpu = run_segments<CpuBackend, Op, T, Acc, int64_t>(cpu_ws, p);
        INFO((case_name<Op, T, Acc>()) << ", " << mix_name(mix));
        CHECK(same_results(cpu, run_segments<TestBackend, Op, T, Acc, int64_t>(ws, p)));
      }
    }
  });
}

TEST_CASE(TALLY_TEST_BACKEND ": fixed-size segments", "[reduce][segmented]") {
  Workspace ws(TestBackend::backend);
  std::uint64_t salt = 24000;
  for (int64_t size : {int64_t{0}, int64_t{1}, int64_t{16}, int64_t{1000}, int64_t{40000}}) {
    const int64_t n_seg = size == 0 ? 5 : std::max<int64_t>(3, 200000 / std::max<int64_t>(size, 1));
    const Problem<Max, float, float> p(std::vector<int64_t>(static_cast<std::size_t>(n_seg), size), 0, ++salt, true);
    const Problem<Sum, float, double> q(std::vector<int64_t>(static_cast<std::size_t>(n_seg), size), 0, ++salt, false);
    auto d_p = TestBackend::upload(p.x);
    auto d_q = TestBackend::upload(q.x);
    auto out_p = TestBackend::template poisoned<float>(static_cast<std::size_t>(n_seg), 0x5A);
    auto out_q = TestBackend::template poisoned<double>(static_cast<std::size_t>(n_seg), 0x5A);
    const auto n = static_cast<std::size_t>(n_seg * size);
    segmented_reduce_fixed<Max, float>(TestBackend::backend, std::span<const float>(d_p.data(), n), size,
                                       std::span<float>(out_p.data(), out_p.size()), ws, TestBackend::stream());
    segmented_reduce_fixed<Sum, float, double>(TestBackend::backend, std::span<const float>(d_q.data(), n), size,
                                               std::span<double>(out_q.data(), out_q.size()), ws,
                                               TestBackend::stream());
    const std::string ep = compare<Max>(TestBackend::download(out_p), p.reference());
    const std::string eq = compare<Sum>(TestBackend::download(out_q), q.reference());
    INFO(n_seg << " segments of " << size << ": max " << ep << " sum " << eq);
    CHECK(ep.empty());
    CHECK(eq.empty());
    if (size > 0) {  // a library reducer: ArgMax's index is the position within the segment
      auto out_a = TestBackend::template poisoned<ValueIndex<float>>(static_cast<std::size_t>(n_seg), 0x5A);
      segmented_reduce_fixed<ArgMax<float>, float, ValueIndex<float>>(
          TestBackend::backend, std::span<const float>(d_p.data(), n), size,
          std::span<ValueIndex<float>>(out_a.data(), out_a.size()), ws, TestBackend::stream());
      const auto got = TestBackend::download(out_a);
      int64_t wrong = 0;
      for (int64_t k = 0; k < n_seg; ++k) {
        const auto want = ref_arg<true>(p.x.data() + k * size, size);
        wrong += !(same_value(got[static_cast<std::size_t>(k)].value, want.value) &&
                   got[static_cast<std::size_t>(k)].index == want.index);
      }
      INFO("argmax over " << n_seg << " segments of " << size << ": " << wrong << " wrong");
      CHECK(wrong == 0);
    }
  }
}

TEST_CASE(TALLY_TEST_BACKEND ": no segments, and segments of nothing", "[reduce][segmented]") {
  Workspace ws(TestBackend::backend);
  auto d_x = TestBackend::upload(std::vector<float>{1.0f, 2.0f});
  auto d_off = TestBackend::upload(std::vector<int64_t>{0, 0, 0});
  auto d_out = TestBackend::template poisoned<float>(2, 0x5A);
  // Zero segments: one offset or none, nothing written.
  segmented_reduce<Sum, float>(TestBackend::backend, std::span<const float>(d_x.data(), 2),
                               std::span<const int64_t>(d_off.data(), 1), std::span<float>(d_out.data(), 0), ws,
                               TestBackend::stream());
  segmented_reduce<Sum, float>(TestBackend::backend, std::span<const float>(), std::span<const int64_t>(),
                               std::span<float>(), ws, TestBackend::stream());
  // Two empty segments of an empty input: the identities.
  segmented_reduce<Max, float>(TestBackend::backend, std::span<const float>(),
                               std::span<const int64_t>(d_off.data(), 3), std::span<float>(d_out.data(), 2), ws,
                               TestBackend::stream());
  const auto got = TestBackend::download(d_out);
  CHECK(got[0] == -std::numeric_limits<float>::infinity());
  CHECK(got[1] == -std::numeric_limits<float>::infinity());
}

TEST_CASE(TALLY_TEST_BACKEND ": bad segment offsets throw std::invalid_argument naming the argument, nothing written",
          "[reduce][segmented][errors]") {
  Workspace ws(TestBackend::backend);
  const int64_t n = 100;
  auto d_x = TestBackend::upload(std::vector<float>(static_cast<std::size_t>(n), 1.0f));
  auto d_out = TestBackend::template poisoned<float>(3, 0x5A);
  const auto poison = TestBackend::download(d_out);
  const auto expect_error = [&](const std::vector<int64_t>& offsets, std::size_t n_out, const std::string& needle) {
    auto d_off = TestBackend::upload(offsets);
    auto d_off32 = TestBackend::upload(std::vector<int32_t>(offsets.begin(), offsets.end()));
    for (int pass = 0; pass < 2; ++pass) {
      try {
        if (pass == 0)
          segmented_reduce<Sum, float>(TestBackend::backend, std::span<const float>(d_x.data(), n),
                                       std::span<const int64_t>(d_off.data(), d_off.size()),
                                       std::span<float>(d_out.data(), n_out), ws, TestBackend::stream());
        else
          segmented_reduce<Sum, float>(TestBackend::backend, std::span<const float>(d_x.data(), n),
                                       std::span<const int32_t>(d_off32.data(), d_off32.size()),
                                       std::span<float>(d_out.data(), n_out), ws, TestBackend::stream());
        FAIL("no exception; expected one naming '" << needle << "'");
      } catch (const std::invalid_argument& ex) {
        INFO(ex.what());
        CHECK(std::string(ex.what()).find(needle) != std::string::npos);
      }
      CHECK(bitwise_equal(TestBackend::download(d_out), poison));
    }
  };
  expect_error({0, 10, 20, 30}, 2, "offsets: has 4 entries for 2 segments");
  expect_error({0, 10, 20}, 3, "offsets: has 3 entries for 3 segments");
  expect_error({0, 50, 20, 60}, 3, "offsets[1] = 50 > offsets[2] = 20 (must be non-decreasing)");
  expect_error({-1, 5, 6, 7}, 3, "offsets[0] = -1 is negative");
  expect_error({0, 5, 6, 101}, 3, "offsets[3] = 101 runs past the input (100 elements)");
  expect_error({0, 200, 300, 400}, 3, "offsets[3] = 400 runs past the input");  // non-decreasing, but past the end
  // Fixed size: the segments must cover the input exactly.
  try {
    segmented_reduce_fixed<Sum, float>(TestBackend::backend, std::span<const float>(d_x.data(), n), 33,
                                       std::span<float>(d_out.data(), 3), ws, TestBackend::stream());
    FAIL("no exception for 3 segments of 33 over 100 elements");
  } catch (const std::invalid_argument& ex) {
    CHECK(std::string(ex.what()).find("out: 3 segments of 33 elements do not cover in (100 elements)") !=
          std::string::npos);
  }
  CHECK(bitwise_equal(TestBackend::download(d_out), poison));
  // A valid call afterwards works.
  auto d_off = TestBackend::upload(std::vector<int64_t>{0, 10, 10, 100});
  segmented_reduce<Sum, float>(TestBackend::backend, std::span<const float>(d_x.data(), n),
                               std::span<const int64_t>(d_off.data(), 4), std::span<float>(d_out.data(), 3), ws,
                               TestBackend::stream());
  CHECK(TestBackend::download(d_out) == std::vector<float>{10.0f, 0.0f, 90.0f});
}

}  // namespace tally::test::segmented_checks
