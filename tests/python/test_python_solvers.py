"""tally.heat2d / matmul / mcpi from Python against the executables on small problems (the same
numbers, bit for bit, on the CPU backend), and their bad input (ValueError, the executable's message)."""
import subprocess

import h5py
import numpy as np
import pytest

from conftest import require_app


def run_app(exe, tmp_path, *args):
    out = tmp_path / f"{exe.name}.h5"
    p = subprocess.run([str(exe), *args, "--backend", "cpu", "--quiet", "--out", str(out)], capture_output=True, text=True)
    return p, out


@pytest.mark.parametrize("args,kwargs", [
    (["--nx", "33", "--tol", "1e-8"], dict(nx=33, tol=1e-8)),
    (["--nx", "41", "--ny", "21", "--mode", "transient", "--t-end", "0.01", "--init", "sin", "--bc-top", "0",
      "--precision", "float", "--check-every", "7"],
     dict(nx=41, ny=21, mode="transient", t_end=0.01, init="sin", bc_top=0, precision="float", check_every=7)),
])
def test_heat2d_matches_the_executable(tally, build_dir, tmp_path, args, kwargs):
    exe = require_app(build_dir, "heat2d")
    p, out = run_app(exe, tmp_path, *args)
    assert p.returncode == 0, p.stderr
    r = tally.heat2d.solve(backend="cpu", **kwargs)
    with h5py.File(out) as f:
        status = f.attrs["status"]
        assert r.status == (status.decode() if isinstance(status, bytes) else status)
        assert r.iterations == f.attrs["iterations"]
        field = f["field"][...]
        assert r.field.dtype == field.dtype and r.field.shape == field.shape
        assert r.field.tobytes() == field.tobytes()
        np.testing.assert_array_equal(r.residual_iteration, f["residual/iteration"][...])
        assert r.residual_value.tobytes() == f["residual/value"][...].tobytes()


def test_heat2d_diverged_is_a_status(tally):
    r = tally.heat2d.solve(nx=17, bc_top="nan", max_iter=50, backend="cpu")
    assert r.status == "diverged" and np.isnan(r.final_residual)


def test_heat2d_validate(tally):
    r = tally.heat2d.solve(nx=17, tol=1e-9, validate=True, backend="cpu")
    assert r.validation_passed and r.eigen_max_abs_diff is not None and r.eigen_max_abs_diff <= r.eigen_tolerance


def test_heat2d_sweeps_per_pass_same_bits(tally):
    # Temporal blocking changes the passes over memory, never the arithmetic: t = 4 and auto give
    # t = 1's field and history bit for bit; a t that does not divide check_every is refused.
    one = tally.heat2d.solve(nx=45, ny=31, tol=1e-7, check_every=4, sweeps_per_pass=1, backend="cpu")
    for t in (4, "auto"):
        r = tally.heat2d.solve(nx=45, ny=31, tol=1e-7, check_every=4, sweeps_per_pass=t, backend="cpu")
        assert r.iterations == one.iterations and r.field.tobytes() == one.field.tobytes(), t
        np.testing.assert_array_equal(r.residual_value, one.residual_value)
    with pytest.raises(ValueError, match="--sweeps-per-pass 3"):
        tally.heat2d.solve(nx=17, check_every=4, sweeps_per_pass=3, backend="cpu")
    with pytest.raises(ValueError, match="--sweeps-per-pass"):
        tally.heat2d.solve(nx=17, sweeps_per_pass="fast", backend="cpu")


def test_mcpi_matches_the_executable(tally, build_dir, tmp_path):
    exe = require_app(build_dir, "mcpi")
    p, out = run_app(exe, tmp_path, "--n", "2^21", "--batch", "2^19")
    assert p.returncode == 0, p.stderr
    r = tally.mcpi.estimate("2^21", batch=1 << 19, backend="cpu")
    with h5py.File(out) as f:
        assert r.hits == f.attrs["hits"] and r.estimate == f.attrs["estimate"]
    assert list(r.batch_n) == [1 << 19] * 4 and r.batch_hits.sum() == r.hits and r.passed
    # A run continued with offset adds up exactly (the stream layout of mcpi.hpp).
    a = tally.mcpi.estimate(1 << 20, backend="cpu")
    b = tally.mcpi.estimate(1 << 20, offset=1 << 20, backend="cpu")
    assert a.hits + b.hits == r.hits


def test_matmul_matches_the_executable(tally, build_dir, tmp_path):
    exe = require_app(build_dir, "matmul")
    p, out = run_app(exe, tmp_path, "--m", "24", "--n", "20", "--k", "513", "--level", "gang", "--write-c",
                     "--repeats", "1", "--warmup", "0", "--precision", "double")
    assert p.returncode == 0, p.stderr
    r = tally.matmul.run(24, 20, 513, level="gang", precision="double", repeats=1, warmup=0, return_c=True, backend="cpu")
    with h5py.File(out) as f:
        assert r.c.tobytes() == f["C"][...].tobytes()
    assert r.passed and [x.name for x in r.levels] == ["gang"] and r.levels[0].rel_error <= r.levels[0].tolerance


def test_matmul_inputs_from_numpy(tally):
    rng = np.random.default_rng(7)
    a, b = rng.standard_normal((9, 300)), rng.standard_normal((300, 11))
    r = tally.matmul.run(a=a, b=b, precision="double", level="all", repeats=1, warmup=0, return_c=True, backend="cpu")
    assert r.shape == (9, 11, 300) and r.passed and len(r.levels) == 6  # the five reductions and ozaki
    np.testing.assert_allclose(r.c, a @ b, rtol=0, atol=300 * 2**-52 * (np.abs(a) @ np.abs(b)).max())


@pytest.mark.parametrize("call,msg", [
    (lambda t: t.heat2d.solve(nx=2, backend="cpu"), r"^--nx 2: needs at least 3 points"),
    (lambda t: t.heat2d.solve(mode="implicit"), r"^--mode: 'implicit' is not one of"),
    (lambda t: t.heat2d.solve(bc_left="warm"), r"^--bc-left 'warm'"),
    (lambda t: t.heat2d.solve(precision="half"), r"^--precision: 'half'"),
    (lambda t: t.mcpi.estimate(0, backend="cpu"), r"^--n: "),
    (lambda t: t.mcpi.estimate(10, generator="mt19937"), r"^--generator"),
    (lambda t: t.matmul.run(level="diagonal"), r"^--level: unknown level 'diagonal'"),
    (lambda t: t.matmul.run(m=0), r"^--m: must be positive"),
    (lambda t: t.matmul.run(a=np.zeros((4, 4), np.float32), b=np.zeros((5, 4), np.float32), backend="cpu"), r"^--b: expected a 4 x 4"),
    (lambda t: t.matmul.run(backend="tpu"), r"^--backend: unknown 'tpu'"),
])
def test_bad_input_raises_the_executables_message(tally, call, msg):
    with pytest.raises(ValueError, match=msg):
        call(tally)


def test_matmul_exact_is_the_correctly_rounded_product(tally):
    # exact=True: every level's C is the exact product rounded once; fractions is the reference.
    from fractions import Fraction
    rng = np.random.default_rng(SEED_EXACT := int(np.random.SeedSequence().entropy % 2**32))
    print(f"seed {SEED_EXACT}")
    a = (rng.standard_normal((5, 37)) * 10.0 ** rng.integers(-8, 8, (5, 37))).astype(np.float32)
    b = (rng.standard_normal((37, 3)) * 10.0 ** rng.integers(-8, 8, (37, 3))).astype(np.float32)
    r = tally.matmul.run(a=a, b=b, level="vector,worker,gang,tiled", exact=True, eigen=False, return_c=True,
                         backend="cpu", repeats=1, warmup=0)
    assert r.passed, [(x.name, x.passed) for x in r.levels]
    def round_f32(q):  # q rounded once to float32, ties to even (no double rounding through float64)
        f = np.float32(float(q))
        cands = [np.nextafter(f, np.float32(-np.inf)), f, np.nextafter(f, np.float32(np.inf))]
        return min(cands, key=lambda c: (abs(Fraction(float(c)) - q), int(c.view(np.uint32)) & 1))

    want = np.array([[round_f32(sum(Fraction(float(a[i, k])) * Fraction(float(b[k, j])) for k in range(37)))
                      for j in range(3)] for i in range(5)], dtype=np.float32)
    assert r.c.tobytes() == want.tobytes()
