#pragma once
// Segmented reductions with the library's reducers (ArgMax, ArgMin, MinMax, MeanVar) and a user's
// (custom_reducers.hpp), written once for every backend: included by each backend's test source after
// segmented_checks.hpp, whose problems, mixes and naive references (ref_arg, ref_minmax,
// check_reducers) they use.

#include "segmented_checks.hpp"

namespace tally::test::segmented_checks {

TEST_CASE(TALLY_TEST_BACKEND
          ": segmented ArgMax, ArgMin, MinMax and MeanVar against naive references (ties, NaN, empty segments)",
          "[reduce][segmented][reducers]") {
  Workspace ws(TestBackend::backend);
  std::uint64_t salt = 26000;
  for (int mix = 0; mix < kMixes; ++mix) {
    salt += 2;
    const auto off = offsets_of(mix_lengths(mix, salt));
    const std::string e32 = check_reducers<TestBackend, int32_t>(ws, off, salt + 1),
                      e64 = check_reducers<TestBackend, int64_t>(ws, off, salt + 1);
    const std::string ef = check_reducers<TestBackend, float>(ws, off, salt + 1),
                      ed = check_reducers<TestBackend, double>(ws, off, salt + 1);
    INFO(mix_name(mix) << ": int32 " << e32 << " int64 " << e64 << " float " << ef << " double " << ed);
    CHECK(e32.empty());
    CHECK(e64.empty());
    CHECK(ef.empty());
    CHECK(ed.empty());
  }
}

TEST_CASE(TALLY_TEST_BACKEND ": segmented ArgMax, ArgMin and MinMax give the CPU backend's bits",
          "[reduce][segmented][reducers][determinism]") {
  Workspace ws(TestBackend::backend), cpu_ws(Backend::cpu);
  std::uint64_t salt = 27000;
  for (int mix : {3, 4}) {
    salt += 2;
    const auto off = offsets_of(mix_lengths(mix, salt));
    const auto x = tie_values<float>(off, salt + 1);
    const auto a = run_reducer<TestBackend, ArgMax<float>, float, int64_t>(ws, x, off);
    const auto b = run_reducer<CpuBackend, ArgMax<float>, float, int64_t>(cpu_ws, x, off);
    const auto c = run_reducer<TestBackend, MinMax<float>, float, int64_t>(ws, x, off);
    const auto d = run_reducer<CpuBackend, MinMax<float>, float, int64_t>(cpu_ws, x, off);
    int64_t differ = 0;
    for (std::size_t s = 0; s < a.size(); ++s)
      differ += !(same_value(a[s].value, b[s].value) && a[s].index == b[s].index && same_value(c[s].min, d[s].min) &&
                  same_value(c[s].max, d[s].max));
    INFO(mix_name(mix) << ": " << differ << " segments differ");
    CHECK(differ == 0);
  }
}

TEST_CASE(TALLY_TEST_BACKEND
          ": a user's reducers over segments through the header-only engine (SumSq, BBox2, 16-byte elements)",
          "[reduce][segmented][custom]") {
  Workspace ws(TestBackend::backend);
  std::uint64_t salt = 28000;
  for (int mix = 0; mix < kMixes; ++mix) {
    salt += 2;
    const auto off = offsets_of(mix_lengths(mix, salt));
    const auto n = static_cast<std::size_t>(off.back());
    auto g = tally::test::rng(salt + 1);
    std::uniform_real_distribution<float> d(-1.0f, 1.0f);
    std::uniform_int_distribution<int> k(-8, 8);
    std::vector<float> x(n);
    std::vector<Point2> p(n);
    for (auto& v : x) v = d(g);
    for (auto& q : p) q = {static_cast<float>(k(g)), d(g)};  // x on a few values: ties for the leftmost point
    auto d_x = TestBackend::upload(x);
    auto d_p = TestBackend::upload(p);
    auto d_o64 = TestBackend::upload(off);
    auto d_o32 = TestBackend::upload(std::vector<int32_t>(off.begin(), off.end()));
    auto d_s = TestBackend::template poisoned<SumSqCount>(off.size() - 1, 0x5A);
    auto d_b = TestBackend::template poisoned<Box2>(off.size() - 1, 0x5A);
    TestBackend::template segmented_custom<SumSq, float, int64_t>(
        std::span<const float>(d_x.data(), n), std::span<const int64_t>(d_o64.data(), off.size()),
        std::span<SumSqCount>(d_s.data(), off.size() - 1), ws);
    TestBackend::template segmented_custom<BBox2, Point2, int32_t>(std::span<const Point2>(d_p.data(), n),
                                                                   std::span<const int32_t>(d_o32.data(), off.size()),
                                                                   std::span<Box2>(d_b.data(), off.size() - 1), ws);
    std::vector<Wide> wide(n);
    for (std::size_t i = 0; i < n; ++i) wide[i] = {static_cast<double>(x[i]), -1.0};
    auto d_w = TestBackend::upload(wide);
    auto d_sw = TestBackend::template poisoned<SumSqCount>(off.size() - 1, 0x5A);
    TestBackend::template segmented_custom<SumSqWide, Wide, int64_t>(
        std::span<const Wide>(d_w.data(), n), std::span<const int64_t>(d_o64.data(), off.size()),
        std::span<SumSqCount>(d_sw.data(), off.size() - 1), ws);
    const auto s = TestBackend::download(d_s);
    const auto sw = TestBackend::download(d_sw);
    const auto b = TestBackend::download(d_b);
    // 16-byte elements: the same operations in the same order as the floats, so the same bits.
    int64_t wide_differ = 0;
    for (std::size_t q = 0; q + 1 < off.size(); ++q)
      wide_differ += sw[q].count != s[q].count || std::memcmp(&sw[q].sum, &s[q].sum, sizeof(double)) != 0 ||
                     std::memcmp(&sw[q].sumsq, &s[q].sumsq, sizeof(double)) != 0;
    INFO(mix_name(mix) << ": " << wide_differ << " segments of 16-byte elements differ from the floats'");
    CHECK(wide_differ == 0);
    int64_t bad = 0;
    std::string first;
    for (std::size_t q = 0; q + 1 < off.size(); ++q) {
      const int64_t lo = off[q], len = off[q + 1] - lo;
      long double sum = 0, sumsq = 0, abs = 0;
      Box2 want{std::numeric_limits<float>::infinity(), std::numeric_limits<float>::infinity(),
                -std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(), no_index};
      for (int64_t i = 0; i < len; ++i) {
        const float v = x[static_cast<std::size_t>(lo + i)];
        sum += v, sumsq += static_cast<long double>(v) * v, abs += std::fabs(v);
        const Point2 pt = p[static_cast<std::size_t>(lo + i)];
        if (pt.x < want.xmin) want.xmin = pt.x, want.leftmost = i;
        want.ymin = std::min(want.ymin, pt.y), want.xmax = std::max(want.xmax, pt.x),
        want.ymax = std::max(want.ymax, pt.y);
      }
      // Double partials of float terms: (len + 1) eps(double) of sum |x| (and of sum x^2 <= sum |x|).
      const long double tol = static_cast<long double>(len + 1) * std::numeric_limits<double>::epsilon() * abs;
      const bool ok = s[q].count == len && std::fabs(s[q].sum - sum) <= tol && std::fabs(s[q].sumsq - sumsq) <= tol &&
                      b[q].xmin == want.xmin && b[q].ymin == want.ymin && b[q].xmax == want.xmax &&
                      b[q].ymax == want.ymax && b[q].leftmost == want.leftmost;
      if (!ok && ++bad == 1)
        first = "segment " + std::to_string(q) + " (" + std::to_string(len) + " elements): count " +
                std::to_string(s[q].count) + ", sum " + show(s[q].sum) + " vs " + show(sum) + ", leftmost " +
                std::to_string(b[q].leftmost) + " vs " + std::to_string(want.leftmost);
    }
    INFO(mix_name(mix) << ": " << bad << " segments wrong; " << first);
    CHECK(bad == 0);
  }
}

}  // namespace tally::test::segmented_checks
