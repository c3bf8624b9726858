"""tally.heat2d.solve(deck=...): the implicit mode from Python against the executable's --deck run (its
--json line and its HDF5 file, bit for bit on the CPU backend); the same file with out=; the overrides;
a solve that does not converge as a status; bad input as ValueError, nothing written."""
import json
import subprocess
from pathlib import Path

import h5py
import numpy as np
import pytest

from conftest import require_app

DATA = Path(__file__).resolve().parents[2] / "data" / "tealeaf"
BM1 = DATA / "tea_bm_1.in"  # the five-state problem on 10 x 10 cells, 10 steps of CG


def exe_json(exe, out, *args):
    p = subprocess.run([str(exe), "--deck", str(BM1), *args, "--backend", "cpu", "--json", "--out", str(out)],
                       capture_output=True, text=True)
    return p.returncode, json.loads(p.stdout.strip().splitlines()[-1])


def same_float(a, b):
    return np.float64(a).tobytes() == np.float64(b).tobytes()


@pytest.mark.parametrize("args,kwargs", [
    ([], {}),
    (["--solver", "cheby", "--preconditioner", "jac_diag"], dict(solver="cheby", preconditioner="jac_diag")),
    (["--solver", "ppcg", "--eps-norm", "max", "--eps", "1e-12"], dict(solver="ppcg", eps_norm="max", eps=1e-12)),
    (["--solver", "cheby", "--cheby-steps-per-pass", "5"], dict(solver="cheby", cheby_steps_per_pass=5)),
    (["--solver", "pipecg", "--preconditioner", "jac_block"], dict(solver="pipecg", preconditioner="jac_block")),
])
def test_deck_matches_the_executables_json_and_file(tally, build_dir, tmp_path, args, kwargs):
    exe = require_app(build_dir, "heat2d")
    rc, j = exe_json(exe, tmp_path / "exe.h5", *args)
    assert rc == 0
    r = tally.heat2d.solve(deck=str(BM1), backend="cpu", out=tmp_path / "py.h5", **kwargs)
    for key in ("solver", "preconditioner", "eps", "eps_norm", "reproducible", "cheby_steps_per_pass", "x_cells",
                "y_cells", "steps", "steps_asked", "status", "converged", "iterations"):
        assert r[key] == j[key], key
    assert set(r.summary) == set(j["summary"]) == {"volume", "mass", "density", "energy", "temperature"}
    for k, v in j["summary"].items():
        assert same_float(r.summary[k], v), k
    assert set(r.timings) == set(j["timings"])
    assert r.out == str(tmp_path / "py.h5")
    with h5py.File(tmp_path / "exe.h5") as fe, h5py.File(tmp_path / "py.h5") as fp:
        for name in ("field", "energy", "density"):
            assert r[name].shape == (10, 10) and r[name].dtype == np.float64
            assert r[name].tobytes() == fe[name][...].tobytes() == fp[name][...].tobytes(), name
        for ds in ("summary/temperature", "summary/mass", "steps/iterations", "steps/error", "residual/offsets",
                   "residual/iteration", "residual/value"):
            assert fe[ds][...].tobytes() == fp[ds][...].tobytes(), ds
        for a in ("mode", "solver", "eps", "status", "iterations", "steps_done", "deck"):
            assert fe.attrs[a] == fp.attrs[a], a
        assert "tally.heat2d.solve(" in str(fp["provenance"].attrs["command_line"])
    np.testing.assert_array_equal(r.iterations["per_step"], fp_iterations(tmp_path / "py.h5"))


def fp_iterations(path):
    with h5py.File(path) as f:
        return f["steps/iterations"][...]


def test_set_lines_alone_and_the_overrides(tally, tmp_path):
    r = tally.heat2d.solve(set=["state 1 density=2 energy=3", "x_cells 6", "y_cells 4", "end_step 2"],
                           solver="jacobi", eps=1e-12, max_iters=500, backend="cpu", out=tmp_path / "s.h5")
    assert r.solver == "jacobi" and r.x_cells == 6 and r.steps == 2 and r.status == "converged"
    # One state everywhere: nothing flows, u = energy density = 6 stays (to Jacobi's roundings, test_tea_cli).
    assert np.all(np.abs(r.field - 6.0) <= 9 * 2.0 ** -53 * 6.0)
    with h5py.File(tmp_path / "s.h5") as f:
        assert f.attrs["eps"] == 1e-12 and f.attrs["max_iters"] == 500


def test_not_converged_is_a_status_with_the_field_written(tally, tmp_path):
    r = tally.heat2d.solve(deck=BM1, max_iters=3, backend="cpu", out=tmp_path / "nc.h5")
    assert r.status == "max-iters" and not r.converged and r.steps == 1 and r.iterations["per_step"] == [3]
    with h5py.File(tmp_path / "nc.h5") as f:
        assert f.attrs["status"] in ("max-iters", b"max-iters")
        assert f["field"][...].tobytes() == r.field.tobytes()


@pytest.mark.parametrize("kwargs,msg", [
    (dict(set=["tl_use_magic"]), "unknown keyword"),
    (dict(set=["x_cells 0"]), "x_cells and y_cells must be at least 1"),
    (dict(solver="gmres"), "--solver"),
    (dict(eps=-1.0), "--eps"),
    (dict(eps_norm="l1"), "--eps-norm"),
    (dict(solver="cheby", cheby_steps_per_pass=3), "--cheby-steps-per-pass"),
    (dict(nx=64), "--nx: an option of the explicit mode"),
    (dict(precision="float"), "--precision"),
])
def test_bad_input_raises_and_writes_nothing(tally, tmp_path, kwargs, msg):
    out = tmp_path / "bad.h5"
    with pytest.raises(ValueError, match=msg):
        tally.heat2d.solve(deck=BM1, backend="cpu", out=out, **kwargs)
    assert list(tmp_path.iterdir()) == []


def test_implicit_options_without_a_deck_are_refused(tally):
    with pytest.raises(ValueError, match="--solver: an option of the implicit mode"):
        tally.heat2d.solve(nx=17, solver="cg", backend="cpu")
    with pytest.raises(ValueError, match="--cheby-steps-per-pass: an option of the implicit mode"):
        tally.heat2d.solve(nx=17, cheby_steps_per_pass=2, backend="cpu")


def test_mcpi_error_bound_is_the_apps(tally):
    """The bound the app judges with (its formulas are tested in C++, test_mcpi_cpu.cpp), reached from
    Python, and the verdict of a run with it."""
    assert tally.mcpi.error_bound("sobol", 5, offset=3) == pytest.approx(4 * (1 + 3 + 6e-7 * 5) / 5, rel=1e-15)
    assert tally.mcpi.error_bound("philox", 10 ** 6) == tally.mcpi.error_bound("xorwow", 10 ** 6, offset=7)
    r = tally.mcpi.estimate(n=10 ** 5, backend="cpu")
    assert r.error_bound == tally.mcpi.error_bound("philox", 10 ** 5)
    assert r.passed == (r.abs_error <= r.error_bound)
    with pytest.raises(ValueError, match="generator"):
        tally.mcpi.error_bound("ranlux", 10)
