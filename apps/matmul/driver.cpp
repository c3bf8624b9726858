// The matmul driver: options, inputs, the run of each level against the reference, cuBLAS and
// Eigen, the HDF5 file, the JSON line and the summary (the --bench table: bench.cpp). It knows no
// backend: everything device-specific is behind Engine.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include <CLI/CLI.hpp>

#include "driver.hpp"
#include "exact.hpp"
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
#include "tally/common/interrupt.hpp"
#include "tally/reduce/rank.hpp"

namespace tally::matmul {
namespace detail {
namespace {

using reduce::Comm;
using reduce::Memory;

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

/// --exact: C must be the correctly rounded product (ref.c) bit for bit, every element.
template <class T>
Measured judge_exact(std::string name, double t, std::span<const T> c, const Reference& ref, Shape s) {
  Measured r = judge<T>(std::move(name), t, c, ref, s);
  r.tolerance = 0;
  r.mismatches = 0;
  for (std::size_t e = 0; e < c.size(); ++e) {
    const T want = static_cast<T>(ref.c[e]);  // a T value held in a double: exact
    if (std::memcmp(&c[e], &want, sizeof(T)) != 0 && !(std::isnan(c[e]) && std::isnan(want))) ++r.mismatches;
  }
  r.passed = r.mismatches == 0;
  return r;
}

}  // namespace

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
  engine->set_exact(o.exact);
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
    // --exact: the correctly rounded C (exact dot products on the CPU; one rank, see run()).
    ref = o.exact ? exact_reference<T>(engine->a(), engine->b(), local) : engine->reference();  // else this rank's slab, double-double
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
    interrupt::check("before level " + to_string(l));  // a safe point: between cases
    HostTimer wall;
    const double t = engine->run(l, o.warmup, o.repeats);
    auto c = engine->c();
    Measured m = o.exact ? judge_exact<T>(to_string(l), job_seconds(t), c, ref, s) : judge<T>(to_string(l), job_seconds(t), c, ref, s);
    if (c_vendor) m.diff_cublas = relative_error<T>(c, *c_vendor), m.pct_vendor = 100.0 * cs.vendor->time_s / m.time_s;
    if (c_eigen) m.diff_eigen = relative_error<T>(c, *c_eigen);
    cs.levels.push_back(m);
    cs.timings.set("level_" + to_string(l) + "_s", wall.seconds());
    if (c_out && l == levels.back()) *c_out = std::move(c);
  }
  return cs;
}

RanksReport ranks_report(const Comm& comm, Backend backend, const Case& cs) {
  RanksReport rr;
  rr.ranks = comm.size();
  rr.transport = comm.transport(backend == Backend::cuda ? Memory::device : Memory::host);
  rr.shares_device = backend == Backend::cuda && comm.shares_device();
  rr.decomposition = "K split (columns of A, rows of B; partial C summed in rank order): ";
  for (int q = 0; q < comm.size(); ++q) {
    const reduce::Range p = reduce::split_range(cs.shape.k, comm.size(), q);
    rr.decomposition += (q ? " | " : "") + std::to_string(p.begin) + "-" + std::to_string(p.end - 1);
  }
  for (const auto& [name, v] : cs.timings.entries()) {  // "level_gang_s": phase "level_gang"
    const reduce::RankStats st = comm.stats(v);
    const bool s_suffix = name.size() > 2 && name.compare(name.size() - 2, 2, "_s") == 0;
    rr.phases.push_back({s_suffix ? name.substr(0, name.size() - 2) : name, st.min, st.median, st.max, st.per_rank});
  }
  return rr;
}

void write_ranks(h5::Location& where, const RanksReport& rr, Shape s) {
  write(where, rr);
  std::vector<std::int64_t> begin, end;  // each rank's K slab, machine-readable
  for (int q = 0; q < rr.ranks; ++q) {
    const reduce::Range p = reduce::split_range(s.k, rr.ranks, q);
    begin.push_back(p.begin);
    end.push_back(p.end);
  }
  auto g = where.open_group("ranks");
  g.write<std::int64_t>("part_begin", begin);
  g.write<std::int64_t>("part_end", end);
}

template Case run_case<float>(const Comm&, Backend, int, Shape, const std::vector<Level>&, const Options&, bool, int,
                              std::vector<float>*, bool);
template Case run_case<double>(const Comm&, Backend, int, Shape, const std::vector<Level>&, const Options&, bool, int,
                               std::vector<double>*, bool);

static void write_measured(h5::Location g, const Measured& m, bool full) {
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
  if (m.mismatches >= 0) g.attr("exact_mismatches", m.mismatches);
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


namespace {

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
  f.attr("exact", o.exact ? 1 : 0);
  if (cs.bandwidth_gbs) f.attr("copy_bandwidth_gbs", *cs.bandwidth_gbs);
  write_case(f, cs);
  if (o.write_c) f.write<T>("C", c, {static_cast<std::uint64_t>(s.m), static_cast<std::uint64_t>(s.n)});
  auto tg = f.group("timings");  // rank 0's; every rank's under /ranks/timings
  for (const auto& [name, v] : cs.timings.entries()) tg.attr(name, v);
  write_ranks(f, rr, s);
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
                ok ? (o.exact ? "levels bitwise the correctly rounded C, others within tolerance" : "all within tolerance") : "CHECK FAILED", worst_err, tolerance<T>(s.k), best->name.c_str(), perf.c_str(),
                o.common.out.c_str());
    if (!ok) {
      for (const auto& m : cs.levels)
        if (!m.passed && m.mismatches > 0)
          std::fprintf(stderr, "matmul: level %s: %lld of %lld elements differ from the correctly rounded C (--exact)\n", m.name.c_str(),
                       static_cast<long long>(m.mismatches), static_cast<long long>(s.m * s.n));
        else if (!m.passed) std::fprintf(stderr, "matmul: level %s: rel. error %.3e > tolerance %.3e\n", m.name.c_str(), m.rel_error, m.tolerance);
      if (cs.vendor && !cs.vendor->passed) std::fprintf(stderr, "matmul: cuBLAS: rel. error %.3e > tolerance\n", cs.vendor->rel_error);
      if (cs.eigen && !cs.eigen->passed) std::fprintf(stderr, "matmul: Eigen: rel. error %.3e > tolerance\n", cs.eigen->rel_error);
    }
  }
  return ok ? exit_ok : exit_failure;
}

}  // namespace
}  // namespace detail

int run(int argc, char** argv) {
  reduce::Comm one;  // the tests' in-process runs: a single rank
  return run(argc, argv, one);
}

int run(int argc, char** argv, reduce::Comm& comm) {
  using namespace detail;
  // Every rank must run the same job (a rank with other options would multiply another problem or
  // wait in another collective): checked before parsing, so that every rank parses the same text.
  std::string args;
  for (int i = 1; i < argc; ++i) args += std::string(i > 1 ? " " : "") + argv[i];
  comm.require_same(args, "the command line (matmul's options)");
  CLI::App app{"matmul: C = A B with every element a dot product reduced at the chosen level (vector, worker, "
               "worker+vector, gang, tiled), checked against a double-double reference, cuBLAS and Eigen",
               "matmul"};
  Options o;
  o.common.out = "results/matmul.h5";
  cli::add_common_options(app, o.common);
  cli::add_number(app, "--m", o.m, "Rows of A and C", cli::positive)->capture_default_str();
  cli::add_number(app, "--n", o.n, "Columns of B and C", cli::positive)->capture_default_str();
  cli::add_number(app, "--k", o.k, "Columns of A, rows of B: the length of each dot product", cli::positive)->capture_default_str();
  cli::add_number(app, "--size", o.size, "Sets M = N = K", cli::positive);
  app.add_option("--level", o.levels, "Where the reduction over K runs: vector, worker, worker+vector, gang, tiled or all (comma list allowed)")
      ->delimiter(',')
      ->check(CLI::IsMember({"vector", "worker", "worker+vector", "gang", "tiled", "all"}))
      ->capture_default_str();
  app.add_option("--a", o.a_path, "Read A from an HDF5 dataset, FILE:/DATASET (2-D, M x K)");
  app.add_option("--b", o.b_path, "Read B from an HDF5 dataset, FILE:/DATASET (2-D, K x N)");
  app.add_flag("--write-c", o.write_c, "Write C (of the last level run) into the output file as /C");
  cli::add_number(app, "--repeats", o.repeats, "Timed runs per level (the median is reported)", cli::in_range(1, 1000))->capture_default_str();
  cli::add_number(app, "--warmup", o.warmup, "Untimed runs before timing", cli::in_range(0, 100))->capture_default_str();
  cli::add_number(app, "--split-k", o.split_k, "K splits of the gang level (0: one wave of blocks on the GPU, K/1024 up to 64 chunks on the CPU)",
                  cli::in_range(0, 65535))
      ->capture_default_str();
  app.add_flag("--no-eigen", o.no_eigen, "Skip the Eigen comparison on the CPU");
  app.add_flag("--exact", o.exact,
               "Exact dot products: every level gives the correctly rounded C, checked bit for bit against exact dot products on the CPU (one rank)");
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
    if (o.exact && o.bench) throw InputError("--exact: not with --bench (run single shapes with --exact)");
    if (o.exact && comm.size() > 1)
      throw InputError("--exact: runs on one rank (got " + std::to_string(comm.size()) + "): ranks would add rounded partial Cs");
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
  comm.agree(failure);
  // --backend auto must resolve alike everywhere: one job runs on one kind of backend.
  comm.require_same(reduce::to_string(backend), "the backend (--backend " + o.common.backend + " as resolved on each rank)");
  if (backend == Backend::cuda) comm.use_device(device);
  if (o.bench) return run_bench(comm, backend, device, o, app);
  const std::string command = cli::command_line(argc, argv);
  return o.common.precision == "float" ? run_single<float>(comm, backend, device, o, s, levels, command)
                                       : run_single<double>(comm, backend, device, o, s, levels, command);
}

}  // namespace tally::matmul
