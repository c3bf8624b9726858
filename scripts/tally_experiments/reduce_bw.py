"""reduce-bandwidth: reduce-bench's GB/s against input size for each level set and strategy, with
CUB and the device copy bandwidth (the ceiling) as reference lines.

reduce-bench writes its table as CSV (--csv) next to the HDF5 file; this module reads the CSV with
tolerant column names (the bench's own layout is the truth) and draws one panel per family of rows:
level sets (the production path) and the strategy ladder.
"""
from __future__ import annotations

import math
from collections import defaultdict

from . import h5read, plotting, report
from .context import Context
from .runner import Run, make_run

# Column name candidates, first match wins (lower-cased).
COLUMNS = {
    "levels": ["levels", "level_set", "level", "levelset"],
    "strategy": ["strategy", "impl", "implementation", "kernel"],
    "op": ["op", "operator"],
    "type": ["type", "dtype", "input_type", "t"],
    "n": ["n", "elements", "size", "count"],
    "bytes": ["bytes", "input_bytes"],
    "time_us": ["time_us", "us", "median_us", "time"],
    "gbps": ["gbps", "gb_s", "gb/s", "bandwidth_gbs", "bandwidth"],
    "suite": ["suite", "table", "section"],
    "shape": ["shape", "extents"],
}
TYPE_BYTES = {"int32": 4, "int": 4, "float": 4, "int64": 8, "double": 8}


def runs(ctx: Context) -> list[Run]:
    opts = {"backend": ctx.backend, ("quick" if ctx.quick else "bench"): True}
    run = make_run("reduce-bench", ctx.runs_dir("reduce-bench"), f"bench-{ctx.size_label}", opts,
                   match_keys=["backend"], label=f"reduce-bench {ctx.size_label}")
    run.options["csv"] = str(run.path.with_suffix(".csv"))
    run.extra_files = [run.path.with_suffix(".csv")]
    return [run]


def _pick(header: list[str], key: str) -> str | None:
    lower = {h.lower().strip(): h for h in header}
    for cand in COLUMNS[key]:
        if cand in lower:
            return lower[cand]
    return None


def normalise(rows: list[dict[str, str]]) -> list[dict]:
    """CSV rows -> dicts with keys levels, strategy, op, type, n, bytes, gbps, time_us, suite
    (missing columns become None; bytes derived from n and the type when absent)."""
    if not rows:
        return []
    header = list(rows[0].keys())
    cols = {k: _pick(header, k) for k in COLUMNS}
    out = []
    for r in rows:
        d = {k: (r.get(c) if c else None) for k, c in cols.items()}
        for k in ("n", "bytes", "time_us", "gbps"):
            try:
                d[k] = float(d[k]) if d[k] not in (None, "") else None
            except ValueError:
                d[k] = None
        if d["bytes"] is None and d["n"] is not None:
            d["bytes"] = d["n"] * TYPE_BYTES.get((d["type"] or "float").lower(), 4)
        if d["gbps"] is None and d["bytes"] and d["time_us"]:
            d["gbps"] = d["bytes"] / (d["time_us"] * 1e3)
        out.append(d)
    return out


def copy_ceiling(path) -> float | None:
    """The copy bandwidth reduce-bench measured in the same run (GB/s), from any attribute whose
    name mentions copy and GB/s."""
    import h5py

    found: list[float] = []

    def visit(_name, obj):
        for k, v in obj.attrs.items():
            kl = k.lower()
            if "copy" in kl and ("gb" in kl or "bandwidth" in kl):
                try:
                    found.append(float(h5read.plain(v)))
                except (TypeError, ValueError):
                    pass

    with h5py.File(path, "r") as f:
        visit("/", f)
        f.visititems(visit)
    return max(found) if found else None


def analyse(ctx: Context, runs: list[Run]) -> dict:
    run = runs[0]
    rows = normalise(report.read_csv(run.path.with_suffix(".csv")))
    root = h5read.read_attrs(run.path)
    backend = root.get("backend", ctx.backend)
    ceiling = copy_ceiling(run.path)
    rows = [r for r in rows if r["gbps"] is not None and r["bytes"]]

    # The figure: float sums (the bench's headline); one line per level set / strategy.
    def is_headline(r):
        return (r["op"] or "sum").lower() in ("sum", "+") and (r["type"] or "float").lower() == "float"

    sel = [r for r in rows if is_headline(r)] or rows
    series: dict[str, dict[str, list]] = {"level set": defaultdict(list), "strategy": defaultdict(list)}
    cub = defaultdict(list)
    for r in sel:
        strat = (r["strategy"] or "production").lower()
        if strat == "cub":
            cub[r["bytes"]].append(r["gbps"])
        elif strat == "copy":
            continue
        elif strat == "production" and r["levels"]:
            series["level set"][r["levels"]].append((r["bytes"], r["gbps"]))
        else:
            series["strategy"][strat].append((r["bytes"], r["gbps"]))
    panels = [k for k in series if series[k]]
    fig, axes = plotting.subplots(1, max(1, len(panels)), width=5.6, height=4.4)
    for ax, kind in zip(axes[0], panels or ["level set"]):
        for name, pts in sorted(series[kind].items()):
            pts = sorted(pts)
            ax.loglog([p[0] for p in pts], [p[1] for p in pts], "o-", ms=3, label=name)
        if cub:
            xs = sorted(cub)
            ax.loglog(xs, [max(cub[x]) for x in xs], "k-", lw=2, label="cub::DeviceReduce")
        if ceiling:
            ax.axhline(ceiling, color="r", ls="--", lw=1.2, label=f"copy bandwidth {ceiling:.0f} GB/s")
        ax.set_xlabel("input size (bytes)")
        ax.set_ylabel("bandwidth (GB/s of input read)")
        ax.set_title(f"reduce-bench float sum by {kind} ({backend})")
        ax.legend(fontsize=7)
    plotting.save(fig, ctx.out / "reduce_bandwidth.png")

    cols = ["suite", "levels", "strategy", "op", "type", "n", "bytes", "time_us", "gbps"]
    report.write_csv(ctx.out / "reduce_bandwidth.csv", cols + ["pct_copy"],
                     [[r[c] for c in cols] + [100 * r["gbps"] / ceiling if ceiling else None] for r in rows])
    # Summary table: the best bandwidth of each series at the largest size measured.
    table = []
    for kind in panels:
        for name, pts in sorted(series[kind].items()):
            b, g = max(pts)
            table.append([kind, name, int(b), g, 100 * g / ceiling if ceiling else None])
    if cub:
        b = max(cub)
        table.append(["reference", "cub::DeviceReduce", int(b), max(cub[b]),
                      100 * max(cub[b]) / ceiling if ceiling else None])
    lines = [f"## reduce-bandwidth ({ctx.size_label}, backend {backend})",
             "",
             "reduce-bench's bandwidth (GB/s of input read) for float sums, at the largest size measured; "
             f"copy ceiling measured in the same run: {report.fmt(ceiling) if ceiling else 'not recorded'} GB/s.",
             "",
             report.md_table(["series", "name", "bytes", "GB/s", "% of copy"], table),
             "",
             "Figure: `reduce_bandwidth.png`; table: `reduce_bandwidth.csv` (every row of the bench)."]
    report.write_section(ctx.out, "reduce-bandwidth", "\n".join(lines))
    return {"ceiling": ceiling, "rows": len(rows),
            "best": {row[1]: row[3] for row in table}, "finite": all(math.isfinite(r["gbps"]) for r in rows)}

