// The matmul driver: options, inputs, the run of each level against the reference, cuBLAS and
// Eigen, the HDF5 file (its writer: matmul_output.hpp), the JSON line and the summary (the --bench
// table: bench.cpp). It knows no backend: everything device-specific is behind Engine.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <functional>
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
#include "matmul_output.hpp"
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
#include "tally/ranks/split.hpp"
#include "tally/reduce/ranks.hpp"

namespace tally::matmul {
namespace detail {
namespace {

using ranks::Comm;
using ranks::Memory;

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

std::vector<Level> resolve_levels(const std::vector<std::string>& names, Backend backend, bool exact) {
  std::vector<Level> out;
  for (const auto& n : names) {
    if (n == "all") {
      if (backend == Backend::cuda && !exact) return {cuda_levels.begin(), cuda_levels.end()};
      return {all_levels.begin(), all_levels.end()};
    }
    const Level l = parse_level(n);
    if (l == Level::tiled_tc && backend != Backend::cuda)
      throw InputError("--level tiled-tc: runs on the tensor cores of a CUDA GPU; the CPU backend has no such level");
    if (l == Level::tiled_tc && exact)
      throw InputError(std::string(kNoExactTiledTc) + "; --exact runs the other levels");
    if (std::find(out.begin(), out.end(), l) == out.end()) out.push_back(l);
  }
  return out;
}


/// Runs one case: inputs, reference, each level, the vendor library, Eigen. With several ranks each
/// holds its K slab (split_range of K): A[:, k0:k1] and B[k0:k1, :], multiplies it, and the partial Cs
/// are summed in rank order (reduce::allreduce) inside every timed run: every rank ends with the same C.
template <class T>
Case run_case(const Comm& comm, Backend backend, int device, Shape s, const std::vector<Level>& levels, const Options& o,
              bool eigen, int eigen_repeats, std::vector<T>* c_out, bool with_bandwidth, const HostInputs<T>* given) {
  Case cs;
  cs.shape = s;
  cs.precision = sizeof(T) == 4 ? "float" : "double";
  cs.ranks = comm.size();
  const ranks::Range part = ranks::split_range(s.k, comm.size(), comm.rank());
  const Shape local{s.m, s.n, part.size()};
  const auto mu = static_cast<std::uint64_t>(s.m), nu = static_cast<std::uint64_t>(s.n);
  const auto k0 = static_cast<std::uint64_t>(part.begin), kr = static_cast<std::uint64_t>(part.size());
  const Memory c_memory = backend == Backend::cuda ? Memory::device : Memory::host;
  // Host-side sums over ranks (rank order: the same bits on every rank).
  const auto host_sum = [&](auto& v) {
    using V = typename std::decay_t<decltype(v)>::value_type;
    if (comm.size() > 1) reduce::allreduce<reduce::Sum, V>(comm, std::span<const V>(v), std::span<V>(v), Memory::host);
  };
  auto engine = backend == Backend::cuda ? make_cuda_engine<T>(local, device) : make_cpu_engine<T>(local);
  engine->set_split_k(o.split_k);
  engine->set_exact(o.exact);
  if (comm.size() > 1)
    engine->set_combine([&comm, c_memory](std::span<T> c, stream_t stream) {
      reduce::allreduce<reduce::Sum, T>(comm, std::span<const T>(c.data(), c.size()), c, c_memory, stream);
    });
  {
    ScopedTimer t(cs.timings, "inputs_s");
    const bool a_given = given && !given->a.empty(), b_given = given && !given->b.empty();
    const bool a_generated = !a_given && o.a_path.empty(), b_generated = !b_given && o.b_path.empty();
    if (a_generated && b_generated) {
      engine->generate(o.common.seed, KSlab{part.begin, s.k});
    } else {  // one or both given or from files (each rank its slab); a missing one is generated
      std::vector<T> a(mu * kr), b(kr * nu);
      if (a_given)
        for (std::uint64_t i = 0; i < mu; ++i)
          std::copy_n(given->a.begin() + static_cast<std::ptrdiff_t>(i * static_cast<std::uint64_t>(s.k) + k0), kr,
                      a.begin() + static_cast<std::ptrdiff_t>(i * kr));
      else if (!a_generated) a = read_block<T>("--a", o.a_path, {0, k0}, {mu, kr});
      else generate_block_host<T>(o.common.seed, 0, a, local.k, 0, part.begin, s.k);
      if (b_given) std::copy_n(given->b.begin() + static_cast<std::ptrdiff_t>(k0 * nu), kr * nu, b.begin());
      else if (!b_generated) b = read_block<T>("--b", o.b_path, {k0, 0}, {kr, nu});
      else generate_block_host<T>(o.common.seed, 1, b, s.n, part.begin, 0, s.n);
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
  const auto job_seconds = [&](double t) { return comm.size() > 1 ? comm.stats(t).max : t; };  // the slowest rank's
  // Eigen first (the CPU's comparison): its C and cuBLAS's are what every level is compared with.
  // Both run on each rank's slab and are combined like the levels.
  std::optional<Reference> c_vendor, c_eigen;  // their C (as a Reference sharing |A||B|)
  auto as_reference = [&](const std::vector<T>& c) {
    Reference r{std::vector<double>(c.begin(), c.end()), ref.abs};
    return r;
  };
  if (eigen) {
    HostTimer wall;
    const auto a = engine->a(), b = engine->b();
    std::vector<T> c(static_cast<std::size_t>(s.m * s.n));
    double t = eigen_multiply<T>(a, b, c, local, eigen_repeats > 1 ? 1 : 0, eigen_repeats);
    HostTimer combine;
    host_sum(c);
    t += combine.seconds();
    cs.eigen = judge<T>("eigen", job_seconds(t), c, ref, s);
    c_eigen = as_reference(c);
    cs.timings.set("eigen_s", wall.seconds());
  }
  // cuBLAS (both modes) and the levels are timed in rounds (--timing rounds, the default), each run
  // once a round, the order reversed every other round and forward in the last: all of them meet
  // the chip in the same clock and power state. Timed one after another (--timing sequential),
  // long runs favour whichever runs first: 300 runs of the double Gram 64 x 64 x 2^24 take an H200
  // to its 700 W limit, where the SM clock falls from 1.98 GHz to 0.55-1.46 GHz (BENCHMARKS.md,
  // twelfth session). Each one's C is judged after its last run.
  struct Contender {
    std::string name;
    std::function<std::optional<double>()> once;  // one run, event- or host-timed; nullopt: not here
    std::vector<double> times;
    double wall = 0;
    bool done = false;
  };
  std::vector<Contender> cont;
  cont.push_back({"cublas", [&] { return engine->run_vendor(); }, {}});
  cont.push_back({"cublas-tf32", [&] { return engine->run_vendor_tf32(); }, {}});
  for (Level l : levels) cont.push_back({to_string(l), [&, l] { return std::optional<double>(engine->run(l)); }, {}});
  std::vector<std::optional<Measured>> judged(cont.size());
  std::vector<std::vector<T>> pending(cont.size());  // Cs judged before cuBLAS's last run (compared at the end)
  const int rounds = o.warmup + o.repeats;
  const auto step = [&](std::size_t i, int r) {  // contender i's run in round r
    Contender& x = cont[i];
    if (x.done) return;
    interrupt::check("before timing " + x.name);  // a safe point: between runs
    HostTimer wall;
    const auto t = x.once();
    x.wall += wall.seconds();
    if (!t) {  // this backend has no such thing (cuBLAS on the CPU, TF32 in double)
      x.done = true;
      return;
    }
    if (r >= o.warmup) x.times.push_back(*t);
    // Without a cross-rank combine (every rank must make the same calls), a GPU run over 0.25 s
    // is timed at most 3 times.
    const bool long_run = backend == Backend::cuda && comm.size() == 1 && *t > 0.25 && r >= o.warmup &&
                          static_cast<int>(x.times.size()) >= std::min(o.repeats, 3);
    if (r + 1 < rounds && !long_run) return;
    x.done = true;
    auto c = engine->c();
    const double med = job_seconds(median(x.times));
    const bool level = i >= 2;
    Measured m = o.exact && level ? judge_exact<T>(x.name, med, c, ref, s) : judge<T>(x.name, med, c, ref, s);
    if (i == 0) c_vendor = as_reference(c);
    else if (c_vendor) m.diff_cublas = relative_error<T>(c, *c_vendor);
    else if (!cont[0].done) pending[i] = c;  // cuBLAS still to be judged (none on the CPU: no copy kept)
    if (c_eigen && i != 1) m.diff_eigen = relative_error<T>(c, *c_eigen);
    if (level) cs.timings.set("level_" + x.name + "_s", x.wall);
    if (c_out && level && i == cont.size() - 1) *c_out = std::move(c);
    judged[i] = std::move(m);
  };
  if (o.timing == "sequential") {
    for (std::size_t i = 0; i < cont.size(); ++i)
      for (int r = 0; r < rounds; ++r) step(i, r);
  } else {
    for (int r = 0; r < rounds; ++r) {
      const bool forward = (rounds - 1 - r) % 2 == 0;
      for (std::size_t j = 0; j < cont.size(); ++j) step(forward ? j : cont.size() - 1 - j, r);
    }
  }
  for (std::size_t i = 0; i < cont.size(); ++i) {
    if (!judged[i]) continue;
    Measured& m = *judged[i];
    if (i > 0 && judged[0]) {
      m.pct_vendor = 100.0 * judged[0]->time_s / m.time_s;
      if (!pending[i].empty()) m.diff_cublas = relative_error<T>(pending[i], *c_vendor);
    }
    if (i == 0) cs.vendor = m;
    else if (i == 1) cs.vendor_tf32 = m;
    else cs.levels.push_back(m);
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
    const ranks::Range p = ranks::split_range(cs.shape.k, comm.size(), q);
    rr.decomposition += (q ? " | " : "") + std::to_string(p.begin) + "-" + std::to_string(p.end - 1);
  }
  for (const auto& [name, v] : cs.timings.entries()) {  // "level_gang_s": phase "level_gang"
    const ranks::RankStats st = comm.stats(v);
    const bool s_suffix = name.size() > 2 && name.compare(name.size() - 2, 2, "_s") == 0;
    rr.phases.push_back({s_suffix ? name.substr(0, name.size() - 2) : name, st.min, st.median, st.max, st.per_rank});
  }
  return rr;
}

void write_ranks(h5::Location& where, const RanksReport& rr, Shape s) {
  write(where, rr);
  std::vector<std::int64_t> begin, end;  // each rank's K slab, machine-readable
  for (int q = 0; q < rr.ranks; ++q) {
    const ranks::Range p = ranks::split_range(s.k, rr.ranks, q);
    begin.push_back(p.begin);
    end.push_back(p.end);
  }
  auto g = where.open_group("ranks");
  g.write<std::int64_t>("part_begin", begin);
  g.write<std::int64_t>("part_end", end);
}

template Case run_case<float>(const Comm&, Backend, int, Shape, const std::vector<Level>&, const Options&, bool, int,
                              std::vector<float>*, bool, const HostInputs<float>*);
template Case run_case<double>(const Comm&, Backend, int, Shape, const std::vector<Level>&, const Options&, bool, int,
                               std::vector<double>*, bool, const HostInputs<double>*);

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
  if (cs.vendor_tf32) write_measured(where.group("cublas_tf32"), *cs.vendor_tf32, true);
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

  std::optional<DeviceInfo> dev;
  if (cuda) dev = query_device(device);
  auto f = h5::File::create(o.common.out);  // now: a job aborted mid-run leaves no file
  write_result<T>(f, cs, o, backend, o.write_c ? &c : nullptr, rr, collect_provenance(command, dev), dev,
                  o.a_path.empty() ? "generated" : o.a_path, o.b_path.empty() ? "generated" : o.b_path);
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
    if (cs.vendor_tf32)
      j.add("cublas_tf32_time_s", cs.vendor_tf32->time_s).add("cublas_tf32_gflops", cs.vendor_tf32->gflops).add("cublas_tf32_rel_error", cs.vendor_tf32->rel_error);
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
  ranks::Comm one;  // the tests' in-process runs: a single rank
  return run(argc, argv, one);
}

int run(int argc, char** argv, ranks::Comm& comm) {
  using namespace detail;
  // Every rank must run the same job (a rank with other options would multiply another problem or
  // wait in another collective): checked before parsing, so that every rank parses the same text.
  std::string args;
  for (int i = 1; i < argc; ++i) args += std::string(i > 1 ? " " : "") + argv[i];
  comm.require_same(args, "the command line (matmul's options)");
  CLI::App app{"matmul: C = A B with every element a dot product reduced at the chosen level (vector, worker, "
               "worker+vector, gang, tiled, tiled-tc), checked against a double-double reference, cuBLAS and Eigen",
               "matmul"};
  Options o;
  o.common.out = "results/matmul.h5";
  cli::add_common_options(app, o.common);
  cli::add_number(app, "--m", o.m, "Rows of A and C", cli::positive)->capture_default_str();
  cli::add_number(app, "--n", o.n, "Columns of B and C", cli::positive)->capture_default_str();
  cli::add_number(app, "--k", o.k, "Columns of A, rows of B: the length of each dot product", cli::positive)->capture_default_str();
  cli::add_number(app, "--size", o.size, "Sets M = N = K", cli::positive);
  app.add_option("--level", o.levels, "Where the reduction over K runs: vector, worker, worker+vector, gang, tiled, tiled-tc (CUDA: tensor cores) or all (comma list allowed)")
      ->delimiter(',')
      ->check(CLI::IsMember({"vector", "worker", "worker+vector", "gang", "tiled", "tiled-tc", "all"}))
      ->capture_default_str();
  app.add_option("--a", o.a_path, "Read A from an HDF5 dataset, FILE:/DATASET (2-D, M x K)");
  app.add_option("--b", o.b_path, "Read B from an HDF5 dataset, FILE:/DATASET (2-D, K x N)");
  app.add_flag("--write-c", o.write_c, "Write C (of the last level run) into the output file as /C");
  cli::add_number(app, "--repeats", o.repeats, "Timed runs per level (the median is reported)", cli::in_range(1, 1000))->capture_default_str();
  cli::add_number(app, "--warmup", o.warmup, "Untimed runs before timing", cli::in_range(0, 100))->capture_default_str();
  app.add_option("--timing", o.timing,
                 "rounds: cuBLAS and the levels run once each a round (all meet the chip in the same state); sequential: each one's runs back to back")
      ->check(CLI::IsMember({"rounds", "sequential"}))
      ->capture_default_str();
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
    levels = resolve_levels(o.levels, backend, o.exact);
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
