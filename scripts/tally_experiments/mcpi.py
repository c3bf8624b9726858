"""mcpi-convergence: |estimate - pi| against the sample count N for each generator, over replicates.

Pseudo-random points give an unbiased Bernoulli estimate with sigma(N) = 4 sqrt(p (1 - p) / N),
p = pi/4, so |error| ~ N^-1/2. Sobol points (quasi-random) do better: about N^-1 for smooth
integrands; the quarter-disc indicator is discontinuous along the arc, for which the theory of
(scrambled) nets gives N^(-1/2 - 1/(2d)) = N^-3/4 in two dimensions (He & Owen, 2015).

Every N of one replicate comes from one run: mcpi counts the hits batch by batch (--batch), and its
stream layout makes the first k batches exactly the samples [offset, offset + k * batch), so the
cumulative counts are the estimates for N = k * batch (checked against separate runs in the tests).
A segment covers three decades (batch b, N = b .. 1000 b); the full study adds a second segment
(batch 10^6, N = 10^6 .. 10^9) from the same start. Replicates: different --seed for the
pseudo-random generators; for sobol, whose points do not depend on a seed, different --offset
(replicate r starts r * stride points in, disjoint stretches when the 2^32-point sequence has room).

API: --api device (the fused kernel) on --backend cuda; on cpu and auto, xorwow and mrg32k3a use
--api host (cuRAND's host generator), the only form the CPU backend reproduces for them. A
generator this build cannot run (the CPU-only build has philox alone) is reported as unavailable.
"""
from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np

from . import fits, h5read, plotting, report
from .context import Context
from .runner import Run, make_run

GENERATORS = ["philox", "xorwow", "mrg32k3a", "sobol"]
QUASI = {"sobol", "scrambled-sobol"}
P_HIT = math.pi / 4
SOBOL_POINTS = 1 << 32
# Batches at which the running estimate is read: half decades, 1 .. 1000 batches.
KS = [1, 3, 10, 32, 100, 316, 1000]

# |error| of a pseudo-random estimate is half-normal with scale sigma: its 16th and 84th percentiles.
BAND = (NormalDist().inv_cdf(0.58), NormalDist().inv_cdf(0.92))


def sigma(n) -> np.ndarray:
    """Standard deviation of the pseudo-random estimate of pi from n points."""
    return 4.0 * np.sqrt(P_HIT * (1 - P_HIT) / np.asarray(n, dtype=float))


def segments(quick: bool) -> list[int]:
    """Batch sizes of the runs of one replicate; each run has 1000 batches."""
    return [1000] if quick else [1000, 1000 ** 2]


def n_max(quick: bool) -> int:
    return 1000 * segments(quick)[-1]


def replicates(quick: bool) -> int:
    return 8


def sobol_stride(quick: bool) -> int:
    top, reps = n_max(quick), replicates(quick)
    return min(top, (SOBOL_POINTS - top) // max(reps - 1, 1))


def api_for(gen: str, backend: str) -> str:
    return "host" if backend != "cuda" and gen in ("xorwow", "mrg32k3a") else "device"


def runs(ctx: Context) -> list[Run]:
    out = []
    folder = ctx.runs_dir("mcpi")
    for gen in GENERATORS:
        for r in range(replicates(ctx.quick)):
            seed = ctx.seed + r if gen not in QUASI else ctx.seed
            offset = r * sobol_stride(ctx.quick) if gen in QUASI else 0
            for batch in segments(ctx.quick):
                opts = {"backend": ctx.backend, "n": 1000 * batch, "batch": batch, "generator": gen,
                        "api": api_for(gen, ctx.backend), "seed": seed, "offset": offset}
                run = make_run("mcpi", folder, f"{gen}-r{r}-b{batch}", opts, ok_status=("ok",),
                               label=f"mcpi {gen} replicate {r}, N = {batch}..{1000 * batch}")
                run.group = f"mcpi:{gen}"
                out.append(run)
    return out


def running_estimates(path, ks=KS) -> list[tuple[int, int]]:
    """(N, hits) after the first k batches of a run, for each k in ks that the run has."""
    n = h5read.read_dataset(path, "batches/n")
    hits = h5read.read_dataset(path, "batches/hits")
    if n is None or hits is None:
        raise ValueError(f"{path}: no /batches/n and /batches/hits")
    cn, ch = np.cumsum(np.asarray(n, dtype=np.int64)), np.cumsum(np.asarray(hits, dtype=np.int64))
    return [(int(cn[k - 1]), int(ch[k - 1])) for k in ks if k <= cn.size]


def analyse(ctx: Context, runs: list[Run]) -> dict:
    rows = []
    seen: set = set()
    missing = {}
    for r in runs:
        if r.group in ctx.runner.unavailable or not r.path.is_file():
            missing[r.options["generator"]] = ctx.runner.unavailable.get(r.group, "no result files")
            continue
        a = h5read.read_attrs(r.path)
        for n, hits in running_estimates(r.path):
            key = (a["generator"], int(a["seed"]), int(a.get("offset", 0)), n)
            if key in seen:  # N = 10^6 ends one segment and starts the next: the same samples
                continue
            seen.add(key)
            est = 4.0 * hits / n
            rows.append({"generator": a["generator"], "n": n, "seed": int(a["seed"]),
                         "offset": int(a.get("offset", 0)), "hits": hits, "estimate": est,
                         "abs_error": abs(est - math.pi), "sigma": float(sigma(n)),
                         "backend": a.get("backend"), "api": a.get("api")})
    cols = ["generator", "api", "n", "seed", "offset", "hits", "estimate", "abs_error", "sigma"]
    report.write_csv(ctx.out / "mcpi_convergence.csv", cols, [[r[c] for c in cols] for r in rows])

    gens = [g for g in GENERATORS if any(r["generator"] == g for r in rows)]
    summary, fitted = [], {}
    ncols = 1 if len(gens) <= 1 else 2
    fig, axes = plotting.subplots(max(1, math.ceil(len(gens) / ncols)), ncols, width=5.0, height=4.0, sharey=True)
    for ax, gen in zip(axes.flat, gens):
        sel = [r for r in rows if r["generator"] == gen]
        ns = np.array(sorted({r["n"] for r in sel}), dtype=float)
        mean = np.array([np.mean([r["abs_error"] for r in sel if r["n"] == n]) for n in ns])
        rms = np.array([np.sqrt(np.mean([r["abs_error"] ** 2 for r in sel if r["n"] == n])) for n in ns])
        fit = fits.power_fit(ns, mean)
        fitted[gen] = fit
        nrep = len({(r["seed"], r["offset"]) for r in sel})
        summary.append([gen, nrep, int(ns[0]), int(ns[-1]), fit.slope, fit.slope_stderr,
                        float(mean[-1]), float(rms[-1]), float(sigma(ns[-1])),
                        float(rms[-1] / sigma(ns[-1]))])
        lo = 1e-9
        ax.fill_between(ns, BAND[0] * sigma(ns), BAND[1] * sigma(ns), color="tab:blue", alpha=0.15, lw=0,
                        label="68% band of |error| (pseudo-random)")
        ax.loglog(ns, sigma(ns), color="tab:blue", ls=":", lw=1.2,
                  label="$\\sigma = 4\\sqrt{p(1-p)/N}$, $p=\\pi/4$")
        pts_n = [r["n"] for r in sel]
        pts_e = [max(r["abs_error"], lo) for r in sel]
        ax.loglog(pts_n, pts_e, ".", color="0.55", ms=4, label=f"|error|, {nrep} replicates")
        ax.loglog(ns, mean, "o-", color="tab:red", ms=4, label="mean |error|")
        ax.loglog(ns, fit(ns), "k-", lw=1, label=f"fit: slope {fit.slope:.2f} $\\pm$ {fit.slope_stderr:.2f}")
        ref_slope = -0.75 if gen in QUASI else -0.5
        ax.loglog(ns, fits.reference_line(ns, ref_slope, ns[0], 0.3 * mean[0]), "k--", lw=1,
                  label=f"reference slope {ref_slope:g}")
        ax.set_title(f"{gen} ({'quasi-random' if gen in QUASI else 'pseudo-random'})")
        ax.set_xlabel("samples N")
        ax.set_ylabel("|estimate - $\\pi$| (dimensionless)")
        ax.set_ylim(bottom=max(lo, 0.2 * min(min(pts_e), mean.min())))
        ax.legend(loc="lower left", fontsize=7)
    for ax in list(axes.flat)[len(gens):]:
        ax.set_visible(False)
    plotting.save(fig, ctx.out / "mcpi_convergence.png")

    scols = ["generator", "replicates", "N min", "N max", "slope", "slope stderr",
             "mean |err| at N max", "rms err at N max", "sigma at N max", "rms / sigma"]
    report.write_csv(ctx.out / "mcpi_slopes.csv", scols, summary)
    backend = rows[0]["backend"] if rows else "-"
    lines = [f"## mcpi-convergence ({ctx.size_label}, backend {backend})",
             "",
             "|estimate - pi| against N for each generator; replicates are different seeds (sobol: "
             "different --offset); the N of one replicate are running estimates of one run (cumulative "
             "batch counts, the same samples as separate runs). Slope fitted by least squares to "
             "log(mean |error|) against log N: expected -1/2 for pseudo-random generators; for Sobol "
             "about -1 on smooth integrands, but the quarter-disc indicator is discontinuous, for which "
             "nets give about N^-3/4 in 2-D (reference slope drawn). "
             "sigma = 4 sqrt(p(1-p)/N), p = pi/4; rms/sigma ~ 1 for a sound pseudo-random generator.",
             "",
             report.md_table(scols, summary),
             "",
             "Observed slopes: " + ", ".join(f"{g} {f.slope:.3f}" for g, f in fitted.items()) + ".",
             *(["", "Not available in this build:"] + [f"- {g}: {why}" for g, why in missing.items()]
               if missing else []),
             "",
             "Figure: `mcpi_convergence.png`; tables: `mcpi_convergence.csv`, `mcpi_slopes.csv`."]
    report.write_section(ctx.out, "mcpi-convergence", "\n".join(lines))
    return {g: f.slope for g, f in fitted.items()} | {"unavailable": missing}
