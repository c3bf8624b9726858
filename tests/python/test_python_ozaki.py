"""tally.matmul.run(level="ozaki"): the Ozaki level from Python on the CPU backend, its ozaki_moduli
keyword (the executable's --ozaki-moduli), the same bits as the executable, and its bad input."""
import subprocess

import h5py
import numpy as np
import pytest

from conftest import require_app


def test_ozaki_level_matches_the_executable(tally, build_dir, tmp_path):
    exe = require_app(build_dir, "matmul")
    out = tmp_path / "ozaki.h5"
    args = ["--backend", "cpu", "--m", "40", "--n", "33", "--k", "1100", "--level", "ozaki", "--ozaki-moduli", "13",
            "--precision", "double", "--write-c", "--repeats", "1", "--warmup", "0", "--no-eigen", "--out", str(out)]
    p = subprocess.run([str(exe), *args], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    r = tally.matmul.run(40, 33, 1100, level="ozaki", ozaki_moduli=13, precision="double", repeats=1, warmup=0,
                         eigen=False, return_c=True, backend="cpu")
    assert r.passed and [x.name for x in r.levels] == ["ozaki"]
    assert r.levels[0].rel_error <= r.levels[0].tolerance
    with h5py.File(out) as f:
        assert r.c.tobytes() == f["C"][...].tobytes()


def test_ozaki_level_on_numpy_inputs(tally):
    # Rows of a spanning 2^-200 .. 2^200: each row its own scale, every element within the tolerance.
    rng = np.random.default_rng(42)
    a = rng.uniform(-1, 1, (24, 700)) * np.exp2(rng.integers(-200, 200, (24, 1)))
    b = rng.uniform(-1, 1, (700, 18))
    r = tally.matmul.run(a=a, b=b, level="ozaki", precision="double", repeats=1, warmup=0, eigen=False,
                         return_c=True, backend="cpu")
    assert r.passed and r.levels[0].rel_error <= r.levels[0].tolerance  # against the double-double reference
    assert np.all(np.isfinite(r.c))


@pytest.mark.parametrize("moduli", [0, 21, "many"])
def test_ozaki_moduli_bad_input(tally, moduli):
    with pytest.raises(ValueError, match=r"^--ozaki-moduli: must be auto or an integer in \[1, 20\]"):
        tally.matmul.run(8, 8, 64, level="ozaki", ozaki_moduli=moduli, backend="cpu")
