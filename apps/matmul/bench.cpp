// matmul --bench, all of it: the shapes, the table of shapes x levels against cuBLAS, Eigen and the
// copy bandwidth, and its file; on several ranks the Gram shapes on rank 0 alone and K-split over
// every rank, with the speedup. --bench --level ozaki: the ozaki level's own table (below).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "driver.hpp"
#include "matmul_output.hpp"
#include "ozaki/ozaki.hpp"
#include "tally/common/device_info.hpp"
#include "tally/common/error.hpp"
#include "tally/common/h5.hpp"
#include "tally/common/provenance.hpp"
#include "tally/common/timing.hpp"
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

// ---- --bench --level ozaki ---------------------------------------------------------------------
// The ozaki level against cuBLAS DGEMM / SGEMM on issue 42's square shapes (double 4096^3, 8192^3,
// 16384^3; float 8192^3), in one process and the same rounds, each C's error against the device's
// double-double reference on C's first rows (below), the INT8 products' rate against a plain INT8
// GEMM of the same shape measured in the same run, and the share of time outside them.
//
// The reference (one thread an element, K in turn) reads all of B for every group of C's elements
// the GPU holds at once (about 2^18 threads, 16 rows at 16384), so all of C at 16384^3 would stream
// B a thousand times: 2 TiB. It covers the first kReferenceElements / N rows instead (128 at
// 16384: 8 passes over B); the inputs are i.i.d., so those rows are a fair sample, the same for
// cuBLAS and the level.
//
// The arithmetic (M = N = K = n, L moduli, T's size t bytes; one chunk of K up to 131056):
//   INT8 operations       2 n^3 L               (8192^3, L = 15: 1.65e13; float L = 7: 7.7e12)
//   conversion traffic    2 n^2 t (read) twice  (each input read for its lines' maxima, then for the
//                         residues) + 2 n^2 L (residues written)
//                         8192^2 double: 2.1 + 2.0 GB; float, L = 7: 1.1 + 0.9 GB
//   INT32 products        4 n^2 L written by the GEMMs (in their time), read once by the reconstruction:
//                         8192^2, L = 15: 4.0 GB; L = 7: 1.9 GB; C written: n^2 t
// So at 8192^3 in double, with a plain INT8 GEMM at r TOPS and the rest at the copy rate B, the time
// is about 16.5 / r ms + 8.6 GB / B; in float 7.7 / r ms + 4.1 GB / B; 16384^3 double 132 / r ms +
// 35 GB / B. The table sets these against cuBLAS's time in the same run.

/// Elements of C the bench's reference covers (whole rows; all of C below it).
constexpr std::int64_t kReferenceElements = std::int64_t{1} << 21;

struct OzakiRow {
  Shape shape;
  std::string precision;
  double ozaki_s = 0, cublas_s = 0, int8_plain_s = 0;
  double ozaki_error = 0, cublas_error = 0, ozaki_tolerance = 0, cublas_tolerance = 0;
  bool passed = false;              ///< both within their tolerances
  std::int64_t reference_rows = 0;  ///< C's rows the errors cover (kReferenceElements)
  ozaki::Profile profile;
};

/// The case with each of `counts` moduli (0: auto) and cuBLAS, in rounds as the driver's: each once a
/// round, the order reversed every other round and forward in the last; each C judged after its last
/// run. Then one profiled run per count (it synchronises between its phases: not a timed run) and a
/// plain INT8 GEMM of the shape.
template <class T>
std::vector<OzakiRow> ozaki_bench_case(Shape s, int device, const Options& o, const std::vector<int>& counts) {
  // The reference of C's first rows: an engine of those rows of A (the generator's values depend on
  // an element's place in the whole matrix) and all of B, gone before the product's engine comes.
  const std::int64_t ref_rows = std::min(s.m, std::max<std::int64_t>(1, kReferenceElements / s.n));
  const Reference ref = [&] {
    auto rows = make_cuda_engine<T>(Shape{ref_rows, s.n, s.k}, device);
    rows->generate(o.common.seed);
    return rows->reference();
  }();
  auto engine = make_cuda_engine<T>(s, device);
  engine->generate(o.common.seed);
  const std::size_t n = counts.size() + 1;  // contender 0: cuBLAS
  std::vector<std::vector<double>> times(n);
  std::vector<Comparison> judged(n);
  std::vector<double> tolerances(n);
  for (std::size_t x = 0; x < n; ++x)  // cuBLAS: any order; the level: its promise
    tolerances[x] = tolerance<T>(x == 0 ? any_order(s.k) : ozaki::error_bound<T>(s.k));
  const int rounds = o.warmup + o.repeats;
  for (int r = 0; r < rounds; ++r) {
    const bool forward = (rounds - 1 - r) % 2 == 0;
    for (std::size_t step = 0; step < n; ++step) {
      const std::size_t x = forward ? step : n - 1 - step;
      if (x > 0) engine->set_ozaki(ozaki::Settings{counts[x - 1]});
      const double t = x > 0 ? engine->run(Level::ozaki) : *engine->run_vendor();
      if (r >= o.warmup) times[x].push_back(t);
      if (r + 1 == rounds) {
        const std::vector<T> c = engine->c();
        judged[x] = compare<T>(std::span<const T>(c.data(), ref.c.size()), ref,
                               Allowance{tolerances[x], underflow_allowance<T>(s.k)});
      }
    }
  }
  const double plain = ozaki::int8_gemm_seconds(s, device, o.repeats);
  std::vector<OzakiRow> rows;
  for (std::size_t x = 1; x < n; ++x) {
    OzakiRow row;
    row.shape = s;
    row.precision = sizeof(T) == 4 ? "float" : "double";
    row.ozaki_s = median(times[x]), row.cublas_s = median(times[0]);
    row.ozaki_error = judged[x].rel_error, row.cublas_error = judged[0].rel_error;
    row.ozaki_tolerance = tolerances[x], row.cublas_tolerance = tolerances[0];
    row.passed = judged[x].passed() && judged[0].passed();
    row.reference_rows = ref_rows;
    engine->set_ozaki(ozaki::Settings{counts[x - 1], &row.profile});
    (void)engine->run(Level::ozaki);
    row.int8_plain_s = plain;
    rows.push_back(std::move(row));
  }
  return rows;
}

double int8_tops(const OzakiRow& r, double seconds, double gemms) {
  const double kp = std::ceil(static_cast<double>(r.shape.k) / 16) * 16;  // K padded as the INT8 GEMMs take it
  return 2.0 * static_cast<double>(r.shape.m) * static_cast<double>(r.shape.n) * kp * gemms / seconds / 1e12;
}

/// Bytes the passes outside the INT8 products move at the least (the arithmetic above, with K padded
/// to Kp and N to Nc as the level lays them out): A and B read twice, the residues written, the
/// INT32 products read by the reconstruction, C written.
double outside_bytes(const OzakiRow& r, double t) {
  const double m = static_cast<double>(r.shape.m), n = static_cast<double>(r.shape.n),
               k = static_cast<double>(r.shape.k), kp = std::ceil(k / 16) * 16, nc = std::ceil(n / 4) * 4,
               l = r.profile.moduli, chunks = static_cast<double>(r.profile.chunks);
  return 2 * (m * k + k * n) * t + l * (m + nc) * kp + 4 * l * chunks * m * nc + m * n * t;
}

int run_ozaki_bench(Backend backend, int device, const Options& o) {
  if (backend != Backend::cuda)
    throw InputError("--bench --level ozaki: compares the INT8 tensor cores with cuBLAS; it needs --backend cuda");
  std::vector<std::pair<std::string, std::int64_t>> cases{
      {"double", 4096}, {"double", 8192}, {"double", 16384}, {"float", 8192}};
  if (o.given.precision) std::erase_if(cases, [&](const auto& c) { return c.first != o.common.precision; });
  if (o.size > 0) cases = {{o.common.precision, o.size}};
  const DeviceInfo dev = query_device(device);
  std::printf("device: %s\n", dev.summary().c_str());
  std::printf("errors against the device's double-double reference on C's first %lld / N rows (all of C below)\n",
              static_cast<long long>(kReferenceElements));
  std::printf(
      "| case | moduli | bits | ozaki ms | cuBLAS ms | speedup | ozaki err | cuBLAS err | INT8 TOPS | plain INT8 TOPS "
      "| %% of plain | outside INT8 | outside GB/s | exact elements |\n");
  std::printf("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
  std::vector<OzakiRow> rows;
  bool ok = true;
  HostTimer total;
  // auto (or --ozaki-moduli), and in double one modulus fewer too: the speed / accuracy trade-off.
  const int asked = ozaki::parse_moduli(o.ozaki_moduli);
  for (const auto& [precision, n] : cases) {
    const Shape s{n, n, n};
    const bool dbl = precision == "double";
    const int count = asked > 0 ? asked : dbl ? ozaki::auto_moduli<double>(n) : ozaki::auto_moduli<float>(n);
    std::vector<int> counts{count};
    if (dbl && asked == 0 && count > 1) counts.push_back(count - 1);
    for (OzakiRow& r :
         dbl ? ozaki_bench_case<double>(s, device, o, counts) : ozaki_bench_case<float>(s, device, o, counts)) {
      const ozaki::Profile& p = r.profile;
      const double tops = int8_tops(r, p.int8_s, p.moduli), plain_tops = int8_tops(r, r.int8_plain_s, 1);
      const double outside_gbs = outside_bytes(r, dbl ? 8 : 4) / (p.total_s - p.int8_s) / 1e9;
      std::printf(
          "| %s %s | %d | %d | %.3f | %.3f | %.2fx | %.1e | %.1e | %.0f | %.0f | %.0f%% | %.0f%% | %.0f | %lld |\n",
          precision.c_str(), s.str().c_str(), p.moduli, p.bits_kept, 1e3 * r.ozaki_s, 1e3 * r.cublas_s,
          r.cublas_s / r.ozaki_s, r.ozaki_error, r.cublas_error, tops, plain_tops, 100.0 * tops / plain_tops,
          100.0 * (1 - p.int8_s / p.total_s), outside_gbs, static_cast<long long>(p.stats.exact_elements));
      std::fflush(stdout);
      ok = ok && r.passed;
      rows.push_back(std::move(r));
    }
  }
  auto file = h5::File::create(o.common.out);
  file.attr("app", "matmul");
  file.attr("mode", "bench-ozaki");
  file.attr("backend", "cuda");
  file.attr("status", ok ? "ok" : "failed");
  file.attr("repeats", o.repeats);
  file.attr("warmup", o.warmup);
  file.attr("seed", o.common.seed);
  for (const OzakiRow& r : rows) {
    const ozaki::Profile& p = r.profile;
    auto g = file.group("bench_ozaki/" + r.precision + "_" + r.shape.str() + "_" + std::to_string(p.moduli) + "moduli");
    g.attr("m", r.shape.m), g.attr("n", r.shape.n), g.attr("k", r.shape.k), g.attr("precision", r.precision);
    g.attr("moduli", p.moduli), g.attr("bits_kept", p.bits_kept), g.attr("chunks", p.chunks);
    g.attr("ozaki_time_s", r.ozaki_s), g.attr("cublas_time_s", r.cublas_s), g.attr("speedup", r.cublas_s / r.ozaki_s);
    g.attr("ozaki_rel_error", r.ozaki_error), g.attr("cublas_rel_error", r.cublas_error);
    g.attr("ozaki_tolerance", r.ozaki_tolerance), g.attr("cublas_tolerance", r.cublas_tolerance);
    g.attr("scale_s", p.scale_s), g.attr("int8_s", p.int8_s), g.attr("reconstruct_s", p.reconstruct_s);
    g.attr("exact_s", p.exact_s), g.attr("int8_plain_gemm_s", r.int8_plain_s);
    g.attr("exact_elements", p.stats.exact_elements);
    g.attr("outside_bytes", outside_bytes(r, r.precision == "double" ? 8 : 4));
    g.attr("reference_rows", r.reference_rows);
  }
  file.group("timings").attr("total_s", total.seconds());
  write_provenance(file, collect_provenance("matmul --bench --level ozaki", dev), dev);
  file.commit();
  std::printf("| matmul bench (ozaki): %s, %zu cases, total %.1f s |\n",
              ok ? "all within tolerance" : "SOME CHECKS FAILED", rows.size(), total.seconds());
  return ok ? exit_ok : exit_failure;
}

}  // namespace

// --bench. On several ranks the Gram shapes run twice: on rank 0 alone (the others wait at a
// barrier), then K-split over every rank; the speedup is the single-rank time over the job's.
int run_bench(const Comm& comm, Backend backend, int device, const Options& o) {
  if (o.levels == std::vector<std::string>{"ozaki"}) {  // its own table, on one rank
    if (comm.size() > 1)
      throw InputError("--bench --level ozaki: runs on one rank (got " + std::to_string(comm.size()) + ")");
    return run_ozaki_bench(backend, device, o);
  }
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
