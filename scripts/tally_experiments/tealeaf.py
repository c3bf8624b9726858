"""tealeaf: heat2d's implicit mode (heat2d --deck) on TeaLeaf's benchmark decks with each of TeaLeaf's
solvers (CG, Chebyshev, PPCG): the outer iterations each time step takes and the time an iteration
costs, read from the result files (/steps/iterations, /steps/solve_s), plotted per solver; and each
run's final temperature against TeaLeaf's published one (data/tealeaf/expected.csv), which every
solver must reproduce to 1e-9 relative (the experiment fails otherwise).

CG runs to the decks' eps (1e-15 on its recurrence's |r|_2, TeaLeaf's test). Chebyshev and PPCG test
|r|_2^2 of the true residual u0 - A u, whose rounding floor grows with the grid (about 2e-24 at
250^2), so the decks' eps would leave them |r|_2 < 3e-8, too loose for 1e-9: each deck gives them an
eps above that floor and small enough for 1e-9 (a step's temperature error is at most |m|_2 |r|_2,
m the cells' masses, as the smallest eigenvalue of I + K is 1): 1e-24 on the small decks (as the
tests), 1e-20 on the large ones.

Quick: the 10^2 deck (tea_bm_1, 10 steps) and the 64^2 one (tea_64_1, 1 step), seconds on a CPU.
Full: the 250^2 and 1000^2 decks (tea_bm_2, tea_bm_4, 10 steps each).
"""
from __future__ import annotations

import csv

import numpy as np

from . import h5read, plotting, report
from .context import Context
from .runner import REPO_ROOT, ExperimentError, Run, make_run

DATA = REPO_ROOT / "data" / "tealeaf"
# deck -> eps of Chebyshev and PPCG (on |r|_2^2)
DECKS = {True: {"tea_bm_1.in": 1e-24, "tea_64_1.in": 1e-24}, False: {"tea_bm_2.in": 1e-20, "tea_bm_4.in": 1e-20}}
SOLVERS = ("cg", "cheby", "ppcg")
TOLERANCE = 1e-9  # relative, on the published temperature (TeaLeaf itself accepts 1e-5)
CG_EPS = 1e-15  # the decks' eps

def runs(ctx: Context) -> list[Run]:
    folder = ctx.runs_dir("heat2d")
    out = []
    for deck, sq_eps in DECKS[ctx.quick].items():
        for solver in SOLVERS:
            eps = CG_EPS if solver == "cg" else sq_eps
            opts = {"backend": ctx.backend, "deck": str(DATA / deck), "solver": solver, "eps": eps}
            run = make_run("heat2d", folder, f"tealeaf-{deck.removesuffix('.in')}-{solver}", opts,
                           match_keys=["backend", "solver", "eps"], ok_status=("converged",),
                           label=f"heat2d --deck {deck} --solver {solver}")
            run.match["deck_file"] = str(DATA / deck)  # the file records the deck's path here, its text in `deck`
            out.append(run)
    return out


def published() -> dict[tuple[int, int, int], float]:
    """(x_cells, y_cells, steps) -> the published temperature (the reference run's where both exist)."""
    table: dict[tuple[int, int, int], float] = {}
    with open(DATA / "expected.csv") as f:
        rows = [line for line in f if not line.startswith("#")]
    for r in csv.DictReader(rows):
        key = (int(r["x_cells"]), int(r["y_cells"]), int(r["steps"]))
        if r["source"] == "ref" or key not in table:
            table[key] = float(r["temperature"])
    return table


def read_run(path) -> tuple[dict, list[dict]]:
    """A run's totals and its steps (iterations, seconds and seconds an iteration of each)."""
    a = h5read.read_attrs(path)
    its = h5read.read_dataset(path, "steps/iterations")
    secs = h5read.read_dataset(path, "steps/solve_s")
    temps = h5read.read_dataset(path, "summary/temperature")
    if its is None or secs is None or temps is None:
        raise ExperimentError(f"{path}: not a heat2d --deck result (no /steps or /summary)")
    deck = str(a["deck_file"]).rsplit("/", 1)[-1]
    steps = [{"deck": deck, "solver": a["solver"], "step": k + 1, "iterations": int(n), "solve_s": float(s),
              "per_iteration_us": 1e6 * float(s) / max(int(n), 1)} for k, (n, s) in enumerate(zip(its, secs))]
    total = {"deck": deck, "solver": a["solver"], "x_cells": int(a["x_cells"]), "y_cells": int(a["y_cells"]),
             "steps": int(a["steps_done"]), "iterations": int(a["iterations"]), "solve_s": float(np.sum(secs)),
             "temperature": float(temps[-1]), "eps": float(a["eps"]), "backend": a.get("backend"),
             "reproducible": a.get("reproducible")}
    total["per_iteration_us"] = 1e6 * total["solve_s"] / max(total["iterations"], 1)
    return total, steps


def analyse(ctx: Context, runs_: list[Run]) -> dict:
    totals, steps = [], []
    for r in runs_:
        t, s = read_run(r.path)
        totals.append(t)
        steps.extend(s)
    expected = published()
    for t in totals:
        want = expected.get((t["x_cells"], t["y_cells"], t["steps"]))
        t["published"] = want
        t["rel_error"] = abs(t["temperature"] - want) / abs(want) if want is not None else None
    wrong = [t for t in totals if t["rel_error"] is not None and not t["rel_error"] <= TOLERANCE]
    if wrong:
        raise ExperimentError("tealeaf: temperatures more than 1e-9 from TeaLeaf's: " + ", ".join(
            f"{t['deck']} {t['solver']} {t['temperature']!r} (published {t['published']!r})" for t in wrong))
    scols = ["deck", "solver", "step", "iterations", "solve_s", "per_iteration_us"]
    report.write_csv(ctx.out / "tealeaf_steps.csv", scols, [[s[c] for c in scols] for s in steps])
    tcols = ["deck", "solver", "eps", "x_cells", "y_cells", "steps", "iterations", "solve_s", "per_iteration_us",
             "temperature", "published", "rel_error", "backend"]
    report.write_csv(ctx.out / "tealeaf_solvers.csv", tcols, [[t[c] for c in tcols] for t in totals])

    decks = list(dict.fromkeys(t["deck"] for t in totals))
    fig, axes = plotting.subplots(len(decks), 2, width=5.0, height=3.6)
    for row, deck in zip(axes, decks):
        for solver in SOLVERS:
            sel = [s for s in steps if s["deck"] == deck and s["solver"] == solver]
            if not sel:
                continue
            x = [s["step"] for s in sel]
            row[0].plot(x, [s["iterations"] for s in sel], "o-", label=solver)
            row[1].plot(x, [s["per_iteration_us"] for s in sel], "o-", label=solver)
        row[0].set_title(f"{deck}: outer iterations per step")
        row[1].set_title(f"{deck}: time per iteration")
        row[0].set_ylabel("iterations")
        row[1].set_ylabel("us / iteration")
        row[1].set_yscale("log")
        for ax in row:
            ax.set_xlabel("time step")
            ax.legend()
    plotting.save(fig, ctx.out / "tealeaf.png")

    found = {f"{t['deck'].removesuffix('.in')}_{t['solver']}_iterations": t["iterations"] for t in totals}
    found.update({f"{t['deck'].removesuffix('.in')}_{t['solver']}_us_per_iteration": t["per_iteration_us"]
                  for t in totals})
    found["temperatures_within_1e-9"] = True
    backend = totals[0]["backend"] if totals else "-"
    lines = [f"## tealeaf ({ctx.size_label}, backend {backend})", "",
             "heat2d's implicit mode on TeaLeaf's decks, each with CG, Chebyshev and PPCG (exact dot products; "
             "CG to the decks' eps, Chebyshev and PPCG to the eps each deck allows their true residual): the outer "
             "iterations of all steps, the solve's time per iteration, and the final temperature against "
             "TeaLeaf's published one (every run within 1e-9 relative).", "",
             report.md_table(["deck", "solver", "eps", "cells", "steps", "iterations", "us/iteration", "temperature",
                              "rel. error"],
                             [[t["deck"], t["solver"], t["eps"], f"{t['x_cells']}x{t['y_cells']}", t["steps"],
                               t["iterations"], t["per_iteration_us"], t["temperature"], t["rel_error"]]
                              for t in totals], digits=6),
             "", "Figure: `tealeaf.png`; tables: `tealeaf_solvers.csv`, `tealeaf_steps.csv` (each step)."]
    report.write_section(ctx.out, "tealeaf", "\n".join(lines))
    return found
