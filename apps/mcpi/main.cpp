// mcpi: command line and output only; the computation is behind mcpi.hpp.
#include <cctype>
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>

#include "mcpi.hpp"
#include "tally/common/app.hpp"
#include "tally/common/cli.hpp"
#include "tally/common/device_info.hpp"
#include "tally/common/error.hpp"
#include "tally/common/h5.hpp"
#include "tally/common/json.hpp"
#include "tally/common/progress.hpp"
#include "tally/common/provenance.hpp"
#include "tally/common/timing.hpp"
#include "tally/reduce/backend.hpp"

namespace {

using namespace tally;
using namespace tally::mcpi;

std::string fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

int run(int argc, char** argv) {
  CLI::App app{"mcpi: Monte Carlo estimate of pi with cuRAND (GPU) and a bit-identical CPU backend", "mcpi"};
  cli::CommonOptions common;
  common.out = "results/mcpi.h5";
  cli::add_common_options(app, common, /*with_precision=*/false);
  std::string n_text = "1e8", batch_text = "2^32", generator = "philox", api = "device";
  std::string offset_text = "0";
  bool bench = false;
  int repeats = 5;
  app.add_option("--n,-n", n_text, "Samples (points): an integer, 1e8 or 2^30; up to 2^62")->capture_default_str();
  app.add_option("--generator,-g", generator, "philox, xorwow, mrg32k3a, sobol or scrambled-sobol")->capture_default_str();
  app.add_option("--api", api, "device (fused kernel, cuRAND device API) or host (curandGenerateUniform + count)")
      ->capture_default_str();
  app.add_option("--offset", offset_text, "Index of the first sample in the stream (continue a run: previous offset + n)")
      ->capture_default_str();
  app.add_option("--batch", batch_text, "Samples per batch (one launch, one per-batch estimate)")->capture_default_str();
  app.add_flag("--bench", bench, "Run the performance table (generators x APIs, and a hand-written reference kernel)");
  cli::add_number(app, "--repeats", repeats, "Timed repeats per benchmark row (median)", cli::in_range(1, 100))->capture_default_str();
  if (auto rc = cli::parse(app, argc, argv)) return *rc;

  Params p;
  p.n = parse_count(n_text, "--n");
  p.batch = parse_count(batch_text, "--batch");
  p.offset = parse_count(offset_text, "--offset");
  p.seed = common.seed;
  p.generator = parse_generator(generator);
  p.api = parse_api(api);
  validate(p);

  bool fell_back = false;
  const reduce::Backend backend = reduce::resolve_backend(common.backend, &fell_back);
  if (fell_back) std::fprintf(stderr, "mcpi: no usable GPU, running on the CPU backend\n");
  if (backend == reduce::Backend::cpu) {
    std::string why;
    if (bench) throw InputError("--bench: the benchmark table is for --backend cuda");
    if (!cpu_supports(p.generator, p.api, &why)) throw InputError(why);
  }
  auto file = h5::File::create(common.out);  // early: a bad --out fails before any work
  std::optional<DeviceInfo> dev;
  if (backend == reduce::Backend::cuda) dev = query_device(common.device);
  const auto prov = collect_provenance(cli::command_line(argc, argv), dev);
  file.attr("app", "mcpi");
  file.attr("backend", reduce::to_string(backend));
  file.attr("seed", static_cast<std::uint64_t>(p.seed));

  if (bench) {
    const BenchReport rep = bench_cuda(common.device, p.seed, repeats);
    auto g = file.group("bench");
    g.attr("copy_bandwidth_gbs", rep.copy_gbs);
    g.attr("repeats", repeats);
    const bool table = !common.json;
    if (table && !common.quiet) std::printf("mcpi benchmark on %s (median of %d after warm-up; samples = points)\n", dev->name.c_str(), repeats);
    if (table) std::printf("| %-28s | %14s | %10s | %12s | %8s |\n", "kernel", "samples", "median ms", "Gsamples/s", "setup ms");
    if (table) std::printf("| %-28s | %14s | %10s | %12s | %8s |\n", "---", "---", "---", "---", "---");
    JsonLine j;
    j.add("app", "mcpi").add("bench", true).add("device", dev->name).add("copy_gbs", rep.copy_gbs);
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
      std::printf("| %-28s | %14s | %10s | %12.1f | %8s |\n", "host-api bound (16 B/sample)", "", "", rep.copy_gbs / 16.0, "");
    } else {
      std::printf("%s\n", j.str().c_str());
    }
    file.attr("status", "ok");
    write_provenance(file, prov, dev);
    file.commit();
    return exit_ok;
  }

  HostTimer total;
  Progress bar(common.quiet || common.json);
  const ProgressFn progress = [&](std::int64_t done, std::int64_t hits) {
    if (!bar.due()) return;
    const double est = 4.0 * static_cast<double>(hits) / static_cast<double>(done);
    bar.update("mcpi: " + fmt("%.3g", static_cast<double>(done)) + " / " + fmt("%.3g", static_cast<double>(p.n)) +
               " samples, pi ~ " + fmt("%.8f", est) + " +- " + fmt("%.2g", std_error(done)));
  };
  const Result r = backend == reduce::Backend::cuda ? run_cuda(p, common.device, progress) : run_cpu(p, progress);
  bar.finish();
  const double total_s = total.seconds();

  const double estimate = 4.0 * static_cast<double>(r.hits) / static_cast<double>(p.n);
  const double sigma = std_error(p.n), abs_error = std::fabs(estimate - pi);
  const bool ok = abs_error <= 5.0 * sigma;  // a 5-sigma miss (p ~ 6e-7) means a broken generator or count
  const double rate = static_cast<double>(p.n) / r.generate_count_s;

  file.attr("n", p.n);
  file.attr("hits", r.hits);
  file.attr("estimate", estimate);
  file.attr("std_error", sigma);
  file.attr("abs_error", abs_error);
  file.attr("generator", to_string(p.generator));
  file.attr("api", to_string(p.api));
  file.attr("offset", p.offset);
  file.attr("batch", p.batch);
  file.attr("batches", static_cast<std::int64_t>(r.batch_n.size()));
  file.attr("status", ok ? "ok" : "failed");
  std::vector<double> batch_est;
  for (std::size_t i = 0; i < r.batch_n.size(); ++i)
    batch_est.push_back(4.0 * static_cast<double>(r.batch_hits[i]) / static_cast<double>(r.batch_n[i]));
  auto b = file.group("batches");
  b.write<std::int64_t>("n", r.batch_n);
  b.write<std::int64_t>("hits", r.batch_hits);
  b.write<double>("estimate", batch_est);
  auto t = file.group("timings");
  t.attr("setup", r.setup_s);
  t.attr("generate_count", r.generate_count_s);
  t.attr("total", total_s);
  file.group("throughput").attr("samples_per_s", rate);
  write_provenance(file, prov, dev);
  file.commit();

  if (common.json) {
    JsonLine j;
    j.add("app", "mcpi").add("backend", reduce::to_string(backend)).add("generator", to_string(p.generator));
    j.add("api", to_string(p.api)).add("n", p.n).add("offset", p.offset).add("seed", p.seed).add("hits", r.hits);
    j.add("estimate", estimate).add("std_error", sigma).add("abs_error", abs_error);
    j.add("batches", static_cast<std::int64_t>(r.batch_n.size())).add("setup_s", r.setup_s);
    j.add("generate_count_s", r.generate_count_s).add("total_s", total_s).add("samples_per_s", rate);
    j.add("status", ok ? "ok" : "failed").add("out", common.out);
    std::printf("%s\n", j.str().c_str());
  } else if (!common.quiet) {
    std::printf("mcpi: pi ~ %.9f +- %.2g from %.4g %s points (%s API, %s): |error| = %.2g = %.2f sigma (%s 5 sigma); "
                "%.3g s, %.3g Gsamples/s (setup %.3g s)\n",
                estimate, sigma, static_cast<double>(p.n), to_string(p.generator).c_str(), to_string(p.api).c_str(),
                reduce::to_string(backend).c_str(), abs_error, abs_error / sigma, ok ? "within" : "NOT within",
                r.generate_count_s, rate * 1e-9, r.setup_s);
  }
  if (!ok) std::fprintf(stderr, "mcpi: the estimate is %.1f sigma from pi: failed\n", abs_error / sigma);
  return ok ? exit_ok : exit_failure;
}

}  // namespace

int main(int argc, char** argv) { return tally::run_app("mcpi", [&] { return run(argc, argv); }); }
