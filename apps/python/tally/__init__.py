"""tally from Python: the library's reductions on any array, on its own device, without a copy,
and the three apps' solvers as functions.

    import numpy as np, tally
    x = np.random.rand(64, 1024, 4096).astype(np.float32)
    s = tally.reduce(x, "sum", axis=2)          # float32 (64, 1024); max/min propagate NaN
    i = tally.argmax(x, axis=2)                 # int64 (64, 1024): first index, first NaN wins
    v, m = tally.var_mean(x, axis=(0, 1))       # one pass, Welford/Chan in float64
    lo, hi = tally.aminmax(x)                   # one read of x; NaN in both where a NaN was met
    w = tally.segment_reduce(x.ravel(), np.array([0, 10, 10, x.size]), "max")  # CSR segments
    d = tally.exact_dot(x[0, 0], x[1, 0])       # exact, rounded once

Arrays: NumPy, PyTorch (CPU and CUDA), CuPy; other DLPack or CUDA-array-interface arrays (JAX,
Numba, ...) go through CuPy or PyTorch without a copy. See tally.reduce for the details.
"""
from . import _tally
from ._reduce import LayoutError, reduce, OPS
from ._reducers import aminmax, argmax, argmin, mean, var, var_mean
from ._segments import exact_dot, segment_reduce

__all__ = ["reduce", "argmax", "argmin", "aminmax", "var_mean", "mean", "var", "segment_reduce", "exact_dot", "LayoutError", "OPS", "cuda_built",
           "cuda_device_count", "heat2d", "matmul", "mcpi"]

cuda_built = _tally.cuda_built
cuda_device_count = _tally.cuda_device_count


def __getattr__(name):
    # The solvers load on first use: `import tally` stays light for reduce-only scripts.
    if name in ("heat2d", "matmul", "mcpi"):
        import importlib
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'tally' has no attribute {name!r}")
