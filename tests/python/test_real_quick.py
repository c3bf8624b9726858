"""One real --quick run of each experiment on the CPU backend, each result checked against a bound
derived from the arithmetic (never a window fitted to one machine's numbers):
  heat2d    closed forms of the discrete solutions (five-point Laplacian, explicit Euler), so each
            grid's error is known up to the iteration and rounding error, which is bounded;
  tealeaf   TeaLeaf's published temperatures to 1e-9 relative with CG, Chebyshev and PPCG;
  matmul    the forward-error bound of a dot product in any summation order;
  mcpi      a Bernstein tail bound (pseudo-random points) and the net property of Sobol points.
Skipped (with the reason) when the app is not built in $TALLY_BUILD_DIR (see conftest.py)."""
import math
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest

from conftest import require_app
from tally_experiments import cli, fits, heat2d, report

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "experiments.py"
U64 = 2.0 ** -53  # unit roundoff of double
U32 = 2.0 ** -24  # ... of float
# The closed forms below and the apps' analytic solutions are each a few roundings of values of
# magnitude at most 1 (well under 1e-14 apart): 1e-12 covers their difference with room to spare.
EVAL = 1e-12


def gamma(n, u):
    """Higham's gamma_n = n u / (1 - n u): the relative error bound of n rounded operations."""
    assert n * u < 1
    return n * u / (1 - n * u)


@pytest.fixture(scope="module")
def out(tmp_path_factory):
    return tmp_path_factory.mktemp("experiments")


def run(name, out, build_dir):
    args = cli.build_parser().parse_args([name, "--quick", "--backend", "cpu", "--quiet", "--out", str(out),
                                          "--build-dir", str(build_dir)])
    ctx = cli.make_context(args)
    found = cli.run_experiment(ctx, name)
    for ext in (".md",):
        assert (out / f"{name}{ext}").is_file()
    return found, ctx


def attrs(path, group="/"):
    with h5py.File(path, "r") as f:
        return {k: (v.decode() if isinstance(v, bytes) else v) for k, v in f[group].attrs.items()}


# ---- heat2d: the discrete solutions in closed form -------------------------------------------------
# The steady problem (u = sin(pi x) on top, 0 elsewhere) is solved by the five-point scheme exactly by
# U = sin(pi x) sinh(mu y) / sinh(mu) with cosh(mu h) = 2 - cos(pi h); the transient mode
# sin(pi x) sin(pi y) is multiplied each explicit step by g = 1 - 8 r sin^2(pi h / 2), r = alpha dt / h^2.
# So each grid's discretisation error max|U - u| (and its RMS) is known to rounding; what the app
# reports differs from it by at most max|u_app - U|, bounded below.

def grid(n):
    h = 1.0 / (n - 1)
    x = np.arange(n) * h  # heat2d's nodes; the square: y is the same
    return h, x


def steady_discrete_errors(n):
    """(max, RMS over all nodes) of U - u for the steady problem on n x n nodes."""
    h, x = grid(n)
    z = 2.0 * math.sin(math.pi * h / 2) ** 2                 # cosh(mu h) = 1 + z
    mu = math.log1p(z + math.sqrt(z * (2.0 + z))) / h        # acosh(1 + z) without cancellation
    sx = np.sin(math.pi * x)
    d = np.outer(np.sinh(mu * x) / math.sinh(mu) - np.sinh(math.pi * x) / math.sinh(math.pi), sx)
    return float(np.abs(d).max()), float(np.sqrt(np.mean(d * d)))


def steady_field_error(a, h):
    """Bound on max|u_app - U| for a converged steady run. Jacobi with rounding: u_{k+1} = J u_k + b
    + delta_k, |delta_k| <= gamma_2 max|u| <= 4u (the sweep's three additions; max|u| <= 1). With
    e_k = u_k - U and the increment d_k = u_{k+1} - u_k = (J - I) e_k + delta_k:
    |e_k| <= |(I - J)^-1| (|d_k| + 4u), and I - J = (h^2/4)(-Laplacian_h), whose inverse has max-norm
    1/8 on the unit square (x(1-x)/2 solves -Laplacian_h w = 1 exactly and bounds every solution),
    so |(I - J)^-1| = 1/(2 h^2). The final field is u_{k+1}: one more 4u. The measured increment
    (final_residual) is |d_k| to one rounding."""
    r = float(a["final_residual"])
    return (r * (1 + U64) + 4 * U64) / (2 * h * h) + 4 * U64


def transient_discrete_errors(n, a):
    """(max, RMS) of U - u for the transient run recorded in attrs a, and the bound on max|u_app - U|."""
    h, x = grid(n)
    steps = int(a["iterations"])
    r = float(a["alpha"]) * float(a["dt"]) / (h * h)
    g = 1.0 - 8.0 * r * math.sin(math.pi * h / 2) ** 2
    decay = math.exp(-2.0 * math.pi ** 2 * float(a["alpha"]) * float(a["sim_time"]))
    s = np.outer(np.sin(math.pi * x), np.sin(math.pi * x))
    c = abs(g ** steps - decay)
    # Each explicit step u + r ((uW + uE + uS + uN) - 4u) rounds 6 times on values of magnitude
    # <= 1 (r <= 1/4): under 16u a step; the step operator has max-norm 1 for r <= 1/4, so the
    # roundings add up, and g^steps itself is evaluated to about steps u.
    field = (steps + 1) * 20 * U64
    return c * float(np.abs(s).max()), c * float(np.sqrt(np.mean(s * s))), field


def test_heat2d_refinement_errors_are_the_discrete_solutions(out, build_dir):
    require_app(build_dir, "heat2d")
    found, ctx = run("heat2d-refinement", out, build_dir)
    rows = report.read_csv(out / "heat2d_refinement.csv")
    assert all(r["status"] in ("converged", "t-end") for r in rows)
    for case in ("steady", "transient"):
        expect = []  # per grid, fine last: (h, {norm: (exact error, bound on the app's deviation)})
        for r in sorted((r for r in heat2d.refinement_runs(ctx) if r.options["mode"] == case),
                        key=lambda r: r.options["nx"]):
            a, e = attrs(r.path), attrs(r.path, "errors")
            n, h = int(a["nx"]), float(a["h"])
            if case == "steady":
                assert a["status"] == "converged"
                emax, el2 = steady_discrete_errors(n)
                dev = steady_field_error(a, h) + EVAL
            else:
                assert a["status"] == "t-end"
                emax, el2, field = transient_discrete_errors(n, a)
                dev = field + EVAL
            # |max|u_app - u| - max|U - u|| <= max|u_app - U|, and the same for the RMS norm.
            for norm, exact in (("max", emax), ("l2", el2)):
                got = float(e[f"analytic_{norm}"])
                assert abs(got - exact) <= dev, (case, n, norm, got, exact, dev)
            expect.append((h, {"max": (emax, dev), "l2": (el2, dev)}))
        # The observed order on the finest pair lies where those errors allow it.
        (h1, e1), (h2, e2) = expect[-2], expect[-1]
        for norm in ("max", "l2"):
            (a1, d1), (a2, d2) = e1[norm], e2[norm]
            lo = math.log((a1 - d1) / (a2 + d2)) / math.log(h1 / h2)
            hi = math.log((a1 + d1) / (a2 - d2)) / math.log(h1 / h2)
            assert lo <= found[f"{case}_{norm}_last_order"] <= hi, (case, norm, lo, hi, found)
    assert (out / "heat2d_refinement.png").stat().st_size > 10_000


def admissible_sweeps(n, check_every, stops):
    """For each tol of `stops` ({tol: max_iter}): the sweep counts at which heat2d's steady run
    (u = sin(pi x) on top, 0 elsewhere, started from 0) may stop.

    The increment of sweep k is J^(k-1) b, b = sin(pi x)/4 on the row below the top. sin(pi x) is an
    eigenvector of the x part of J, so that increment is sin(pi x_i) g_(k-1)(j) with the 1-D recurrence
    g_k(j) = (2 cos(pi h) g_(k-1)(j) + g_(k-1)(j-1) + g_(k-1)(j+1)) / 4, g_0 = 1/4 on row n-2; as
    max_i sin(pi x_i) = 1 (x = 1/2 is a node), the residual of sweep k is max_j g_(k-1)(j). The
    recurrence adds non-negative terms only: computed here to gamma_(3k) relative. The app's residual
    differs from the exact one by the rounding accumulated in the two fields it subtracts (under 4u a
    sweep each, J having max-norm 1) and the rounding of b. A check whose residual lies within that
    of tol may go either way: every check from the first that may pass to the first that must."""
    h = 1.0 / (n - 1)
    c = math.cos(math.pi * h)
    g = np.zeros(n)
    g[n - 2] = 0.25
    found = {tol: [] for tol in stops}
    open_ = set(stops)
    for k in range(1, max(stops.values()) + 1):
        checked = [tol for tol in open_ if k % check_every == 0 or k == stops[tol]]
        if checked:
            r = float(g.max())
            slack = 8 * (k + 1) * U64 + 2 * U64 + gamma(3 * k, U64) * r
            for tol in checked:
                if r - slack <= tol:
                    found[tol].append(k)
                if r + slack <= tol or k == stops[tol]:
                    open_.discard(tol)
            if not open_:
                break
        g[1:-1] = (2.0 * c * g[1:-1] + g[:-2] + g[2:]) / 4.0
    return found


def test_heat2d_iterations_are_jacobis_sweep_counts(out, build_dir):
    require_app(build_dir, "heat2d")
    found, ctx = run("heat2d-iterations", out, build_dir)
    grids = {}
    for (series, n, tol), r in zip(heat2d.iteration_series(ctx), heat2d.iteration_runs(ctx)):
        a = attrs(r.path)
        assert a["status"] == "converged", (series, n)
        grids.setdefault((n, int(a["check_every"])), {})[series] = (tol, int(a["max_iter"]))
    for (n, every), series in grids.items():
        allowed = admissible_sweeps(n, every, dict(series.values()))
        for name, (tol, _) in series.items():
            got = found["iterations"][(name, n)]
            assert got in allowed[tol], (name, n, got, allowed[tol])
    # The exponent reported is the least-squares fit of those counts against 1/h.
    ns = sorted(n for (name, n) in found["iterations"] if name == "scaled")
    fit = fits.power_fit([n - 1.0 for n in ns], [found["iterations"][("scaled", n)] for n in ns])
    assert found["slope"] == pytest.approx(fit.slope, rel=1e-12)
    assert len(report.read_csv(out / "heat2d_residuals.csv")) > 50


def test_heat2d_iterations_second_call_reuses_every_run(out, build_dir):
    require_app(build_dir, "heat2d")
    p = subprocess.run([sys.executable, str(SCRIPT), "heat2d-iterations", "--quick", "--backend", "cpu",
                        "--out", str(out), "--build-dir", str(build_dir)],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "0 runs executed" in p.stderr, p.stderr
    assert (out / "summary.md").read_text().count("## heat2d-iterations") == 1


def test_heat2d_blocking_gives_t1s_bits_for_every_t(out, build_dir):
    require_app(build_dir, "heat2d")
    found, _ = run("heat2d-blocking", out, build_dir)  # raises when a t's residual or sweeps differ
    assert found["same_as_t1"]
    rows = report.read_csv(out / "heat2d_blocking.csv")
    assert len(rows) == 2 * 2 * 8
    assert {int(r["t"]) for r in rows} == set(range(1, 9))
    assert all(float(r["per_sweep_us"]) > 0 for r in rows)
    assert (out / "heat2d_blocking.png").stat().st_size > 10_000


# ---- tealeaf: heat2d --deck with each solver, against TeaLeaf's published temperatures ---------------
def test_tealeaf_iterations_and_temperatures(out, build_dir):
    require_app(build_dir, "heat2d")
    found, _ = run("tealeaf", out, build_dir)  # raises when a temperature is more than 1e-9 from TeaLeaf's
    assert found["temperatures_within_1e-9"]
    totals = report.read_csv(out / "tealeaf_solvers.csv")
    steps = report.read_csv(out / "tealeaf_steps.csv")
    assert {(r["deck"], r["solver"]) for r in totals} == {(d, s) for d in ("tea_bm_1.in", "tea_64_1.in")
                                                            for s in ("cg", "cheby", "ppcg")}
    for r in totals:
        assert abs(float(r["temperature"]) - float(r["published"])) <= 1e-9 * abs(float(r["published"])), r
        mine = [int(s["iterations"]) for s in steps if (s["deck"], s["solver"]) == (r["deck"], r["solver"])]
        assert len(mine) == int(r["steps"]) and sum(mine) == int(r["iterations"]), r
        assert all(float(s["per_iteration_us"]) > 0 for s in steps)
    # Each run's iterations per step are its result file's (/steps/iterations), and CG on the 10^2
    # deck takes 11 a step (the test_tea_cli run of the same deck).
    runs = sorted((out / "runs" / "heat2d").glob("tealeaf-tea_bm_1-cg-*.h5"))
    assert len(runs) == 1
    with h5py.File(runs[0]) as f:
        assert list(f["steps/iterations"][...]) == [11] * 10
    assert (out / "tealeaf.png").stat().st_size > 10_000


# ---- mcpi: each estimate against a bound a correct count does not exceed -------------------------
# The bound is the app's own (tally.mcpi.error_bound; its formulas are tested in test_mcpi_cpu.cpp):
# a Bernstein tail for pseudo-random points that a correct count exceeds with probability below
# 1e-20 (3 generators x 8 replicates x 7 sample counts: below 2e-18 for all), and the net property
# of the Sobol points, which a correct count never exceeds.


def test_mcpi_every_estimate_within_its_error_bound(out, build_dir, tally):
    require_app(build_dir, "mcpi")
    found, _ = run("mcpi-convergence", out, build_dir)
    assert "philox" in found, found  # the one generator every build reproduces on the CPU
    rows = report.read_csv(out / "mcpi_convergence.csv")
    assert {r["generator"] for r in rows} == set(found) - {"unavailable"}
    for r in rows:
        n, hits = int(r["n"]), int(r["hits"])
        bound = tally.mcpi.error_bound(r["generator"], n, offset=int(r["offset"]))
        assert abs(4 * hits / n - math.pi) <= bound, (r, bound)


def test_mcpi_running_estimates_equal_separate_runs(tmp_path, build_dir):
    """The experiment reads N = k * batch from one run's cumulative batch counts: those must be the
    hits of a separate run of N samples from the same start."""
    exe = require_app(build_dir, "mcpi")
    from tally_experiments import mcpi

    def run_mcpi(path, *args):
        subprocess.run([str(exe), "--backend", "cpu", "--quiet", "--generator", "philox", "--seed", "7",
                        "--offset", "5", "--out", str(path), *args], check=True, capture_output=True)

    run_mcpi(tmp_path / "batched.h5", "--n", "100000", "--batch", "1000")
    running = dict(mcpi.running_estimates(tmp_path / "batched.h5", ks=[1, 3, 32, 100]))
    assert sorted(running) == [1000, 3000, 32000, 100000]
    for n in (3000, 32000):
        run_mcpi(tmp_path / f"n{n}.h5", "--n", str(n))
        with h5py.File(tmp_path / f"n{n}.h5") as f:
            assert int(f.attrs["hits"]) == running[n]


def test_in_process_runs_write_the_executables_file(tmp_path, build_dir, tally):
    """The runner's in-process path (the Python module, out=) and the executable give the same
    result file for the same run: the same hits and batches, bit for bit."""
    require_app(build_dir, "mcpi")
    from tally_experiments.runner import Runner, make_run
    opts = {"backend": "cpu", "n": 30000, "batch": 1000, "generator": "philox", "api": "device", "seed": 11,
            "offset": 3}
    files = {}
    for in_process in (True, False):
        folder = tmp_path / ("module" if in_process else "exe")
        runner = Runner(build_dir=build_dir, verbose=False, in_process=in_process)
        run = make_run("mcpi", folder, "philox", opts, ok_status=("ok",))
        runner.execute([run])
        assert runner.executed == 1 and runner.executed_in_process == (1 if in_process else 0)
        files[in_process] = run.path
    with h5py.File(files[True]) as a, h5py.File(files[False]) as b:
        for key in ("hits", "n", "offset", "seed", "status", "generator"):
            assert a.attrs[key] == b.attrs[key], key
        for name in ("batches/n", "batches/hits"):
            assert (a[name][()] == b[name][()]).all(), name


# ---- matmul ---------------------------------------------------------------------------------------
CPU_LEVELS = {"vector", "worker", "worker+vector", "gang", "tiled", "ozaki"}


def matmul_error_bound(precision, k, level):
    """The largest max|C - ref| / (|A||B|) a correct product can show. The ozaki level promises
    u_T (1 + min(K, 10 sqrt K)) of |A||B| (apps/matmul/ozaki/README.md: a certificate per tile of C,
    exact dot products where it fails), the others are sums. Each element is a dot product of
    length K in precision T summed in whatever order the level takes (threads, SIMD lanes, tiles,
    fused multiply-adds or not): within gamma_K(u_T) sum|a_i b_i| of the exact value (Higham, Accuracy
    and Stability, 3.1); an accumulator wider than T rounded once to T is within that too. The
    reference is the double-double sum rounded to double: within u_d |ab| + 4 K u_d^2 sum|ab|, under
    2 u_d sum|ab|. The error and |A||B| are evaluated in double (K sums, a subtraction, a division):
    a relative gamma_(K+4)(u_d) more. A term dropped or counted twice moves an element by |a_k b_k|,
    sum|ab| / K on average: far above this bound in double at every K, and in float up to K = 2^11."""
    u = U32 if precision == "float" else U64
    level_bound = u * (1 + min(k, 10 * math.sqrt(k))) if level == "ozaki" else gamma(k, u)
    return (level_bound + 2 * U64) * (1 + gamma(k + 4, U64))


def test_matmul_levels_within_the_dot_product_error_bound(out, build_dir):
    require_app(build_dir, "matmul")
    found, _ = run("matmul-levels", out, build_dir)
    assert found["all_passed"]
    assert found["best_gflops"] and all(v > 0 for v in found["best_gflops"].values())
    assert "Eigen" in found["best_gflops"]
    rows = report.read_csv(out / "matmul_error.csv")
    assert {r["impl"] for r in rows} == CPU_LEVELS
    assert {(r["precision"], r["impl"]) for r in rows} == {(p, lv) for p in ("float", "double") for lv in CPU_LEVELS}
    for r in rows:
        bound = matmul_error_bound(r["precision"], int(r["k"]), r["impl"])
        assert float(r["rel_error"]) <= bound, (r, bound)


def test_reduce_bandwidth_reads_the_bench(out, build_dir):
    require_app(build_dir, "reduce-bench")
    found, _ = run("reduce-bandwidth", out, build_dir)
    assert found["rows"] > 0 and found["finite"]
    assert all(v > 0 for v in found["best"].values())
    assert (out / "reduce_bandwidth.png").stat().st_size > 10_000
