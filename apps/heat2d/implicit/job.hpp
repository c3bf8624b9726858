#pragma once
// heat2d's implicit mode as a job (job.cpp): the deck the options make, its run on the ranks of the
// job, the result file and the lines it prints. heat2d's driver hands it the runs with --deck or
// --set (README.md in this folder); the options are parsed with the explicit mode's in main.cpp:
//
//   heat2d --deck tea.in [--set 'LINE' ...] [--solver cg|cheby|ppcg|jacobi] [--eps X] [--eps-norm l2|max]
//          [--max-iters N] [--preconditioner none|jac_diag|jac_block] [--reproducible on|off]
//          [--cheby-steps-per-pass auto|1|2|5]
//          [--backend auto|cuda|cpu] [--device N] [--out FILE] [--json] [--quiet] [--xdmf]

#include <cstdint>
#include <string>
#include <vector>

#include "deck.hpp"
#include "run.hpp"
#include "tally/common/cli.hpp"

namespace tally::ranks {
class Comm;
}

namespace tally::heat2d::implicit {

/// The implicit mode's own options (the common ones are cli::CommonOptions).
struct Options {
  std::string deck;                  ///< --deck FILE; empty: the deck is the --set lines alone
  std::vector<std::string> set;      ///< --set: deck lines read after the deck's own
  std::string solver;                ///< --solver cg|cheby|ppcg|jacobi (empty: the deck's)
  std::string preconditioner;        ///< --preconditioner none|jac_diag|jac_block (empty: the deck's)
  std::string eps_norm = "l2";       ///< --eps-norm l2|max
  std::string reproducible = "on";   ///< --reproducible on|off
  std::string cheby_steps = "auto";  ///< --cheby-steps-per-pass auto|1|2|5 (Chebyshev on CUDA; same bits)
  double eps = 0.0;                  ///< --eps (0: the deck's)
  std::int64_t max_iters = 0;        ///< --max-iters (0: the deck's)
  bool xdmf = false;                 ///< --xdmf (also when the deck sets visit_frequency)
};

/// The deck the options make: --deck's file (or none), its lines, the --set lines, then the overrides
/// (--solver, --eps, --max-iters, --preconditioner). Throws tally::InputError naming the bad line.
Deck make_deck(const Options& o);
/// The solve options of a deck with --eps-norm, --reproducible and --cheby-steps-per-pass applied.
SolveOptions make_solve_options(const Deck& d, const Options& o);

/// The job: every rank checks the options and sets up (a failure anywhere stops every rank, rank 0
/// naming it), runs the deck, and rank 0 writes the result file and prints. Returns the exit code:
/// 0, or 1 when a solve did not converge or diverged (the field written and marked); bad input
/// throws tally::InputError. `command`: the command line, for the provenance.
int run(const Options& o, const cli::CommonOptions& common, const ranks::Comm& comm, const std::string& command);

}  // namespace tally::heat2d::implicit
