"""The command line: experiments.py <experiment> [--backend B] [--quick] [--dry-run] [--out DIR] ..."""
from __future__ import annotations

import argparse
import datetime as _dt
import sys
from pathlib import Path
from typing import Callable

from . import h5read, heat2d, heat2d_blocking, matmul, mcpi, reduce_bw, report, scaling, tealeaf
from .context import Context
from .runner import REPO_ROOT, ExperimentError, MissingExecutable, Run, Runner, default_build_dir

# name -> (what it shows, runs(ctx), analyse(ctx, runs))
EXPERIMENTS: dict[str, tuple[str, Callable[[Context], list[Run]], Callable[[Context, list[Run]], dict]]] = {
    "heat2d-refinement": ("heat2d error vs grid spacing, observed order (steady + transient)",
                          heat2d.refinement_runs, heat2d.refinement_analyse),
    "heat2d-iterations": ("Jacobi sweeps vs grid size, residual histories",
                          heat2d.iteration_runs, heat2d.iteration_analyse),
    "heat2d-blocking": ("heat2d time per sweep vs sweeps per pass t (temporal blocking), two grid sizes",
                        heat2d_blocking.runs, heat2d_blocking.analyse),
    "tealeaf": ("heat2d --deck on TeaLeaf's decks: iterations per step and time per iteration of CG, Chebyshev, "
                "PPCG; temperatures against TeaLeaf's",
                tealeaf.runs, tealeaf.analyse),
    "mcpi-convergence": ("mcpi |error| vs N per generator, fitted slopes, sigma band",
                         mcpi.runs, mcpi.analyse),
    "matmul-levels": ("matmul GFLOP/s vs size per level + cuBLAS + Eigen; error vs K",
                      matmul.runs, matmul.analyse),
    "reduce-bandwidth": ("reduce-bench GB/s vs size per level set and strategy, CUB, copy ceiling",
                         reduce_bw.runs, reduce_bw.analyse),
    "scaling": ("heat2d and mcpi across MPI ranks: strong and weak scaling, parallel efficiency",
                scaling.runs, scaling.analyse),
}
DEFAULT_OUT = REPO_ROOT / "results" / "experiments"


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--backend", choices=["auto", "cuda", "cpu"], default="auto",
                        help="backend passed to every app (default: auto)")
    common.add_argument("--quick", action="store_true",
                        help="small sizes that finish in seconds on a laptop CPU")
    common.add_argument("--dry-run", action="store_true",
                        help="list the runs (reuse or run, and why) and run nothing")
    common.add_argument("--out", type=Path, default=DEFAULT_OUT,
                        help=f"output folder for tables, figures, summary.md and runs/ (default: {DEFAULT_OUT})")
    common.add_argument("--build-dir", type=Path, default=None,
                        help="CMake build tree with the apps (default: $TALLY_BUILD_DIR, else build/default, "
                             "else build/cpu)")
    common.add_argument("--no-reuse", action="store_true",
                        help="run everything again, even when a result file with the same parameters exists")
    common.add_argument("--seed", type=int, default=20260101,
                        help="base seed (mcpi replicates use seed, seed+1, ...)")
    common.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    common.add_argument("--subprocess", action="store_true",
                        help="run every point through its executable (default: one-rank runs go through the "
                             "build tree's Python module where it writes the same result file)")
    common.add_argument("--ranks", type=lambda t: [int(x) for x in t.split(",")], default=None,
                        help="rank counts for scaling, e.g. 1,2,4 (default: 1,2; --quick: 1,2,3); "
                             "runs of several ranks start under $TALLY_MPIEXEC (default mpiexec)")

    p = argparse.ArgumentParser(
        prog="experiments.py",
        description="Convergence and performance experiments around the tally apps: runs them, reads "
                    "their HDF5 files, writes a CSV per table, a PNG per figure and summary.md. A result "
                    "file whose recorded parameters match the requested ones is reused (resume a study).",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="example:\n  scripts/experiments.py all --quick --backend cpu --out results/experiments")
    sub = p.add_subparsers(dest="experiment", required=True, metavar="experiment")
    for name, (what, _, _) in EXPERIMENTS.items():
        sub.add_parser(name, parents=[common], help=what, description=what)
    sub.add_parser("all", parents=[common], help="every experiment above", description="every experiment")
    return p


def make_context(args: argparse.Namespace) -> Context:
    runner = Runner(build_dir=args.build_dir or default_build_dir(), dry_run=args.dry_run,
                    reuse=not args.no_reuse, verbose=not args.quiet, in_process=not args.subprocess)
    return Context(out=args.out, runner=runner, backend=args.backend, quick=args.quick, seed=args.seed,
                   ranks=args.ranks)


def run_experiment(ctx: Context, name: str) -> dict | None:
    """Runs (or lists) one experiment; returns what its analysis found (None for a dry run)."""
    _, make_runs, analyse = EXPERIMENTS[name]
    runs = make_runs(ctx)
    if ctx.runner.dry_run:
        print(f"# {name}: {len(runs)} runs")
    ctx.runner.execute(runs)
    if ctx.runner.dry_run:
        return None
    ctx.out.mkdir(parents=True, exist_ok=True)
    found = analyse(ctx, runs)
    section = ctx.out / f"{name}.md"
    if section.is_file():
        section.write_text(section.read_text().rstrip() + "\n\n" + provenance_line(runs) + "\n")
    return found


def provenance_line(runs: list[Run]) -> str:
    """Where the numbers come from: the builds, compilers and devices recorded by the runs (more
    than one revision means a resumed study mixes builds, which the reader should know)."""
    seen: dict[str, set] = {"revision": set(), "compiler": set(), "device": set(), "host": set()}
    version = None
    for r in runs:
        if not r.path.is_file():
            continue
        try:
            p = h5read.read_attrs(r.path, "provenance")
            d = h5read.read_attrs(r.path, "device")
        except OSError:
            continue
        version = version or p.get("project_version")
        seen["revision"].add(str(p.get("git_revision", "?")))
        seen["compiler"].add(f"{p.get('compiler', '?')} {p.get('build_type', '')}".strip())
        seen["device"].add(str(d.get("name") or p.get("device", "?")))
        seen["host"].add(str(p.get("host", "?")))
    if not seen["revision"]:
        return "Provenance: not recorded."
    parts = [f"{k} {', '.join(sorted(v))}" for k, v in seen.items()]
    warn = " (MIXED: the runs come from different builds)" if len(seen["revision"]) > 1 else ""
    return f"Provenance of the runs: tally {version or '?'}; " + "; ".join(parts) + warn + "."


def summary_header(ctx: Context) -> str:
    now = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return (f"# tally experiments\n\nWritten {now} by `scripts/experiments.py` "
            f"({ctx.size_label} sizes, `--backend {ctx.backend}`, build tree `{ctx.runner.build_dir}`). "
            "The apps' result files are under `runs/`; each section names its CSV tables and PNG figures.")


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    ctx = make_context(args)
    names = list(EXPERIMENTS) if args.experiment == "all" else [args.experiment]
    failed: list[str] = []
    for name in names:
        try:
            found = run_experiment(ctx, name)
        except MissingExecutable as e:
            print(f"experiments.py: {name}: {e}", file=sys.stderr)
            failed.append(name)
            continue
        except ExperimentError as e:
            print(f"experiments.py: {name} failed: {e}", file=sys.stderr)
            failed.append(name)
            continue
        if found is not None and not args.quiet:
            print(f"{name}: done ({ctx.out})", file=sys.stderr)
    if not args.dry_run and len(failed) < len(names):
        path = report.write_summary(ctx.out, summary_header(ctx))
        if not args.quiet:
            r = ctx.runner
            print(f"experiments.py: {r.executed} runs executed, {r.reused} reused; summary: {path}",
                  file=sys.stderr)
    if failed:
        print(f"experiments.py: failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0
