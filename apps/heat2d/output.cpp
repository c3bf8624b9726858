// heat2d's output in the explicit mode (heat2d_output.hpp): the result file, shared by the executable
// and the Python module; the XDMF sidecar; the JSON line and the summary line.
#include "heat2d_output.hpp"

#include <algorithm>
#include <cstdio>
#include <vector>

#include "tally/common/json.hpp"
#include "tally/common/ranks_report.hpp"
#include "xdmf.hpp"

namespace tally::heat2d {

std::optional<DeviceInfo> device_of(const RunOptions& ro) {
  if (ro.backend == reduce::Backend::cuda) return query_device(ro.device);
  return std::nullopt;
}

std::string transport_of(const ranks::Comm& comm, const RunOptions& ro) {
  return comm.transport(ro.backend == reduce::Backend::cuda ? ranks::Memory::device : ranks::Memory::host);
}
std::string writer_of(const ranks::Comm& comm, const RunOptions& ro) {
  return !ro.gather ? writer_parallel_hdf5 : comm.size() > 1 ? writer_gathered : writer_one_rank;
}
bool shared_gpu(const ranks::Comm& comm, const RunOptions& ro) {
  return comm.size() > 1 && ro.backend == reduce::Backend::cuda && comm.shares_device();
}

template <class T>
Throughput throughput(const Problem& p, const StopRule& rule, const Report<T>& rep) {
  const SolveResult& res = rep.result;
  const double sweeps = static_cast<double>(std::max<std::int64_t>(res.iterations - rule.first, 1));
  return {static_cast<double>(p.nx * p.ny) * sweeps / res.solve_s,
          2.0 * rep.field_bytes(p) * sweeps / res.solve_s / 1e9};
}

namespace {

void write_parameters(h5::Location& f, const Problem& p, const StopRule& rule, const RunOptions& ro,
                      const RunRecord& rec, const Decomposition& dec, const char* precision) {
  f.attr("app", "heat2d");
  f.attr("nx", static_cast<std::int64_t>(p.nx));
  f.attr("ny", static_cast<std::int64_t>(p.ny));
  f.attr("h", p.h());
  f.attr("mode", to_string(p.mode));
  f.attr("precision", precision);
  f.attr("backend", reduce::to_string(ro.backend));
  f.attr("tol", rule.tol);
  f.attr("max_iter", static_cast<std::int64_t>(rec.max_iter));
  f.attr("check_every", static_cast<std::int64_t>(rule.check_every));
  f.attr("alpha", p.alpha);
  f.attr("dt", p.dt);
  f.attr("r", p.r());
  f.attr("t_end", p.t_end);
  f.attr("bc_top", p.top.text);
  f.attr("bc_bottom", p.bottom.text);
  f.attr("bc_left", p.left.text);
  f.attr("bc_right", p.right.text);
  f.attr("init", p.init.text);
  f.attr("validate", ro.validate);
  f.attr("cuda_kernel", ro.cuda_kernel);
  f.attr("sweeps_per_pass", static_cast<std::int64_t>(resolve_sweeps_per_pass(ro.sweeps_per_pass, rule.check_every,
                                                                              ro.backend, deepest_pass(dec))));
}

/// The /ranks group (common's RanksReport): the rank count, what carried the halos, the row blocks
/// ("rows 1-13 | 14-26 | ...", each rank's interior rows, inclusive; also as datasets row_begin and
/// row_end, [begin, end)) and each timing's seconds on every rank.
template <class T>
void write_ranks(h5::Location& f, const Report<T>& rep, const ranks::Comm& comm, const RunOptions& ro,
                 const ranks::RankStats& total) {
  RanksReport r;
  r.ranks = comm.size();
  r.transport = transport_of(comm, ro);
  r.shares_device = shared_gpu(comm, ro);
  r.writer = writer_of(comm, ro);
  std::vector<std::int64_t> begin, end;
  r.decomposition = "rows";
  for (int k = 0; k < rep.decomposition.size(); ++k) {
    const Decomposition::Rows rows = rep.decomposition.rows_of(k);  // the interior rows rank k updates
    begin.push_back(rows.begin), end.push_back(rows.end);
    r.decomposition += (k ? " | " : " ") + std::to_string(begin.back()) + "-" + std::to_string(end.back() - 1);
  }
  for (const auto& [name, st] : rep.rank_timings) r.phases.push_back({name, st.min, st.median, st.max, st.per_rank});
  r.phases.push_back({"total", total.min, total.median, total.max, total.per_rank});
  write(f, r);
  auto g = f.group("ranks");
  g.write<std::int64_t>("row_begin", begin);
  g.write<std::int64_t>("row_end", end);
}

}  // namespace

template <class T>
void write_result(h5::Location& file, const Problem& p, const StopRule& rule, const RunOptions& ro,
                  const RunRecord& rec, const Report<T>& rep, const ranks::Comm& comm, const ranks::RankStats& total,
                  const Provenance& prov, const std::optional<DeviceInfo>& dev, const HostTimer& write,
                  const HostTimer& run) {
  const SolveResult& res = rep.result;
  write_parameters(file, p, rule, ro, rec, rep.decomposition, sizeof(T) == 4 ? "float" : "double");
  file.attr("iterations", static_cast<std::int64_t>(res.iterations));
  file.attr("keep_partial", ro.keep_partial);
  if (!rec.restart_from.empty()) {
    file.attr("restart_from", rec.restart_from);
    file.attr("restart_iterations", static_cast<std::int64_t>(rule.first));
  }
  file.attr("sim_time", rep.sim_time);
  file.attr("status", to_string(res.status));
  file.attr("converged", res.status == Status::converged);
  file.attr("final_residual", res.final_residual);
  if (ro.gather)
    file.write<T>("field", rep.field, {static_cast<std::uint64_t>(p.ny), static_cast<std::uint64_t>(p.nx)});
  file.write<std::int64_t>("residual/iteration", res.check_iteration);
  file.write<double>("residual/value", res.check_residual);
  auto errors = file.group("errors");
  if (rep.analytic) {
    errors.attr("analytic_max", rep.analytic->max);
    errors.attr("analytic_l2", rep.analytic->l2);
  }
  if (rep.eigen_max_abs_diff) {
    errors.attr("eigen_max_abs_diff", *rep.eigen_max_abs_diff);
    errors.attr("eigen_tolerance", rep.eigen_tolerance);
    errors.attr("eigen_passed", rep.validation_passed);
  }
  const Throughput th = throughput(p, rule, rep);
  auto thr = file.group("throughput");
  thr.attr("points_per_s", th.points_per_s);
  thr.attr("gb_per_s", th.gb_per_s);
  write_provenance(file, prov, dev);
  write_ranks(file, rep, comm, ro, total);
  auto tg = file.group("timings");
  for (const auto& [name, s] : rep.timings.entries()) tg.attr(name, s);
  tg.attr("write", write.seconds());
  tg.attr("total", run.seconds());
}

void write_xdmf(const std::string& h5_path, const Problem& p, int precision_bytes) {
  write_xdmf(h5_path, XdmfGrid{"heat2d", p.ny, p.nx, 0.0, 0.0, p.h(), p.h(), false, {{"u", "field"}}, precision_bytes});
}

namespace {

std::string fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

std::string shared_gpu_note(const ranks::Comm& comm) {
  const int gpus = tally::cuda_device_count();
  return "(" + std::to_string(comm.local_size()) + " ranks share " +
         (gpus > 1 ? std::to_string(gpus) + " GPUs)" : "a GPU)");
}

}  // namespace

template <class T>
void print_report(const Options& o, const Problem& p, const StopRule& rule, const RunOptions& ro, const Report<T>& rep,
                  const ranks::Comm& comm) {
  const SolveResult& res = rep.result;
  const auto [points_per_s, gb_per_s] = throughput(p, rule, rep);
  if (o.common.json) {
    JsonLine j;
    j.add("app", "heat2d").add("mode", to_string(p.mode)).add("nx", p.nx).add("ny", p.ny);
    j.add("precision", o.common.precision).add("backend", reduce::to_string(ro.backend));
    j.add("ranks", static_cast<std::int64_t>(comm.size())).add("transport", transport_of(comm, ro));
    j.add("writer", writer_of(comm, ro));
    if (shared_gpu(comm, ro)) j.add("shares_device", true);
    j.add("sweeps_per_pass", static_cast<std::int64_t>(resolve_sweeps_per_pass(
                                 ro.sweeps_per_pass, rule.check_every, ro.backend, deepest_pass(rep.decomposition))));
    j.add("status", to_string(res.status)).add("converged", res.status == Status::converged);
    j.add("iterations", res.iterations);
    j.add("final_residual", res.final_residual).add("tol", rule.tol).add("sim_time", rep.sim_time);
    if (rep.analytic) j.add("analytic_max", rep.analytic->max).add("analytic_l2", rep.analytic->l2);
    if (rep.eigen_max_abs_diff)
      j.add("eigen_max_abs_diff", *rep.eigen_max_abs_diff).add("eigen_tolerance", rep.eigen_tolerance);
    j.add("solve_s", res.solve_s).add("per_sweep_s", rep.timings.get("per_sweep"));
    j.add("points_per_s", points_per_s).add("gb_per_s", gb_per_s).add("out", o.common.out);
    std::printf("%s\n", j.str().c_str());
    return;
  }
  if (o.common.quiet) return;
  std::string what = to_string(p.mode) + " " + std::to_string(p.nx) + "x" + std::to_string(p.ny) + " " +
                     o.common.precision + " on " + reduce::to_string(ro.backend);
  if (comm.size() > 1) {
    what += " x " + std::to_string(comm.size()) + " ranks (" + transport_of(comm, ro) + ")";
    if (shared_gpu(comm, ro)) what += " " + shared_gpu_note(comm);
    what += ", field " + std::string(ro.gather ? "gathered to rank 0" : "written with parallel HDF5");
  }
  std::string check;
  switch (res.status) {
    case Status::converged:
      check = "converged, residual " + fmt("%.2e", res.final_residual) + " <= tol " + fmt("%.0e", rule.tol);
      break;
    case Status::t_end:
      check = "reached t = " + fmt("%.4g", rep.sim_time) + ", residual " + fmt("%.2e", res.final_residual);
      break;
    case Status::max_iter:
      check = "NOT converged: --max-iter reached, residual " + fmt("%.2e", res.final_residual);
      break;
    case Status::diverged: check = "DIVERGED, residual " + fmt("%g", res.final_residual); break;
    case Status::interrupted: check = "INTERRUPTED, residual " + fmt("%.2e", res.final_residual); break;
  }
  if (rep.analytic)
    check += "; analytic error max " + fmt("%.2e", rep.analytic->max) + ", L2 " + fmt("%.2e", rep.analytic->l2);
  if (rep.eigen_max_abs_diff)
    check += std::string("; Eigen ") + (rep.validation_passed ? "agrees" : "DISAGREES") + ", max diff " +
             fmt("%.1e", *rep.eigen_max_abs_diff) + " (tol " + fmt("%.1e", rep.eigen_tolerance) + ")";
  if (!o.restart.empty()) check += "; restarted at sweep " + std::to_string(rule.first);
  std::printf("heat2d: %s: %lld sweeps, %s; %.3g s, %.3g points/s, %.3g GB/s\n", what.c_str(),
              static_cast<long long>(res.iterations), check.c_str(), res.solve_s, points_per_s, gb_per_s);
}

#define TALLY_HEAT2D_OUTPUT(T)                                                                                        \
  template Throughput throughput<T>(const Problem&, const StopRule&, const Report<T>&);                               \
  template void write_result<T>(h5::Location&, const Problem&, const StopRule&, const RunOptions&, const RunRecord&,  \
                                const Report<T>&, const ranks::Comm&, const ranks::RankStats&, const Provenance&,     \
                                const std::optional<DeviceInfo>&, const HostTimer&, const HostTimer&);                \
  template void print_report<T>(const Options&, const Problem&, const StopRule&, const RunOptions&, const Report<T>&, \
                                const ranks::Comm&);
TALLY_HEAT2D_OUTPUT(float)
TALLY_HEAT2D_OUTPUT(double)

}  // namespace tally::heat2d
