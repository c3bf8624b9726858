"""matmul --exact against Python's fractions: C read back from the HDF5 file must be, bit for bit,
the exact rational product rounded to double (float(Fraction) rounds correctly) on inputs made to
cancel and to span a wide exponent range, including products beyond a double's range."""
import random
import subprocess
from fractions import Fraction

import numpy as np
import pytest

from conftest import require_app

h5py = pytest.importorskip("h5py")


def nasty(rng, n):
    out = []
    for _ in range(n):
        e = rng.choice([rng.randint(-30, 30), rng.randint(-600, 600), rng.randint(-1074, -1000)])
        out.append(rng.choice([-1, 1]) * rng.uniform(1, 2) * 2.0 ** e if e > -1022 else rng.choice([-1, 1]) * 2.0 ** e)
    return out


def test_matmul_exact_equals_fractions(build_dir, tmp_path):
    exe = require_app(build_dir, "matmul")
    rng = random.Random(20261124)
    m, n, k = 5, 4, 61
    a = np.array(nasty(rng, m * k), dtype=np.float64).reshape(m, k)
    b = np.array(nasty(rng, k * n), dtype=np.float64).reshape(k, n)
    a[:, 1::3] = -a[:, 0:-1:3][:, : a[:, 1::3].shape[1]]  # cancelling column pairs
    b[1::3, :] = b[0:-1:3, :][: b[1::3, :].shape[0], :]
    inp, out = tmp_path / "in.h5", tmp_path / "out.h5"
    with h5py.File(inp, "w") as f:
        f["A"], f["B"] = a, b
    r = subprocess.run([str(exe), "--backend", "cpu", "--precision", "double", "--exact", "--a", f"{inp}:/A", "--b", f"{inp}:/B",
                        "--write-c", "--quiet", "--no-eigen", "--repeats", "1", "--warmup", "0", "--out", str(out)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    with h5py.File(out, "r") as f:
        c = f["C"][...]
        assert f.attrs["exact"] == 1
    for i in range(m):
        for j in range(n):
            exact = sum((Fraction(float(a[i, q])) * Fraction(float(b[q, j])) for q in range(k)), Fraction(0))
            try:
                want = float(exact)
            except OverflowError:
                want = float("inf") if exact > 0 else float("-inf")
            assert c[i, j].tobytes() == np.float64(want).tobytes(), (i, j, c[i, j], want)
