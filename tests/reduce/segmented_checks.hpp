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
#include "tally/reduce/segmented.hpp"

namespace tally::test::segmented_checks {

using namespace tally::reduce;  // NOLINT: test code
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
    default: {  // power law: P(L > x) ~ x^-1.1, capped, a third of the segments empty
      std::uniform_real_distribution<double> u(0.0, 1.0);
      for (int s = 0; s < 3000; ++s)
        len.push_back(s % 3 == 0 ? 0 : std::min<int64_t>(60000, static_cast<int64_t>(std::pow(1.0 - u(g), -1.0 / 1.1))));
      len[1500] = 70001;  // one segment longer than all the others together would be uncommon: one sure long one
    }
  }
  return len;
}
inline const char* mix_name(int mix) {
  static const char* names[] = {"zeros and ones", "short (0-40)", "medium (25-2100)", "long", "power law"};
  return names[std::min(mix, 4)];
}
inline constexpr int kMixes = 5;

/// A segmented problem on the host: offsets from `lead` (elements before the first segment), the
/// input padded before and after with values that change Op's result if read.
template <class Op, class T, class Acc>
struct Problem {
  std::vector<T> x;             ///< lead + sum(len) + 5 elements
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
/// unaligned start when shift is odd).
template <class A, class Op, class T, class Acc, class Off>
std::vector<Acc> run_segments(Workspace& ws, const Problem<Op, T, Acc>& p, int64_t shift = 0,
                              SegmentCheck check = SegmentCheck::full) {
  std::vector<T> shifted(static_cast<std::size_t>(shift), pad_value<Op, T>());
  shifted.insert(shifted.end(), p.x.begin(), p.x.end());
  auto d_x = A::upload(shifted);
  auto d_off = A::upload(std::vector<Off>(p.offsets.begin(), p.offsets.end()));
  auto d_out = A::template poisoned<Acc>(static_cast<std::size_t>(p.segments()), 0x5A);
  segmented_reduce<Op, T, Acc, Off>(A::backend, std::span<const T>(d_x.data() + shift, p.x.size()),
                                    std::span<const Off>(d_off.data(), d_off.size()), std::span<Acc>(d_out.data(), d_out.size()),
                                    ws, A::stream(), check);
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

}  // namespace tally::test::segmented_checks

// ==== the test cases, for TestBackend =============================================================

namespace tally::test::segmented_checks {

TEST_CASE(TALLY_TEST_BACKEND ": segmented reductions: every operator x type, int32 and int64 offsets, against the naive reference",
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
      const int64_t shift = mix % 2;  // odd mixes: an input pointer off the 16-byte grid
      const std::string e64 = compare<Op>(run_segments<TestBackend, Op, T, Acc, int64_t>(ws, p, shift), ref);
      const std::string e32 = compare<Op>(run_segments<TestBackend, Op, T, Acc, int32_t>(ws, p, 1 - shift), ref);
      INFO((case_name<Op, T, Acc>()) << ", " << mix_name(mix) << " (" << p.segments() << " segments): int64 offsets: " << e64
                                     << " int32 offsets: " << e32);
      CHECK(e64.empty());
      CHECK(e32.empty());
    }
  });
}

TEST_CASE(TALLY_TEST_BACKEND ": segmented reductions propagate NaN to exactly the segments holding one", "[reduce][segmented][nan]") {
  Workspace ws(TestBackend::backend);
  std::uint64_t salt = 21000;
  using Cases = CaseList<Case<Max, float>, Case<Min, float>, Case<Max, float, double>, Case<Min, double>, Case<Sum, float>,
                         Case<Sum, double>, Case<Prod, float, double>>;
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
      INFO((case_name<Op, T, Acc>()) << ", " << mix_name(mix) << ": " << nan_segments << " segments hold a NaN, " << wrong
                                     << " disagree; " << compare<Op>(got, ref));
      CHECK(nan_segments > 0);
      CHECK(wrong == 0);
      CHECK(compare<Op>(got, ref).empty());
    }
  });
}

TEST_CASE(TALLY_TEST_BACKEND ": segmented reductions are bitwise reproducible, whatever the launch shape", "[reduce][segmented][determinism]") {
  Workspace ws(TestBackend::backend);
  // The CUDA grids are sized from the workspace's tuning: pretend devices of 1, 7 and 1000 SMs (the
  // CPU backend ignores it). The workspace owns its Tuning; changing it is the test's way in.
  auto& tune = const_cast<Tuning&>(ws.tuning());
  const Tuning real = tune;
  std::uint64_t salt = 22000;
  for (int mix : {1, 2, 3, 4}) {
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
      // The input pointer off the 16-byte grid (other loads, the same order): the same bits.
      CHECK(bitwise_equal(first, run_segments<TestBackend, Sum, float, float, int64_t>(ws, p, 3)));
    }
    tune = real;
  }
}

TEST_CASE(TALLY_TEST_BACKEND ": segmented max, min and integer operators give the CPU backend's bits", "[reduce][segmented][determinism]") {
  Workspace ws(TestBackend::backend), cpu_ws(Backend::cpu);
  std::uint64_t salt = 23000;
  for_each_case(AllCases{}, [&]<class C>(C) {
    using Op = typename C::Op;
    using T = typename C::T;
    using Acc = typename C::Acc;
    if constexpr (order_free<Op, T, Acc>) {
      for (int mix : {0, 3, 4}) {
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
                                               std::span<double>(out_q.data(), out_q.size()), ws, TestBackend::stream());
    const std::string ep = compare<Max>(TestBackend::download(out_p), p.reference());
    const std::string eq = compare<Sum>(TestBackend::download(out_q), q.reference());
    INFO(n_seg << " segments of " << size << ": max " << ep << " sum " << eq);
    CHECK(ep.empty());
    CHECK(eq.empty());
  }
}

TEST_CASE(TALLY_TEST_BACKEND ": no segments, and segments of nothing", "[reduce][segmented]") {
  Workspace ws(TestBackend::backend);
  auto d_x = TestBackend::upload(std::vector<float>{1.0f, 2.0f});
  auto d_off = TestBackend::upload(std::vector<int64_t>{0, 0, 0});
  auto d_out = TestBackend::template poisoned<float>(2, 0x5A);
  // Zero segments: one offset or none, nothing written.
  segmented_reduce<Sum, float>(TestBackend::backend, std::span<const float>(d_x.data(), 2), std::span<const int64_t>(d_off.data(), 1),
                               std::span<float>(d_out.data(), 0), ws, TestBackend::stream());
  segmented_reduce<Sum, float>(TestBackend::backend, std::span<const float>(), std::span<const int64_t>(),
                               std::span<float>(), ws, TestBackend::stream());
  // Two empty segments of an empty input: the identities.
  segmented_reduce<Max, float>(TestBackend::backend, std::span<const float>(), std::span<const int64_t>(d_off.data(), 3),
                               std::span<float>(d_out.data(), 2), ws, TestBackend::stream());
  const auto got = TestBackend::download(d_out);
  CHECK(got[0] == -std::numeric_limits<float>::infinity());
  CHECK(got[1] == -std::numeric_limits<float>::infinity());
}

TEST_CASE(TALLY_TEST_BACKEND ": bad segment offsets throw std::invalid_argument naming the argument, nothing written", "[reduce][segmented][errors]") {
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
          segmented_reduce<Sum, float>(TestBackend::backend, std::span<const float>(d_x.data(), n), std::span<const int64_t>(d_off.data(), d_off.size()),
                                       std::span<float>(d_out.data(), n_out), ws, TestBackend::stream());
        else
          segmented_reduce<Sum, float>(TestBackend::backend, std::span<const float>(d_x.data(), n), std::span<const int32_t>(d_off32.data(), d_off32.size()),
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
    segmented_reduce_fixed<Sum, float>(TestBackend::backend, std::span<const float>(d_x.data(), n), 33, std::span<float>(d_out.data(), 3), ws,
                                       TestBackend::stream());
    FAIL("no exception for 3 segments of 33 over 100 elements");
  } catch (const std::invalid_argument& ex) {
    CHECK(std::string(ex.what()).find("out: 3 segments of 33 elements do not cover in (100 elements)") != std::string::npos);
  }
  CHECK(bitwise_equal(TestBackend::download(d_out), poison));
  // A valid call afterwards works.
  auto d_off = TestBackend::upload(std::vector<int64_t>{0, 10, 10, 100});
  segmented_reduce<Sum, float>(TestBackend::backend, std::span<const float>(d_x.data(), n), std::span<const int64_t>(d_off.data(), 4),
                               std::span<float>(d_out.data(), 3), ws, TestBackend::stream());
  CHECK(TestBackend::download(d_out) == std::vector<float>{10.0f, 0.0f, 90.0f});
}

}  // namespace tally::test::segmented_checks
