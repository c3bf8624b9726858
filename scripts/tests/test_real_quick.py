"""One real --quick run of each experiment on the CPU backend, checking the fitted order or slope.
Skipped (with the reason) when the app is not built in $TALLY_BUILD_DIR (see conftest.py)."""
import subprocess
import sys
from pathlib import Path

import h5py
import pytest

from conftest import require_app
from tally_experiments import cli, report

SCRIPT = Path(__file__).resolve().parents[1] / "experiments.py"


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


def test_heat2d_refinement_is_second_order(out, build_dir):
    require_app(build_dir, "heat2d")
    found, _ = run("heat2d-refinement", out, build_dir)
    for case in ("steady", "transient"):
        for norm in ("max", "l2"):
            assert found[f"{case}_{norm}_last_order"] == pytest.approx(2.0, abs=0.15), (case, norm, found)
    rows = report.read_csv(out / "heat2d_refinement.csv")
    assert all(r["status"] in ("converged", "t-end") for r in rows)
    assert (out / "heat2d_refinement.png").stat().st_size > 10_000


def test_heat2d_iterations_grow_as_n_squared(out, build_dir):
    require_app(build_dir, "heat2d")
    found, _ = run("heat2d-iterations", out, build_dir)
    assert found["slope"] == pytest.approx(2.0, abs=0.25), found
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


def test_mcpi_error_falls_as_one_over_sqrt_n(out, build_dir):
    require_app(build_dir, "mcpi")
    found, _ = run("mcpi-convergence", out, build_dir)
    assert "philox" in found, found  # the one generator every build reproduces on the CPU
    for gen in ("philox", "xorwow", "mrg32k3a"):
        if gen in found:
            assert found[gen] == pytest.approx(-0.5, abs=0.25), (gen, found)
    rows = {r["generator"]: r for r in report.read_csv(out / "mcpi_slopes.csv")}
    for gen, r in rows.items():
        if gen != "sobol":  # the rms error of a sound pseudo-random generator ~ sigma
            assert 0.3 < float(r["rms / sigma"]) < 3.0, r
    if "sobol" in found:  # quasi-random: faster than N^-1/2 (~N^-3/4 for this discontinuous integrand)
        assert found["sobol"] < -0.6, found
        assert float(rows["sobol"]["rms / sigma"]) < 0.2, rows["sobol"]


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


def test_matmul_levels_pass_and_error_grows_slowly_with_k(out, build_dir):
    require_app(build_dir, "matmul")
    found, _ = run("matmul-levels", out, build_dir)
    assert found["all_passed"]
    assert found["best_gflops"] and all(v > 0 for v in found["best_gflops"].values())
    assert "Eigen" in found["best_gflops"]
    for level, slope in found["error_slopes"].items():
        assert -0.3 < slope < 1.2, (level, slope)  # between sqrt(K) growth (typical) and K (worst case)


def test_reduce_bandwidth_reads_the_bench(out, build_dir):
    require_app(build_dir, "reduce-bench")
    found, _ = run("reduce-bandwidth", out, build_dir)
    assert found["rows"] > 0 and found["finite"]
    assert all(v > 0 for v in found["best"].values())
    assert (out / "reduce_bandwidth.png").stat().st_size > 10_000
