// The matmul driver (driver.hpp): the job's set-up, agreed over the ranks; one case's run of every
// level, cuBLAS and Eigen against the reference, in timing rounds; the single run. It knows no
// backend: everything device-specific is behind Engine.
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

#include "driver.hpp"
#include "exact.hpp"
#include "inputs.hpp"
#include "matmul.hpp"
#include "matmul_output.hpp"
#include "ozaki/ozaki.hpp"
#include "tally/common/device_info.hpp"
#include "tally/common/error.hpp"
#include "tally/common/h5.hpp"
#include "tally/common/interrupt.hpp"
#include "tally/common/provenance.hpp"
#include "tally/common/ranks_report.hpp"
#include "tally/common/timing.hpp"
#include "tally/reduce/backend.hpp"
#include "tally/ranks/split.hpp"
#include "tally/reduce/ranks.hpp"

namespace tally::matmul {
namespace detail {
namespace {

using ranks::Comm;
using ranks::Memory;

/// C against the reference, within the tolerance of `bound` (the order's, on the largest slab) over
/// `ranks` ranks.
template <class T>
Measured judge(std::string name, double t, std::span<const T> c, const Reference& ref, Shape s, ErrorBound bound,
               int ranks) {
  Measured r;
  r.name = std::move(name);
  r.time_s = t;
  r.gflops = s.flops() / t / 1e9;
  r.gbps = s.input_bytes(sizeof(T)) / t / 1e9;
  r.tolerance = tolerance<T>(bound, ranks);
  const Comparison cmp = compare<T>(c, ref, Allowance{r.tolerance, underflow_allowance<T>(s.k)});
  r.rel_error = cmp.rel_error;  // infinite where NaN or an infinity mismatches
  r.nan_extra = cmp.nan_extra, r.nan_missing = cmp.nan_missing, r.inf_wrong = cmp.inf_wrong;
  r.passed = cmp.passed();
  return r;
}

/// --exact: C must be the correctly rounded product (ref.c) bit for bit, every element.
template <class T>
Measured judge_exact(std::string name, double t, std::span<const T> c, const Reference& ref, Shape s) {
  Measured r = judge<T>(std::move(name), t, c, ref, s, any_order(s.k), 1);
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
/// are summed in rank order (Comm::allreduce) inside every timed run: every rank ends with the same C.
template <class T>
Case run_case(const Comm& comm, Backend backend, int device, Shape s, const std::vector<Level>& levels,
              const Options& o, bool eigen, int eigen_repeats, std::vector<T>* c_out, bool with_bandwidth,
              const HostInputs<T>* given) {
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
    if (comm.size() > 1)
      tally::reduce::allreduce<reduce::Sum, V>(comm, std::span<const V>(v), std::span<V>(v), Memory::host);
  };
  auto engine = backend == Backend::cuda ? make_cuda_engine<T>(local, device) : make_cpu_engine<T>(local);
  engine->set_split_k(o.split_k);
  engine->set_exact(o.exact);
  engine->set_ozaki(ozaki::Settings{ozaki::parse_moduli(o.ozaki_moduli)});
  if (comm.size() > 1)
    engine->set_combine([&comm, c_memory](std::span<T> c, stream_t stream) {
      tally::reduce::allreduce<reduce::Sum, T>(comm, std::span<const T>(c.data(), c.size()), c, c_memory, stream);
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
    ref = o.exact ? exact_reference<T>(engine->a(), engine->b(), local)
                  : engine->reference();  // else this rank's slab, double-double
    // The slabs' references and |A||B| summed in rank order in double: each slab's reference is
    // within 2 u |A_r||B_r| and each of the size - 1 additions at most u |A||B| (u = 2^-53), so the
    // job's reference is within (size + 1) u |A||B| of the exact product: tolerance() adds that.
    // NaN and infinities add up by IEEE in any order, as the levels' do.
    host_sum(ref.c);
    host_sum(ref.abs);
  }
  {  // where every level must give NaN or an infinity: compare() of the reference rounded to T with itself counts them
    const std::vector<T> rounded(ref.c.begin(), ref.c.end());
    const Comparison self = compare<T>(rounded, ref);
    cs.ref_nan = self.ref_nan, cs.ref_inf = self.ref_inf;
  }
  const auto job_max = [&](double x) { return comm.size() > 1 ? comm.stats(x).max : x; };  // over the ranks
  const auto job_seconds = job_max;                                                        // the slowest rank's
  // The error bound of an order on the ranks' slabs: the largest slab's (collective).
  const auto job_bound = [&](ErrorBound b) {
    return ErrorBound{static_cast<std::int64_t>(job_max(static_cast<double>(b.depth))), job_max(b.extra_u)};
  };
  const ErrorBound unknown_order = job_bound(any_order(local.k));  // cuBLAS's, Eigen's
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
    cs.eigen = judge<T>("eigen", job_seconds(t), c, ref, s, unknown_order, comm.size());
    c_eigen = as_reference(c);
    cs.timings.set("eigen_s", wall.seconds());
  }
  // cuBLAS (both modes) and the levels are timed in rounds (--timing rounds, the default), each run
  // once a round, the order reversed every other round and forward in the last: all of them meet
  // the chip in the same clock and power state. Timed one after another (--timing sequential),
  // long runs favour whichever runs first: hundreds of runs of a memory-bound Gram product take a
  // GPU to its power limit, where its clock falls. Each one's C is judged after its last run.
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
    const ErrorBound bound = level ? job_bound(engine->error_bound(levels[i - 2])) : unknown_order;
    Measured m = o.exact && level ? judge_exact<T>(x.name, med, c, ref, s)
                                  : judge<T>(x.name, med, c, ref, s, bound, comm.size());
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
    if (i != 1) cs.tolerance = std::max(cs.tolerance, m.tolerance);  // TF32's is shown, not judged
    if (i == 0) cs.vendor = m;
    else if (i == 1) cs.vendor_tf32 = m;
    else cs.levels.push_back(m);
  }
  if (cs.eigen) cs.tolerance = std::max(cs.tolerance, cs.eigen->tolerance);
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

template Case run_case<float>(const Comm&, Backend, int, Shape, const std::vector<Level>&, const Options&, bool, int,
                              std::vector<float>*, bool, const HostInputs<float>*);
template Case run_case<double>(const Comm&, Backend, int, Shape, const std::vector<Level>&, const Options&, bool, int,
                               std::vector<double>*, bool, const HostInputs<double>*);

namespace {

template <class T>
int run_single(const Comm& comm, Backend backend, int device, const Options& o, Shape s,
               const std::vector<Level>& levels) {
  HostTimer total;
  std::vector<T> c;
  const bool cuda = backend == Backend::cuda;
  Case cs = run_case<T>(comm, backend, device, s, levels, o, !o.no_eigen, o.repeats, o.write_c ? &c : nullptr, cuda);
  const bool ok = cs.passed();  // every rank judges the same C against the same reference
  cs.timings.set("total_s", total.seconds());
  const RanksReport rr = ranks_report(comm, backend, cs);   // collective
  if (!comm.is_root()) return ok ? exit_ok : exit_failure;  // rank 0 writes and reports

  std::optional<DeviceInfo> dev;
  if (cuda) dev = query_device(device);
  auto f = h5::File::create(o.common.out);  // now: a job aborted mid-run leaves no file
  write_result<T>(f, cs, o, backend, o.write_c ? &c : nullptr, rr, collect_provenance(o.command, dev), dev,
                  o.a_path.empty() ? "generated" : o.a_path, o.b_path.empty() ? "generated" : o.b_path);
  f.commit();
  print_report(cs, o, backend, rr);
  return ok ? exit_ok : exit_failure;
}

}  // namespace

int run(const Options& o, Comm& comm) {
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
    if (fell_back && comm.is_root())
      std::fprintf(stderr, "matmul: no usable CUDA device, running on the CPU backend\n");
    if (backend == Backend::cuda) {
      device = comm.pick_device(o.common.device);  // each rank its GPU (--device with one rank)
      if (device < 0) throw InputError("--backend cuda: no usable CUDA device on this rank");
    }
    levels = resolve_levels(o.levels, backend, o.exact);
    s = resolve_shape(o);
    if (o.exact && o.bench) throw InputError("--exact: not with --bench (run single shapes with --exact)");
    if (o.exact && comm.size() > 1)
      throw InputError("--exact: runs on one rank (got " + std::to_string(comm.size()) +
                       "): ranks would add rounded partial Cs");
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
  comm.require_same(reduce::to_string(backend),
                    "the backend (--backend " + o.common.backend + " as resolved on each rank)");
  if (backend == Backend::cuda) comm.use_device(device);
  if (o.bench) return run_bench(comm, backend, device, o);
  return o.common.precision == "float" ? run_single<float>(comm, backend, device, o, s, levels)
                                       : run_single<double>(comm, backend, device, o, s, levels);
}

}  // namespace detail
}  // namespace tally::matmul
