// matmul --bench, all of it: the shapes, the table of shapes x levels against cuBLAS, Eigen and the
// copy bandwidth, and its file; on several ranks the Gram shapes on rank 0 alone and K-split over
// every rank, with the speedup.
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "driver.hpp"
#include "matmul_output.hpp"
#include "tally/common/device_info.hpp"
#include "tally/common/error.hpp"
#include "tally/common/h5.hpp"
#include "tally/common/provenance.hpp"
#include "tally/ranks/comm.hpp"

namespace tally::matmul::detail {
namespace {

using ranks::Comm;
using ranks::Memory;

void print_table_header(bool cuda) {
  std::printf("| case | level | time ms | GFLOP/s | GB/s in | %s | %s | rel. err | tolerance | ok |\n",
              cuda ? "% copy BW" : "-", cuda ? "% cuBLAS" : "-");
  std::printf("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n");
}

void print_rows(const Case& cs, const std::string& suffix) {
  const std::string name = cs.precision + " " + cs.shape.str() + suffix;
  auto row = [&](const Measured& m, bool judged = true) {
    const std::string bw = cs.bandwidth_gbs ? fmt("%.0f%%", 100.0 * m.gbps / *cs.bandwidth_gbs) : "-";
    const std::string pct = std::isnan(m.pct_vendor) ? "-" : fmt("%.0f%%", m.pct_vendor);
    std::printf("| %s | %s | %.3f | %.0f | %.0f | %s | %s | %.1e | %.1e | %s |\n", name.c_str(), m.name.c_str(),
                1e3 * m.time_s, m.gflops, m.gbps, bw.c_str(), pct.c_str(), m.rel_error, m.tolerance,
                !judged    ? "(TF32)"
                : m.passed ? "yes"
                           : "NO");
  };
  for (const auto& m : cs.levels) row(m);
  if (cs.vendor) row(*cs.vendor);
  if (cs.vendor_tf32) row(*cs.vendor_tf32, false);
  if (cs.eigen) row(*cs.eigen);
  std::fflush(stdout);
}

struct BenchCase {
  Shape shape;
  bool is_float;
  std::vector<Level> levels;
};

std::vector<BenchCase> bench_cases(Backend b, const std::vector<std::string>& precisions, int ranks) {
  std::vector<Level> all(all_levels.begin(), all_levels.end());
  if (b == Backend::cuda) all.assign(cuda_levels.begin(), cuda_levels.end());
  // Tall-skinny: only gang splits K across blocks; tiled has a single block for M, N <= 64 (seconds per
  // run) and the one-element-per-warp/block levels have only M*N-way parallelism.
  const std::vector<Level> fast{Level::gang};
  std::vector<BenchCase> out;
  for (const auto& p : precisions) {
    const bool f = p == "float";
    if (ranks > 1) {  // across ranks: the Gram shapes (K split), at twice to four times the single-GPU K
      if (b == Backend::cuda) {
        out.push_back({{64, 64, std::int64_t{1} << (f ? 26 : 25)}, f, fast});  // 16 GiB of A and B in float
        out.push_back({{16, 16, std::int64_t{1} << 26}, f, fast});
      } else {
        out.push_back({{64, 64, std::int64_t{1} << 20}, f, fast});
      }
    } else if (b == Backend::cuda) {
      out.push_back({{4096, 4096, 4096}, f, all});
      out.push_back({{8192, 8192, 8192}, f, {Level::tiled, Level::tiled_tc}});  // the tensor cores' target
      out.push_back({{8192, 1024, 2048}, f, all});
      out.push_back({{64, 64, std::int64_t{1} << 24}, f, fast});
      out.push_back({{16, 16, std::int64_t{1} << 26}, f, fast});
    } else {
      out.push_back({{512, 512, 512}, f, all});
      out.push_back({{1024, 256, 512}, f, all});
      out.push_back({{64, 64, std::int64_t{1} << 18}, f, all});
    }
  }
  return out;
}

template <class T>
Case run_bench_case(const Comm& comm, Backend backend, int device, const BenchCase& bc, const Options& o,
                    bool bandwidth) {
  // Eigen on the CPU only where the inputs are small enough to copy back and multiply in seconds.
  const bool eigen = !o.no_eigen && bc.shape.input_bytes(sizeof(T)) <= (1 << 30) && bc.shape.flops() <= 2e11;
  return run_case<T>(comm, backend, device, bc.shape, bc.levels, o, eigen, 1, nullptr, bandwidth);
}

}  // namespace

// --bench. On several ranks the Gram shapes run twice: on rank 0 alone (the others wait at a
// barrier), then K-split over every rank; the speedup is the single-rank time over the job's.
int run_bench(const Comm& comm, Backend backend, int device, const Options& o) {
  std::vector<std::string> precisions{"float", "double"};
  if (o.given.precision) precisions = {o.common.precision};
  const int ranks = comm.size();
  const auto cases = bench_cases(backend, precisions, ranks);
  const bool cuda = backend == Backend::cuda, root = comm.is_root();
  std::optional<DeviceInfo> dev;
  if (cuda) dev = query_device(device);
  if (dev && root) std::printf("device: %s%s\n", dev->summary().c_str(), ranks > 1 ? " (rank 0)" : "");
  std::vector<Case> results, singles;
  bool ok = true, header = false;
  HostTimer total;
  const Comm solo;  // rank 0 alone
  for (const auto& bc : cases) {
    const bool bw = cuda && results.empty();
    if (ranks > 1) {
      if (root)
        singles.push_back(bc.is_float ? run_bench_case<float>(solo, backend, device, bc, o, bw)
                                      : run_bench_case<double>(solo, backend, device, bc, o, bw));
      comm.idle_barrier();  // the others wait without taking rank 0's cores
    }
    Case cs = bc.is_float ? run_bench_case<float>(comm, backend, device, bc, o, bw && ranks == 1)
                          : run_bench_case<double>(comm, backend, device, bc, o, bw && ranks == 1);
    if (!singles.empty() && singles.front().bandwidth_gbs) cs.bandwidth_gbs = singles.front().bandwidth_gbs;
    if (!results.empty()) cs.bandwidth_gbs = results.front().bandwidth_gbs;  // measured once, in this run
    if (!header && root) {
      if (cs.bandwidth_gbs)
        std::printf("measured device copy bandwidth: %.0f GB/s (1 GiB cudaMemcpy D2D, read + write, median of 10)\n",
                    *cs.bandwidth_gbs);
      if (ranks > 1)
        std::printf("%d ranks (%s); each case on rank 0 alone first, then K-split over the ranks\n", ranks,
                    comm.transport(cuda ? Memory::device : Memory::host).c_str());
      print_table_header(cuda);
      header = true;
    }
    if (root && ranks > 1) {
      print_rows(singles.back(), " (1 rank)");
      print_rows(cs, " (" + std::to_string(ranks) + " ranks)");
    } else if (root) {
      print_rows(cs, "");
    }
    ok = ok && cs.passed() && (singles.empty() || singles.back().passed());
    results.push_back(std::move(cs));
  }
  const RanksReport rr = ranks_report(comm, backend, results.back());
  if (!root) return ok ? exit_ok : exit_failure;
  auto file = h5::File::create(o.common.out);  // now: a job aborted mid-run leaves no file
  file.attr("app", "matmul");
  file.attr("mode", "bench");
  file.attr("backend", reduce::to_string(backend));
  file.attr("status", ok ? "ok" : "failed");
  file.attr("repeats", o.repeats);
  file.attr("warmup", o.warmup);
  file.attr("timing", o.timing);
  file.attr("seed", o.common.seed);
  if (!results.empty() && results.front().bandwidth_gbs)
    file.attr("copy_bandwidth_gbs", *results.front().bandwidth_gbs);
  for (std::size_t i = 0; i < results.size(); ++i) {
    const Case& cs = results[i];
    auto g = file.group("bench/" + cs.precision + "_" + cs.shape.str());
    g.attr("m", cs.shape.m);
    g.attr("n", cs.shape.n);
    g.attr("k", cs.shape.k);
    g.attr("precision", cs.precision);
    g.attr("tall_skinny", cs.shape.tall_skinny());
    write_case(g, cs);
    if (ranks > 1) {  // the same levels on rank 0 alone, and the speedup of each
      auto sg = g.group("single_rank");
      write_case(sg, singles[i]);
      for (std::size_t l = 0; l < cs.levels.size(); ++l) {
        const double speedup = singles[i].levels[l].time_s / cs.levels[l].time_s;
        g.group("levels/" + cs.levels[l].name).attr("speedup_over_single_rank", speedup);
        std::printf("| %s %s %s: %d ranks %.3f ms, rank 0 alone %.3f ms: speedup %.2fx |\n", cs.precision.c_str(),
                    cs.shape.str().c_str(), cs.levels[l].name.c_str(), ranks, 1e3 * cs.levels[l].time_s,
                    1e3 * singles[i].levels[l].time_s, speedup);
      }
    }
  }
  write_ranks(file, rr, results.back().shape);  // the last case's
  file.group("timings").attr("total_s", total.seconds());
  write_provenance(file, collect_provenance("matmul --bench", dev), dev);
  file.commit();
  std::printf("| matmul bench: %s, %zu cases, total %.1f s |\n", ok ? "all checks passed" : "SOME CHECKS FAILED",
              results.size(), total.seconds());
  return ok ? exit_ok : exit_failure;
}

}  // namespace tally::matmul::detail
