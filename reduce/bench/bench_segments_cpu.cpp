// reduce-bench --suite segments: the segment-length mixes (shared with bench_segments.cu) and the CPU
// backend's rows: the segmented float sum against the full float sum of the same array, same threads.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <random>
#include <vector>

#include "bench.hpp"
#include "tally/common/error.hpp"
#include "tally/common/interrupt.hpp"
#include "tally/reduce/segmented.hpp"

namespace tally::reduce::bench {

std::vector<SegmentCase> segment_cases(std::int64_t n, const std::string& only) {
  // Segments of 4: CSR rows of a very sparse matrix, where the pair kernel (CUDA) takes over.
  std::vector<SegmentCase> c = {{"uniform 4", 4, false}, {"uniform 16", 16, false}, {"uniform 1000", 1000, false}};
  if (n >= (std::int64_t{1} << 22)) c.push_back({"uniform 2^20", std::int64_t{1} << 20, false});
  c.push_back({"power law", 0, true});
  c.push_back({"10^5 ones + 1 giant", 0, false});
  if (only.empty()) return c;
  std::string names;
  for (const SegmentCase& k : c) {
    if (k.name == only) return {k};
    names += (names.empty() ? "'" : ", '") + k.name + "'";
  }
  throw InputError("--segment-case: no case '" + only + "' (the cases: " + names + ")");
}

std::vector<std::int64_t> segment_offsets(const SegmentCase& c, std::int64_t n, std::uint64_t seed) {
  std::vector<std::int64_t> off = {0};
  if (c.uniform > 0) {
    // The last segment takes what is left when n is not a multiple (1000 does not divide 2^28).
    for (std::int64_t b = c.uniform; b < n; b += c.uniform) off.push_back(b);
  } else if (c.power_law) {
    std::mt19937_64 g(seed);
    std::uniform_real_distribution<double> u(0.0, 1.0);
    const double cap = static_cast<double>(n / 4);
    for (std::int64_t at = 0; at < n;) {
      const double l = std::min(cap, std::floor(std::pow(1.0 - u(g), -1.0 / 1.2)));
      at = std::min(n, at + static_cast<std::int64_t>(l));
      off.push_back(at);
    }
    off.pop_back();
  } else {
    for (std::int64_t s = 1; s <= 100000 && s < n; ++s) off.push_back(s);
  }
  off.push_back(n);
  return off;
}

Report run_segments_cpu(const Options& o) {
  Report rep;
  if (o.threads > 0) omp_set_num_threads(o.threads);
  const int threads = omp_get_max_threads();
  rep.backend = "cpu";
  rep.device = "cpu, " + std::to_string(threads) + " threads";
  const std::int64_t n = std::int64_t{1} << (o.quick ? 20 : 26);
  const int reps = o.quick ? 5 : 11;
  std::mt19937_64 g(o.seed);
  std::uniform_real_distribution<float> d(-1.f, 1.f);
  std::vector<float> x(static_cast<std::size_t>(n));
  for (auto& v : x) v = d(g);
  Workspace ws(Backend::cpu);
  const std::span<const float> in(x.data(), x.size());
  float sink = 0;
  const double full = median_us(
      [&] { sink += reduce_to_host<Sum, float>(Backend::cpu, View<const float>::flat(x.data(), n), ws); }, reps);
  const double bytes = 4.0 * double(n);
  Row f = make_row("segments", "tally cpu full sum", "", "sum", "float", "1 segment", n, bytes, bytes, full);
  f.gbs = bytes / (full * 1e3);
  rep.rows.push_back(f);
  rep.ceiling_gbs = f.gbs, rep.ceiling_name = "tally's full float sum of the same array";
  rep.summary.push_back("| segments (cpu, " + size_name(n) +
                        " floats) | segments | tally GB/s | vs full sum | fixed-size GB/s |");
  rep.summary.push_back("| --- | --- | --- | --- | --- |");
  for (const SegmentCase& c : segment_cases(n, o.segment_case)) {
    const auto off = segment_offsets(c, n, o.seed);
    const auto n_seg = static_cast<std::int64_t>(off.size()) - 1;
    std::vector<float> out(static_cast<std::size_t>(n_seg));
    const double us = median_us(
        [&] {
          segmented_reduce<Sum, float>(Backend::cpu, in, std::span<const std::int64_t>(off), std::span<float>(out), ws);
        },
        reps);
    Row r = make_row("segments", "tally cpu", "offsets int64", "sum", "float", c.name, n, bytes,
                     bytes + 8.0 * double(off.size()), us);
    r.gbs = bytes / (us * 1e3), r.vs_ceiling = r.gbs / f.gbs, r.vs_ref = r.vs_ceiling,
    r.ref = "this GB/s / the full sum's";
    rep.rows.push_back(r);
    double fixed_gbs = std::nan("");
    if (c.uniform > 0 && n % c.uniform == 0) {
      const double fus = median_us(
          [&] { segmented_reduce_fixed<Sum, float>(Backend::cpu, in, c.uniform, std::span<float>(out), ws); }, reps);
      Row q = make_row("segments", "tally cpu fixed size", "", "sum", "float", c.name, n, bytes, bytes, fus);
      q.gbs = bytes / (fus * 1e3), q.vs_ceiling = q.gbs / f.gbs;
      rep.rows.push_back(q);
      fixed_gbs = q.gbs;
    }
    char line[200];
    std::snprintf(line, sizeof line, "| %s | %lld | %.1f | %.2f | %.1f |", c.name.c_str(),
                  static_cast<long long>(n_seg), r.gbs, r.vs_ceiling, fixed_gbs);
    rep.summary.push_back(line);
    sink += out.empty() ? 0.f : out[0];
    interrupt::check("between benchmark cases");
  }
  if (sink == 12345.f) std::printf(" \n");
  return rep;
}

}  // namespace tally::reduce::bench
