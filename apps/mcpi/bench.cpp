// mcpi --bench (driver.hpp): on rank 0's GPU, every generator through both APIs, the fused Philox
// kernel's variants and a hand-written reference kernel, against the copy bandwidth; on several
// ranks, the fused Philox kernel on rank 0 alone and then on every rank at once. Every row's
// estimate is checked against its error bound. Rank 0 prints the table and writes the file.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "driver.hpp"
#include "mcpi_output.hpp"
#include "tally/common/app.hpp"
#include "tally/common/error.hpp"
#include "tally/common/h5.hpp"
#include "tally/common/json.hpp"
#include "tally/common/ranks_report.hpp"
#include "tally/common/timing.hpp"
#include "tally/reduce/ranks.hpp"

namespace tally::mcpi {

namespace {

using ranks::Comm;
using ranks::Memory;

struct BenchRow {
  std::string name;  ///< e.g. "fused philox", "host-api xorwow", "reference curand_uniform4"
  std::int64_t samples = 0;
  double median_s = 0;  ///< generation + count, median of repeats after warm-up
  double setup_s = 0;   ///< state initialisation, once (not in median_s)
  [[nodiscard]] double gsamples_per_s() const {
    return median_s > 0 ? static_cast<double>(samples) / median_s * 1e-9 : 0.0;
  }
};
struct BenchReport {
  double copy_gbs = 0;  ///< cudaMemcpy D2D bandwidth (bytes read + written), median
  std::vector<BenchRow> rows;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/// Throws tally::Error when `hits` of samples [first, first + n) lie beyond their error bound.
void check_estimate(const std::string& what, Generator g, std::int64_t first, std::int64_t n, std::int64_t hits) {
  if (!(std::abs(4.0 * static_cast<double>(hits) / static_cast<double>(n) - pi) <= error_bound(g, first, n)))
    throw Error("bench: " + what + " gave an estimate beyond its error bound");
}

BenchReport bench_table(int device, std::uint64_t seed, int repeats) {
  BenchReport rep;
  rep.copy_gbs = cuda_copy_gbs(device, std::size_t{1} << 30, repeats);  // the ceiling: 1 GiB, read + written
  using detail::PhiloxLoop;
  struct Case {
    Generator g;
    Api api;
    std::int64_t n;
    PhiloxLoop loop = PhiloxLoop::direct;
  };
  const std::int64_t big = std::int64_t{1} << 36, mid = std::int64_t{1} << 33, quasi = std::int64_t{1} << 29;
  const Case cases[] = {
      {Generator::philox, Api::device, big, PhiloxLoop::direct},
      {Generator::philox, Api::device, big, PhiloxLoop::direct_full},
      {Generator::philox, Api::device, big, PhiloxLoop::uniform4},
      {Generator::xorwow, Api::device, big},
      {Generator::mrg32k3a, Api::device, mid},
      {Generator::sobol, Api::device, quasi},
      {Generator::scrambled_sobol, Api::device, quasi},
      {Generator::philox, Api::host, mid},
      {Generator::xorwow, Api::host, mid},
      {Generator::mrg32k3a, Api::host, mid},
      {Generator::sobol, Api::host, quasi},
      {Generator::scrambled_sobol, Api::host, quasi},
  };
  for (const Case& c : cases) {
    const bool philox = c.api == Api::device && c.g == Generator::philox;
    const auto e = make_cuda_counter(device, c.g, c.api, seed, 0, philox ? c.loop : PhiloxLoop::direct);
    const char* loop_name = c.loop == PhiloxLoop::direct        ? ""
                            : c.loop == PhiloxLoop::direct_full ? " (32 regs)"
                                                                : " (uniform4 loop)";
    BenchRow row{(c.api == Api::device ? "fused " : "host-api ") + to_string(c.g) + (philox ? loop_name : ""), c.n, 0,
                 e->setup_s()};
    std::vector<double> times;
    for (int i = 0; i <= repeats; ++i) {  // consecutive ranges of the stream: never the same samples twice
      double s = 0;
      const std::int64_t h = e->count(c.n, &s);
      if (i > 0) times.push_back(s);
      check_estimate(row.name, c.g, i * c.n, c.n, h);
    }
    row.median_s = median(times);
    rep.rows.push_back(row);
  }
  std::vector<double> times;  // the outside reference
  std::int64_t samples = 0;
  for (int i = 0; i <= repeats; ++i) {
    double s = 0;
    samples = reference_uniform4(device, seed + static_cast<std::uint64_t>(i), big, &s);
    if (i > 0) times.push_back(s);
  }
  rep.rows.push_back({"reference curand_uniform4", samples, median(times), 0});
  return rep;
}

/// The fused Philox kernel (production loop) on `device` counting n samples from `first`, then the
/// next n, ... (1 warm-up and `repeats` timed runs). Each run starts after `start()` (a barrier) and is
/// timed on the host until its count is back; `job(seconds)` turns this rank's seconds into the job's
/// (the slowest rank's). The median job seconds; the estimate of all the runs checked.
double time_fused_philox(int device, std::uint64_t seed, std::int64_t first, std::int64_t n, int repeats,
                         const std::function<void()>& start, const std::function<double(double)>& job) {
  const auto e = make_cuda_counter(device, Generator::philox, Api::device, seed, first);
  std::vector<double> times;
  std::int64_t hits = 0;
  for (int i = 0; i <= repeats; ++i) {  // consecutive ranges of this rank's stream
    start();
    HostTimer t;
    const std::int64_t h = e->count(n);
    const double s = job(t.seconds());
    if (i > 0) times.push_back(s);
    hits += h;
  }
  check_estimate("the fused philox kernel", Generator::philox, first, n * (repeats + 1), hits);
  return median(times);
}

/// Several ranks: the fused Philox kernel on rank 0 alone (the others wait at a barrier), then on
/// every rank at once, each rank counting its own 2^36 samples per run (disjoint stretches of the
/// stream); each timed run starts at a barrier and lasts until the slowest rank is done.
struct Scaling {
  std::int64_t samples_per_rank = 0;
  double single_s = 0, job_s = 0;
  [[nodiscard]] double single_gsps() const { return static_cast<double>(samples_per_rank) / single_s * 1e-9; }
  [[nodiscard]] double aggregate_gsps(int ranks) const {
    return static_cast<double>(samples_per_rank) * ranks / job_s * 1e-9;
  }
};

Scaling bench_ranks(const Comm& comm, int device, std::uint64_t seed, int repeats) {
  Scaling sc;
  sc.samples_per_rank = std::int64_t{1} << 36;
  const auto job = [&](double local_s) {
    reduce::allreduce<reduce::Max, double>(comm, std::span<const double>(&local_s, 1), std::span<double>(&local_s, 1),
                                           Memory::host);
    return local_s;
  };
  const auto barrier = [&] { comm.barrier(); };
  if (comm.is_root())
    sc.single_s = time_fused_philox(
        device, seed, 0, sc.samples_per_rank, repeats, [] {}, [](double t) { return t; });
  comm.idle_barrier();  // the others wait without taking rank 0's cores
  const std::int64_t per_rank_stretch = sc.samples_per_rank * (repeats + 1);  // disjoint stretches: no sample twice
  sc.job_s =
      time_fused_philox(device, seed, per_rank_stretch * comm.rank(), sc.samples_per_rank, repeats, barrier, job);
  comm.broadcast(std::span<double>(&sc.single_s, 1));
  return sc;
}

}  // namespace

int run_bench(const Options& o, const Params& p, int device, const std::optional<DeviceInfo>& dev,
              const Provenance& prov, ranks::Comm& comm) {
  const int ranks = comm.size(), repeats = o.repeats;
  RanksReport rr;
  rr.ranks = ranks;
  rr.transport = comm.transport(Memory::host);
  rr.shares_device = comm.shares_device();
  BenchReport rep;
  if (comm.is_root()) rep = bench_table(device, p.seed, repeats);
  comm.idle_barrier();
  std::optional<Scaling> sc;
  if (ranks > 1) sc = bench_ranks(comm, device, p.seed, repeats);
  if (!comm.is_root()) return exit_ok;
  h5::File file = h5::File::create(o.common.out);
  write_header(file, reduce::Backend::cuda, p.seed);
  auto g = file.group("bench");
  g.attr("copy_bandwidth_gbs", rep.copy_gbs);
  g.attr("repeats", repeats);
  const bool table = !o.common.json;
  if (table && !o.common.quiet)
    std::printf("mcpi benchmark on %s (median of %d after warm-up; samples = points)\n", dev->name.c_str(), repeats);
  if (table)
    std::printf("| %-28s | %14s | %10s | %12s | %8s |\n", "kernel", "samples", "median ms", "Gsamples/s", "setup ms");
  if (table) std::printf("| %-28s | %14s | %10s | %12s | %8s |\n", "---", "---", "---", "---", "---");
  JsonLine j;
  j.add("app", "mcpi").add("bench", true).add("device", dev->name).add("copy_gbs", rep.copy_gbs);
  j.add("ranks", ranks).add("transport", rr.transport);
  for (const auto& r : rep.rows) {
    if (table)
      std::printf("| %-28s | %14lld | %10.3f | %12.1f | %8.3f |\n", r.name.c_str(), static_cast<long long>(r.samples),
                  r.median_s * 1e3, r.gsamples_per_s(), r.setup_s * 1e3);
    std::string key = r.name;
    for (char& ch : key) ch = std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
    j.add(key + "_gsamples_per_s", r.gsamples_per_s());
    auto rg = g.group(r.name);
    rg.attr("samples", r.samples);
    rg.attr("median_s", r.median_s);
    rg.attr("setup_s", r.setup_s);
    rg.attr("gsamples_per_s", r.gsamples_per_s());
  }
  if (table) {
    std::printf("| %-28s | %14s | %10s | %12.1f | %8s |\n", "copy D2D GB/s (r+w)", "1 GiB", "", rep.copy_gbs, "");
    std::printf("| %-28s | %14s | %10s | %12.1f | %8s |\n", "host-api bound (16 B/sample)", "", "", rep.copy_gbs / 16.0,
                "");
  }
  if (sc) {
    const double agg = sc->aggregate_gsps(ranks), single = sc->single_gsps(), eff = agg / (ranks * single);
    if (table)
      std::printf(
          "fused philox on %d ranks (%s%s): %.1f Gsamples/s aggregate against %.1f on rank 0 alone in this run: "
          "%.2fx, efficiency %.1f%% (2^36 samples per rank, wall time to the slowest rank, median of %d)\n",
          ranks, rr.transport.c_str(), rr.shares_device ? ", ranks share a GPU" : "", agg, single, agg / single,
          100.0 * eff, repeats);
    j.add("ranks_aggregate_gsamples_per_s", agg)
        .add("single_rank_gsamples_per_s", single)
        .add("rank_speedup", agg / single);
    j.add("rank_efficiency", eff);
    auto sg = g.group("ranks");
    sg.attr("samples_per_rank", sc->samples_per_rank);
    sg.attr("single_rank_s", sc->single_s);
    sg.attr("job_s", sc->job_s);
    sg.attr("aggregate_gsamples_per_s", agg);
    sg.attr("single_rank_gsamples_per_s", single);
    sg.attr("efficiency", eff);
  }
  if (!table) std::printf("%s\n", j.str().c_str());
  rr.decomposition = "bench: each rank its own 2^36 samples per run";
  write(file, rr);
  file.attr("status", "ok");
  write_provenance(file, prov, dev);
  file.commit();
  return exit_ok;
}

}  // namespace tally::mcpi
