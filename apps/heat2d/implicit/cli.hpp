#pragma once
// heat2d's implicit mode on the command line (README.md, "Implicit mode"):
//
//   heat2d --deck tea.in [--set 'LINE' ...] [--solver cg|cheby|ppcg|jacobi] [--eps X] [--eps-norm l2|max]
//          [--max-iters N] [--preconditioner none|jac_diag|jac_block] [--reproducible on|off]
//          [--backend auto|cuda|cpu] [--device N] [--out FILE] [--json] [--quiet] [--xdmf]
//
// --set adds a deck line (after the deck's own; without --deck the deck is the --set lines alone).
// heat2d's main hands argv here when it holds --deck or --set (wants()).

namespace tally::heat2d::implicit {

/// Whether argv asks for the implicit mode: it holds --deck or --set.
[[nodiscard]] bool wants(int argc, char** argv);

/// The implicit mode's whole run (options, solve, outputs) in the frame of heat2d's main: bad input
/// exits 2 with a message naming it, a solve that does not converge or diverges exits 1 with the
/// field written and marked, success 0.
int main(int argc, char** argv);

}  // namespace tally::heat2d::implicit
