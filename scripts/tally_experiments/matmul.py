"""matmul-levels: GFLOP/s against size for each reduction level, cuBLAS and Eigen; error against K.

Every element of C = A B is a dot product of length K reduced at one level (vector, worker,
worker+vector, gang) or by the tiled kernel, on the CUDA cores or (tiled-tc, CUDA backend) the
tensor cores at FP32 accuracy (3xTF32), or (ozaki) from exact INT8 products of residues. GPU runs
also show cuBLAS SGEMM and, for comparison, cuBLAS in its fast-TF32 mode, whose error is TF32's
(above the FP32 tolerance; not counted as a failure). Throughput: square m = n = k. Error: a thin C
(m = n fixed) with K growing, in float and double; a sum of K rounded terms has a worst-case
relative error ~ K eps and a typical one ~ sqrt(K) eps, shown as reference lines.
"""
from __future__ import annotations

import numpy as np

from . import fits, h5read, plotting, report
from .context import Context
from .runner import Run, make_run

LEVELS = ["vector", "worker", "worker+vector", "gang", "tiled", "tiled-tc", "ozaki"]
EPS = {"float": float(np.finfo(np.float32).eps) / 2, "double": float(np.finfo(np.float64).eps) / 2}


def perf_sizes(quick: bool) -> list[int]:
    return [64, 128, 256] if quick else [256, 512, 1024, 2048, 4096]


def error_ks(quick: bool) -> tuple[int, list[int]]:
    """(m = n, the K values) of the error study."""
    return (32, [2 ** e for e in range(5, 13)]) if quick else (128, [2 ** e for e in range(6, 17)])


MATCH = ["backend", "m", "n", "k", "precision", "level"]


def runs(ctx: Context) -> list[Run]:
    folder = ctx.runs_dir("matmul")
    out = []
    for s in perf_sizes(ctx.quick):
        opts = {"backend": ctx.backend, "m": s, "n": s, "k": s, "precision": "float", "level": "all"}
        out.append(make_run("matmul", folder, f"perf-float-{s}", opts, match_keys=MATCH[:-1],
                            ok_status=("ok",), label=f"matmul float {s}^3"))
    mn, ks = error_ks(ctx.quick)
    for prec in ("float", "double"):
        for k in ks:
            # one untimed-quality run is enough for the error; Eigen is not part of this study
            opts = {"backend": ctx.backend, "m": mn, "n": mn, "k": k, "precision": prec, "level": "all",
                    "repeats": 1, "warmup": 0, "no-eigen": True}
            out.append(make_run("matmul", folder, f"err-{prec}-k{k}", opts,
                                match_keys=MATCH[:-1] + ["repeats", "warmup"], ok_status=("ok",),
                                label=f"matmul {prec} {mn}x{mn} K={k}"))
    return out


def read_run(path) -> tuple[dict, dict[str, dict], dict, dict, dict]:
    """(root attrs, {level: attrs}, cublas attrs, eigen attrs, cublas fast-TF32 attrs); missing groups give {}."""
    import h5py

    with h5py.File(path, "r") as f:
        root = h5read.attrs(f)
        levels = {name: h5read.attrs(g) for name, g in f["levels"].items()} if "levels" in f else {}
        cublas = h5read.attrs(f["cublas"]) if "cublas" in f else {}
        eigen = h5read.attrs(f["eigen"]) if "eigen" in f else {}
        tf32 = h5read.attrs(f["cublas_tf32"]) if "cublas_tf32" in f else {}
    return root, levels, cublas, eigen, tf32


def _ordered(names) -> list[str]:
    return [lv for lv in LEVELS if lv in names] + sorted(set(names) - set(LEVELS))


def analyse(ctx: Context, runs: list[Run]) -> dict:
    perf_rows, err_rows = [], []
    backend = "-"
    for r in runs:
        root, levels, cublas, eigen, tf32 = read_run(r.path)
        backend = root.get("backend", backend)
        m, n, k, prec = int(root["m"]), int(root["n"]), int(root["k"]), root["precision"]
        kind = "perf" if r.path.name.startswith("perf-") else "err"
        for lv in _ordered(levels):
            a = levels[lv]
            row = {"precision": prec, "m": m, "n": n, "k": k, "impl": lv,
                   "time_s": a.get("time_s"), "gflops": a.get("gflops"), "gbps": a.get("gbps"),
                   "pct_cublas": a.get("pct_cublas"), "rel_error": a.get("rel_error"),
                   "tolerance": a.get("tolerance"),
                   "passed": None if a.get("passed") is None else h5read.as_bool(a["passed"])}
            (perf_rows if kind == "perf" else err_rows).append(row)
        if kind == "perf":
            for name, a in (("cuBLAS", cublas), ("cuBLAS TF32", tf32), ("Eigen", eigen)):
                if a:  # TF32's error is above the FP32 tolerance by design: shown, not judged
                    perf_rows.append({"precision": prec, "m": m, "n": n, "k": k, "impl": name,
                                      "time_s": a.get("time_s"), "gflops": a.get("gflops"),
                                      "rel_error": a.get("rel_error")})

    pcols = ["precision", "m", "n", "k", "impl", "time_s", "gflops", "gbps", "pct_cublas",
             "rel_error", "passed"]
    report.write_csv(ctx.out / "matmul_levels.csv", pcols, [[r.get(c) for c in pcols] for r in perf_rows])
    ecols = ["precision", "m", "n", "k", "impl", "rel_error", "tolerance", "passed"]
    report.write_csv(ctx.out / "matmul_error.csv", ecols, [[r.get(c) for c in ecols] for r in err_rows])

    # GFLOP/s against size
    impls = _ordered({r["impl"] for r in perf_rows if r["impl"] in LEVELS}) + \
        [x for x in ("cuBLAS", "cuBLAS TF32", "Eigen") if any(r["impl"] == x for r in perf_rows)]
    fig, axes = plotting.subplots(1, 2, width=6.2, height=4.4)
    ax = axes[0][0]
    best = {}
    for impl in impls:
        sel = sorted((r for r in perf_rows if r["impl"] == impl), key=lambda r: r["m"])
        x = [r["m"] for r in sel]
        y = [r["gflops"] for r in sel]
        style = {"cuBLAS": ("k", "-", "D"), "cuBLAS TF32": ("k", ":", "d"), "Eigen": ("0.4", "--", "v")}.get(impl)
        if style:
            ax.loglog(x, y, color=style[0], ls=style[1], marker=style[2], label=impl)
        else:
            ax.loglog(x, y, "o-", label=f"level {impl}")
        best[impl] = max(y) if y else float("nan")
    ax.set_xlabel("matrix size m = n = k")
    plotting.data_ticks(ax, [r["m"] for r in perf_rows])
    ax.set_ylabel("throughput (GFLOP/s, 2mnk flops, float)")
    ax.set_title(f"matmul throughput by reduction level ({backend})")
    ax.legend()

    # relative error against K
    ax = axes[0][1]
    err_impls = _ordered({r["impl"] for r in err_rows})
    markers = dict(zip(LEVELS, "os^vDPX"))
    for prec, color_shift in (("float", 0), ("double", 1)):
        for j, impl in enumerate(err_impls):
            sel = sorted((r for r in err_rows if r["impl"] == impl and r["precision"] == prec),
                         key=lambda r: r["k"])
            if not sel:
                continue
            ax.loglog([r["k"] for r in sel], [max(r["rel_error"] or 0, 1e-18) for r in sel],
                      marker=markers.get(impl, "x"), ls="-" if prec == "float" else "--", ms=4,
                      color=f"C{j}", label=impl if prec == "float" else None)
        largest = {}  # each level is held to its own order's bound: the largest at each K
        for r in err_rows:
            if r["precision"] == prec and r.get("tolerance") is not None:
                largest[r["k"]] = max(largest.get(r["k"], 0.0), r["tolerance"])
        if largest:
            ks_t = sorted(largest)
            ax.loglog(ks_t, [largest[k] for k in ks_t], color="r", lw=1,
                      label="the levels' largest tolerance" if prec == "float" else None)
        ks = np.array(sorted({r["k"] for r in err_rows if r["precision"] == prec}), dtype=float)
        if ks.size:
            first = prec == "float"
            ax.loglog(ks, EPS[prec] * np.sqrt(ks), color="k", ls=":", lw=1,
                      label="$\\sqrt{K}\\,u$: probabilistic bound (u: unit roundoff)" if first else None)
            ax.loglog(ks, EPS[prec] * ks, color="0.5", ls="-.", lw=1,
                      label="$K\\,u$: worst-case bound" if first else None)
        if ks.size:
            plotting.data_ticks(ax, ks, fmt=lambda v: f"{v:.0f}")
    tols = {}
    for r in sorted(err_rows, key=lambda r: r["k"]):
        if r.get("tolerance") is not None:  # the largest of the levels' at the largest K
            same_k = tols.get(r["precision"], (None, 0.0))
            tols[r["precision"]] = (r["k"], max(r["tolerance"], same_k[1] if same_k[0] == r["k"] else 0.0))
    tols = {p: t for p, (_, t) in tols.items()}
    ax.set_xlabel("reduction length K")
    ax.set_ylabel("max |C - C$_{ref}$| / (|A||B|)  (dimensionless)")
    mn = err_rows[0]["m"] if err_rows else "-"
    ax.set_title(f"error against K (C is {mn}x{mn})")
    ax.plot([], [], color="0.3", ls="-", label="solid: float")
    ax.plot([], [], color="0.3", ls="--", label="dashed: double")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0)
    plotting.save(fig, ctx.out / "matmul_levels.png")

    # slopes of the error against K (float), per level
    slopes = {}
    for impl in err_impls:
        sel = [r for r in err_rows if r["impl"] == impl and r["precision"] == "float"
               and (r["rel_error"] or 0) > 0]
        if len(sel) >= 2:
            slopes[impl] = fits.power_fit([r["k"] for r in sel], [r["rel_error"] for r in sel]).slope
    in_u = {p: [r["rel_error"] / EPS[p] for r in err_rows if r["precision"] == p and r["rel_error"]]
            for p in ("float", "double")}
    all_passed = all(bool(r.get("passed")) for r in perf_rows + err_rows if r.get("passed") is not None)

    prows = [[r.get(c) for c in ["m", "impl", "time_s", "gflops", "gbps", "pct_cublas", "rel_error", "passed"]]
             for r in sorted(perf_rows, key=lambda r: (r["m"], impls.index(r["impl"])))]
    erows = []
    for prec in ("float", "double"):
        for k in sorted({r["k"] for r in err_rows if r["precision"] == prec}):
            erows.append([prec, k] + [next((r["rel_error"] for r in err_rows if r["precision"] == prec
                                            and r["k"] == k and r["impl"] == impl), None)
                                      for impl in err_impls])
    lines = [f"## matmul-levels ({ctx.size_label}, backend {backend})",
             "",
             "Throughput (2mnk flops / time) of each reduction level on square float matrices, with "
             "cuBLAS (GPU runs: SGEMM, and its fast-TF32 mode, whose error is TF32's, shown for "
             "comparison) and Eigen; and the relative error of C against K.",
             "",
             report.md_table(["size", "implementation", "time (s)", "GFLOP/s", "GB/s", "% cuBLAS",
                              "rel. error", "passed"], prows),
             "",
             "Best GFLOP/s: " + ", ".join(f"{k} {v:.3g}" for k, v in best.items()) + ".",
             "",
             report.md_table(["precision", "K"] + err_impls, erows),
             "",
             "The levels' largest tolerance at the largest K: " + (", ".join(f"{p} {t:.3g}" for p, t in tols.items()) or "-")
             + ". Fitted growth of the float error with K: "
             + (", ".join(f"{k} K^{v:.2f}" for k, v in slopes.items()) or "-")
             + ". Measured errors in units of u (unit roundoff): " + ", ".join(
                 f"{p} {min(v):.2f} to {max(v):.2f}" for p, v in in_u.items() if v)
             + ". The error is normalised by |A||B| (the scale of the rounding errors); with zero-mean "
             "inputs it stays O(u) while the bounds grow as sqrt(K) u (probabilistic) and K u (worst case)"
             + f". Every level passed its check: {'yes' if all_passed else 'NO'}.",
             "",
             "Figure: `matmul_levels.png`; tables: `matmul_levels.csv`, `matmul_error.csv`."]
    report.write_section(ctx.out, "matmul-levels", "\n".join(lines))
    return {"best_gflops": best, "error_slopes": slopes, "all_passed": all_passed,
            "error_in_u": {p: (min(v), max(v)) for p, v in in_u.items() if v}}
