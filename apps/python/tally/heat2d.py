"""heat2d from Python: the 2-D heat equation solver of apps/heat2d, one rank.

    r = tally.heat2d.solve(nx=129, tol=1e-8, backend="cpu")
    r.status, r.iterations, r.field.shape          # 'converged', ..., (129, 129)

The options are the executable's (`heat2d --help`), as keywords; bad input raises ValueError with
the executable's message. The result is a dict (keys also attributes): status ('converged',
'diverged', 'max-iter', 't-end'), iterations, final_residual, residual_iteration and residual_value
(NumPy arrays: the checked sweeps), field (NumPy (ny, nx), float32 or float64), sim_time, dt, r,
analytic_error ({'max', 'l2'} or None), eigen_max_abs_diff and validation_passed (validate=True),
timings (seconds), solve_s, backend, precision. A diverged run is a status, not an exception.

No HDF5 output: the executable's writer is part of its main.cpp; run the executable for the file.
"""
from . import _tally
from ._result import Result


def solve(nx=128, ny=None, *, mode="steady", tol=1e-10, max_iter=1_000_000, check_every=1, alpha=1.0, dt=0.0,
          t_end=0.0, bc_top="sin", bc_bottom="0", bc_left="0", bc_right="0", init="0", precision="double",
          backend="auto", device=0, cuda_kernel="registers", validate=False):
    """Solves one heat2d problem; see the module's documentation."""
    spec = [str(v) if not isinstance(v, str) else v for v in (bc_top, bc_bottom, bc_left, bc_right, init)]
    return Result(_tally.heat2d_solve(int(nx), None if ny is None else int(ny), mode, float(tol), int(max_iter),
                                      int(check_every), float(alpha), float(dt), float(t_end), *spec, precision,
                                      backend, int(device), cuda_kernel, bool(validate)))
