"""reduce-bandwidth: reduce-bench's GB/s against input size for each level set and strategy, with
CUB and the ceiling (the device copy bandwidth, measured in the same run) as reference lines.

reduce-bench (--csv) writes one row per measured case:
  suite,name,levels,op,type,shape,n,input_bytes,moved_bytes,time_us,call_us,gbs,vs_ceiling,vs_ref,ref
(call_us appeared later; columns are read by name, a missing one is left empty)
and the HDF5 root attributes ceiling_gbs and ceiling (what the ceiling is). Suites on CUDA: sweep
(full reduction, production and cub, 2^10..2^30), ladder (the strategies at one size), levels (every
level set x op x type on one shape), shapes (every level set on several shapes, 2^26 and 2^28),
openacc; on the CPU: cpu (tally, Eigen Map, Eigen Tensor on a thread pool; the ceiling is Eigen
Tensor's sum bandwidth).

Figure panels: (a) full reduction against size per implementation and operator, (b) each level set
against size (median over shapes, bars from the worst to the best shape; on CUDA the full study adds
the OpenACC suite on loop nests of 2^16 .. 2^28 elements), (c) the strategy ladder (one size).
"""
from __future__ import annotations

import math
import statistics
from collections import defaultdict

from . import h5read, plotting, report
from .context import Context
from .runner import Run, make_run

FULL = "gang+worker+vector"
TYPE_BYTES = {"int32": 4, "int": 4, "float": 4, "int64": 8, "double": 8}
LEVEL_SETS = ["gang", "worker", "vector", "gang+worker", "gang+vector", "worker+vector", FULL]


def sweep_extents(ctx: Context) -> list[tuple[int, int, int]]:
    """Level sets against size (full study on CUDA): the OpenACC suite on loop nests (ng, 64, 1024),
    2^16 .. 2^28 elements. The CPU bench has no level-set suites, and --quick ignores --extents."""
    if ctx.quick or ctx.backend != "cuda":
        return []
    return [(1 << (lg - 16), 64, 1024) for lg in range(16, 29, 2)]


def runs(ctx: Context) -> list[Run]:
    folder = ctx.runs_dir("reduce-bench")
    opts = {"backend": ctx.backend, ("quick" if ctx.quick else "bench"): True}
    out = [make_run("reduce-bench", folder, f"bench-{ctx.size_label}", opts,
                    match_keys=["backend"], ok_status=("ok",), label=f"reduce-bench {ctx.size_label}")]
    for e in sweep_extents(ctx):
        ext = ",".join(map(str, e))
        opts = {"backend": ctx.backend, "suite": "openacc", "extents": ext}
        out.append(make_run("reduce-bench", folder, f"openacc-{'x'.join(map(str, e))}", opts,
                            ok_status=("ok",), label=f"reduce-bench openacc {ext}"))
    for run in out:
        run.match["quick"] = ctx.quick  # recorded by the bench: a quick table never stands in for a full one
        run.options["csv"] = str(run.path.with_suffix(".csv"))
        run.extra_files = [run.path.with_suffix(".csv")]
    return out


def _num(v) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.nan


def load_rows(path) -> list[dict]:
    """The bench's CSV rows with numbers parsed; rows without a positive finite bandwidth dropped."""
    rows = []
    for r in report.read_csv(path):
        d = dict(r)
        for k in ("n", "input_bytes", "moved_bytes", "time_us", "call_us", "gbs", "vs_ceiling", "vs_ref"):
            d[k] = _num(r.get(k))
        # the CSV prints 6 significant digits: the exact size is n x the element size
        if math.isfinite(d["n"]) and d.get("type") in TYPE_BYTES:
            d["input_bytes"] = d["n"] * TYPE_BYTES[d["type"]]
        if not math.isfinite(d["gbs"]) and d["input_bytes"] > 0 and d["time_us"] > 0:
            d["gbs"] = d["input_bytes"] / (d["time_us"] * 1e3)
        if math.isfinite(d["gbs"]) and d["gbs"] > 0:
            rows.append(d)
    return rows


def _is_cub(name: str) -> bool:
    return name.lower().startswith("cub")


def analyse(ctx: Context, runs: list[Run]) -> dict:
    run = runs[0]
    rows = [row for r in runs for row in load_rows(r.path.with_suffix(".csv"))]
    root = h5read.read_attrs(run.path)
    backend = root.get("backend", ctx.backend)
    ceiling = _num(root.get("ceiling_gbs"))
    ceiling = ceiling if math.isfinite(ceiling) and ceiling > 0 else None
    ceiling_name = root.get("ceiling", "copy bandwidth")

    # (a) full reductions against size: suite sweep (CUDA) or cpu (CPU)
    full = defaultdict(list)
    for r in rows:
        if r["suite"] in ("sweep", "cpu") and r["levels"] == FULL:
            full[(r["name"], r["op"], r["type"])].append((r["input_bytes"], r["gbs"]))
    # (b) level sets against size: suite shapes (several shapes per size) and levels (one shape)
    per_level = defaultdict(lambda: defaultdict(list))
    for r in rows:
        if r["suite"] in ("shapes", "levels", "openacc") and r["op"] in ("sum", "+") and r["type"] == "float" \
                and not _is_cub(r["name"]):
            per_level[r["levels"]][r["input_bytes"]].append(r["gbs"])
    # (c) the ladder of strategies (one size)
    ladder = [(r["name"], r["gbs"], r["input_bytes"]) for r in rows if r["suite"] == "ladder"]

    panels = [p for p, has in (("full", full), ("levels", per_level), ("ladder", ladder)) if has]
    fig, axes = plotting.subplots(1, max(1, len(panels)), width=5.4, height=4.4)
    for ax, panel in zip(axes[0], panels or ["full"]):
        if panel == "full":
            color = {nm: f"C{j}" for j, nm in enumerate(sorted({k[0] for k in full if not _is_cub(k[0])}))}
            for (name, op, typ), pts in sorted(full.items()):
                pts = sorted(pts)
                cub = _is_cub(name)
                ax.loglog([p[0] for p in pts], [p[1] for p in pts], marker="o" if op == "sum" else "s", ms=3,
                          ls="--" if op != "sum" else "-", color="k" if cub else color[name],
                          lw=2 if cub else 1.4, label=f"{'cub::DeviceReduce' if cub else name} {op} ({typ})")
            ax.set_title(f"full reduction (all levels), {backend}")
            ax.set_xlabel("input size (bytes)")
        elif panel == "levels":
            for j, lv in enumerate([x for x in LEVEL_SETS if x in per_level] +
                                   sorted(set(per_level) - set(LEVEL_SETS))):
                xs = sorted(per_level[lv])
                med = [statistics.median(per_level[lv][x]) for x in xs]
                lo = [m - min(per_level[lv][x]) for m, x in zip(med, xs)]
                hi = [max(per_level[lv][x]) - m for m, x in zip(med, xs)]
                # small horizontal offsets keep the bars of different level sets apart
                xo = [x * 1.06 ** (j - 3) for x in xs]
                ax.errorbar(xo, med, yerr=[lo, hi], marker="o", ms=3, capsize=2, lw=1.2, color=f"C{j}", label=lv)
            cub = sorted(pts for (name, op, _), pts in full.items() if _is_cub(name) and op == "sum")
            if cub:
                c = sorted(cub[0])
                ax.plot([p[0] for p in c], [p[1] for p in c], "k-", lw=2, label="cub::DeviceReduce sum")
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_title("float sum by level set (median over shapes, bars: range)")
            ax.set_xlabel("input size (bytes)")
        else:
            names = [x[0] for x in ladder]
            vals = [x[1] for x in ladder]
            colors = ["k" if _is_cub(nm) else "C0" for nm in names]
            ax.barh(range(len(names)), vals, color=colors)
            ax.set_yticks(range(len(names)), names)
            ax.invert_yaxis()
            ax.set_xscale("log")
            size = ladder[0][2]
            ax.set_title(f"strategy ladder, float sum of {size / 4:.0f} elements ({size / 2**20:.0f} MiB)")
            ax.set_xlabel("bandwidth (GB/s of input read)")
            ax.set_ylabel("strategy")
            if ceiling:
                ax.axvline(ceiling, color="r", ls="--", lw=1.2, label=f"ceiling {ceiling:.0f} GB/s")
                ax.legend(fontsize=7, loc="lower right")
            continue
        if ceiling:
            ax.axhline(ceiling, color="r", ls="--", lw=1.2, label=f"ceiling {ceiling:.0f} GB/s")
        ax.set_ylabel("bandwidth (GB/s of input read)")
        ax.legend(fontsize=7)
    fig.suptitle(f"reduce-bench ({backend}); ceiling: {ceiling_name}", fontsize=9)
    plotting.save(fig, ctx.out / "reduce_bandwidth.png")

    # time_us: the bench's headline time (CUDA-graph replays on the GPU); call_us: per plain call
    cols = ["suite", "name", "levels", "op", "type", "shape", "n", "input_bytes", "time_us", "call_us", "gbs"]
    report.write_csv(ctx.out / "reduce_bandwidth.csv", cols + ["pct_ceiling"],
                     [[r.get(c) for c in cols] + [100 * r["gbs"] / ceiling if ceiling else None] for r in rows])

    # Summary: each series at its largest size.
    def pct(g):
        return 100 * g / ceiling if ceiling else None

    table, best = [], {}
    for (name, op, typ), pts in sorted(full.items()):
        b, g = max(pts)
        label = f"{name} {op} {typ}"
        table.append(["full reduction", label, int(b), g, pct(g)])
        best[label] = g
    for lv in [x for x in LEVEL_SETS if x in per_level]:
        b = max(per_level[lv])
        vals = per_level[lv][b]
        table.append(["level set (float sum)", f"{lv} (median of {len(vals)}, worst {min(vals):.4g})",
                      int(b), statistics.median(vals), pct(statistics.median(vals))])
        best[lv] = statistics.median(vals)
    for name, g, b in ladder:
        table.append(["ladder", name, int(b), g, pct(g)])
        best[f"ladder {name}"] = g
    lines = [f"## reduce-bandwidth ({ctx.size_label}, backend {backend})",
             "",
             "reduce-bench's bandwidth (GB/s of input read) at the largest size of each series; the ceiling "
             f"({ceiling_name}) was measured in the same run: "
             f"{report.fmt(ceiling) if ceiling else 'not recorded'} GB/s.",
             "",
             report.md_table(["series", "name", "bytes", "GB/s", "% of ceiling"], table),
             "",
             "Figure: `reduce_bandwidth.png`; table: `reduce_bandwidth.csv` (every row of the bench)."]
    report.write_section(ctx.out, "reduce-bandwidth", "\n".join(lines))
    return {"ceiling": ceiling, "rows": len(rows), "best": best,
            "finite": all(math.isfinite(r["gbs"]) for r in rows)}
