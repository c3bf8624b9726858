"""SIGINT/SIGTERM sent to real runs: the app stops at its next safe point (or at once on a second
signal), removes its temporary output file and exits 128 + signal, leaving the directory empty;
heat2d --keep-partial instead writes the field reached (status interrupted), and --restart from it
gives the uninterrupted run's field bit for bit."""
import signal
import subprocess
import time

import h5py
import numpy as np
import pytest

from conftest import require_app


def catches(pid, sig):
    """Whether process pid has a handler installed for sig (the SigCgt mask of /proc/<pid>/status)."""
    with open(f"/proc/{pid}/status") as f:
        mask = next(int(line.split()[1], 16) for line in f if line.startswith("SigCgt:"))
    return bool(mask >> (sig - 1) & 1)


def start_and_signal(cmd, out_dir, signals, gap=0.0, after=0.5):
    """Starts cmd, waits until it handles SIGINT and SIGTERM (the apps install their handlers first
    thing; the output file itself is only created when the result is complete), lets it compute for
    `after` seconds, then sends the signals. A failed test leaves no run behind."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while not (catches(p.pid, signal.SIGINT) and catches(p.pid, signal.SIGTERM)):
            assert p.poll() is None, f"{cmd[0]} ended before it was signalled: {p.communicate()}"
            assert time.monotonic() < deadline, "the signal handlers were never installed"
            time.sleep(0.02)
        time.sleep(after)  # inside the computation
        assert p.poll() is None, f"{cmd[0]} ended before it was signalled: {p.communicate()}"
        for s in signals:
            p.send_signal(s)
            time.sleep(gap)
        out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    return p.returncode, out, err


@pytest.mark.parametrize("sig,code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_heat2d_stops_at_a_checked_sweep(build_dir, tmp_path, sig, code):
    exe = require_app(build_dir, "heat2d")
    rc, _, err = start_and_signal([str(exe), "--backend", "cpu", "--nx", "1025", "--tol", "1e-14", "--quiet",
                                   "--out", str(tmp_path / "int.h5")], tmp_path, [sig], after=1.0)
    assert rc == code, err
    assert "interrupted by SIG" in err and "at sweep" in err, err
    assert list(tmp_path.iterdir()) == []


def test_mcpi_stops_after_a_batch_on_sigterm(build_dir, tmp_path):
    exe = require_app(build_dir, "mcpi")
    rc, _, err = start_and_signal([str(exe), "--backend", "cpu", "--n", "1e11", "--batch", "1e6", "--quiet",
                                   "--out", str(tmp_path / "t.h5")], tmp_path, [signal.SIGTERM], after=1.0)
    assert rc == 143, err
    assert "samples" in err, err
    assert list(tmp_path.iterdir()) == []


def test_a_second_sigint_ends_at_once(build_dir, tmp_path):
    exe = require_app(build_dir, "mcpi")
    # One batch of 2^40 samples: no safe point for hours, so only the second signal can end it (had it
    # not, start_and_signal's wait of 60 s would run out and fail the test; no clock is read here).
    rc, _, err = start_and_signal([str(exe), "--backend", "cpu", "--n", "2^40", "--batch", "2^40", "--quiet",
                                   "--out", str(tmp_path / "t.h5")], tmp_path, [signal.SIGINT, signal.SIGINT], gap=0.2,
                                  after=1.0)
    assert rc == 130, err
    assert "stopping now" in err, err
    assert list(tmp_path.iterdir()) == []


def read_run(path):
    with h5py.File(path, "r") as f:
        return {"status": f.attrs["status"].decode() if isinstance(f.attrs["status"], bytes) else str(f.attrs["status"]),
                "iterations": int(f.attrs["iterations"]), "field": f["field"][...],
                "iteration": f["residual/iteration"][...], "residual": f["residual/value"][...]}


@pytest.mark.parametrize("sig,code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_heat2d_keep_partial_writes_the_field_reached_and_restart_continues_it(build_dir, tmp_path, sig, code):
    exe = require_app(build_dir, "heat2d")
    problem = ["--backend", "cpu", "--nx", "513", "--tol", "1e-300", "--check-every", "7", "--quiet"]
    rc, _, err = start_and_signal([str(exe), *problem, "--max-iter", "10000000", "--keep-partial",
                                   "--out", str(tmp_path / "part.h5")], tmp_path, [sig], after=0.5)
    assert rc == code, err
    assert "at sweep" in err and "written to" in err, err
    assert sorted(f.name for f in tmp_path.iterdir()) == ["part.h5"]  # no temporary file
    part = read_run(tmp_path / "part.h5")
    k = part["iterations"]
    assert part["status"] == "interrupted"
    assert k > 0 and k % 7 == 0  # stopped at a checked sweep
    assert part["iteration"][-1] == k
    # Continued to k + 30 it is the uninterrupted run of k + 30 sweeps, bit for bit.
    total = str(k + 30)
    subprocess.run([str(exe), *problem, "--max-iter", total, "--out", str(tmp_path / "whole.h5")], check=True)
    subprocess.run([str(exe), *problem, "--max-iter", total, "--restart", str(tmp_path / "part.h5"),
                    "--out", str(tmp_path / "rest.h5")], check=True)
    whole, rest = read_run(tmp_path / "whole.h5"), read_run(tmp_path / "rest.h5")
    assert rest["status"] == whole["status"] == "max-iter"
    assert rest["iterations"] == whole["iterations"] == k + 30
    assert rest["field"].tobytes() == whole["field"].tobytes()
    assert np.array_equal(rest["iteration"], whole["iteration"])
    assert rest["residual"].tobytes() == whole["residual"].tobytes()
    # The partial field is the uninterrupted run's at sweep k, too.
    subprocess.run([str(exe), *problem, "--max-iter", str(k), "--out", str(tmp_path / "upto.h5")], check=True)
    assert read_run(tmp_path / "upto.h5")["field"].tobytes() == part["field"].tobytes()


def test_heat2d_restart_interrupted_without_keep_partial_writes_nothing(build_dir, tmp_path):
    """A restarted run signalled without --keep-partial leaves its input alone and writes nothing."""
    exe = require_app(build_dir, "heat2d")
    problem = ["--backend", "cpu", "--nx", "513", "--tol", "1e-300", "--quiet"]
    subprocess.run([str(exe), *problem, "--max-iter", "3", "--out", str(tmp_path / "start.h5")], check=True)
    before = (tmp_path / "start.h5").read_bytes()
    rc, _, err = start_and_signal([str(exe), *problem, "--max-iter", "10000000", "--restart", str(tmp_path / "start.h5"),
                                   "--out", str(tmp_path / "next.h5")], tmp_path, [signal.SIGINT], after=1.0)
    assert rc == 130, err
    assert "nothing written" in err, err
    assert sorted(f.name for f in tmp_path.iterdir()) == ["start.h5"]
    assert (tmp_path / "start.h5").read_bytes() == before
