// mcpi: command line and output only (the result file: mcpi_output.hpp); the computation is behind mcpi.hpp.
#include <cctype>
#include <cmath>
#include <cstdio>
#include <exception>
#include <span>
#include <optional>
#include <string>

#include "mcpi.hpp"
#include "mcpi_output.hpp"
#include "tally/common/app.hpp"
#include "tally/common/cli.hpp"
#include "tally/common/device_info.hpp"
#include "tally/common/error.hpp"
#include "tally/common/h5.hpp"
#include "tally/common/json.hpp"
#include "tally/common/progress.hpp"
#include "tally/common/provenance.hpp"
#include "tally/common/ranks_report.hpp"
#include "tally/common/timing.hpp"
#include "tally/reduce/backend.hpp"
#include "tally/common/interrupt.hpp"
#include "tally/ranks/session.hpp"
#include "tally/ranks/split.hpp"
#include "tally/reduce/ranks.hpp"

namespace {

using namespace tally;
using namespace tally::mcpi;
using ranks::Comm;
using ranks::Memory;

std::string fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

// --bench on several ranks: the fused Philox kernel on rank 0 alone (the others wait at a barrier),
// then on every rank at once, each rank counting its own 2^36 samples per run (disjoint stretches of
// the stream); each timed run starts at a barrier and lasts until the slowest rank is done.
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

int run(int argc, char** argv, Comm& comm) {
  // Every rank must run the same job: a rank with other options would count other samples or wait
  // in another collective. Checked before parsing, so every rank parses the same text.
  std::string args;
  for (int i = 1; i < argc; ++i) args += std::string(i > 1 ? " " : "") + argv[i];
  comm.require_same(args, "the command line (mcpi's options)");

  CLI::App app{"mcpi: Monte Carlo estimate of pi with cuRAND (GPU) and a bit-identical CPU backend", "mcpi"};
  cli::CommonOptions common;
  common.out = "results/mcpi.h5";
  cli::add_common_options(app, common, /*with_precision=*/false);
  std::string n_text = "1e8", batch_text = "2^32", generator = "philox", api = "device";
  std::string offset_text = "0";
  bool bench = false;
  int repeats = 5;
  app.add_option("--n,-n", n_text, "Samples (points): an integer, 1e8 or 2^30; up to 2^62")->capture_default_str();
  app.add_option("--generator,-g", generator, "philox, xorwow, mrg32k3a, sobol or scrambled-sobol")
      ->capture_default_str();
  app.add_option("--api", api, "device (fused kernel, cuRAND device API) or host (curandGenerateUniform + count)")
      ->capture_default_str();
  app.add_option("--offset", offset_text,
                 "Index of the first sample in the stream (continue a run: previous offset + n)")
      ->capture_default_str();
  app.add_option("--batch", batch_text, "Samples per batch (one launch, one per-batch estimate)")
      ->capture_default_str();
  app.add_flag("--bench", bench, "Run the performance table (generators x APIs, and a hand-written reference kernel)");
  cli::add_number(app, "--repeats", repeats, "Timed repeats per benchmark row (median)", cli::in_range(1, 100))
      ->capture_default_str();
  if (auto rc = cli::parse(app, argc, argv, comm.is_root())) return *rc;  // the same on every rank: rank 0 prints

  // Set-up, which may fail on some ranks only (no GPU on one of them, an unwritable --out on rank 0):
  // the ranks agree on it, so that every rank exits and rank 0 prints the failing rank's message.
  Params p;  // the whole job: every rank validates it (the Sobol 2^32 limit is on offset + n of the job)
  reduce::Backend backend = reduce::Backend::cpu;
  std::optional<h5::File> file;
  std::optional<DeviceInfo> dev;
  int device = -1;
  std::exception_ptr failure;
  try {
    p.n = parse_count(n_text, "--n");
    p.batch = parse_count(batch_text, "--batch");
    p.offset = parse_count(offset_text, "--offset");
    p.seed = common.seed;
    p.generator = parse_generator(generator);
    p.api = parse_api(api);
    validate(p);
    bool fell_back = false;
    backend = reduce::resolve_backend(common.backend, &fell_back);
    if (fell_back && comm.is_root()) std::fprintf(stderr, "mcpi: no usable GPU, running on the CPU backend\n");
    if (backend == reduce::Backend::cpu) {
      std::string why;
      if (bench) throw InputError("--bench: the benchmark table is for --backend cuda");
      if (!cpu_supports(p.generator, p.api, &why)) throw InputError(why);
    } else {
      device = comm.pick_device(common.device);  // each rank its GPU (--device with one rank)
      if (device < 0) throw InputError("--backend cuda: no usable CUDA device on this rank");
      dev = query_device(device);
    }
    // A bad --out fails before any work; the file itself is created once the job is done, so that a
    // rank failing mid-run (the job aborted) leaves no file, not even a temporary one.
    if (comm.is_root()) (void)h5::File::create(common.out);
  } catch (...) {
    failure = std::current_exception();
  }
  comm.agree(failure);
  // --backend auto must resolve alike everywhere: one job runs on one kind of backend.
  comm.require_same(reduce::to_string(backend),
                    "the backend (--backend " + common.backend + " as resolved on each rank)");
  if (backend == reduce::Backend::cuda) comm.use_device(device);
  const int ranks = comm.size();
  const auto prov = collect_provenance(cli::command_line(argc, argv), dev);

  if (bench) {
    // Rank 0 alone runs the table; then the multi-rank scaling of the fused Philox kernel.
    RanksReport rr;
    rr.ranks = ranks;
    rr.transport = comm.transport(Memory::host);
    rr.shares_device = backend == reduce::Backend::cuda && comm.shares_device();
    BenchReport rep;
    if (comm.is_root()) rep = bench_cuda(device, p.seed, repeats);
    comm.idle_barrier();
    std::optional<Scaling> sc;
    if (ranks > 1) sc = bench_ranks(comm, device, p.seed, repeats);
    if (!comm.is_root()) return exit_ok;
    file = h5::File::create(common.out);
    write_header(*file, backend, p.seed);
    auto g = file->group("bench");
    g.attr("copy_bandwidth_gbs", rep.copy_gbs);
    g.attr("repeats", repeats);
    const bool table = !common.json;
    if (table && !common.quiet)
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
      std::printf("| %-28s | %14s | %10s | %12.1f | %8s |\n", "host-api bound (16 B/sample)", "", "",
                  rep.copy_gbs / 16.0, "");
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
    write(*file, rr);
    file->attr("status", "ok");
    write_provenance(*file, prov, dev);
    file->commit();
    return exit_ok;
  }

  HostTimer total;
  // This rank's stretch of the stream: samples [offset + b, offset + e) of the job, in batches of
  // --batch. The stream layout (mcpi.hpp) makes the stretches' hits add up to the single-rank count.
  const ranks::Range part = ranks::split_range(p.n, ranks, comm.rank());
  Params mine = p;
  mine.offset = p.offset + part.begin;
  mine.n = part.size();
  Progress bar(common.quiet || common.json || !comm.is_root());
  const ProgressFn progress = [&](std::int64_t done, std::int64_t hits) {
    interrupt::check("after " + std::to_string(done) + " samples");  // a safe point: each batch
    if (!bar.due()) return;
    const double est = 4.0 * static_cast<double>(hits) / static_cast<double>(done);
    bar.update("mcpi: " + fmt("%.3g", static_cast<double>(done)) + " / " + fmt("%.3g", static_cast<double>(mine.n)) +
               " samples" + (ranks > 1 ? " on rank 0" : "") + ", pi ~ " + fmt("%.8f", est) + " +- " +
               fmt("%.2g", std_error(done)));
  };
  Result r;  // a rank with no samples (more ranks than samples) counts nothing
  if (mine.n > 0) r = backend == reduce::Backend::cuda ? run_cuda(mine, device, progress) : run_cpu(mine, progress);
  bar.finish();
  const Job job = gather_job(comm, p, backend, std::move(r), total);  // collective
  if (!comm.is_root()) return exit_ok;                                // rank 0 writes and reports
  file = h5::File::create(common.out);
  write_result(*file, job, prov, dev);
  file->commit();
  const Outcome& o = job.outcome;
  const Result& jr = job.result;
  const double rate = job.samples_per_s();
  if (common.json) {
    JsonLine j;
    j.add("app", "mcpi").add("backend", reduce::to_string(backend)).add("generator", to_string(p.generator));
    j.add("api", to_string(p.api)).add("n", p.n).add("offset", p.offset).add("seed", p.seed).add("hits", jr.hits);
    j.add("estimate", o.estimate).add("std_error", o.std_error).add("abs_error", o.abs_error);
    j.add("batches", static_cast<std::int64_t>(jr.batch_n.size())).add("setup_s", jr.setup_s);
    j.add("ranks", ranks).add("transport", job.ranks.transport).add("shares_device", job.ranks.shares_device);
    j.add("generate_count_s", jr.generate_count_s).add("total_s", job.total_s).add("samples_per_s", rate);
    j.add("status", o.ok ? "ok" : "failed").add("out", common.out);
    std::printf("%s\n", j.str().c_str());
  } else if (!common.quiet) {
    std::printf(
        "mcpi: pi ~ %.9f +- %.2g from %.4g %s points (%s API, %s): |error| = %.2g = %.2f sigma (%s 5 sigma); "
        "%.3g s, %.3g Gsamples/s (setup %.3g s)%s\n",
        o.estimate, o.std_error, static_cast<double>(p.n), to_string(p.generator).c_str(), to_string(p.api).c_str(),
        reduce::to_string(backend).c_str(), o.abs_error, o.abs_error / o.std_error, o.ok ? "within" : "NOT within",
        jr.generate_count_s, rate * 1e-9, jr.setup_s, ranks_summary(job.ranks).c_str());
  }
  if (!o.ok) std::fprintf(stderr, "mcpi: the estimate is %.1f sigma from pi: failed\n", o.abs_error / o.std_error);
  return o.ok ? exit_ok : exit_failure;
}

}  // namespace

int main(int argc, char** argv) {
  return tally::ranks::run_ranks("mcpi", argc, argv, [&](Comm& comm) { return run(argc, argv, comm); });
}
