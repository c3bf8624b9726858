"""heat2d-blocking: time per sweep against the sweeps each pass over memory advances (temporal
blocking, --sweeps-per-pass t = 1..8), for two grid sizes, float and double.

Every run is the same steady problem (init sin, never converging) for SWEEPS sweeps checked once at
the end: 840 = lcm(1..8), so every t runs whole passes, and every t must give the same field and
residual (the runs' final residuals are compared bit for bit). t = 1 reads and writes the field once
a sweep; t sweeps a pass once per t sweeps, so its time per sweep can fall below the copy bound.
Quick: small grids on the CPU (the cache-tiled CPU pass); full: 2048^2 and 4096^2 (the GPU case;
`heat2d --bench` times 8192^2 too, at t = 1, 2, 4, 8).
"""
from __future__ import annotations

from . import h5read, plotting, report
from .context import Context
from .runner import ExperimentError, Run, make_run

SWEEPS = 840
T_VALUES = list(range(1, 9))
SIZES = {True: [129, 257], False: [2048, 4096]}  # full: 32 runs, each writing its field (HDF5, deflate)
PRECISIONS = ("float", "double")


def runs(ctx: Context) -> list[Run]:
    folder = ctx.runs_dir("heat2d")
    out = []
    for n in SIZES[ctx.quick]:
        for prec in PRECISIONS:
            for t in T_VALUES:
                opts = {"backend": ctx.backend, "precision": prec, "nx": n, "ny": n, "mode": "steady",
                        "init": "sin", "tol": 1e-300, "max-iter": SWEEPS, "check-every": SWEEPS,
                        "sweeps-per-pass": t}
                out.append(make_run("heat2d", folder, f"blocking-{prec}-n{n}-t{t}", opts, ok_status=("max-iter",),
                                    label=f"heat2d {prec} {n}^2 t={t}"))
    return out


def read_rows(runs_: list[Run]) -> list[dict]:
    rows = []
    for r in runs_:
        a = h5read.read_attrs(r.path)
        tm = h5read.read_attrs(r.path, "timings")
        rows.append({"n": int(a["nx"]), "precision": a["precision"], "t": int(a["sweeps_per_pass"]),
                     "per_sweep_us": 1e6 * float(tm["per_sweep"]), "final_residual": float(a["final_residual"]),
                     "iterations": int(a["iterations"]), "backend": a.get("backend")})
    for row in rows:
        base = next(b for b in rows if (b["n"], b["precision"], b["t"]) == (row["n"], row["precision"], 1))
        row["speedup"] = base["per_sweep_us"] / row["per_sweep_us"]
        row["same_as_t1"] = row["final_residual"] == base["final_residual"] and row["iterations"] == base["iterations"]
    return sorted(rows, key=lambda r: (r["n"], r["precision"], r["t"]))


def analyse(ctx: Context, runs_: list[Run]) -> dict:
    rows = read_rows(runs_)
    if not all(r["same_as_t1"] for r in rows):
        bad = [f"{r['precision']} {r['n']}^2 t={r['t']}" for r in rows if not r["same_as_t1"]]
        raise ExperimentError("heat2d-blocking: a t gave another residual or sweep count than t = 1: " + ", ".join(bad))
    cols = ["n", "precision", "t", "per_sweep_us", "speedup", "final_residual", "backend"]
    report.write_csv(ctx.out / "heat2d_blocking.csv", cols, [[r[c] for c in cols] for r in rows])

    fig, axes = plotting.subplots(1, 1, width=5.6, height=4.2)
    ax = axes[0][0]
    for n in sorted({r["n"] for r in rows}):
        for prec in PRECISIONS:
            sel = [r for r in rows if r["n"] == n and r["precision"] == prec]
            ax.plot([r["t"] for r in sel], [r["per_sweep_us"] for r in sel], "o-" if prec == "double" else "s--",
                    label=f"{n}^2 {prec}")
    ax.set_xlabel("sweeps per pass t (--sweeps-per-pass)")
    ax.set_ylabel("time per sweep (us)")
    ax.set_yscale("log")
    ax.set_xticks(T_VALUES)
    ax.set_title("heat2d: temporal blocking, the same bits for every t")
    ax.legend()
    plotting.save(fig, ctx.out / "heat2d_blocking.png")

    best = {}
    for r in rows:
        key = f"{r['precision']}_n{r['n']}"
        if key not in best or r["per_sweep_us"] < best[key]["per_sweep_us"]:
            best[key] = r
    found = {f"{k}_best_t": v["t"] for k, v in best.items()}
    found.update({f"{k}_best_speedup": v["speedup"] for k, v in best.items()})
    found["same_as_t1"] = True
    backend = rows[0]["backend"] if rows else "-"
    lines = [f"## heat2d-blocking ({ctx.size_label}, backend {backend})", "",
             f"Steady sweeps ({SWEEPS}, checked at the last) with t = 1..8 sweeps a pass over memory; every t "
             "gave t = 1's residual and sweep count bit for bit. Speedup: t = 1's time per sweep over t's.", "",
             report.md_table(["n", "precision", "t", "us/sweep", "speedup"],
                             [[r["n"], r["precision"], r["t"], r["per_sweep_us"], r["speedup"]] for r in rows]),
             "", "Figure: `heat2d_blocking.png`; table: `heat2d_blocking.csv`."]
    report.write_section(ctx.out, "heat2d-blocking", "\n".join(lines))
    return found
