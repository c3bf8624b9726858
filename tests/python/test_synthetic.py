"""Every experiment's analysis on synthetic result files in the apps' layout, with known rates:
the tables, figures and summary are written and the fitted orders/slopes come out as built in."""
import math

import h5py
import numpy as np
import pytest

from tally_experiments import cli, heat2d, matmul, mcpi, plotting, reduce_bw, report
from tally_experiments.context import Context
from tally_experiments.runner import Runner


@pytest.fixture(autouse=True)
def figures(monkeypatch):
    """Every figure an analysis saves, checked before it is written: each visible panel has both axes
    labelled, a legend (or bars that are their own labels), and a log scale on the rate axis."""
    saved = []
    real_save = plotting.save

    def checking_save(fig, path):
        for ax in fig.axes:
            if not ax.get_visible():
                continue
            assert ax.get_xlabel() and ax.get_ylabel(), (path.name, ax.get_title())
            assert ax.get_legend() is not None or ax.patches, (path.name, ax.get_title())
            assert "log" in (ax.get_xscale(), ax.get_yscale()), (path.name, ax.get_title())
        saved.append(path)
        return real_save(fig, path)

    monkeypatch.setattr(plotting, "save", checking_save)
    return saved


@pytest.fixture
def ctx(tmp_path):
    return Context(out=tmp_path / "out", runner=Runner(tmp_path / "nobuild", verbose=False),
                   backend="cpu", quick=True)


def write_root(f, run, **extra):
    f.attrs["app"] = run.app
    for k, v in {**run.match, **extra}.items():
        f.attrs[k] = v


def fake_sweeps(h, tol):
    """Jacobi's increment max|u_new - u| of the slowest mode: (h^2/4) x a PDE residual ~ rho^k."""
    return math.ceil(math.log(tol / (5 * h * h)) / math.log(math.cos(math.pi * h)))


def fake_errors(h):
    return 0.3 * h ** 2 * (1 + 2 * h), 0.15 * h ** 2  # max (with an h^3 term), L2


def slope_of(x, y):
    """The least-squares slope of log y against log x, computed here apart from fits.power_fit."""
    return float(np.polyfit(np.log(np.asarray(x, dtype=float)), np.log(np.asarray(y, dtype=float)), 1)[0])


def fake_heat2d(run):
    n = run.options["nx"]
    h = 1.0 / (n - 1)
    with h5py.File(run.path, "w") as f:
        if run.options["mode"] == "steady":
            rho = math.cos(math.pi * h)
            tol = run.options["tol"]
            iters = fake_sweeps(h, tol)
            ce = run.options["check-every"]
            it = np.arange(ce, iters + ce, ce)
            f["residual/iteration"] = it
            f["residual/value"] = 5 * h * h * rho ** it
            write_root(f, run, h=h, iterations=iters, status="converged", final_residual=tol * 0.99)
        else:
            write_root(f, run, h=h, iterations=run.options["max-iter"], status="t-end",
                       final_residual=1e-5)
        g = f.create_group("errors")
        g.attrs["analytic_max"], g.attrs["analytic_l2"] = fake_errors(h)


def test_heat2d_refinement_and_iterations(ctx, figures):
    runs = heat2d.refinement_runs(ctx)
    for r in runs:
        r.path.parent.mkdir(parents=True, exist_ok=True)
        fake_heat2d(r)
    ctx.out.mkdir(parents=True, exist_ok=True)
    found = heat2d.refinement_analyse(ctx, runs)
    # The finest pair (h, h/2): the L2 error is exactly second order; the max error's h^3 term adds
    # log2((1 + 2h) / (1 + h)) to the order.
    h = 1.0 / (max(heat2d.refinement_sizes(True)["transient"]) - 1) * 2
    assert found["steady_l2_last_order"] == pytest.approx(2.0, abs=1e-12)
    assert found["transient_max_last_order"] == pytest.approx(2 + math.log2((1 + 2 * h) / (1 + h)), abs=1e-12)
    rows = report.read_csv(ctx.out / "heat2d_refinement.csv")
    assert len(rows) == len(runs) and rows[0]["order_max"] == ""  # no order for the coarsest grid
    assert (ctx.out / "heat2d_refinement.png").stat().st_size > 10_000
    assert [p.name for p in figures] == ["heat2d_refinement.png"]

    runs = heat2d.iteration_runs(ctx)
    for r in runs:
        fake_heat2d(r)
    found = heat2d.iteration_analyse(ctx, runs)
    for series in ("scaled", "fixed"):
        pts = [(n - 1, fake_sweeps(1.0 / (n - 1), tol)) for s, n, tol in heat2d.iteration_series(ctx) if s == series]
        assert found[f"{series}_slope"] == pytest.approx(slope_of(*zip(*pts)), abs=1e-12), series
    assert found["slope"] == found["scaled_slope"]
    assert len(report.read_csv(ctx.out / "heat2d_residuals.csv")) > 100
    section = (ctx.out / "heat2d-iterations.md").read_text()
    assert "Fitted exponent" in section and "| n |" in section


def test_mcpi(ctx):
    rng = np.random.default_rng(11)
    runs = mcpi.runs(ctx)
    errors = {}  # generator -> the |error| at each of mcpi.KS, one list per run
    for r in runs:
        r.path.parent.mkdir(parents=True, exist_ok=True)
        batch, gen = r.options["batch"], r.options["generator"]
        # running estimates with |error| ~ sigma(N) (pseudo) or 2/N (sobol) at every N = k * batch
        cum_n = batch * np.arange(1, 1001, dtype=np.int64)
        err = (2.0 / cum_n if gen == "sobol" else mcpi.sigma(cum_n)) * rng.normal(size=cum_n.size)
        cum_hits = np.round(cum_n * (math.pi + err) / 4).astype(np.int64)
        with h5py.File(r.path, "w") as f:
            write_root(f, r, hits=int(cum_hits[-1]), status="ok")
            f["batches/n"] = np.full(1000, batch, dtype=np.int64)
            f["batches/hits"] = np.diff(cum_hits, prepend=0)
        k = np.array(mcpi.KS) - 1
        errors.setdefault(gen, []).append(np.abs(4.0 * cum_hits[k] / cum_n[k] - math.pi))
    ctx.out.mkdir(parents=True, exist_ok=True)
    slopes = mcpi.analyse(ctx, runs)
    # The fitted slope of the mean |error| over the replicates, as built into the files above.
    n = 1000 * np.array(mcpi.KS)
    for gen, errs in errors.items():
        assert slopes[gen] == pytest.approx(slope_of(n, np.mean(errs, axis=0)), abs=1e-12), gen
    rows = report.read_csv(ctx.out / "mcpi_convergence.csv")
    assert len(rows) == len(runs) * len(mcpi.KS)
    assert sorted({int(r["n"]) for r in rows}) == [1000 * k for k in mcpi.KS]
    assert len(report.read_csv(ctx.out / "mcpi_slopes.csv")) == 4


def test_mcpi_full_study_joins_its_two_segments(tmp_path):
    full = Context(out=tmp_path, runner=Runner(tmp_path, verbose=False), quick=False)
    runs = mcpi.runs(full)
    assert len(runs) == 4 * mcpi.replicates(False) * 2
    assert {r.options["n"] for r in runs} == {10 ** 6, 10 ** 9}
    sobol = [r for r in runs if r.options["generator"] == "sobol"]
    assert max(r.options["offset"] + r.options["n"] for r in sobol) <= mcpi.SOBOL_POINTS


@pytest.mark.parametrize("with_cublas", [False, True])
def test_matmul(ctx, with_cublas):
    runs = matmul.runs(ctx)
    for r in runs:
        r.path.parent.mkdir(parents=True, exist_ok=True)
        o = r.options
        flops = 2.0 * o["m"] * o["n"] * o["k"]
        u = matmul.EPS[o["precision"]]
        # a GPU run (with_cublas) has the tensor-core level and cuBLAS's fast-TF32 mode too
        levels = matmul.LEVELS if with_cublas else [lv for lv in matmul.LEVELS if lv != "tiled-tc"]
        with h5py.File(r.path, "w") as f:
            write_root(f, r, levels=",".join(levels), status="ok")
            for j, lv in enumerate(levels):
                g = f.create_group(f"levels/{lv}")
                t = flops / (1e9 * (1 + j)) * (1 + 64 / o["m"])
                g.attrs.update({"time_s": t, "gflops": flops / t / 1e9, "gbps": 1.0, "pct_cublas": 10.0,
                                "rel_error": u * math.sqrt(o["k"]) * (1 + 0.1 * j),
                                "tolerance": u * o["k"], "passed": True})
            if with_cublas:
                f.create_group("cublas").attrs.update({"time_s": flops / 1e11, "gflops": 100.0})
                f.create_group("cublas_tf32").attrs.update({"time_s": flops / 2e11, "gflops": 200.0,
                                                            "rel_error": 1e-4, "passed": False})
            f.create_group("eigen").attrs.update({"time_s": flops / 5e9, "gflops": 5.0})
    ctx.out.mkdir(parents=True, exist_ok=True)
    found = matmul.analyse(ctx, runs)
    assert found["all_passed"]
    assert found["error_slopes"]["vector"] == pytest.approx(0.5, abs=1e-6)
    assert ("cuBLAS" in found["best_gflops"]) == with_cublas
    assert ("cuBLAS TF32" in found["best_gflops"]) == with_cublas
    assert ("tiled-tc" in found["best_gflops"]) == with_cublas
    perf = report.read_csv(ctx.out / "matmul_levels.csv")
    # levels (the five and ozaki), Eigen; on the GPU the tensor-core level, cuBLAS and cuBLAS TF32
    assert len(perf) == len(matmul.perf_sizes(True)) * (6 + 1 + 3 * with_cublas)


HEADER = "suite,name,levels,op,type,shape,n,input_bytes,moved_bytes,time_us,gbs,vs_ceiling,vs_ref,ref"


def bench_row(suite, name, levels, op, typ, shape, n, gbs):
    b = 4 * n
    return f"{suite},{name},{levels},{op},{typ},{shape},{n},{b},{b},{b / (gbs * 1e3):.6g},{gbs:.6g},nan,nan,\"\""


def fake_bench(ctx, backend, lines, ceiling):
    (run,) = reduce_bw.runs(ctx)
    run.path.parent.mkdir(parents=True, exist_ok=True)
    with h5py.File(run.path, "w") as f:
        f.attrs.update({"app": "reduce-bench", "backend": backend, "quick": True, "status": "ok",
                        "ceiling_gbs": ceiling, "ceiling": "cudaMemcpy D2D 2^30 B (read + write)"})
    run.path.with_suffix(".csv").write_text("\n".join([HEADER] + lines) + "\n")
    return run


def test_reduce_bandwidth_cuda_layout(ctx):
    ctx.backend = "cuda"
    lines = []
    for e in range(10, 31, 2):
        n = 2 ** e
        sat = 1 - 0.9 * 2 ** (10 - e)
        for op in ("sum", "max"):
            lines.append(bench_row("sweep", "production", "gang+worker+vector", op, "float", f"2^{e}", n, 3500 * sat))
            lines.append(bench_row("sweep", "cub", "gang+worker+vector", op, "float", f"2^{e}", n, 3000 * sat))
    for i, st in enumerate(("atomic", "interleaved_divergent", "warp_shuffle", "production", "cub")):
        lines.append(bench_row("ladder", st, "gang+worker+vector", "sum", "float", "2^20", 2 ** 20, 100 * (i + 1)))
    for e in (22, 24):
        for j, shape in enumerate(("64x1x65536", "64x64x1024", "1x4096x1024")):
            for lv in reduce_bw.LEVEL_SETS:
                lines.append(bench_row("shapes", "production", lv, "sum", "float", shape, 2 ** e, 3000 + 100 * j))
    lines.append(bench_row("levels", "production", "worker", "prod", "int32", "16x64x256", 2 ** 18, 50))
    run = fake_bench(ctx, "cuda", lines, 4000.0)
    assert run.reusable()
    ctx.out.mkdir(parents=True, exist_ok=True)
    found = reduce_bw.analyse(ctx, [run])
    assert found["ceiling"] == 4000.0 and found["finite"]
    assert found["best"]["cub sum float"] == pytest.approx(3000 * (1 - 0.9 * 2 ** -20), rel=1e-5)
    assert found["best"]["worker+vector"] == pytest.approx(3100)  # the median over the 3 shapes
    assert found["best"]["ladder warp_shuffle"] == pytest.approx(300)
    rows = report.read_csv(ctx.out / "reduce_bandwidth.csv")
    assert len(rows) == len(lines) and float(rows[0]["pct_ceiling"]) > 0


def test_reduce_bandwidth_full_cuda_sweeps_level_sets_with_the_openacc_suite(tmp_path):
    ctx = Context(out=tmp_path / "out", runner=Runner(tmp_path, verbose=False), backend="cuda", quick=False)
    runs = reduce_bw.runs(ctx)
    assert [r.options.get("extents") for r in runs[1:]] == [f"{1 << k},64,1024" for k in range(0, 13, 2)]
    assert all(r.match["quick"] is False and r.options["csv"].endswith(".csv") for r in runs)
    assert reduce_bw.sweep_extents(Context(out=tmp_path, runner=ctx.runner, backend="auto", quick=False)) == []
    for r in runs:
        r.path.parent.mkdir(parents=True, exist_ok=True)
        with h5py.File(r.path, "w") as f:
            f.attrs.update({"app": "reduce-bench", "backend": "cuda", "quick": False, "status": "ok",
                            "ceiling_gbs": 4000.0, "ceiling": "copy"})
        lines = [bench_row("sweep", "production", "gang+worker+vector", "sum", "float", "2^20", 2 ** 20, 2000)]
        if "extents" in r.options:
            ng = int(r.options["extents"].split(",")[0])
            n = ng * 64 * 1024
            for lv in ("gang", "worker", "vector", "gang+worker", "worker+vector", "gang+worker+vector"):
                for typ in ("int", "float", "double"):
                    lines.append(bench_row("openacc", "production", lv, "+", typ, f"{ng}x64x1024", n,
                                           3000 * (1 - 1 / ng) + 100))
        r.path.with_suffix(".csv").write_text("\n".join([HEADER] + lines) + "\n")
    ctx.out.mkdir(parents=True, exist_ok=True)
    found = reduce_bw.analyse(ctx, runs)
    assert found["best"]["worker+vector"] == pytest.approx(3000 * (1 - 1 / 4096) + 100)
    text = (ctx.out / "reduce-bandwidth.md").read_text()
    assert "worker+vector (median of 1" in text


def test_reduce_bandwidth_cpu_layout(ctx):
    lines = []
    for e in (16, 20, 22):
        for name, g in (("tally cpu", 20.0), ("Eigen Map", 8.0), ("Eigen Tensor pool", 18.0)):
            for op in ("sum", "max"):
                lines.append(bench_row("cpu", name, "gang+worker+vector", op, "float", f"2^{e}", 2 ** e, g))
    run = fake_bench(ctx, "cpu", lines, 18.0)
    ctx.out.mkdir(parents=True, exist_ok=True)
    found = reduce_bw.analyse(ctx, [run])
    assert found["best"]["tally cpu sum float"] == pytest.approx(20.0) and found["rows"] == len(lines)


def test_summary_gathers_sections_in_order(tmp_path):
    (tmp_path / "mcpi-convergence.md").write_text("## mcpi\n")
    (tmp_path / "heat2d-refinement.md").write_text("## heat\n")
    text = report.write_summary(tmp_path, "# head").read_text()
    assert text.index("## heat") < text.index("## mcpi") and text.startswith("# head")
    assert set(report.SECTIONS) == set(cli.EXPERIMENTS)


def test_provenance_line_names_builds_and_flags_mixed_revisions(tmp_path):
    from tally_experiments.runner import make_run

    runs = []
    for i, rev in enumerate(("abc1234", "abc1234", "def5678")):
        r = make_run("heat2d", tmp_path, f"r{i}", {"nx": i})
        with h5py.File(r.path, "w") as f:
            f.create_group("provenance").attrs.update({"git_revision": rev, "project_version": "0.1.0",
                                                        "compiler": "GNU 13", "build_type": "Release",
                                                        "device": "cpu", "host": "h"})
            if i == 2:
                f.create_group("device").attrs["name"] = "NVIDIA H100"
        runs.append(r)
    line = cli.provenance_line(runs[:2])
    assert "revision abc1234;" in line and "MIXED" not in line and "device cpu" in line
    line = cli.provenance_line(runs)
    assert "abc1234, def5678" in line and "MIXED" in line and "NVIDIA H100" in line
    assert cli.provenance_line([make_run("heat2d", tmp_path, "none", {})]) == "Provenance: not recorded."


def test_scaling_efficiency_from_synthetic_runs(ctx, figures):
    """Ideal strong scaling (t = t1 / R) and a weak series losing 10% per doubling come out as built."""
    from tally_experiments import scaling

    runs = scaling.runs(ctx)
    assert {r.ranks for r in runs} == {1, 2, 3}
    for r in runs:
        r.path.parent.mkdir(parents=True, exist_ok=True)
        with h5py.File(r.path, "w") as f:
            write_root(f, r, status="max-iter" if r.app == "heat2d" else "ok")
            f.create_group("ranks").attrs["ranks"] = r.ranks
            if r.app == "heat2d":
                weak = r.options["ny"] != r.options["nx"]
                f.create_group("timings").attrs["per_sweep"] = 1e-3 / 0.9 ** math.log2(r.ranks) if weak \
                    else 1e-3 / r.ranks
            else:
                f.create_group("throughput").attrs["samples_per_s"] = 1e9 * r.ranks
    assert all(r.reusable() for r in runs)
    found = scaling.analyse(ctx, runs)
    for prec in ("float", "double"):
        for ranks in (1, 2, 3):
            assert found[f"heat2d_strong_{prec}_r{ranks}_efficiency"] == pytest.approx(1.0)
        assert found[f"heat2d_weak_{prec}_r2_efficiency"] == pytest.approx(0.9)
    assert found["mcpi_strong_-_r3_efficiency"] == pytest.approx(1.0)
    assert (ctx.out / "scaling.csv").is_file() and (ctx.out / "scaling.md").is_file()
    assert [p.name for p in figures] == ["scaling.png"]
