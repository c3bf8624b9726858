// --suite ranks: the full Sum of 2^30 floats (2^26 on the CPU; --extents) split along gang over the
// job's ranks, each rank filling its own slab of the same global array on its device. Rank 0 first
// reduces the whole array alone (the single-process figure, the others sleep in idle_barrier); then
// every rank times the four-level reduce(comm, ...) (its slab, then the cross-rank step) after a
// barrier per repeat. Aggregate GB/s = total bytes / the slowest rank's median time; ratio =
// aggregate / (ranks x single).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <span>

#include "bench.hpp"
#include "tally/common/error.hpp"
#include "tally/ranks/split.hpp"
#include "tally/reduce/ranks.hpp"
#include "tally/reduce/reduce.hpp"

namespace tally::reduce::bench {

namespace {

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

std::string fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

}  // namespace

Report run_ranks_suite(const Options& o, ranks::Comm& comm, Backend backend) {
  const bool cuda = backend == Backend::cuda;
  std::array<std::int64_t, 3> e = o.extents;
  if (!o.extents_given)
    e = cuda ? std::array<std::int64_t, 3>{1024, 1024, 1024} : std::array<std::int64_t, 3>{64, 1024, 1024};
  if (o.quick && !o.extents_given) e = {16, 1024, 1024};
  const std::int64_t ng = e[0], row = e[1] * e[2], total = ng * row;
  const int reps = o.quick ? 5 : 11;

  std::unique_ptr<RankBench> bench;
  comm.agree([&]() -> std::exception_ptr {  // the device (or its memory) may fail on some ranks only
    try {
      if (cuda) {
#ifdef TALLY_HAS_CUDA
        const int dev = comm.pick_device(o.device);
        comm.use_device(dev);
        bench = make_rank_bench_cuda(dev);
#endif
      } else {
        bench = make_rank_bench_cpu(o.threads);
      }
      return nullptr;
    } catch (...) {
      return std::current_exception();
    }
  }());
  Workspace ws(backend);
  auto timed = [&](const View<const float>& in, bool distributed) {
    std::vector<double> t;
    for (int r = -1; r < reps; ++r) {  // r = -1: warm-up (workspace growth, NCCL's first call)
      if (distributed) comm.barrier();
      const double us = bench->time_us([&] {
        if (distributed)
          reduce<Sum, float>(comm, backend, in, Levels::all(), std::span<float>(bench->result(), 1), ws,
                             bench->stream());
        else reduce<Sum, float>(backend, in, Levels::all(), std::span<float>(bench->result(), 1), ws, bench->stream());
      });
      if (r >= 0) t.push_back(us);
    }
    return median_of(t);
  };

  // Rank 0 alone on the whole array; the others wait.
  double single_us = 0;
  float single_sum = 0;
  if (comm.is_root()) {
    bench->fill(total, 0, o.seed);
    single_us = timed(View<const float>::contiguous(bench->data(), ng, e[1], e[2]), false);
    single_sum = bench->read_result();
    bench->fill(0, 0, o.seed);  // frees the whole array before the slabs
  }
  comm.idle_barrier();  // the others sleep meanwhile: their cores stay free for rank 0's threads
  comm.broadcast(std::span<double>(&single_us, 1));
  comm.broadcast(std::span<float>(&single_sum, 1));

  const ranks::Range g = ranks::split_range(ng, comm.size(), comm.rank());
  bench->fill(g.size() * row, g.begin * row, o.seed);
  const double mine_us =
      timed(View<const float>::contiguous(g.size() ? bench->data() : nullptr, g.size(), e[1], e[2]), true);
  const float sum = bench->read_result();
  const ranks::RankStats st = comm.stats(mine_us);
  std::uint32_t bits = 0;
  std::memcpy(&bits, &sum, sizeof bits);
  const std::vector<std::uint32_t> all_bits = comm.allgather(bits);
  const bool same = std::all_of(all_bits.begin(), all_bits.end(), [&](std::uint32_t b) { return b == all_bits[0]; });

  Report rep;
  rep.backend = cuda ? "cuda" : "cpu";
  rep.device = bench->device();
  const double bytes = 4.0 * double(total), n = comm.size();
  const std::string shape = std::to_string(ng) + "x" + std::to_string(e[1]) + "x" + std::to_string(e[2]);
  Row single =
      make_row("ranks", "1 rank alone", "gang+worker+vector", "sum", "float", shape, total, bytes, bytes, single_us);
  single.gbs = bytes / (single_us * 1e3);
  const std::string name = std::to_string(comm.size()) + (comm.size() == 1 ? " rank" : " ranks");
  Row agg = make_row("ranks", name, "gang+worker+vector+rank", "sum", "float", shape, total, bytes, bytes, st.max);
  agg.gbs = bytes / (st.max * 1e3);
  agg.vs_ref = agg.gbs / (n * single.gbs);
  agg.ref = "aggregate GB/s / (ranks x single-rank GB/s)";
  rep.rows = {single, agg};
  rep.summary.push_back(
      "| ranks | transport | elements | single GB/s | aggregate GB/s | rank us min / median / max | ratio vs N x "
      "single |");
  rep.summary.push_back("| --- | --- | --- | --- | --- | --- | --- |");
  rep.summary.push_back(
      "| " + std::to_string(comm.size()) + " | " + comm.transport(cuda ? ranks::Memory::device : ranks::Memory::host) +
      (comm.shares_device() ? ", GPUs shared" : "") + " | " + size_name(total) + " (" + shape + ") | " +
      fmt("%.1f", single.gbs) + " | " + fmt("%.1f", agg.gbs) + " | " + fmt("%.1f", st.min) + " / " +
      fmt("%.1f", st.median) + " / " + fmt("%.1f", st.max) + " | " + fmt("%.2f", agg.vs_ref) + " |");
  const double rel = std::fabs(double(sum) - double(single_sum)) / std::max(1e-30, std::fabs(double(single_sum)));
  rep.summary.push_back("sum over " + agg.name + " " + fmt("%.9g", sum) + ", one rank " + fmt("%.9g", single_sum) +
                        " (relative difference " + fmt("%.2e", rel) + ", float partial sums)");
  if (!same) rep.summary.push_back("| MISMATCH: the ranks hold different bits of the cross-rank sum |");
  return rep;
}

}  // namespace tally::reduce::bench
