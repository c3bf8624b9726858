"""heat2d-refinement and heat2d-iterations.

Analytic problems on the unit square (zero boundaries unless named):
  steady:    Laplace, u = sin(pi x) on the top edge  ->  u = sin(pi x) sinh(pi y) / sinh(pi)
  transient: u_t = alpha lap u, u0 = sin(pi x) sin(pi y)  ->  u = exp(-2 pi^2 alpha t) u0
The five-point Laplacian is second order in h; explicit Euler with dt ~ h^2 keeps the time error
O(h^2) too, so both errors should fall as h^2 (observed order ~2).
"""
from __future__ import annotations

import math

import numpy as np

from . import fits, h5read, plotting, report
from .context import Context
from .runner import ExperimentError, Run, make_run

STEADY_OK = ("converged",)
TRANSIENT_OK = ("t-end",)
ALPHA = 1.0
T_END = 0.05      # exp(-2 pi^2 t) = 0.37: the solution has decayed but is far from zero
CFL = 0.2         # dt = CFL h^2 / alpha, under the explicit limit 1/4
ITER_RES = 1e-3   # heat2d-iterations: stop at max|u_new - u| <= ITER_RES h^2 (a fixed PDE residual)
ITER_TOL = 1e-6   # ... and, for comparison, at one increment tolerance for every grid


def grids(first: int, last: int) -> list[int]:
    """n = 2^k + 1 points per side (boundary included): h = 2^-k exactly, grids nest."""
    return [2 ** k + 1 for k in range(first, last + 1)]


def refinement_sizes(quick: bool) -> dict[str, list[int]]:
    if quick:
        return {"steady": grids(4, 7), "transient": grids(4, 7)}
    return {"steady": grids(5, 9), "transient": grids(5, 9)}


def iteration_sizes(quick: bool) -> list[int]:
    return grids(4, 7) if quick else grids(5, 9)


def h_of(n: int) -> float:
    """heat2d's spacing: n points per side including the boundary, h = 1/(n-1)."""
    return 1.0 / (n - 1)


def steady_tol(n: int) -> float:
    """Jacobi stops with an iteration error ~ tol / (1 - rho) ~ tol * 2 / (pi h)^2; the
    discretisation error is ~ h^2, so tol ~ h^4 keeps the iteration error ~1% of it."""
    return max(0.01 * h_of(n) ** 4, 1e-14)


def check_every(n: int) -> int:
    """A few hundred residual checks per solve: histories resolved, checking cheap."""
    return max(1, n * n // 200)


def _common(ctx: Context, n: int) -> dict:
    return {"backend": ctx.backend, "precision": "double", "nx": n, "ny": n}


def steady_options(ctx: Context, n: int, tol: float) -> dict:
    sweeps = int(2.0 / (math.pi * h_of(n)) ** 2 * math.log(10.0 / tol))  # Jacobi's estimate
    return {**_common(ctx, n), "mode": "steady", "tol": tol, "max-iter": 4 * sweeps + 1000,
            "check-every": check_every(n), "bc-top": "sin", "bc-bottom": 0, "bc-left": 0,
            "bc-right": 0, "init": 0}


def transient_options(ctx: Context, n: int) -> dict:
    steps = math.ceil(T_END * ALPHA / (CFL * h_of(n) ** 2))
    return {**_common(ctx, n), "mode": "transient", "alpha": ALPHA, "dt": T_END / steps,
            "t-end": T_END, "max-iter": steps, "bc-top": 0, "bc-bottom": 0, "bc-left": 0, "bc-right": 0, "init": "sin"}


MATCH_STEADY = ["nx", "ny", "mode", "precision", "backend", "tol", "max-iter", "check-every",
                "bc-top", "bc-bottom", "bc-left", "bc-right", "init"]
MATCH_TRANSIENT = ["nx", "ny", "mode", "precision", "backend", "alpha", "dt", "t-end", "max-iter",
                   "bc-top", "bc-bottom", "bc-left", "bc-right", "init"]


# ---- heat2d-refinement ----------------------------------------------------------------------------

def refinement_runs(ctx: Context) -> list[Run]:
    runs = []
    folder = ctx.runs_dir("heat2d")
    for case, sizes in refinement_sizes(ctx.quick).items():
        for n in sizes:
            if case == "steady":
                opts, keys, ok = steady_options(ctx, n, steady_tol(n)), MATCH_STEADY, STEADY_OK
            else:
                opts, keys, ok = transient_options(ctx, n), MATCH_TRANSIENT, TRANSIENT_OK
            runs.append(make_run("heat2d", folder, f"refine-{case}-n{n}", opts, match_keys=keys,
                                 ok_status=ok, label=f"heat2d {case} n={n}"))
    return runs


def read_refinement(runs: list[Run]) -> list[dict]:
    rows = []
    for r in runs:
        a = h5read.read_attrs(r.path)
        e = h5read.read_attrs(r.path, "errors")
        if "analytic_max" not in e or "analytic_l2" not in e:
            raise ExperimentError(f"{r.path}: no /errors analytic_max/analytic_l2 (heat2d records them only "
                                  "for its analytic problems)")
        rows.append({"case": r.options["mode"], "n": int(a["nx"]), "h": float(a["h"]),
                     "iterations": int(a.get("iterations", 0)), "status": a.get("status"),
                     "err_max": float(e["analytic_max"]), "err_l2": float(e["analytic_l2"]),
                     "backend": a.get("backend")})
    for case in {row["case"] for row in rows}:
        sel = sorted((row for row in rows if row["case"] == case), key=lambda row: -row["h"])
        for norm in ("max", "l2"):
            p = fits.observed_orders([s["h"] for s in sel], [s[f"err_{norm}"] for s in sel])
            sel[0][f"order_{norm}"] = float("nan")
            for s, pi in zip(sel[1:], p):
                s[f"order_{norm}"] = float(pi)
    return sorted(rows, key=lambda row: (row["case"], row["n"]))


def refinement_analyse(ctx: Context, runs: list[Run]) -> dict:
    rows = read_refinement(runs)
    cols = ["case", "n", "h", "iterations", "status", "err_max", "order_max", "err_l2", "order_l2"]
    report.write_csv(ctx.out / "heat2d_refinement.csv", cols, [[r[c] for c in cols] for r in rows])

    fig, axes = plotting.subplots(1, 2, width=5.2, height=4.2)
    result: dict = {}
    for ax, case in zip(axes[0], ("steady", "transient")):
        sel = [r for r in rows if r["case"] == case]
        if not sel:
            ax.set_visible(False)
            continue
        h = np.array([r["h"] for r in sel])
        for norm, marker, name in (("max", "o", "max norm"), ("l2", "s", "L2 norm")):
            e = np.array([r[f"err_{norm}"] for r in sel])
            fit = fits.power_fit(h, e)
            result[f"{case}_{norm}_fit"] = fit.slope
            result[f"{case}_{norm}_last_order"] = sel[-1][f"order_{norm}"]
            ax.loglog(h, e, marker + "-", label=f"{name} (fitted slope {fit.slope:.2f})")
        i = int(np.argmin(h))
        ref = fits.reference_line(h, 2.0, h[i], 0.5 * min(r["err_l2"] for r in sel))
        ax.loglog(h, ref, "k--", lw=1, label="reference slope 2 ($h^2$)")
        title = ("steady: Laplace, $u=\\sin(\\pi x)$ on top" if case == "steady"
                 else f"transient: $\\sin(\\pi x)\\sin(\\pi y)$ at t={T_END:g}")
        ax.set_title(title)
        ax.set_xlabel("grid spacing h (unit square, dimensionless)")
        plotting.data_ticks(ax, h, fmt=plotting.reciprocal_label)
        ax.set_ylabel("error vs analytic solution (dimensionless)")
        ax.legend()
    plotting.save(fig, ctx.out / "heat2d_refinement.png")

    lines = [f"## heat2d-refinement ({ctx.size_label}, backend {rows[0]['backend'] if rows else '-'})",
             "",
             "Error against the analytic solution on successively refined grids (double precision); "
             "observed order p = log(e_coarse/e_fine) / log(h_coarse/h_fine) between successive grids "
             "(expected: 2). Steady runs stop at tol ~ 0.01 h^4 so the iteration error stays below the "
             f"discretisation error; transient runs use dt = {CFL} h^2/alpha up to t = {T_END}.",
             "",
             report.md_table(["case", "n", "h", "iterations", "status", "max error", "order (max)",
                              "L2 error", "order (L2)"],
                             [[r[c] for c in cols] for r in rows]),
             "",
             "Observed order on the finest pair: " + ", ".join(
                 f"{case} {norm} {result[f'{case}_{norm}_last_order']:.3f}"
                 for case in ("steady", "transient") for norm in ("max", "l2")
                 if f"{case}_{norm}_last_order" in result) + "; least-squares slope over all grids: " + ", ".join(
                 f"{case} {norm} {result[f'{case}_{norm}_fit']:.3f}"
                 for case in ("steady", "transient") for norm in ("max", "l2")
                 if f"{case}_{norm}_fit" in result) + ".",
             "",
             "Figures: `heat2d_refinement.png`; table: `heat2d_refinement.csv`."]
    report.write_section(ctx.out, "heat2d-refinement", "\n".join(lines))
    return result


# ---- heat2d-iterations ----------------------------------------------------------------------------
# heat2d stops on the increment max|u_new - u| = (h^2/4) |discrete Laplacian residual|. Two series:
#   scaled: tol = ITER_RES h^2, a fixed residual of the PDE: sweeps ~ 2 ln(C/ITER_RES) / (pi h)^2,
#           exactly O(h^-2) = O(n^2);
#   fixed:  tol = ITER_TOL on the increment: sweeps ~ h^-2 ln(C h^2 / tol), whose shrinking log
#           factor makes the observed exponent fall below 2 on these grids.

def iteration_series(ctx: Context) -> list[tuple[str, int, float]]:
    return [(series, n, ITER_RES * h_of(n) ** 2 if series == "scaled" else ITER_TOL)
            for series in ("scaled", "fixed") for n in iteration_sizes(ctx.quick)]


def iteration_runs(ctx: Context) -> list[Run]:
    folder = ctx.runs_dir("heat2d")
    return [make_run("heat2d", folder, f"iter-{series}-n{n}", steady_options(ctx, n, tol),
                     match_keys=MATCH_STEADY, ok_status=STEADY_OK, label=f"heat2d iterations {series} n={n}")
            for series, n, tol in iteration_series(ctx)]


def iteration_analyse(ctx: Context, runs: list[Run]) -> dict:
    rows, histories = [], []
    for (series, _, _), r in zip(iteration_series(ctx), runs):
        a = h5read.read_attrs(r.path)
        n, h = int(a["nx"]), float(a["h"])
        rows.append({"series": series, "n": n, "h": h, "tol": float(a["tol"]),
                     "iterations": int(a["iterations"]), "final_residual": float(a["final_residual"]),
                     "status": a["status"], "backend": a.get("backend"),
                     "sweeps_h2": int(a["iterations"]) * h ** 2})
        it = h5read.read_dataset(r.path, "residual/iteration")
        val = h5read.read_dataset(r.path, "residual/value")
        if series == "scaled" and it is not None and val is not None:
            histories.append((n, h, np.asarray(it, dtype=float), np.asarray(val, dtype=float)))
    rows.sort(key=lambda row: (row["series"] != "scaled", row["n"]))
    found: dict = {}
    fitted = {}
    for series in ("scaled", "fixed"):
        sel = [row for row in rows if row["series"] == series]
        if len(sel) < 2:
            continue
        inv_h = np.array([1.0 / row["h"] for row in sel])
        k = np.array([row["iterations"] for row in sel], dtype=float)
        fit = fits.power_fit(inv_h, k)  # Jacobi's rate depends on h: fit against 1/h = n - 1
        fitted[series] = (inv_h, k, fit)
        for row, p in zip(sel, [float("nan")] + list(fits.observed_orders(inv_h, k))):
            row["local_exponent"] = float(p)
        found[f"{series}_slope"] = fit.slope
        found[f"{series}_slope_stderr"] = fit.slope_stderr
        found[f"{series}_last_exponent"] = sel[-1]["local_exponent"]
    found["slope"] = found.get("scaled_slope", float("nan"))

    cols = ["series", "n", "h", "tol", "iterations", "sweeps_h2", "local_exponent", "final_residual", "status"]
    report.write_csv(ctx.out / "heat2d_iterations.csv", cols, [[r.get(c) for c in cols] for r in rows])
    hist_rows = [[nn, int(i), float(v), float(v) / hh ** 2] for nn, hh, its, vals in histories
                 for i, v in zip(its, vals)]
    report.write_csv(ctx.out / "heat2d_residuals.csv", ["n", "iteration", "increment", "increment_over_h2"],
                     hist_rows)

    fig, axes = plotting.subplots(1, 3, width=4.5, height=4.1)
    ax = axes[0][0]
    names = {"scaled": f"tol = {ITER_RES:g} h$^2$", "fixed": f"tol = {ITER_TOL:g}"}
    for series, (inv_h, k, fit) in fitted.items():
        ax.loglog(inv_h, k, "o-" if series == "scaled" else "s--",
                  label=f"{names[series]} (fitted slope {fit.slope:.2f})")
    if "scaled" in fitted:
        inv_h, k, _ = fitted["scaled"]
        ax.loglog(inv_h, fits.reference_line(inv_h, 2.0, inv_h[-1], k[-1]) * 1.6, "k:", lw=1,
                  label="reference slope 2 ($h^{-2}$)")
        plotting.data_ticks(ax, inv_h)
    ax.set_xlabel("grid size 1/h = n - 1 (intervals per side)")
    ax.set_ylabel("Jacobi sweeps to reach tol")
    ax.set_title("sweeps vs grid size")
    ax.legend()
    for ax, scale in ((axes[0][1], False), (axes[0][2], True)):
        for nn, hh, its, vals in histories:
            x = its * hh ** 2 if scale else its
            y = vals / hh ** 2
            ok = (x > 0) & (y > 0)
            (ax.semilogy if scale else ax.loglog)(x[ok], y[ok], "-", lw=1.2, label=f"n = {nn}")
        ax.axhline(ITER_RES, color="k", ls=":", lw=1, label=f"stop: {ITER_RES:g}")
        ax.set_ylabel("max|u$_{new}$ - u| / h$^2$ (scaled residual)")
        ax.legend()
    axes[0][1].set_xlabel("sweep")
    axes[0][1].set_title(f"residual histories (tol = {ITER_RES:g} h$^2$)")
    axes[0][2].set_xlabel("sweep $\\times h^2$")
    axes[0][2].set_title("sweeps scaled by $h^2$: the curves collapse")
    plotting.save(fig, ctx.out / "heat2d_iterations.png")

    backend = rows[0]["backend"] if rows else "-"
    lines = [f"## heat2d-iterations ({ctx.size_label}, backend {backend})",
             "",
             "Jacobi sweeps to convergence (steady problem, double precision) against the grid size (n points "
             "per side, h = 1/(n-1)). heat2d stops on the increment max|u_new - u| = (h^2/4)|discrete "
             f"residual|; series *scaled* stops at tol = {ITER_RES:g} h^2 (a fixed PDE residual), series "
             f"*fixed* at tol = {ITER_TOL:g} on the increment. Jacobi's spectral radius cos(pi h) = 1 - "
             "(pi h)^2/2 predicts sweeps ~ h^-2 ~ n^2 for the scaled series; the fixed series adds a factor "
             "ln(h^2/tol) that shrinks with h.",
             "",
             report.md_table(["series", "n", "h", "tol", "sweeps", "sweeps x h^2", "local exponent",
                              "final residual", "status"], [[r.get(c) for c in cols] for r in rows]),
             "",
             "Fitted exponents (sweeps ~ (1/h)^p): " + ", ".join(
                 f"{series} p = {fit.slope:.3f} (standard error {fit.slope_stderr:.3f})"
                 for series, (_, _, fit) in fitted.items()) + "; expected 2 for the scaled series.",
             "",
             "Figure: `heat2d_iterations.png`; tables: `heat2d_iterations.csv`, `heat2d_residuals.csv`."]
    report.write_section(ctx.out, "heat2d-iterations", "\n".join(lines))
    found["iterations"] = {(r["series"], r["n"]): r["iterations"] for r in rows}
    return found
