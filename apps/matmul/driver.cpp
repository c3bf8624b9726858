// The matmul driver: options, inputs, the run of each level against the reference, cuBLAS and
// Eigen, the HDF5 file, the JSON line, the summary and the --bench table. It knows no backend:
// everything device-specific is behind Engine.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include <CLI/CLI.hpp>

#include "matmul.hpp"
#include "tally/common/cli.hpp"
#include "tally/common/device_info.hpp"
#include "tally/common/error.hpp"
#include "tally/common/h5.hpp"
#include "tally/common/json.hpp"
#include "tally/common/provenance.hpp"
#include "tally/common/ranks_report.hpp"
#include "tally/common/timing.hpp"
#include "tally/reduce/backend.hpp"
#include "tally/reduce/rank.hpp"

namespace tally::matmul {
namespace {

using reduce::Backend;
using reduce::Comm;
using reduce::Memory;

struct Options {
  cli::CommonOptions common;
  std::int64_t m = 256, n = 256, k = 256, size = 0;
  std::vector<std::string> levels{"all"};
  std::string a_path, b_path;
  bool write_c = false, bench = false, no_eigen = false;
  int repeats = 5, warmup = 1;
  std::int64_t split_k = 0;
};

struct Measured {  // one level, cuBLAS or Eigen on one case
  std::string name;
  double time_s = std::numeric_limits<double>::quiet_NaN();
  double gflops = 0, gbps = 0, pct_vendor = std::numeric_limits<double>::quiet_NaN(), rel_error = 0, tolerance = 0;
  /// max |C - C_cublas| / (|A||B|) and the same against Eigen (NaN when that comparison did not run).
  double diff_cublas = std::numeric_limits<double>::quiet_NaN(), diff_eigen = std::numeric_limits<double>::quiet_NaN();
  bool passed = false;
};

struct Case {
  Shape shape;
  std::string precision;
  std::vector<Measured> levels;
  std::optional<Measured> vendor, eigen;
  std::optional<double> bandwidth_gbs;
  Timings timings;  ///< this rank's
  int ranks = 1;
  [[nodiscard]] bool passed() const {
    bool ok = std::all_of(levels.begin(), levels.end(), [](const Measured& x) { return x.passed; });
    if (vendor) ok = ok && vendor->passed;
    if (eigen) ok = ok && eigen->passed;
    return ok;
  }
};

// "file.h5:/A" -> {file.h5, /A}
std::pair<std::string, std::string> split_source(const std::string& opt, const std::string& s) {
  const auto colon = s.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == s.size())
    throw InputError(opt + ": expected FILE:/DATASET, got '" + s + "'");
  std::string dset = s.substr(colon + 1);
  if (dset.find_first_not_of('/') == std::string::npos) throw InputError(opt + ": no dataset named in '" + s + "'");
  return {s.substr(0, colon), dset};  // tally::h5 resolves "/A" from the file's root
}

std::pair<std::int64_t, std::int64_t> matrix_dims(const std::string& opt, const std::string& source) {
  const auto [file, dset] = split_source(opt, source);
  const auto f = h5::File::open(file);
  h5::dims_t d;
  try {
    d = f.dataset_dims(dset);
  } catch (const InputError& e) {
    throw InputError(opt + ": " + e.what() + " in '" + file + "'");
  }
  if (d.size() != 2 || d[0] == 0 || d[1] == 0)
    throw InputError(opt + ": dataset '" + dset + "' in '" + file + "' is not a non-empty 2-D matrix");
  return {static_cast<std::int64_t>(d[0]), static_cast<std::int64_t>(d[1])};
}

// This rank's block of a matrix: `count` rows x columns from `offset` (its K slab).
template <class T>
std::vector<T> read_block(const std::string& opt, const std::string& source, const h5::dims_t& offset, const h5::dims_t& count) {
  const auto [file, dset] = split_source(opt, source);
  return h5::File::open(file).read<T>(dset, offset, count);
}

Shape resolve_shape(const Options& o, const CLI::App& app) {
  Shape s{o.m, o.n, o.k};
  if (o.size > 0) s = {o.size, o.size, o.size};
  auto given = [&](const char* name) { return app.count(name) > 0; };
  auto agree = [&](const char* opt, std::int64_t want, std::int64_t file_value, const std::string& what) {
    if (given(opt) && want != file_value)
      throw InputError(std::string(opt) + " " + std::to_string(want) + " disagrees with " + what + " (" + std::to_string(file_value) + ")");
  };
  if (!o.a_path.empty()) {
    const auto [r, c] = matrix_dims("--a", o.a_path);
    agree("--m", s.m, r, "the rows of --a " + o.a_path);
    agree("--k", s.k, c, "the columns of --a " + o.a_path);
    s.m = r, s.k = c;
  }
  if (!o.b_path.empty()) {
    const auto [r, c] = matrix_dims("--b", o.b_path);
    if (!o.a_path.empty() && r != s.k)
      throw InputError("inner dimensions differ: --a " + o.a_path + " has " + std::to_string(s.k) + " columns but --b " +
                       o.b_path + " has " + std::to_string(r) + " rows");
    if (o.a_path.empty()) agree("--k", s.k, r, "the rows of --b " + o.b_path);
    agree("--n", s.n, c, "the columns of --b " + o.b_path);
    s.k = r, s.n = c;
  }
  return s;
}

std::vector<Level> resolve_levels(const std::vector<std::string>& names) {
  std::vector<Level> out;
  for (const auto& n : names) {
    if (n == "all") return {all_levels.begin(), all_levels.end()};
    const Level l = parse_level(n);
    if (std::find(out.begin(), out.end(), l) == out.end()) out.push_back(l);
  }
  return out;
}

template <class T>
Measured judge(std::string name, double t, std::span<const T> c, const Reference& ref, Shape s) {
  Measured r;
  r.name = std::move(name);
  r.time_s = t;
  r.gflops = s.flops() / t / 1e9;
  r.gbps = s.input_bytes(sizeof(T)) / t / 1e9;
  r.rel_error = relative_error<T>(c, ref);
  r.tolerance = tolerance<T>(s.k);
  r.passed = r.rel_error <= r.tolerance;
  return r;
}

// Comm::agree, except that one rank alone rethrows its own exception (an in-process run under
// tally::run_app, as in the tests, maps it to its exit code; an AgreedError it does not know).
void agree(const Comm& comm, std::exception_ptr failure) {
  if (failure && comm.size() == 1) std::rethrow_exception(failure);
  comm.agree(failure);
}

// Comm::require_same throws on every rank at once; agreed, every rank exits and rank 0 alone reports.
void require_same(const Comm& comm, const std::string& text, const std::string& what) {
  std::exception_ptr failure;
  try {
    comm.require_same(text, what);
  } catch (...) {
    failure = std::current_exception();
  }
  agree(comm, failure);
}

/// Runs one case: inputs, reference, each level, the vendor library, Eigen. With several ranks each
/// holds its K slab (split_range of K): A[:, k0:k1] and B[k0:k1, :], multiplies it, and the partial Cs
/// are summed in rank order (Comm::allreduce) inside every timed run: every rank ends with the same C.
template <class T>
Case run_case(const Comm& comm, Backend backend, int device, Shape s, const std::vector<Level>& levels, const Options& o,
              bool eigen, int eigen_repeats, std::vector<T>* c_out, bool with_bandwidth) {
  Case cs;
  cs.shape = s;
  cs.precision = sizeof(T) == 4 ? "float" : "double";
  cs.ranks = comm.size();
  const reduce::Range part = reduce::split_range(s.k, comm.size(), comm.rank());
  const Shape local{s.m, s.n, part.size()};
  const auto mu = static_cast<std::uint64_t>(s.m), nu = static_cast<std::uint64_t>(s.n);
  const auto k0 = static_cast<std::uint64_t>(part.begin), kr = static_cast<std::uint64_t>(part.size());
  const Memory c_memory = backend == Backend::cuda ? Memory::device : Memory::host;
  // Host-side sums over ranks (rank order: the same bits on every rank).
  const auto host_sum = [&](auto& v) {
    using V = typename std::decay_t<decltype(v)>::value_type;
    if (comm.size() > 1) comm.allreduce<reduce::Sum, V>(std::span<const V>(v), std::span<V>(v), Memory::host);
  };
  auto engine = backend == Backend::cuda ? make_cuda_engine<T>(local, device) : make_cpu_engine<T>(local);
  engine->set_split_k(o.split_k);
  if (comm.size() > 1)
    engine->set_combine([&comm, c_memory](std::span<T> c, stream_t stream) {
      comm.allreduce<reduce::Sum, T>(std::span<const T>(c.data(), c.size()), c, c_memory, stream);
    });
  {
    ScopedTimer t(cs.timings, "inputs_s");
    if (o.a_path.empty() && o.b_path.empty()) {
      engine->generate(o.common.seed, KSlab{part.begin, s.k});
    } else {  // one or both from files (each rank reads its slab); a missing one is generated
      std::vector<T> a = o.a_path.empty() ? std::vector<T>(mu * kr) : read_block<T>("--a", o.a_path, {0, k0}, {mu, kr});
      std::vector<T> b = o.b_path.empty() ? std::vector<T>(kr * nu) : read_block<T>("--b", o.b_path, {k0, 0}, {kr, nu});
      if (o.a_path.empty()) generate_block_host<T>(o.common.seed, 0, a, local.k, 0, part.begin, s.k);
      if (o.b_path.empty()) generate_block_host<T>(o.common.seed, 1, b, s.n, part.begin, 0, s.n);
      engine->set_inputs(a, b);
    }
  }
  if (with_bandwidth) cs.bandwidth_gbs = engine->copy_bandwidth_gbs();
  Reference ref;
  {
    ScopedTimer t(cs.timings, "reference_s");
    ref = engine->reference();  // this rank's slab, in double-double, rounded to double
    // The slabs' references and |A||B| summed in rank order in double: each slab's rounding is at
    // most u |A_r||B_r| and each of the size - 1 additions at most u |A||B| (u = 2^-53), so the
    // job's reference is within size * u * |A||B| of the exact product: against the tolerance
    // u_T (1 + min(K, 10 sqrt K)) (K >= size) that is at most size * 2^-29 of it in float and
    // size / (1 + min(K, 10 sqrt K)) of it in double (3 ranks, K = 999: 1%).
    host_sum(ref.c);
    host_sum(ref.abs);
  }
  // cuBLAS and Eigen first, so that every level is also compared with their products. Both run on
  // each rank's slab and are combined like the levels.
  std::optional<Reference> c_vendor, c_eigen;  // their C (as a Reference sharing |A||B|)
  auto as_reference = [&](const std::vector<T>& c) {
    Reference r{std::vector<double>(c.begin(), c.end()), ref.abs};
    return r;
  };
  const auto job_seconds = [&](double t) { return comm.size() > 1 ? comm.stats(t).max : t; };  // the slowest rank's
  if (auto t = engine->run_vendor(o.warmup, o.repeats)) {
    auto c = engine->c();
    cs.vendor = judge<T>("cublas", job_seconds(*t), c, ref, s);
    c_vendor = as_reference(c);
  }
  if (eigen) {
    HostTimer wall;
    const auto a = engine->a(), b = engine->b();
    std::vector<T> c(static_cast<std::size_t>(s.m * s.n));
    double t = eigen_multiply<T>(a, b, c, local, eigen_repeats > 1 ? 1 : 0, eigen_repeats);
    HostTimer combine;
    host_sum(c);
    t += combine.seconds();
    cs.eigen = judge<T>("eigen", job_seconds(t), c, ref, s);
    if (c_vendor) cs.vendor->diff_eigen = relative_error<T>(c, *c_vendor);
    c_eigen = as_reference(c);
    cs.timings.set("eigen_s", wall.seconds());
  }
  for (Level l : levels) {
    HostTimer wall;
    const double t = engine->run(l, o.warmup, o.repeats);
    auto c = engine->c();
    Measured m = judge<T>(to_string(l), job_seconds(t), c, ref, s);
    if (c_vendor) m.diff_cublas = relative_error<T>(c, *c_vendor), m.pct_vendor = 100.0 * cs.vendor->time_s / m.time_s;
    if (c_eigen) m.diff_eigen = relative_error<T>(c, *c_eigen);
    cs.levels.push_back(m);
    cs.timings.set("level_" + to_string(l) + "_s", wall.seconds());
    if (c_out && l == levels.back()) *c_out = std::move(c);
  }
  return cs;
}

/// The /ranks group of a case: the decomposition and every phase's seconds over ranks (collective).
RanksReport ranks_report(const Comm& comm, Backend backend, const Case& cs) {
  RanksReport rr;
  rr.ranks = comm.size();
  rr.transport = comm.transport(backend == Backend::cuda ? Memory::device : Memory::host);
  rr.shares_device = backend == Backend::cuda && comm.shares_device();
  rr.decomposition = "K split: rank r holds A[:, part_begin[r]:part_end[r]] and the same rows of B; partial C summed in rank order";
  for (int q = 0; q < comm.size(); ++q) {
    const reduce::Range p = reduce::split_range(cs.shape.k, comm.size(), q);
    rr.part_begin.push_back(p.begin);
    rr.part_end.push_back(p.end);
  }
  for (const auto& [name, v] : cs.timings.entries()) {
    const reduce::RankStats st = comm.stats(v);
    rr.timings.push_back({name, st.min, st.median, st.max, st.per_rank});
  }
  return rr;
}

void write_measured(h5::Location g, const Measured& m, bool full) {
  g.attr("time_s", m.time_s);
  g.attr("gflops", m.gflops);
  g.attr("gbps", m.gbps);
  g.attr("rel_error", m.rel_error);
  if (!std::isnan(m.diff_cublas)) g.attr("rel_diff_cublas", m.diff_cublas);
  if (!std::isnan(m.diff_eigen)) g.attr("rel_diff_eigen", m.diff_eigen);
  if (full) {
    g.attr("pct_cublas", m.pct_vendor);
    g.attr("tolerance", m.tolerance);
  }
  g.attr("passed", m.passed);
}

void write_case(h5::Location& where, const Case& cs) {
  for (const auto& m : cs.levels) write_measured(where.group("levels/" + m.name), m, true);
  if (cs.vendor) write_measured(where.group("cublas"), *cs.vendor, false);
  if (cs.eigen) write_measured(where.group("eigen"), *cs.eigen, false);
}

std::string fmt(const char* f, double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, x);
  return buf;
}

void print_table_header(bool cuda) {
  std::printf("| case | level | time ms | GFLOP/s | GB/s in | %s | %s | rel. err | tolerance | ok |\n",
              cuda ? "% copy BW" : "-", cuda ? "% cuBLAS" : "-");
  std::printf("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n");
}

void print_rows(const Case& cs, const std::string& suffix) {
  const std::string name = cs.precision + " " + cs.shape.str() + suffix;
  auto row = [&](const Measured& m) {
    const std::string bw = cs.bandwidth_gbs ? fmt("%.0f%%", 100.0 * m.gbps / *cs.bandwidth_gbs) : "-";
    const std::string pct = std::isnan(m.pct_vendor) ? "-" : fmt("%.0f%%", m.pct_vendor);
    std::printf("| %s | %s | %.3f | %.0f | %.0f | %s | %s | %.1e | %.1e | %s |\n", name.c_str(), m.name.c_str(), 1e3 * m.time_s,
                m.gflops, m.gbps, bw.c_str(), pct.c_str(), m.rel_error, m.tolerance, m.passed ? "yes" : "NO");
  };
  for (const auto& m : cs.levels) row(m);
  if (cs.vendor) row(*cs.vendor);
  if (cs.eigen) row(*cs.eigen);
  std::fflush(stdout);
}

struct BenchCase {
  Shape shape;
  bool is_float;
  std::vector<Level> levels;
};

std::vector<BenchCase> bench_cases(Backend b, const std::vector<std::string>& precisions, int ranks) {
  const std::vector<Level> all(all_levels.begin(), all_levels.end());
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
Case run_bench_case(const Comm& comm, Backend backend, int device, const BenchCase& bc, const Options& o, bool bandwidth) {
  // Eigen on the CPU only where the inputs are small enough to copy back and multiply in seconds.
  const bool eigen = !o.no_eigen && bc.shape.input_bytes(sizeof(T)) <= (1 << 30) && bc.shape.flops() <= 2e11;
  return run_case<T>(comm, backend, device, bc.shape, bc.levels, o, eigen, 1, nullptr, bandwidth);
}

// --bench. On several ranks the Gram shapes run twice: on rank 0 alone (the others wait at a
// barrier), then K-split over every rank; the speedup is the single-rank time over the job's.
int run_bench(const Comm& comm, Backend backend, int device, const Options& o, const CLI::App& app) {
  std::vector<std::string> precisions{"float", "double"};
  if (app.count("--precision")) precisions = {o.common.precision};
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
      if (root) singles.push_back(bc.is_float ? run_bench_case<float>(solo, backend, device, bc, o, bw)
                                              : run_bench_case<double>(solo, backend, device, bc, o, bw));
      comm.barrier();
    }
    Case cs = bc.is_float ? run_bench_case<float>(comm, backend, device, bc, o, bw && ranks == 1)
                          : run_bench_case<double>(comm, backend, device, bc, o, bw && ranks == 1);
    if (!singles.empty() && singles.front().bandwidth_gbs) cs.bandwidth_gbs = singles.front().bandwidth_gbs;
    if (!results.empty()) cs.bandwidth_gbs = results.front().bandwidth_gbs;  // measured once, in this run
    if (!header && root) {
      if (cs.bandwidth_gbs) std::printf("measured device copy bandwidth: %.0f GB/s (1 GiB cudaMemcpy D2D, read + write, median of 10)\n", *cs.bandwidth_gbs);
      if (ranks > 1) std::printf("%d ranks (%s); each case on rank 0 alone first, then K-split over the ranks\n", ranks,
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
  file.attr("seed", o.common.seed);
  if (!results.empty() && results.front().bandwidth_gbs) file.attr("copy_bandwidth_gbs", *results.front().bandwidth_gbs);
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
  write_ranks(file, rr);
  file.group("timings").attr("total_s", total.seconds());
  write_provenance(file, collect_provenance("matmul --bench", dev), dev);
  file.commit();
  std::printf("| matmul bench: %s, %zu cases, total %.1f s |\n", ok ? "all checks passed" : "SOME CHECKS FAILED", results.size(), total.seconds());
  return ok ? exit_ok : exit_failure;
}

template <class T>
int run_single(const Comm& comm, Backend backend, int device, const Options& o, Shape s, const std::vector<Level>& levels,
               const std::string& command) {
  HostTimer total;
  std::vector<T> c;
  const bool cuda = backend == Backend::cuda;
  Case cs = run_case<T>(comm, backend, device, s, levels, o, !o.no_eigen, o.repeats, o.write_c ? &c : nullptr, cuda);
  const bool ok = cs.passed();  // every rank judges the same C against the same reference
  std::string level_list;
  for (Level l : levels) level_list += (level_list.empty() ? "" : ",") + to_string(l);
  cs.timings.set("total_s", total.seconds());
  const RanksReport rr = ranks_report(comm, backend, cs);  // collective
  if (!comm.is_root()) return ok ? exit_ok : exit_failure;  // rank 0 writes and reports

  auto f = h5::File::create(o.common.out);  // now: a job aborted mid-run leaves no file
  f.attr("app", "matmul");
  f.attr("m", s.m);
  f.attr("n", s.n);
  f.attr("k", s.k);
  f.attr("precision", cs.precision);
  f.attr("backend", reduce::to_string(backend));
  f.attr("levels", level_list);
  f.attr("status", ok ? "ok" : "failed");
  f.attr("seed", o.common.seed);
  f.attr("repeats", o.repeats);
  f.attr("warmup", o.warmup);
  f.attr("a", o.a_path.empty() ? std::string("generated") : o.a_path);
  f.attr("b", o.b_path.empty() ? std::string("generated") : o.b_path);
  f.attr("tolerance", tolerance<T>(s.k));
  f.attr("split_k", o.split_k);
  if (cs.bandwidth_gbs) f.attr("copy_bandwidth_gbs", *cs.bandwidth_gbs);
  write_case(f, cs);
  if (o.write_c) f.write<T>("C", c, {static_cast<std::uint64_t>(s.m), static_cast<std::uint64_t>(s.n)});
  auto tg = f.group("timings");  // rank 0's; every rank's under /ranks/timings
  for (const auto& [name, v] : cs.timings.entries()) tg.attr(name, v);
  write_ranks(f, rr);
  std::optional<DeviceInfo> dev;
  if (cuda) dev = query_device(device);
  write_provenance(f, collect_provenance(command, dev), dev);
  f.commit();

  const Measured* best = nullptr;
  double worst_err = 0;
  for (const auto& m : cs.levels) {
    if (!best || m.time_s < best->time_s) best = &m;
    worst_err = std::max(worst_err, m.rel_error);
  }
  if (o.common.json) {
    JsonLine j;
    j.add("app", "matmul").add("backend", reduce::to_string(backend)).add("precision", cs.precision);
    j.add("m", s.m).add("n", s.n).add("k", s.k).add("levels", level_list).add("status", ok ? "ok" : "failed");
    j.add("ranks", rr.ranks).add("transport", rr.transport).add("shares_device", rr.shares_device);
    j.add("tolerance", tolerance<T>(s.k));
    for (const auto& m : cs.levels) {
      j.add(m.name + "_time_s", m.time_s).add(m.name + "_gflops", m.gflops).add(m.name + "_rel_error", m.rel_error);
      if (cuda) j.add(m.name + "_pct_cublas", m.pct_vendor);
    }
    if (cs.vendor) j.add("cublas_time_s", cs.vendor->time_s).add("cublas_gflops", cs.vendor->gflops).add("cublas_rel_error", cs.vendor->rel_error);
    if (cs.eigen) j.add("eigen_time_s", cs.eigen->time_s).add("eigen_gflops", cs.eigen->gflops).add("eigen_rel_error", cs.eigen->rel_error);
    if (cs.bandwidth_gbs) j.add("copy_bandwidth_gbs", *cs.bandwidth_gbs);
    j.add("out", o.common.out);
    std::printf("%s\n", j.str().c_str());
  } else if (!o.common.quiet || !ok) {
    std::string extra = cs.vendor ? ", cuBLAS" : "";
    if (cs.eigen) extra += ", Eigen";
    std::string perf = fmt("%.3f ms, ", 1e3 * best->time_s) + fmt("%.1f GFLOP/s", best->gflops);
    if (!std::isnan(best->pct_vendor)) perf += fmt(" (%.0f%% of cuBLAS)", best->pct_vendor);
    if (s.tall_skinny()) perf += fmt(", %.0f GB/s read", best->gbps);
    std::printf("matmul: C = A B, %s %s on %s%s, %zu level(s)%s: %s (max rel. err %.1e vs tolerance %.1e of |A||B|); best %s %s -> %s\n",
                s.str().c_str(), cs.precision.c_str(), reduce::to_string(backend).c_str(), ranks_summary(rr).c_str(), levels.size(), extra.c_str(),
                ok ? "all within tolerance" : "CHECK FAILED", worst_err, tolerance<T>(s.k), best->name.c_str(), perf.c_str(),
                o.common.out.c_str());
    if (!ok) {
      for (const auto& m : cs.levels)
        if (!m.passed) std::fprintf(stderr, "matmul: level %s: rel. error %.3e > tolerance %.3e\n", m.name.c_str(), m.rel_error, m.tolerance);
      if (cs.vendor && !cs.vendor->passed) std::fprintf(stderr, "matmul: cuBLAS: rel. error %.3e > tolerance\n", cs.vendor->rel_error);
      if (cs.eigen && !cs.eigen->passed) std::fprintf(stderr, "matmul: Eigen: rel. error %.3e > tolerance\n", cs.eigen->rel_error);
    }
  }
  return ok ? exit_ok : exit_failure;
}

}  // namespace

int run(int argc, char** argv) {
  Comm one;  // the tests' in-process runs: a single rank
  return run(argc, argv, one);
}

int run(int argc, char** argv, Comm& comm) {
  // Every rank must run the same job (a rank with other options would multiply another problem or
  // wait in another collective): checked before parsing, so that every rank parses the same text.
  std::string args;
  for (int i = 1; i < argc; ++i) args += std::string(i > 1 ? " " : "") + argv[i];
  require_same(comm, args, "the command line (matmul's options)");
  CLI::App app{"matmul: C = A B with every element a dot product reduced at the chosen level (vector, worker, "
               "worker+vector, gang, tiled), checked against a double-double reference, cuBLAS and Eigen",
               "matmul"};
  Options o;
  o.common.out = "results/matmul.h5";
  cli::add_common_options(app, o.common);
  app.add_option("--m", o.m, "Rows of A and C")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--n", o.n, "Columns of B and C")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--k", o.k, "Columns of A, rows of B: the length of each dot product")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--size", o.size, "Sets M = N = K")->check(CLI::PositiveNumber);
  app.add_option("--level", o.levels, "Where the reduction over K runs: vector, worker, worker+vector, gang, tiled or all (comma list allowed)")
      ->delimiter(',')
      ->check(CLI::IsMember({"vector", "worker", "worker+vector", "gang", "tiled", "all"}))
      ->capture_default_str();
  app.add_option("--a", o.a_path, "Read A from an HDF5 dataset, FILE:/DATASET (2-D, M x K)");
  app.add_option("--b", o.b_path, "Read B from an HDF5 dataset, FILE:/DATASET (2-D, K x N)");
  app.add_flag("--write-c", o.write_c, "Write C (of the last level run) into the output file as /C");
  app.add_option("--repeats", o.repeats, "Timed runs per level (the median is reported)")->check(CLI::Range(1, 1000))->capture_default_str();
  app.add_option("--warmup", o.warmup, "Untimed runs before timing")->check(CLI::Range(0, 100))->capture_default_str();
  app.add_option("--split-k", o.split_k, "K splits of the gang level (0: one wave of blocks on the GPU, K/1024 up to 64 chunks on the CPU)")
      ->check(CLI::Range(std::int64_t{0}, std::int64_t{65535}))
      ->capture_default_str();
  app.add_flag("--no-eigen", o.no_eigen, "Skip the Eigen comparison on the CPU");
  app.add_flag("--bench", o.bench, "Run the benchmark table (square, rectangular and tall-skinny shapes; float and double unless --precision is given)");
  if (auto code = cli::parse(app, argc, argv, comm.is_root())) return *code;  // the same on every rank: rank 0 prints

  // Set-up, which may fail on some ranks only (no GPU there, an unwritable --out on rank 0): the
  // ranks agree on it, so that every rank exits and rank 0 prints the failing rank's message.
  Backend backend = Backend::cpu;
  int device = -1;
  std::vector<Level> levels;
  Shape s;
  std::exception_ptr failure;
  try {
    bool fell_back = false;
    backend = reduce::resolve_backend(o.common.backend, &fell_back);
    if (fell_back && comm.is_root()) std::fprintf(stderr, "matmul: no usable CUDA device, running on the CPU backend\n");
    if (backend == Backend::cuda) {
      device = comm.pick_device(o.common.device);  // each rank its GPU (--device with one rank)
      if (device < 0) throw InputError("--backend cuda: no usable CUDA device on this rank");
    }
    levels = resolve_levels(o.levels);
    s = resolve_shape(o, app);
    if (!o.bench && s.k < comm.size())
      throw InputError("--k: K = " + std::to_string(s.k) + " is split across " + std::to_string(comm.size()) +
                       " ranks, but every rank needs at least one column of A (one row of B): use at most " +
                       std::to_string(s.k) + " ranks");
    // A bad --out fails before any work; the file itself is created once the job is done, so that a
    // rank failing mid-run (the job aborted) leaves no file, not even a temporary one.
    if (comm.is_root()) (void)h5::File::create(o.common.out);
  } catch (...) {
    failure = std::current_exception();
  }
  agree(comm, failure);
  // --backend auto must resolve alike everywhere: one job runs on one kind of backend.
  require_same(comm, reduce::to_string(backend), "the backend (--backend " + o.common.backend + " as resolved on each rank)");
  if (backend == Backend::cuda) comm.use_device(device);
  if (o.bench) return run_bench(comm, backend, device, o, app);
  const std::string command = cli::command_line(argc, argv);
  return o.common.precision == "float" ? run_single<float>(comm, backend, device, o, s, levels, command)
                                       : run_single<double>(comm, backend, device, o, s, levels, command);
}

}  // namespace tally::matmul
