// heat2d's result file: shared by the executable and the Python module (heat2d_output.hpp).
#include "heat2d_output.hpp"

#include <algorithm>
#include <vector>

#include "tally/common/ranks_report.hpp"

namespace tally::heat2d {

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

#define TALLY_HEAT2D_OUTPUT(T)                                                                                       \
  template Throughput throughput<T>(const Problem&, const StopRule&, const Report<T>&);                              \
  template void write_result<T>(h5::Location&, const Problem&, const StopRule&, const RunOptions&, const RunRecord&, \
                                const Report<T>&, const ranks::Comm&, const ranks::RankStats&, const Provenance&,    \
                                const std::optional<DeviceInfo>&, const HostTimer&, const HostTimer&);
TALLY_HEAT2D_OUTPUT(float)
TALLY_HEAT2D_OUTPUT(double)

}  // namespace tally::heat2d
