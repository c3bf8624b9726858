"""matmul from Python: apps/matmul's engines, C = A B with every element a dot product reduced at
the chosen levels, each checked against a double-double reference, one rank.

    r = tally.matmul.run(m=64, n=64, k=4096, level="gang", backend="cpu")
    [(x.name, x.gflops, x.passed) for x in r.levels]

Options as the executable's (`matmul --help`): m, n, k or size; precision 'float' or 'double';
level a name, a comma list or a list ('vector', 'worker', 'worker+vector', 'gang', 'tiled', 'all');
seed, warmup, repeats, split_k, eigen (compare with Eigen; the executable's --no-eigen is
eigen=False); a and b: NumPy matrices (m x k, k x n, of the precision's dtype) instead of the
generated inputs (the executable's --a/--b files). Bad input raises ValueError with the
executable's message. The result (a dict, keys also attributes): levels (one dict per level:
name, time_s, gflops, rel_error, tolerance, passed), vendor (cuBLAS on the GPU, else None), eigen,
timings, c (the last level's product as NumPy when return_c=True), passed, shape, backend.

No HDF5 output: the executable's writer is part of its driver (the whole app); run the executable
for the file.
"""
from . import _tally
from ._result import Result


def run(m=256, n=256, k=256, *, size=None, precision="float", level="all", backend="auto", device=0, seed=20260101,
        warmup=1, repeats=5, split_k=0, eigen=True, a=None, b=None, return_c=False):
    """Multiplies and checks; see the module's documentation."""
    if size is not None:
        m = n = k = size
    if a is not None:
        m, k = a.shape if getattr(a, "ndim", 0) == 2 else (m, k)
    if b is not None and getattr(b, "ndim", 0) == 2:
        k, n = b.shape[0] if a is None else k, b.shape[1]
    levels = [s.strip() for s in level.split(",")] if isinstance(level, str) else list(level)
    r = Result(_tally.matmul_run(int(m), int(n), int(k), precision, levels, backend, int(device), int(seed), int(warmup),
                                 int(repeats), int(split_k), bool(eigen), a, b, bool(return_c)))
    r["levels"] = [Result(x) for x in r["levels"]]
    for key in ("vendor", "eigen"):
        if r[key] is not None:
            r[key] = Result(r[key])
    r["passed"] = all(x.passed for x in r["levels"]) and all(r[key] is None or r[key].passed for key in ("vendor", "eigen"))
    return r
