"""scaling: heat2d and mcpi across ranks (MPI; NCCL between GPUs), strong and weak.

Strong scaling keeps the problem and adds ranks: heat2d on one n x n grid split into row blocks,
mcpi on one sample count split into stretches; the parallel efficiency is t(1) / (R t(R)).
Weak scaling gives every rank the same work: heat2d on an n x (R n) grid (one n x n block a rank);
its efficiency is t(1) / t(R). heat2d checks the residual every sweep (the global max crosses the
ranks each sweep, on the device), the hard case for scaling; the time per sweep is read from each
run's /timings, so every point is a separate run that records its rank count in /ranks.

Full size is the GPU case of the rank-level issue (16384^2 float and double, 10^12 samples); quick
runs 1, 2 and 3 ranks of small problems on the CPU in seconds (oversubscribed where cores are few).
"""
from __future__ import annotations

import numpy as np

from . import h5read, plotting, report
from .context import Context
from .runner import Run, make_run

HEAT_SWEEPS = {True: 40, False: 300}        # sweeps per run (quick, full): all timed, none converge
HEAT_N = {True: 193, False: 16384}          # strong: n x n; weak: n x (R n)
MCPI_N = {True: 20_000_000, False: 10 ** 12}
PRECISIONS = ("float", "double")


def rank_counts(ctx: Context) -> list[int]:
    if ctx.ranks:
        return sorted(set(ctx.ranks))
    return [1, 2, 3] if ctx.quick else [1, 2]


def _heat_options(ctx: Context, precision: str, nx: int, ny: int) -> dict:
    sweeps = HEAT_SWEEPS[ctx.quick]
    return {"backend": ctx.backend, "precision": precision, "nx": nx, "ny": ny, "mode": "steady",
            "init": "sin", "tol": 1e-300, "max-iter": sweeps, "check-every": 1}


def runs(ctx: Context) -> list[Run]:
    folder_h, folder_m = ctx.runs_dir("heat2d"), ctx.runs_dir("mcpi")
    n = HEAT_N[ctx.quick]
    out = []
    for ranks in rank_counts(ctx):
        for prec in PRECISIONS:
            for kind, ny in (("strong", n), ("weak", n * ranks)):
                if kind == "weak" and ranks == 1:
                    continue  # the same run as strong with one rank
                opts = _heat_options(ctx, prec, n, ny)
                r = make_run("heat2d", folder_h, f"scaling-{kind}-{prec}-n{n}", opts, ok_status=("max-iter",),
                             label=f"heat2d {kind} {prec} {n}x{ny} on {ranks} rank(s)", ranks=ranks)
                out.append(r)
        opts = {"backend": ctx.backend, "n": MCPI_N[ctx.quick], "seed": ctx.seed}
        out.append(make_run("mcpi", folder_m, "scaling-strong", opts, ok_status=("ok",),
                            label=f"mcpi n={MCPI_N[ctx.quick]:.3g} on {ranks} rank(s)", ranks=ranks))
    return out


def _heat_row(r: Run) -> dict:
    a = h5read.read_attrs(r.path)
    t = h5read.read_attrs(r.path, "timings")
    weak = int(a["ny"]) != int(a["nx"])
    return {"app": "heat2d", "kind": "weak" if weak else "strong", "precision": a.get("precision"),
            "ranks": r.ranks, "problem": f"{a['nx']}x{a['ny']}", "per_rank": f"{a['nx']}x{int(a['ny']) // r.ranks}",
            "time": float(t["per_sweep"]), "unit": "s/sweep", "backend": a.get("backend")}


def _mcpi_row(r: Run) -> dict:
    a = h5read.read_attrs(r.path)
    thr = h5read.read_attrs(r.path, "throughput")
    n = int(a["n"])
    return {"app": "mcpi", "kind": "strong", "precision": "-", "ranks": r.ranks, "problem": f"n={n:.3g}",
            "per_rank": f"{n / r.ranks:.3g}", "time": n / float(thr["samples_per_s"]), "unit": "s",
            "backend": a.get("backend")}


def read_rows(runs_: list[Run]) -> list[dict]:
    rows = [_heat_row(r) if r.app == "heat2d" else _mcpi_row(r) for r in runs_]
    # Strong scaling of heat2d with one rank doubles as the weak series' first point.
    rows += [{**r, "kind": "weak"} for r in rows if r["app"] == "heat2d" and r["ranks"] == 1]
    for row in rows:
        base = next(b for b in rows if b["app"] == row["app"] and b["kind"] == row["kind"]
                    and b["precision"] == row["precision"] and b["ranks"] == 1)
        speedup = base["time"] / row["time"]
        row["speedup"] = speedup if row["kind"] == "strong" else row["ranks"] * speedup
        row["efficiency"] = speedup / row["ranks"] if row["kind"] == "strong" else speedup
    return sorted(rows, key=lambda r: (r["app"], r["kind"], r["precision"], r["ranks"]))


def analyse(ctx: Context, runs_: list[Run]) -> dict:
    rows = read_rows(runs_)
    cols = ["app", "kind", "precision", "ranks", "problem", "per_rank", "time", "unit", "speedup", "efficiency"]
    report.write_csv(ctx.out / "scaling.csv", cols, [[r[c] for c in cols] for r in rows])

    series = sorted({(r["app"], r["kind"], r["precision"]) for r in rows})
    fig, axes = plotting.subplots(1, 2, width=5.2, height=4.2)
    ranks = sorted({r["ranks"] for r in rows})
    for ax, what in zip(axes[0], ("speedup", "efficiency")):
        for app, kind, prec in series:
            sel = [r for r in rows if (r["app"], r["kind"], r["precision"]) == (app, kind, prec)]
            x = np.array([r["ranks"] for r in sel])
            y = np.array([r[what] for r in sel])
            ax.plot(x, y, "o-", label=f"{app} {kind}" + ("" if prec == "-" else f" {prec}"))
        if what == "speedup":
            ax.plot(ranks, ranks, "k--", lw=1, label="ideal")
            ax.set_ylabel("speedup over one rank (weak: work rate)")
        else:
            ax.axhline(1.0, color="k", ls="--", lw=1)
            ax.set_ylabel("parallel efficiency")
            ax.set_ylim(0, 1.1)
        ax.set_xlabel("ranks (one GPU each on --backend cuda)")
        ax.set_xscale("log", base=2)
        plotting.data_ticks(ax, ranks)
        ax.legend()
    axes[0][0].set_title("strong: one problem split; weak: one block a rank")
    plotting.save(fig, ctx.out / "scaling.png")

    found = {f"{r['app']}_{r['kind']}_{r['precision']}_r{r['ranks']}_efficiency": r["efficiency"] for r in rows}
    backend = rows[0]["backend"] if rows else "-"
    lines = [f"## scaling ({ctx.size_label}, backend {backend})", "",
             "heat2d: steady Jacobi sweeps with the max residual all-reduced every sweep; strong scaling "
             "splits one n x n grid into row blocks, weak scaling gives each rank an n x n block of an "
             "n x (R n) grid. mcpi: one sample count split into stretches of the same stream. "
             "Efficiency: strong t(1)/(R t(R)), weak t(1)/t(R).", "",
             report.md_table(["app", "kind", "precision", "ranks", "problem", "per rank", "time", "unit",
                              "speedup", "efficiency"], [[r[c] for c in cols] for r in rows]),
             "", "Figure: `scaling.png`; table: `scaling.csv`."]
    report.write_section(ctx.out, "scaling", "\n".join(lines))
    return found
