#pragma once
// A deck's run: the initial state, the time steps, the field summaries (TeaLeaf's diffuse), on the
// CPU or CUDA engine. The executable (cli.cpp) and the tests call run_deck.

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "deck.hpp"
#include "engine.hpp"
#include "tally/reduce/backend.hpp"
#include "tea_problem.hpp"

namespace tally::heat2d::implicit {

struct RunOptions {
  reduce::Backend backend = reduce::Backend::cpu;
  int device = 0;
  SolveOptions solve;
  /// Called after each step (step, steps, its stats): the executable's progress line.
  std::function<void(std::int64_t, std::int64_t, const SolveStats&)> on_step;
  /// The ranks the grid is split over by rows (nullptr: this process alone) and this rank's part of
  /// it (decompose() over link's ranks; nullptr: the whole grid, one rank). run_deck is then
  /// collective; rank 0's report holds the whole fields, the other ranks' none.
  const RankLink* link = nullptr;
  const Decomposition* decomposition = nullptr;
};

struct RunReport {
  Deck deck;
  Grid grid;  ///< this rank's rows
  SolveOptions solve;
  std::int64_t steps = 0;       ///< the steps the deck asks for (step_count)
  std::int64_t steps_done = 0;  ///< taken: fewer when a solve failed
  double dt = 0.0;
  /// converged: every step's solve did; otherwise the failed step's status (the run stops there).
  SolveStatus status = SolveStatus::converged;
  std::vector<SolveStats> solves;                           ///< one per step taken
  std::vector<std::pair<std::int64_t, Summary>> summaries;  ///< (step, summary): step 0, then summary_due's
  std::vector<double> u, energy, density;                   ///< the final fields, ny x nx (halo removed; rank 0)
  double setup_s = 0.0, solve_s = 0.0, summary_s = 0.0;

  [[nodiscard]] std::int64_t iterations() const;  ///< all steps' outer iterations
  [[nodiscard]] const Summary& final_summary() const { return summaries.back().second; }
};

/// The backend a run of `solver` on `ranks` ranks uses, given the one resolved from the request
/// (`requested`: the --backend text): the CUDA engine runs on one rank and has no pipelined CG, so
/// those runs take the CPU engine, or are refused (InputError) where --backend cuda was asked for.
/// `fell_back` (resolve_backend's: no usable GPU) is cleared for them: they would not use one anyway.
reduce::Backend engine_backend(reduce::Backend resolved, const std::string& requested, SolverKind solver, int ranks,
                               bool* fell_back = nullptr);

RunReport run_deck(const Deck& d, const RunOptions& o);

}  // namespace tally::heat2d::implicit
