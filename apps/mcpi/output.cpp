// mcpi's output (mcpi_output.hpp): the gathered job, its verdict, the result file, the report lines.
#include <cmath>
#include <cstdio>
#include <span>
#include <string>
#include <utility>

#include "mcpi_output.hpp"
#include "tally/common/json.hpp"
#include "tally/ranks/split.hpp"
#include "tally/reduce/ranks.hpp"

namespace tally::mcpi {

using ranks::Comm;
using ranks::Memory;

Outcome judge(const Params& p, std::int64_t hits) {
  Outcome o;
  o.estimate = 4.0 * static_cast<double>(hits) / static_cast<double>(p.n);
  o.std_error = std_error(p.n);
  o.abs_error = std::fabs(o.estimate - pi);
  o.error_bound = error_bound(p.generator, p.offset, p.n);
  o.ok = o.abs_error <= o.error_bound;  // false for a NaN estimate too
  return o;
}

namespace {
RankPhase rank_phase(const Comm& comm, std::string name, double seconds) {
  const ranks::RankStats st = comm.stats(seconds);  // collective
  return {std::move(name), st.min, st.median, st.max, st.per_rank};
}
}  // namespace

Job gather_job(const Comm& comm, const Params& p, reduce::Backend backend, Result mine, const HostTimer& total) {
  Job job;
  job.params = p;
  job.backend = backend;
  RanksReport& rr = job.ranks;
  rr.ranks = comm.size();
  rr.transport = comm.transport(Memory::host);
  rr.shares_device = backend == reduce::Backend::cuda && comm.shares_device();
  // The job's hits: integer sum, exact in any order.
  reduce::allreduce<reduce::Sum, std::int64_t>(comm, std::span<const std::int64_t>(&mine.hits, 1),
                                               std::span<std::int64_t>(&mine.hits, 1), Memory::host);
  const auto all_batch_n = comm.gather<std::int64_t>(mine.batch_n),
             all_batch_hits = comm.gather<std::int64_t>(mine.batch_hits);
  rr.phases.push_back(rank_phase(comm, "setup", mine.setup_s));
  rr.phases.push_back(rank_phase(comm, "generate_count", mine.generate_count_s));
  const auto my_batches = static_cast<std::int64_t>(mine.batch_n.size());
  job.batches_per_rank = comm.gather<std::int64_t>(std::span<const std::int64_t>(&my_batches, 1));
  job.total_s = total.seconds();
  rr.phases.push_back(rank_phase(comm, "total", job.total_s));
  job.result = std::move(mine);
  job.result.batch_n = all_batch_n;
  job.result.batch_hits = all_batch_hits;
  // The job runs as fast as its slowest rank: its rate is over the slowest rank's generate+count time.
  job.result.setup_s = rr.phases[0].max;
  job.result.generate_count_s = rr.phases[1].max;
  for (int q = 0; q < rr.ranks; ++q) {
    const ranks::Range pq = ranks::split_range(p.n, rr.ranks, q);
    rr.decomposition +=
        (q ? " | " : "samples ") + std::to_string(p.offset + pq.begin) + "-" + std::to_string(p.offset + pq.end - 1);
  }
  job.outcome = judge(p, job.result.hits);
  return job;
}

void write_header(h5::Location& f, reduce::Backend backend, std::uint64_t seed) {
  f.attr("app", "mcpi");
  f.attr("backend", reduce::to_string(backend));
  f.attr("seed", seed);
}

void write_result(h5::Location& f, const Job& job, const Provenance& prov, const std::optional<DeviceInfo>& dev) {
  const Params& p = job.params;
  const Result& r = job.result;
  write_header(f, job.backend, p.seed);
  f.attr("n", p.n);
  f.attr("hits", r.hits);
  f.attr("estimate", job.outcome.estimate);
  f.attr("std_error", job.outcome.std_error);
  f.attr("abs_error", job.outcome.abs_error);
  f.attr("error_bound", job.outcome.error_bound);
  f.attr("generator", to_string(p.generator));
  f.attr("api", to_string(p.api));
  f.attr("offset", p.offset);
  f.attr("batch", p.batch);
  f.attr("batches", static_cast<std::int64_t>(r.batch_n.size()));
  f.attr("status", job.outcome.ok ? "ok" : "failed");
  std::vector<double> batch_est;
  for (std::size_t i = 0; i < r.batch_n.size(); ++i)
    batch_est.push_back(4.0 * static_cast<double>(r.batch_hits[i]) / static_cast<double>(r.batch_n[i]));
  auto b = f.group("batches");
  b.write<std::int64_t>("n", r.batch_n);
  b.write<std::int64_t>("hits", r.batch_hits);
  b.write<std::int64_t>("per_rank", job.batches_per_rank);  // batches of each rank, in rank order
  b.write<double>("estimate", batch_est);
  auto t = f.group("timings");
  t.attr("setup", r.setup_s);
  t.attr("generate_count", r.generate_count_s);  // the slowest rank's
  t.attr("total", job.total_s);
  f.group("throughput").attr("samples_per_s", job.samples_per_s());
  write_provenance(f, prov, dev);
  write(f, job.ranks);
  std::vector<std::int64_t> part_begin, part_end;  // each rank's stretch, machine-readable
  for (int q = 0; q < job.ranks.ranks; ++q) {
    const ranks::Range pq = ranks::split_range(p.n, job.ranks.ranks, q);
    part_begin.push_back(p.offset + pq.begin);
    part_end.push_back(p.offset + pq.end);
  }
  auto rg = f.open_group("ranks");
  rg.write<std::int64_t>("part_begin", part_begin);
  rg.write<std::int64_t>("part_end", part_end);
}

void print_report(const Job& job, const cli::CommonOptions& common) {
  const Params& p = job.params;
  const Outcome& o = job.outcome;
  const Result& r = job.result;
  const double rate = job.samples_per_s();
  if (common.json) {
    JsonLine j;
    j.add("app", "mcpi").add("backend", reduce::to_string(job.backend)).add("generator", to_string(p.generator));
    j.add("api", to_string(p.api)).add("n", p.n).add("offset", p.offset).add("seed", p.seed).add("hits", r.hits);
    j.add("estimate", o.estimate).add("std_error", o.std_error).add("abs_error", o.abs_error);
    j.add("error_bound", o.error_bound);
    j.add("batches", static_cast<std::int64_t>(r.batch_n.size())).add("setup_s", r.setup_s);
    j.add("ranks", job.ranks.ranks).add("transport", job.ranks.transport).add("shares_device", job.ranks.shares_device);
    j.add("generate_count_s", r.generate_count_s).add("total_s", job.total_s).add("samples_per_s", rate);
    j.add("status", o.ok ? "ok" : "failed").add("out", common.out);
    std::printf("%s\n", j.str().c_str());
  } else if (!common.quiet) {
    std::printf(
        "mcpi: pi ~ %.9f +- %.2g from %.4g %s points (%s API, %s): |error| = %.2g = %.2f sigma (%s its bound %.2g); "
        "%.3g s, %.3g Gsamples/s (setup %.3g s)%s\n",
        o.estimate, o.std_error, static_cast<double>(p.n), to_string(p.generator).c_str(), to_string(p.api).c_str(),
        reduce::to_string(job.backend).c_str(), o.abs_error, o.abs_error / o.std_error, o.ok ? "within" : "NOT within",
        o.error_bound, r.generate_count_s, rate * 1e-9, r.setup_s, ranks_summary(job.ranks).c_str());
  }
  if (!o.ok)
    std::fprintf(stderr, "mcpi: the estimate is %.3g from pi, beyond its error bound %.3g (%.1f sigma): failed\n",
                 o.abs_error, o.error_bound, o.abs_error / o.std_error);
}

}  // namespace tally::mcpi
