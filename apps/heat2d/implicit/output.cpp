// The implicit mode's result file, JSON line and XDMF sidecar (output.hpp).
#include "output.hpp"

#include <cmath>
#include <cstdio>
#include <vector>

#include "tally/common/error.hpp"
#include "tally/common/json.hpp"
#include "xdmf.hpp"

namespace tally::heat2d::implicit {

namespace {

/// A JSON number: %.17g (the double's bits survive a round trip), null when not finite.
std::string num(double v) {
  if (!std::isfinite(v)) return "null";
  char b[32];
  std::snprintf(b, sizeof b, "%.17g", v);
  return b;
}
std::string str(const std::string& s) { return "\"" + json_escape(s) + "\""; }

double time_of(const RunReport& r, std::int64_t step) {
  double t = 0.0;
  for (std::int64_t k = 0; k < step; ++k) t += r.dt;  // as TeaLeaf advances its clock
  return t;
}

int status_code(SolveStatus s) { return s == SolveStatus::converged ? 0 : s == SolveStatus::max_iters ? 1 : 2; }

}  // namespace

void write_result(h5::Location& f, const RunReport& r, const OutputRecord& rec, const Provenance& prov,
                  const std::optional<DeviceInfo>& dev) {
  const Deck& d = r.deck;
  const SolveOptions& o = r.solve;
  f.attr("app", "heat2d");
  f.attr("mode", "implicit");
  f.attr("deck_file", rec.deck_file);
  f.attr("deck", deck_text(d));
  f.attr("solver", to_string(o.solver));
  f.attr("preconditioner", to_string(o.preconditioner));
  f.attr("eps", o.eps);
  f.attr("eps_norm", to_string(o.norm));
  f.attr("max_iters", static_cast<std::int64_t>(o.max_iters));
  f.attr("reproducible", o.reproducible);
  f.attr("cheby_steps_per_pass", static_cast<std::int64_t>(o.cheby_steps_per_pass));
  f.attr("backend", rec.backend);
  f.attr("ranks", static_cast<std::int64_t>(rec.ranks));
  f.attr("x_cells", static_cast<std::int64_t>(d.x_cells));
  f.attr("y_cells", static_cast<std::int64_t>(d.y_cells));
  f.attr("dx", r.grid.dx);
  f.attr("dy", r.grid.dy);
  f.attr("dt", r.dt);
  f.attr("steps", static_cast<std::int64_t>(r.steps));
  f.attr("steps_done", static_cast<std::int64_t>(r.steps_done));
  f.attr("status", to_string(r.status));
  f.attr("converged", r.status == SolveStatus::converged);
  f.attr("iterations", static_cast<std::int64_t>(r.iterations()));

  const h5::dims_t dims{static_cast<std::uint64_t>(d.y_cells), static_cast<std::uint64_t>(d.x_cells)};
  f.write<double>("field", r.u, dims);
  f.write<double>("energy", r.energy, dims);
  f.write<double>("density", r.density, dims);
  for (const char* name : {"field", "energy", "density"}) f.open_dataset(name).attr("status", to_string(r.status));

  auto sg = f.group("summary");
  std::vector<std::int64_t> step;
  std::vector<double> time, volume, mass, density, energy, temperature;
  for (const auto& [k, s] : r.summaries) {
    step.push_back(k), time.push_back(time_of(r, k));
    volume.push_back(s.volume), mass.push_back(s.mass), density.push_back(s.density);
    energy.push_back(s.energy), temperature.push_back(s.temperature);
  }
  sg.write<std::int64_t>("step", step);
  sg.write<double>("time", time);
  sg.write<double>("volume", volume);
  sg.write<double>("mass", mass);
  sg.write<double>("density", density);
  sg.write<double>("energy", energy);
  sg.write<double>("temperature", temperature);

  auto st = f.group("steps");
  std::vector<std::int64_t> its, cg, inner, est, offsets{0}, hist_k;
  std::vector<std::int32_t> status;
  std::vector<double> error, residual, eigmin, eigmax, solve_s, hist_v;
  for (const SolveStats& s : r.solves) {
    its.push_back(s.iterations), cg.push_back(s.cg_iterations), inner.push_back(s.inner_iterations);
    est.push_back(s.cheby_estimate), status.push_back(status_code(s.status));
    error.push_back(s.error), residual.push_back(s.residual), solve_s.push_back(s.solve_s);
    eigmin.push_back(s.eigenvalues.min), eigmax.push_back(s.eigenvalues.max);
    hist_k.insert(hist_k.end(), s.history_iteration.begin(), s.history_iteration.end());
    hist_v.insert(hist_v.end(), s.history_error.begin(), s.history_error.end());
    offsets.push_back(static_cast<std::int64_t>(hist_k.size()));
  }
  st.write<std::int64_t>("iterations", its);
  st.write<std::int64_t>("cg_iterations", cg);
  st.write<std::int64_t>("inner_iterations", inner);
  st.write<std::int64_t>("cheby_estimate", est);
  st.write<double>("error", error);
  st.write<double>("residual", residual);
  st.write<double>("eigmin", eigmin);
  st.write<double>("eigmax", eigmax);
  st.write<std::int32_t>("status", status);
  st.write<double>("solve_s", solve_s);
  auto rg = f.group("residual");
  rg.write<std::int64_t>("offsets", offsets);
  rg.write<std::int64_t>("iteration", hist_k);
  rg.write<double>("value", hist_v);

  auto tg = f.group("timings");
  tg.attr("setup", r.setup_s);
  tg.attr("solve", r.solve_s);
  tg.attr("summary", r.summary_s);
  tg.attr("per_iteration", r.solve_s / static_cast<double>(std::max<std::int64_t>(r.iterations(), 1)));
  tg.attr("total", rec.total_s);  // up to the write
  write_provenance(f, prov, dev);
}

std::string json_summary(const RunReport& r, const OutputRecord& rec, const std::string& out) {
  const Summary& s = r.final_summary();
  std::string j = "{\"app\":\"heat2d\",\"mode\":\"implicit\",\"deck\":" + str(rec.deck_file);
  j +=
      ",\"solver\":" + str(to_string(r.solve.solver)) + ",\"preconditioner\":" + str(to_string(r.solve.preconditioner));
  j += ",\"eps\":" + num(r.solve.eps) + ",\"eps_norm\":" + str(to_string(r.solve.norm));
  j += std::string(",\"reproducible\":") + (r.solve.reproducible ? "true" : "false") +
       ",\"backend\":" + str(rec.backend);
  j += ",\"cheby_steps_per_pass\":" + std::to_string(r.solve.cheby_steps_per_pass);
  j += ",\"ranks\":" + std::to_string(rec.ranks);
  j += ",\"x_cells\":" + std::to_string(r.deck.x_cells) + ",\"y_cells\":" + std::to_string(r.deck.y_cells);
  j += ",\"steps\":" + std::to_string(r.steps_done) + ",\"steps_asked\":" + std::to_string(r.steps);
  j += ",\"status\":" + str(to_string(r.status)) + std::string(",\"converged\":") +
       (r.status == SolveStatus::converged ? "true" : "false");
  j += ",\"summary\":{\"volume\":" + num(s.volume) + ",\"mass\":" + num(s.mass) + ",\"density\":" + num(s.density) +
       ",\"energy\":" + num(s.energy) + ",\"temperature\":" + num(s.temperature) + "}";
  j += ",\"iterations\":{\"total\":" + std::to_string(r.iterations()) + ",\"per_step\":[";
  for (std::size_t k = 0; k < r.solves.size(); ++k) j += (k ? "," : "") + std::to_string(r.solves[k].iterations);
  j += "]}";
  const double per_it = r.solve_s / static_cast<double>(std::max<std::int64_t>(r.iterations(), 1));
  j += ",\"timings\":{\"setup_s\":" + num(r.setup_s) + ",\"solve_s\":" + num(r.solve_s) +
       ",\"summary_s\":" + num(r.summary_s) + ",\"per_iteration_s\":" + num(per_it) +
       ",\"write_s\":" + num(rec.write_s) + ",\"total_s\":" + num(rec.total_s) + "}";
  j += ",\"out\":" + str(out) + "}";
  return j;
}

void print_report(const RunReport& r, const OutputRecord& rec, const cli::CommonOptions& common) {
  const Summary& s = r.final_summary();
  const SolveOptions& o = r.solve;
  if (common.json) {
    std::printf("%s\n", json_summary(r, rec, common.out).c_str());
  } else if (!common.quiet) {
    std::printf(
        "heat2d: %s %lldx%lld, %lld steps, %s%s on %s (%s dots): %lld iterations, %s; temperature %.15e "
        "(volume %.6g, mass %.6g, energy %.6g); solve %.3g s\n",
        rec.deck_file.empty() ? "--set deck" : rec.deck_file.c_str(), static_cast<long long>(r.deck.x_cells),
        static_cast<long long>(r.deck.y_cells), static_cast<long long>(r.steps_done), to_string(o.solver).c_str(),
        o.preconditioner == Preconditioner::none ? "" : ("+" + to_string(o.preconditioner)).c_str(),
        rec.backend.c_str(), o.reproducible ? "exact" : "ordinary", static_cast<long long>(r.iterations()),
        to_string(r.status).c_str(), s.temperature, s.volume, s.mass, s.energy, r.solve_s);
  }
  if (r.status != SolveStatus::converged) {
    const SolveStats& last = r.solves.back();
    std::fprintf(stderr,
                 "heat2d: %s at step %lld after %lld iterations (error %g, eps %g); the field it reached was written "
                 "to %s (status %s)\n",
                 r.status == SolveStatus::max_iters ? "NOT converged: max_iters reached" : "DIVERGED",
                 static_cast<long long>(r.steps_done), static_cast<long long>(last.iterations), last.error, o.eps,
                 common.out.c_str(), to_string(r.status).c_str());
  }
}

void write_xdmf(const std::string& h5_path, const RunReport& r) {
  const XdmfGrid g{"heat2d-implicit",
                   r.deck.y_cells + 1,
                   r.deck.x_cells + 1,
                   r.deck.ymin,
                   r.deck.xmin,
                   r.grid.dy,
                   r.grid.dx,
                   true,
                   {{"field", "field"}, {"energy", "energy"}, {"density", "density"}},
                   8};
  heat2d::write_xdmf(h5_path, g);
}

}  // namespace tally::heat2d::implicit
