// The matmul driver: options, inputs, the run of each level against the reference, cuBLAS and
// Eigen, the HDF5 file, the JSON line, the summary and the --bench table. It knows no backend:
// everything device-specific is behind Engine.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "matmul.hpp"
#include "tally/common/cli.hpp"
#include "tally/common/device_info.hpp"
#include "tally/common/error.hpp"
#include "tally/common/h5.hpp"
#include "tally/common/json.hpp"
#include "tally/common/provenance.hpp"
#include "tally/common/timing.hpp"
#include "tally/reduce/backend.hpp"

namespace tally::matmul {
namespace {

using reduce::Backend;

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
  Timings timings;
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

template <class T>
std::vector<T> read_matrix(const std::string& opt, const std::string& source) {
  const auto [file, dset] = split_source(opt, source);
  return h5::File::open(file).read<T>(dset);
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

/// Runs one case: inputs, reference, each level, the vendor library, Eigen.
template <class T>
Case run_case(Backend backend, int device, Shape s, const std::vector<Level>& levels, const Options& o, bool eigen,
              int eigen_repeats, std::vector<T>* c_out, bool with_bandwidth) {
  Case cs;
  cs.shape = s;
  cs.precision = sizeof(T) == 4 ? "float" : "double";
  auto engine = backend == Backend::cuda ? make_cuda_engine<T>(s, device) : make_cpu_engine<T>(s);
  engine->set_split_k(o.split_k);
  {
    ScopedTimer t(cs.timings, "inputs_s");
    if (o.a_path.empty() && o.b_path.empty()) {
      engine->generate(o.common.seed);
    } else {  // one or both from files; a missing one is generated
      std::vector<T> a = o.a_path.empty() ? std::vector<T>(static_cast<std::size_t>(s.m * s.k)) : read_matrix<T>("--a", o.a_path);
      std::vector<T> b = o.b_path.empty() ? std::vector<T>(static_cast<std::size_t>(s.k * s.n)) : read_matrix<T>("--b", o.b_path);
      if (o.a_path.empty()) generate_host<T>(o.common.seed, 0, a);
      if (o.b_path.empty()) generate_host<T>(o.common.seed, 1, b);
      engine->set_inputs(a, b);
    }
  }
  if (with_bandwidth) cs.bandwidth_gbs = engine->copy_bandwidth_gbs();
  Reference ref;
  {
    ScopedTimer t(cs.timings, "reference_s");
    ref = engine->reference();
  }
  // cuBLAS and Eigen first, so that every level is also compared with their products.
  std::optional<Reference> c_vendor, c_eigen;  // their C (as a Reference sharing |A||B|)
  auto as_reference = [&](const std::vector<T>& c) {
    Reference r{std::vector<double>(c.begin(), c.end()), ref.abs};
    return r;
  };
  if (auto t = engine->run_vendor(o.warmup, o.repeats)) {
    auto c = engine->c();
    cs.vendor = judge<T>("cublas", *t, c, ref, s);
    c_vendor = as_reference(c);
  }
  if (eigen) {
    HostTimer wall;
    const auto a = engine->a(), b = engine->b();
    std::vector<T> c(static_cast<std::size_t>(s.m * s.n));
    const double t = eigen_multiply<T>(a, b, c, s, eigen_repeats > 1 ? 1 : 0, eigen_repeats);
    cs.eigen = judge<T>("eigen", t, c, ref, s);
    if (c_vendor) cs.vendor->diff_eigen = relative_error<T>(c, *c_vendor);
    c_eigen = as_reference(c);
    cs.timings.set("eigen_s", wall.seconds());
  }
  for (Level l : levels) {
    HostTimer wall;
    const double t = engine->run(l, o.warmup, o.repeats);
    auto c = engine->c();
    Measured m = judge<T>(to_string(l), t, c, ref, s);
    if (c_vendor) m.diff_cublas = relative_error<T>(c, *c_vendor), m.pct_vendor = 100.0 * cs.vendor->time_s / t;
    if (c_eigen) m.diff_eigen = relative_error<T>(c, *c_eigen);
    cs.levels.push_back(m);
    cs.timings.set("level_" + to_string(l) + "_s", wall.seconds());
    if (c_out && l == levels.back()) *c_out = std::move(c);
  }
  return cs;
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

void print_rows(const Case& cs) {
  const std::string name = cs.precision + " " + cs.shape.str();
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

std::vector<BenchCase> bench_cases(Backend b, const std::vector<std::string>& precisions) {
  const std::vector<Level> all(all_levels.begin(), all_levels.end());
  // Tall-skinny: only gang splits K across blocks; tiled has a single block for M, N <= 64 (seconds per
  // run) and the one-element-per-warp/block levels have only M*N-way parallelism.
  const std::vector<Level> fast{Level::gang};
  std::vector<BenchCase> out;
  for (const auto& p : precisions) {
    const bool f = p == "float";
    if (b == Backend::cuda) {
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

int run_bench(Backend backend, const Options& o, const CLI::App& app, h5::File& file) {
  std::vector<std::string> precisions{"float", "double"};
  if (app.count("--precision")) precisions = {o.common.precision};
  const auto cases = bench_cases(backend, precisions);
  const bool cuda = backend == Backend::cuda;
  std::optional<DeviceInfo> dev;
  if (cuda) dev = query_device(o.common.device);
  if (dev) std::printf("device: %s\n", dev->summary().c_str());
  std::vector<Case> results;
  bool ok = true, header = false;
  HostTimer total;
  for (const auto& bc : cases) {
    // Eigen on the CPU only where the inputs are small enough to copy back and multiply in seconds.
    const bool eigen = !o.no_eigen && bc.shape.input_bytes(bc.is_float ? 4 : 8) <= (1 << 30) && bc.shape.flops() <= 2e11;
    Case cs = bc.is_float ? run_case<float>(backend, o.common.device, bc.shape, bc.levels, o, eigen, 1, nullptr, cuda && results.empty())
                          : run_case<double>(backend, o.common.device, bc.shape, bc.levels, o, eigen, 1, nullptr, cuda && results.empty());
    if (!results.empty()) cs.bandwidth_gbs = results.front().bandwidth_gbs;  // measured once, in this run
    if (!header) {
      if (cs.bandwidth_gbs) std::printf("measured device copy bandwidth: %.0f GB/s (1 GiB cudaMemcpy D2D, read + write, median of 10)\n", *cs.bandwidth_gbs);
      print_table_header(cuda);
      header = true;
    }
    print_rows(cs);
    ok = ok && cs.passed();
    results.push_back(std::move(cs));
  }
  file.attr("app", "matmul");
  file.attr("mode", "bench");
  file.attr("backend", reduce::to_string(backend));
  file.attr("status", ok ? "ok" : "failed");
  file.attr("repeats", o.repeats);
  file.attr("warmup", o.warmup);
  file.attr("seed", o.common.seed);
  if (!results.empty() && results.front().bandwidth_gbs) file.attr("copy_bandwidth_gbs", *results.front().bandwidth_gbs);
  for (const auto& cs : results) {
    auto g = file.group("bench/" + cs.precision + "_" + cs.shape.str());
    g.attr("m", cs.shape.m);
    g.attr("n", cs.shape.n);
    g.attr("k", cs.shape.k);
    g.attr("precision", cs.precision);
    g.attr("tall_skinny", cs.shape.tall_skinny());
    write_case(g, cs);
  }
  file.group("timings").attr("total_s", total.seconds());
  write_provenance(file, collect_provenance("matmul --bench", dev), dev);
  file.commit();
  std::printf("| matmul bench: %s, %zu cases, total %.1f s |\n", ok ? "all checks passed" : "SOME CHECKS FAILED", results.size(), total.seconds());
  return ok ? exit_ok : exit_failure;
}

template <class T>
int run_single(Backend backend, const Options& o, Shape s, const std::vector<Level>& levels, h5::File& file,
               const std::string& command) {
  HostTimer total;
  std::vector<T> c;
  const bool cuda = backend == Backend::cuda;
  Case cs = run_case<T>(backend, o.common.device, s, levels, o, !o.no_eigen, o.repeats, o.write_c ? &c : nullptr, cuda);
  const bool ok = cs.passed();
  std::string level_list;
  for (Level l : levels) level_list += (level_list.empty() ? "" : ",") + to_string(l);

  file.attr("app", "matmul");
  file.attr("m", s.m);
  file.attr("n", s.n);
  file.attr("k", s.k);
  file.attr("precision", cs.precision);
  file.attr("backend", reduce::to_string(backend));
  file.attr("levels", level_list);
  file.attr("status", ok ? "ok" : "failed");
  file.attr("seed", o.common.seed);
  file.attr("repeats", o.repeats);
  file.attr("warmup", o.warmup);
  file.attr("a", o.a_path.empty() ? std::string("generated") : o.a_path);
  file.attr("b", o.b_path.empty() ? std::string("generated") : o.b_path);
  file.attr("tolerance", tolerance<T>(s.k));
  file.attr("split_k", o.split_k);
  if (cs.bandwidth_gbs) file.attr("copy_bandwidth_gbs", *cs.bandwidth_gbs);
  write_case(file, cs);
  if (o.write_c) file.write<T>("C", c, {static_cast<std::uint64_t>(s.m), static_cast<std::uint64_t>(s.n)});
  cs.timings.set("total_s", total.seconds());
  auto tg = file.group("timings");
  for (const auto& [name, v] : cs.timings.entries()) tg.attr(name, v);
  std::optional<DeviceInfo> dev;
  if (cuda) dev = query_device(o.common.device);
  write_provenance(file, collect_provenance(command, dev), dev);
  file.commit();

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
    std::printf("matmul: C = A B, %s %s on %s, %zu level(s)%s: %s (max rel. err %.1e vs tolerance %.1e of |A||B|); best %s %s -> %s\n",
                s.str().c_str(), cs.precision.c_str(), reduce::to_string(backend).c_str(), levels.size(), extra.c_str(),
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
  app.add_flag("--bench", o.bench, "Run the benchmark table (square, rectangular and tall-skinny shapes; float and double unless --precision is given)");
  if (auto code = cli::parse(app, argc, argv)) return *code;

  bool fell_back = false;
  const Backend backend = reduce::resolve_backend(o.common.backend, &fell_back);
  if (fell_back) std::fprintf(stderr, "matmul: no usable CUDA device, running on the CPU backend\n");
  const auto levels = resolve_levels(o.levels);
  const Shape s = resolve_shape(o, app);
  auto file = h5::File::create(o.common.out);  // a bad --out fails before any work
  if (o.bench) return run_bench(backend, o, app, file);
  const std::string command = cli::command_line(argc, argv);
  return o.common.precision == "float" ? run_single<float>(backend, o, s, levels, file, command)
                                       : run_single<double>(backend, o, s, levels, file, command);
}

}  // namespace tally::matmul
