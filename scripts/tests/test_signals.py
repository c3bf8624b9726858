"""SIGINT/SIGTERM sent to real runs: the app stops at its next safe point (or at once on a second
signal), removes its temporary output file and exits 128 + signal, leaving the directory empty."""
import signal
import subprocess
import time

import pytest

from conftest import require_app


def catches(pid, sig):
    """Whether process pid has a handler installed for sig (the SigCgt mask of /proc/<pid>/status)."""
    with open(f"/proc/{pid}/status") as f:
        mask = next(int(line.split()[1], 16) for line in f if line.startswith("SigCgt:"))
    return bool(mask >> (sig - 1) & 1)


def start_and_signal(cmd, out_dir, signals, gap=0.0):
    """Starts cmd, waits until it handles SIGINT and SIGTERM (the apps install their handlers first
    thing; the output file itself is only created when the result is complete), lets it get into
    the computation, then sends the signals."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while not (catches(p.pid, signal.SIGINT) and catches(p.pid, signal.SIGTERM)):
        assert p.poll() is None, f"{cmd[0]} ended before it was signalled: {p.communicate()}"
        assert time.monotonic() < deadline, "the signal handlers were never installed"
        time.sleep(0.02)
    time.sleep(0.5)  # inside the computation
    for s in signals:
        p.send_signal(s)
        time.sleep(gap)
    out, err = p.communicate(timeout=60)
    return p.returncode, out, err


@pytest.mark.parametrize("sig,code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_heat2d_stops_at_a_checked_sweep(build_dir, tmp_path, sig, code):
    exe = require_app(build_dir, "heat2d")
    rc, _, err = start_and_signal([str(exe), "--backend", "cpu", "--nx", "1025", "--tol", "1e-14", "--quiet",
                                   "--out", str(tmp_path / "int.h5")], tmp_path, [sig])
    assert rc == code, err
    assert "interrupted by SIG" in err and "at sweep" in err, err
    assert list(tmp_path.iterdir()) == []


def test_mcpi_stops_after_a_batch_on_sigterm(build_dir, tmp_path):
    exe = require_app(build_dir, "mcpi")
    rc, _, err = start_and_signal([str(exe), "--backend", "cpu", "--n", "1e11", "--batch", "1e6", "--quiet",
                                   "--out", str(tmp_path / "t.h5")], tmp_path, [signal.SIGTERM])
    assert rc == 143, err
    assert "samples" in err, err
    assert list(tmp_path.iterdir()) == []


def test_a_second_sigint_ends_at_once(build_dir, tmp_path):
    exe = require_app(build_dir, "mcpi")
    # One batch of 2^40 samples: no safe point for minutes, so only the second signal can end it.
    t0 = time.monotonic()
    rc, _, err = start_and_signal([str(exe), "--backend", "cpu", "--n", "2^40", "--batch", "2^40", "--quiet",
                                   "--out", str(tmp_path / "t.h5")], tmp_path, [signal.SIGINT, signal.SIGINT], gap=0.2)
    assert rc == 130, err
    assert "stopping now" in err, err
    assert time.monotonic() - t0 < 20
    assert list(tmp_path.iterdir()) == []
