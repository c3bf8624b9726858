// matmul's output (matmul_output.hpp): the result file, the JSON line and the summary.
#include "matmul_output.hpp"

#include <cmath>
#include <cstdio>

#include "tally/common/json.hpp"
#include "tally/ranks/split.hpp"
#include "tally/reduce/ranks.hpp"

namespace tally::matmul::detail {
namespace {

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
  if (m.mismatches >= 0) g.attr("exact_mismatches", m.mismatches);
  if (m.nan_extra > 0) g.attr("nan_extra", m.nan_extra);
  if (m.nan_missing > 0) g.attr("nan_missing", m.nan_missing);
  if (m.inf_wrong > 0) g.attr("inf_wrong", m.inf_wrong);
  g.attr("passed", m.passed);
}

/// "; NaN at the 3 places the reference has NaN, Inf of the same sign at the 2 places it has Inf"
/// (empty when the reference is finite everywhere).
std::string specials_note(const Case& cs) {
  std::string s;
  if (cs.ref_nan > 0) s += "NaN at the " + std::to_string(cs.ref_nan) + " places the reference has NaN";
  if (cs.ref_inf > 0)
    s += (s.empty() ? "Inf of the same sign at the " : ", Inf of the same sign at the ") + std::to_string(cs.ref_inf) +
         (s.empty() ? " places the reference has Inf" : " places it has Inf");
  return s.empty() ? s : "; " + s;
}

/// What failed in `m` (named `who`), on stderr.
void print_failure(const std::string& who, const Measured& m, std::int64_t elements) {
  if (m.mismatches > 0)
    std::fprintf(stderr, "matmul: %s: %lld of %lld elements differ from the correctly rounded C (--exact)\n",
                 who.c_str(), static_cast<long long>(m.mismatches), static_cast<long long>(elements));
  if (m.nan_extra > 0)
    std::fprintf(stderr, "matmul: %s: NaN at %lld places where the reference has none\n", who.c_str(),
                 static_cast<long long>(m.nan_extra));
  if (m.nan_missing > 0)
    std::fprintf(stderr, "matmul: %s: no NaN at %lld places where the reference has NaN\n", who.c_str(),
                 static_cast<long long>(m.nan_missing));
  if (m.inf_wrong > 0)
    std::fprintf(stderr, "matmul: %s: %lld places where C and the reference disagree on an infinity\n", who.c_str(),
                 static_cast<long long>(m.inf_wrong));
  if (m.mismatches <= 0 && m.nan_extra + m.nan_missing + m.inf_wrong == 0)
    std::fprintf(stderr, "matmul: %s: rel. error %.3e > tolerance %.3e\n", who.c_str(), m.rel_error, m.tolerance);
}

}  // namespace

template <class T>
void write_result(h5::Location& f, const Case& cs, const Options& o, Backend backend, const std::vector<T>* c,
                  const RanksReport& rr, const Provenance& prov, const std::optional<DeviceInfo>& dev,
                  const std::string& a_source, const std::string& b_source) {
  const Shape s = cs.shape;
  std::string level_list;
  for (const Measured& m : cs.levels) level_list += (level_list.empty() ? "" : ",") + m.name;
  f.attr("app", "matmul");
  f.attr("m", s.m);
  f.attr("n", s.n);
  f.attr("k", s.k);
  f.attr("precision", cs.precision);
  f.attr("backend", reduce::to_string(backend));
  f.attr("levels", level_list);
  f.attr("status", cs.passed() ? "ok" : "failed");
  f.attr("seed", o.common.seed);
  f.attr("repeats", o.repeats);
  f.attr("warmup", o.warmup);
  f.attr("timing", o.timing);
  f.attr("a", a_source);
  f.attr("b", b_source);
  f.attr("tolerance", cs.tolerance);
  f.attr("split_k", o.split_k);
  f.attr("exact", o.exact ? 1 : 0);
  if (cs.bandwidth_gbs) f.attr("copy_bandwidth_gbs", *cs.bandwidth_gbs);
  if (cs.ref_nan > 0) f.attr("reference_nan", cs.ref_nan);
  if (cs.ref_inf > 0) f.attr("reference_inf", cs.ref_inf);
  write_case(f, cs);
  if (c) f.write<T>("C", *c, {static_cast<std::uint64_t>(s.m), static_cast<std::uint64_t>(s.n)});
  auto tg = f.group("timings");  // rank 0's; every rank's under /ranks/timings
  for (const auto& [name, v] : cs.timings.entries()) tg.attr(name, v);
  write_ranks(f, rr, s);
  write_provenance(f, prov, dev);
}

template void write_result<float>(h5::Location&, const Case&, const Options&, Backend, const std::vector<float>*,
                                  const RanksReport&, const Provenance&, const std::optional<DeviceInfo>&,
                                  const std::string&, const std::string&);
template void write_result<double>(h5::Location&, const Case&, const Options&, Backend, const std::vector<double>*,
                                   const RanksReport&, const Provenance&, const std::optional<DeviceInfo>&,
                                   const std::string&, const std::string&);

void write_case(h5::Location& where, const Case& cs) {
  for (const auto& m : cs.levels) write_measured(where.group("levels/" + m.name), m, true);
  if (cs.vendor) write_measured(where.group("cublas"), *cs.vendor, false);
  if (cs.vendor_tf32) write_measured(where.group("cublas_tf32"), *cs.vendor_tf32, true);
  if (cs.eigen) write_measured(where.group("eigen"), *cs.eigen, false);
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

void print_report(const Case& cs, const Options& o, Backend backend, const RanksReport& rr) {
  const Shape s = cs.shape;
  const bool ok = cs.passed(), cuda = backend == Backend::cuda;
  const double tol = cs.tolerance;
  const Measured* best = nullptr;
  double worst_err = 0, least_tol = tol;  // each is judged by its own order's tolerance: their range
  std::string level_list;
  for (const auto& m : cs.levels) {
    if (!best || m.time_s < best->time_s) best = &m;
    worst_err = std::max(worst_err, m.rel_error);
    level_list += (level_list.empty() ? "" : ",") + m.name;
  }
  for (const auto& m : cs.levels)
    if (m.tolerance > 0) least_tol = std::min(least_tol, m.tolerance);  // --exact: 0, bit for bit
  for (const auto* m : {cs.vendor ? &*cs.vendor : nullptr, cs.eigen ? &*cs.eigen : nullptr})
    if (m) least_tol = std::min(least_tol, m->tolerance);
  if (o.common.json) {
    JsonLine j;
    j.add("app", "matmul").add("backend", reduce::to_string(backend)).add("precision", cs.precision);
    j.add("m", s.m).add("n", s.n).add("k", s.k).add("levels", level_list).add("status", ok ? "ok" : "failed");
    j.add("ranks", rr.ranks).add("transport", rr.transport).add("shares_device", rr.shares_device);
    j.add("tolerance", tol);
    if (cs.ref_nan > 0) j.add("reference_nan", cs.ref_nan);
    if (cs.ref_inf > 0) j.add("reference_inf", cs.ref_inf);
    for (const auto& m : cs.levels) {
      j.add(m.name + "_time_s", m.time_s).add(m.name + "_gflops", m.gflops).add(m.name + "_rel_error", m.rel_error);
      j.add(m.name + "_tolerance", m.tolerance);
      if (cuda) j.add(m.name + "_pct_cublas", m.pct_vendor);
    }
    if (cs.vendor)
      j.add("cublas_time_s", cs.vendor->time_s)
          .add("cublas_gflops", cs.vendor->gflops)
          .add("cublas_rel_error", cs.vendor->rel_error);
    if (cs.vendor_tf32)
      j.add("cublas_tf32_time_s", cs.vendor_tf32->time_s)
          .add("cublas_tf32_gflops", cs.vendor_tf32->gflops)
          .add("cublas_tf32_rel_error", cs.vendor_tf32->rel_error);
    if (cs.eigen)
      j.add("eigen_time_s", cs.eigen->time_s)
          .add("eigen_gflops", cs.eigen->gflops)
          .add("eigen_rel_error", cs.eigen->rel_error);
    if (cs.bandwidth_gbs) j.add("copy_bandwidth_gbs", *cs.bandwidth_gbs);
    j.add("out", o.common.out);
    std::printf("%s\n", j.str().c_str());
  } else if ((!o.common.quiet || !ok) && best) {
    std::string extra = cs.vendor ? ", cuBLAS" : "";
    if (cs.eigen) extra += ", Eigen";
    std::string perf = fmt("%.3f ms, ", 1e3 * best->time_s) + fmt("%.1f GFLOP/s", best->gflops);
    if (!std::isnan(best->pct_vendor)) perf += fmt(" (%.0f%% of cuBLAS)", best->pct_vendor);
    if (s.tall_skinny()) perf += fmt(", %.0f GB/s read", best->gbps);
    const std::string verdict = !ok       ? "CHECK FAILED"
                                : o.exact ? "levels bitwise the correctly rounded C, others within tolerance"
                                          : "all within tolerance";
    const std::string tols =
        least_tol < tol ? fmt("tolerances %.1e", least_tol) + fmt(" to %.1e", tol) : fmt("tolerance %.1e", tol);
    std::printf(
        "matmul: C = A B, %s %s on %s%s, %zu level(s)%s: %s (max rel. err %.1e; %s of |A||B|, each by its order of "
        "summation%s); best %s %s -> %s\n",
        s.str().c_str(), cs.precision.c_str(), reduce::to_string(backend).c_str(), ranks_summary(rr).c_str(),
        cs.levels.size(), extra.c_str(), verdict.c_str(), worst_err, tols.c_str(), specials_note(cs).c_str(),
        best->name.c_str(), perf.c_str(), o.common.out.c_str());
  }
  if (ok) return;
  for (const auto& m : cs.levels)
    if (!m.passed) print_failure("level " + m.name, m, s.m * s.n);
  if (cs.vendor && !cs.vendor->passed) print_failure("cuBLAS", *cs.vendor, s.m * s.n);
  if (cs.eigen && !cs.eigen->passed) print_failure("Eigen", *cs.eigen, s.m * s.n);
}

std::string fmt(const char* f, double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, x);
  return buf;
}

}  // namespace tally::matmul::detail
