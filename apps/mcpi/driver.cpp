// The mcpi driver (driver.hpp): the job's set-up agreed over the ranks, each rank's stretch of the
// stream counted, the result gathered, written and reported.
#include "driver.hpp"

#include <cstdio>
#include <exception>
#include <optional>
#include <string>

#include "mcpi_output.hpp"
#include "tally/common/app.hpp"
#include "tally/common/error.hpp"
#include "tally/common/h5.hpp"
#include "tally/common/interrupt.hpp"
#include "tally/common/progress.hpp"
#include "tally/common/timing.hpp"
#include "tally/ranks/comm.hpp"
#include "tally/ranks/split.hpp"

namespace tally::mcpi {

int run(const Options& o, ranks::Comm& comm) {
  // Set-up, which may fail on some ranks only (no GPU on one of them, an unwritable --out on rank 0):
  // the ranks agree on it, so that every rank exits and rank 0 prints the failing rank's message.
  Params p;  // the whole job: every rank validates it (the Sobol 2^32 limit is on offset + n of the job)
  reduce::Backend backend = reduce::Backend::cpu;
  std::optional<DeviceInfo> dev;
  int device = -1;
  std::exception_ptr failure;
  try {
    p.n = parse_count(o.n, "--n");
    p.batch = parse_count(o.batch, "--batch");
    p.offset = parse_count(o.offset, "--offset");
    p.seed = o.common.seed;
    p.generator = parse_generator(o.generator);
    p.api = parse_api(o.api);
    validate(p);
    bool fell_back = false;
    backend = reduce::resolve_backend(o.common.backend, &fell_back);
    if (fell_back && comm.is_root()) std::fprintf(stderr, "mcpi: no usable GPU, running on the CPU backend\n");
    if (backend == reduce::Backend::cpu) {
      std::string why;
      if (o.bench) throw InputError("--bench: the benchmark table is for --backend cuda");
      if (!cpu_supports(p.generator, p.api, &why)) throw InputError(why);
    } else {
      device = comm.pick_device(o.common.device);  // each rank its GPU (--device with one rank)
      if (device < 0) throw InputError("--backend cuda: no usable CUDA device on this rank");
      dev = query_device(device);
    }
    // A bad --out fails before any work; the file itself is created once the job is done, so that a
    // rank failing mid-run (the job aborted) leaves no file, not even a temporary one.
    if (comm.is_root()) (void)h5::File::create(o.common.out);
  } catch (...) {
    failure = std::current_exception();
  }
  comm.agree(failure);
  // --backend auto must resolve alike everywhere: one job runs on one kind of backend.
  comm.require_same(reduce::to_string(backend),
                    "the backend (--backend " + o.common.backend + " as resolved on each rank)");
  if (backend == reduce::Backend::cuda) comm.use_device(device);
  const Provenance prov = collect_provenance(o.command, dev);
  if (o.bench) return run_bench(o, p, device, dev, prov, comm);

  HostTimer total;
  // This rank's stretch of the stream: samples [offset + b, offset + e) of the job, in batches of
  // --batch. The stream layout (mcpi.hpp) makes the stretches' hits add up to the single-rank count.
  const int ranks = comm.size();
  const ranks::Range part = ranks::split_range(p.n, ranks, comm.rank());
  Params mine = p;
  mine.offset = p.offset + part.begin;
  mine.n = part.size();
  Progress bar(o.common.quiet || o.common.json || !comm.is_root());
  const ProgressFn progress = [&](std::int64_t done, std::int64_t hits) {
    interrupt::check("after " + std::to_string(done) + " samples");  // a safe point: each batch
    if (!bar.due()) return;
    const double est = 4.0 * static_cast<double>(hits) / static_cast<double>(done);
    char line[200];
    std::snprintf(line, sizeof line, "mcpi: %.3g / %.3g samples%s, pi ~ %.8f +- %.2g", static_cast<double>(done),
                  static_cast<double>(mine.n), ranks > 1 ? " on rank 0" : "", est, std_error(done));
    bar.update(line);
  };
  Result r;  // a rank with no samples (more ranks than samples) counts nothing
  if (mine.n > 0) r = backend == reduce::Backend::cuda ? run_cuda(mine, device, progress) : run_cpu(mine, progress);
  bar.finish();
  const Job job = gather_job(comm, p, backend, std::move(r), total);  // collective
  if (!comm.is_root()) return exit_ok;                                // rank 0 writes and reports
  h5::File file = h5::File::create(o.common.out);
  write_result(file, job, prov, dev);
  file.commit();
  print_report(job, o.common);
  return job.outcome.ok ? exit_ok : exit_failure;
}

}  // namespace tally::mcpi
