"""matmul from Python: apps/matmul's engines, C = A B with every element a dot product reduced at
the chosen levels, each checked against a double-double reference, one rank.

    r = tally.matmul.run(m=64, n=64, k=4096, level="gang", backend="cpu")
    [(x.name, x.gflops, x.passed) for x in r.levels]

Options as the executable's (`matmul --help`): m, n, k or size; precision 'float' or 'double';
level a name, a comma list or a list ('vector', 'worker', 'worker+vector', 'gang', 'tiled', 'tiled-tc'
(CUDA only, not with exact=True), 'ozaki' (INT8 products of residues, the Ozaki scheme), 'all');
ozaki_moduli the ozaki level's moduli, 'auto' (as accurate as DGEMM / SGEMM) or a count in [1, 20];
seed, warmup, repeats, split_k, eigen (compare with Eigen; the executable's --no-eigen is
eigen=False); a and b: NumPy matrices (m x k, k x n, of the precision's dtype) instead of the
generated inputs (the executable's --a/--b files). Bad input raises ValueError with the
executable's message. The result (a dict, keys also attributes): levels (one dict per level:
name, time_s, gflops, gbps, rel_error, tolerance, passed, rel_diff_cublas/rel_diff_eigen when
compared), vendor (cuBLAS on the GPU, else None), eigen, timings, copy_bandwidth_gbs (GPU), c (the
last level's product as NumPy when return_c=True), passed, shape, backend, out.

out="run.h5" also writes the executable's HDF5 file (the same groups, datasets and attributes, by
the executable's own writer; write_c=True adds /C as --write-c does; /ranks says one rank;
provenance/command_line records this call, attributes a and b say 'python array' for given
matrices, and the timings are this call's). A path that cannot be written raises ValueError naming
out before any work; the file is written under a temporary name once every level has run and
renamed when complete, so that bad input or a failure leaves no file.
"""
from . import _tally
from ._result import Result, call_text, out_path


def run(m=256, n=256, k=256, *, size=None, precision="float", level="all", backend="auto", device=0, seed=20260101,
        warmup=1, repeats=5, split_k=0, eigen=True, a=None, b=None, return_c=False, write_c=False, exact=False, out=None,
        ozaki_moduli="auto"):
    """Multiplies and checks (and writes the executable's file to `out`); see the module's documentation."""
    call = call_text("tally.matmul.run", m=m, n=n, k=k, size=size, precision=precision, level=level, backend=backend,
                     device=device, seed=seed, warmup=warmup, repeats=repeats, split_k=split_k, eigen=eigen, a=a, b=b,
                     write_c=write_c, exact=exact, out=out, ozaki_moduli=ozaki_moduli)
    if size is not None:
        m = n = k = size
    if a is not None:
        m, k = a.shape if getattr(a, "ndim", 0) == 2 else (m, k)
    if b is not None and getattr(b, "ndim", 0) == 2:
        k, n = b.shape[0] if a is None else k, b.shape[1]
    levels = [s.strip() for s in level.split(",")] if isinstance(level, str) else list(level)
    r = Result(_tally.matmul_run(int(m), int(n), int(k), precision, levels, backend, int(device), int(seed), int(warmup),
                                 int(repeats), int(split_k), bool(eigen), a, b, bool(return_c), bool(write_c),
                                 bool(exact), out_path(out), call, str(ozaki_moduli)))
    r["levels"] = [Result(x) for x in r["levels"]]
    for key in ("vendor", "eigen"):
        if r[key] is not None:
            r[key] = Result(r[key])
    return r
