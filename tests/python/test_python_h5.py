"""The solvers' out= keyword: tally.mcpi.estimate / matmul.run / heat2d.solve write the executable's
HDF5 file. For the same options the file written from Python has the executable's structure (every
group, dataset and attribute by name) and the same values, bit for bit (datasets by dtype, shape and
bytes; attributes by value and type), except the provenance (it records the call instead of a
command line) and the timings (and what is derived from them). A bad out path raises ValueError
naming out and leaves no file; an interrupted solve leaves no file."""
import os
import signal
import subprocess
import sys
import time

import h5py
import numpy as np
import pytest

from conftest import require_app

# Groups whose attributes are all provenance or timings, and timing-derived names anywhere.
UNCOMPARED_GROUPS = ("provenance", "device", "timings", "throughput")
TIMING_ATTRS = {"time_s", "gflops", "gbps", "pct_cublas", "copy_bandwidth_gbs", "min", "median", "max"}


def timing_dataset(path):
    """/ranks/<phase>_s: each rank's seconds of a phase."""
    return path.startswith("ranks/") and path.endswith("_s")


def contents(path):
    """{object path: (kind, dtype, shape, bytes or None, {attr: value})} of a whole file."""
    out = {}
    with h5py.File(path) as f:
        def visit(name, obj):
            if isinstance(obj, h5py.Dataset):
                data = obj[...]
                out[name] = ("dataset", data.dtype.str, data.shape, None if timing_dataset(name) else data.tobytes(),
                             dict(obj.attrs))
            else:
                out[name] = ("group", None, None, None, dict(obj.attrs))
        visit("/", f)
        f.visititems(visit)
    return out


def same_value(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def assert_same_file(exe_file, py_file):
    """The comparison of the module's docstring; returns how many values were compared bitwise."""
    exe, py = contents(exe_file), contents(py_file)
    assert sorted(py) == sorted(exe), "different groups/datasets"
    compared = 0
    for name, (kind, dtype, shape, data, attrs) in exe.items():
        pkind, pdtype, pshape, pdata, pattrs = py[name]
        assert (pkind, pdtype, pshape) == (kind, dtype, shape), name
        assert pdata == data, f"dataset {name} differs"
        compared += data is not None
        assert sorted(pattrs) == sorted(attrs), f"attributes of {name}"
        top = name.split("/")[0]
        for key, value in attrs.items():
            if top in UNCOMPARED_GROUPS or key in TIMING_ATTRS:
                continue
            assert same_value(pattrs[key], value), f"{name}@{key}: {pattrs[key]!r} != {value!r}"
            compared += 1
    with h5py.File(py_file) as f:  # what replaces the command line
        assert f["provenance"].attrs["command_line"].decode().startswith("tally.")
        assert f["ranks"].attrs["ranks"] == 1
    return compared


def run_exe(exe, out, *args):
    p = subprocess.run([str(exe), *args, "--backend", "cpu", "--quiet", "--out", str(out)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return out


def leftovers(directory):
    return sorted(p.name for p in directory.iterdir())


# ---- mcpi ---------------------------------------------------------------------------------------------
def test_mcpi_file_is_the_executables(tally, build_dir, tmp_path):
    exe = require_app(build_dir, "mcpi")
    seed = int.from_bytes(os.urandom(4), "little")
    print("seed", seed)
    e = run_exe(exe, tmp_path / "exe.h5", "--n", "3e6", "--batch", "2^19", "--offset", "12345", "--seed", str(seed))
    r = tally.mcpi.estimate("3e6", batch="2^19", offset=12345, seed=seed, backend="cpu", out=tmp_path / "py.h5")
    assert r.out == str(tmp_path / "py.h5")
    assert assert_same_file(e, tmp_path / "py.h5") > 15
    with h5py.File(tmp_path / "py.h5") as f:  # and the file holds what was returned
        assert f.attrs["hits"] == r.hits and f.attrs["estimate"] == r.estimate
        assert f["batches/hits"][...].tobytes() == r.batch_hits.tobytes()
        assert "seed=" + str(seed) in f["provenance"].attrs["command_line"].decode()
    assert leftovers(tmp_path) == ["exe.h5", "py.h5"]


# ---- matmul -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("precision,levels", [("double", "gang"), ("float", "vector,worker+vector,tiled")])
def test_matmul_file_is_the_executables(tally, build_dir, tmp_path, precision, levels):
    exe = require_app(build_dir, "matmul")
    seed = int.from_bytes(os.urandom(4), "little")
    print("seed", seed)
    e = run_exe(exe, tmp_path / "exe.h5", "--m", "24", "--n", "20", "--k", "513", "--level", levels, "--write-c",
                "--repeats", "1", "--warmup", "0", "--precision", precision, "--seed", str(seed), "--split-k", "3")
    r = tally.matmul.run(24, 20, 513, level=levels, precision=precision, repeats=1, warmup=0, seed=seed, split_k=3,
                         write_c=True, return_c=True, backend="cpu", out=tmp_path / "py.h5")
    assert r.passed and r.out == str(tmp_path / "py.h5")
    assert assert_same_file(e, tmp_path / "py.h5") > 20
    with h5py.File(tmp_path / "py.h5") as f:  # C, the errors and the verdicts, bit for bit (compared above too)
        assert f["C"][...].tobytes() == r.c.tobytes()
        for x in r.levels:
            assert f[f"levels/{x.name}"].attrs["rel_error"] == x.rel_error and f[f"levels/{x.name}"].attrs["passed"]
        assert f["eigen"].attrs["rel_error"] == r.eigen.rel_error
    assert leftovers(tmp_path) == ["exe.h5", "py.h5"]


def test_matmul_file_of_given_matrices(tally, build_dir, tmp_path):
    # NumPy inputs: the executable reads the same matrices from an HDF5 file (--a/--b); everything
    # but the attributes a and b (where the matrices came from) is the same.
    exe = require_app(build_dir, "matmul")
    seed = int.from_bytes(os.urandom(4), "little")
    print("seed", seed)
    rng = np.random.default_rng(seed)
    a, b = rng.standard_normal((9, 300)), rng.standard_normal((300, 11))
    with h5py.File(tmp_path / "in.h5", "w") as f:
        f["A"], f["B"] = a, b
    e = run_exe(exe, tmp_path / "exe.h5", "--a", f"{tmp_path / 'in.h5'}:/A", "--b", f"{tmp_path / 'in.h5'}:/B",
                "--level", "all", "--repeats", "1", "--warmup", "0", "--write-c")
    r = tally.matmul.run(a=a, b=b, precision="double", repeats=1, warmup=0, write_c=True, backend="cpu",
                         out=tmp_path / "py.h5")
    with h5py.File(tmp_path / "py.h5", "a") as f:
        assert f.attrs["a"] == b"python array" and f.attrs["b"] == b"python array"
        with h5py.File(e) as g:
            f.attrs["a"], f.attrs["b"] = g.attrs["a"], g.attrs["b"]
    assert assert_same_file(e, tmp_path / "py.h5") > 30 and r.passed


# ---- heat2d -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("args,kwargs", [
    (["--nx", "33", "--tol", "1e-8", "--validate"], dict(nx=33, tol=1e-8, validate=True)),
    (["--nx", "41", "--ny", "21", "--mode", "transient", "--t-end", "0.01", "--init", "sin", "--bc-top", "0",
      "--precision", "float", "--check-every", "7"],
     dict(nx=41, ny=21, mode="transient", t_end=0.01, init="sin", bc_top=0, precision="float", check_every=7)),
    (["--nx", "17", "--bc-top", "nan", "--max-iter", "50"], dict(nx=17, bc_top="nan", max_iter=50)),  # diverged
])
def test_heat2d_file_is_the_executables(tally, build_dir, tmp_path, args, kwargs):
    exe = require_app(build_dir, "heat2d")
    p = subprocess.run([str(exe), *args, "--backend", "cpu", "--quiet", "--out", str(tmp_path / "exe.h5")],
                       capture_output=True, text=True)
    assert p.returncode == (1 if "nan" in args else 0), p.stderr  # a diverged run still writes its file
    r = tally.heat2d.solve(backend="cpu", out=tmp_path / "py.h5", **kwargs)
    assert assert_same_file(tmp_path / "exe.h5", tmp_path / "py.h5") > 25
    with h5py.File(tmp_path / "py.h5") as f:  # the field and the history, bit for bit, as returned
        assert f["field"][...].tobytes() == r.field.tobytes()
        assert f["residual/value"][...].tobytes() == r.residual_value.tobytes()
        assert f.attrs["status"].decode() == r.status and f.attrs["iterations"] == r.iterations
    assert leftovers(tmp_path) == ["exe.h5", "py.h5"]


# ---- bad out, failures, interrupts (every solver) -----------------------------------------------------
SOLVERS = {  # small runs: app -> call(tally, backend=..., out=...)
    "mcpi": lambda t, backend="cpu", **kw: t.mcpi.estimate("2^16", backend=backend, **kw),
    "matmul": lambda t, backend="cpu", **kw: t.matmul.run(8, 8, 64, level="gang", repeats=1, backend=backend, **kw),
    "heat2d": lambda t, backend="cpu", **kw: t.heat2d.solve(nx=9, tol=1e-6, backend=backend, **kw),
}


@pytest.mark.parametrize("app", sorted(SOLVERS))
def test_bad_out_raises_before_any_work(tally, tmp_path, app):
    (tmp_path / "a_file").write_text("not a directory")
    (tmp_path / "a_dir").mkdir()
    for out, why in [(tmp_path / "a_file" / "x.h5", "is not a directory"), (tmp_path / "a_dir", "it is a directory"),
                     ("", "the output path is empty")]:
        with pytest.raises(ValueError, match=rf"^out: .*{why}"):
            SOLVERS[app](tally, out=out)
    with pytest.raises(TypeError, match="^out: expected None or a path"):
        SOLVERS[app](tally, out=3)
    assert leftovers(tmp_path) == ["a_dir", "a_file"] and leftovers(tmp_path / "a_dir") == []


@pytest.mark.parametrize("app", sorted(SOLVERS))
def test_bad_input_with_out_leaves_no_file(tally, tmp_path, app):
    with pytest.raises(ValueError, match="^--backend: unknown 'tpu'"):
        SOLVERS[app](tally, backend="tpu", out=tmp_path / "x.h5")
    assert leftovers(tmp_path) == []


def interrupted(tally, tmp_path, call):
    """Runs `call` (Python text using tally and `out`) in a child process and sends it SIGINT (Ctrl-C)
    once the call has started: the child's KeyboardInterrupt must come out of the call, within a
    minute (the calls below would run for hours uninterrupted), and leave nothing in tmp_path."""
    package = os.path.dirname(os.path.dirname(tally.__file__))
    script = ("import sys, tally\n"
              f"out = {str(tmp_path / 'x.h5')!r}\n"
              "print('started', flush=True)\n"
              "try:\n"
              f"    {call}\n"
              "except KeyboardInterrupt:\n"
              "    print('KeyboardInterrupt', flush=True)\n"
              "    sys.exit(3)\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([package, os.environ.get("PYTHONPATH", "")]))
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert child.stdout.readline() == "started\n", child.stderr.read()
        time.sleep(1.0)  # well inside the call
        child.send_signal(signal.SIGINT)
        stdout, stderr = child.communicate(timeout=60)
    finally:
        child.kill()
    assert child.returncode == 3 and stdout == "KeyboardInterrupt\n", (child.returncode, stdout, stderr)
    assert leftovers(tmp_path) == []


def test_mcpi_interrupted_leaves_no_file(tally, tmp_path):
    # 2^40 samples would take hours: the interrupt, checked after each batch of 2^16, stops it.
    interrupted(tally, tmp_path, "tally.mcpi.estimate('2^40', batch='2^16', backend='cpu', out=out)")


def test_heat2d_interrupted_leaves_no_file(tally, tmp_path):
    # A 2049^2 steady solve to 1e-15 would take hours: the interrupt stops it at a checked sweep.
    interrupted(tally, tmp_path, "tally.heat2d.solve(nx=2049, tol=1e-15, check_every=10, backend='cpu', out=out)")
