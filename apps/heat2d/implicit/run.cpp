// The time-step loop (run.hpp).
#include "run.hpp"

#include "tally/common/error.hpp"
#include "tally/common/timing.hpp"
#include "tuning.hpp"

namespace tally::heat2d::implicit {

int cheby_steps_per_pass(const SolveOptions& o, bool cuda) {
  if (!cuda || o.solver != SolverKind::chebyshev || o.preconditioner == Preconditioner::jac_block) return 1;
  return o.cheby_steps_per_pass > 0 ? o.cheby_steps_per_pass : tuning::implicit_cheby_auto_steps;
}

std::int64_t RunReport::iterations() const {
  std::int64_t n = 0;
  for (const SolveStats& s : solves) n += s.iterations;
  return n;
}

namespace {

/// The interior of a grid field (ny x nx), the halo dropped.
std::vector<double> interior(const Grid& g, const std::vector<double>& f) {
  std::vector<double> out(static_cast<std::size_t>(g.nx * g.rows));
  for (std::int64_t j = 0; j < g.rows; ++j)
    for (std::int64_t i = 0; i < g.nx; ++i)
      out[static_cast<std::size_t>(j * g.nx + i)] = f[static_cast<std::size_t>(g.at(g.row0 + j, i))];
  return out;
}

}  // namespace

reduce::Backend engine_backend(reduce::Backend resolved, const std::string& requested, SolverKind solver, int ranks,
                               bool* fell_back) {
  if (ranks <= 1 && solver != SolverKind::pipecg) return resolved;
  if (fell_back) *fell_back = false;
  if (resolved != reduce::Backend::cuda) return resolved;
  if (requested == "cuda")
    throw InputError(ranks > 1 ? "--backend cuda: heat2d --deck on several ranks runs on the CPU backend"
                               : "--backend cuda: --solver pipecg runs on the CPU backend");
  return reduce::Backend::cpu;
}

RunReport run_deck(const Deck& d, const RunOptions& o) {
  RunReport rep;
  HostTimer t;
  rep.deck = d;
  const bool ranks = o.link && o.link->size() > 1;
  if (ranks && o.backend == reduce::Backend::cuda)
    throw InputError("heat2d --deck on several ranks: the CUDA engine runs on one rank (use --backend cpu)");
  if (ranks &&
      (!o.decomposition || o.decomposition->size() != o.link->size() || o.decomposition->rank() != o.link->rank()))
    throw Error("heat2d --deck: the ranks' decomposition is missing or of other ranks");
  rep.grid = o.decomposition ? make_grid(d, *o.decomposition) : make_grid(d);
  rep.solve = o.solve;
  rep.solve.cheby_steps_per_pass = cheby_steps_per_pass(o.solve, o.backend == reduce::Backend::cuda);  // as run
  rep.steps = step_count(d);
  rep.dt = d.initial_timestep;
  std::unique_ptr<Engine> e = o.backend == reduce::Backend::cuda ? make_cuda_engine(d, rep.grid, o.device)
                                                                 : make_cpu_engine(d, rep.grid, o.link);
  const State0 s0 = initial_state(d, rep.grid);
  e->set_state(s0.density, s0.energy);
  rep.setup_s = t.seconds();
  const auto summary = [&](std::int64_t step) {
    HostTimer ts;
    rep.summaries.emplace_back(step, e->summary(o.solve.reproducible));
    rep.summary_s += ts.seconds();
  };
  summary(0);
  for (std::int64_t step = 1; step <= rep.steps; ++step) {
    rep.solves.push_back(e->step(rep.dt, rep.solve));
    const SolveStats& s = rep.solves.back();
    rep.solve_s += s.solve_s;
    rep.steps_done = step;
    if (o.on_step) o.on_step(step, rep.steps, s);
    if (s.status != SolveStatus::converged) {
      rep.status = s.status;
      summary(step);
      break;
    }
    if (summary_due(d, step, rep.steps)) summary(step);
  }
  std::vector<double> u(static_cast<std::size_t>(rep.grid.size())), energy(u.size());
  e->fields(u, energy);
  rep.u = interior(rep.grid, u);
  rep.energy = interior(rep.grid, energy);
  rep.density = interior(rep.grid, s0.density);
  if (ranks)
    for (std::vector<double>* f : {&rep.u, &rep.energy, &rep.density}) *f = o.link->gather(*f);
  return rep;
}

}  // namespace tally::heat2d::implicit
