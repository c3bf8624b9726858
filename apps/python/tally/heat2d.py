"""heat2d from Python: the 2-D heat equation solver of apps/heat2d, one rank.

    r = tally.heat2d.solve(nx=129, tol=1e-8, backend="cpu")
    r.status, r.iterations, r.field.shape          # 'converged', ..., (129, 129)

The options are the executable's (`heat2d --help`), as keywords; bad input raises ValueError with
the executable's message. The result is a dict (keys also attributes): status ('converged',
'diverged', 'max-iter', 't-end'), iterations, final_residual, residual_iteration and residual_value
(NumPy arrays: the checked sweeps), field (NumPy (ny, nx), float32 or float64), sim_time, dt, r,
analytic_error ({'max', 'l2'} or None), eigen_max_abs_diff and validation_passed (validate=True),
timings (seconds), solve_s, backend, precision, out. A diverged run is a status, not an exception.

out="run.h5" also writes the executable's HDF5 file (the same groups, datasets and attributes, by
the executable's own writer; /ranks says one rank; provenance/command_line records this call, and
the timings are this call's; no XDMF sidecar). A path that cannot be written raises ValueError
naming out before any work; the file is written under a temporary name once the solve is done and
renamed when complete, so that bad input, a failure or Ctrl-C (KeyboardInterrupt, which stops the
solve at its next checked sweep) leaves no file.
"""
from . import _tally
from ._result import Result, call_text, out_path


def solve(nx=128, ny=None, *, mode="steady", tol=1e-10, max_iter=1_000_000, check_every=1, alpha=1.0, dt=0.0,
          t_end=0.0, bc_top="sin", bc_bottom="0", bc_left="0", bc_right="0", init="0", precision="double",
          backend="auto", device=0, cuda_kernel="persistent", validate=False, sweeps_per_pass="auto", out=None):
    """Solves one heat2d problem (and writes the executable's file to `out`); see the module's documentation."""
    call = call_text("tally.heat2d.solve", nx=nx, ny=ny, mode=mode, tol=tol, max_iter=max_iter, check_every=check_every,
                     alpha=alpha, dt=dt, t_end=t_end, bc_top=bc_top, bc_bottom=bc_bottom, bc_left=bc_left,
                     bc_right=bc_right, init=init, precision=precision, backend=backend, device=device,
                     cuda_kernel=cuda_kernel, validate=validate, sweeps_per_pass=sweeps_per_pass, out=out)
    spec = [str(v) if not isinstance(v, str) else v for v in (bc_top, bc_bottom, bc_left, bc_right, init)]
    return Result(_tally.heat2d_solve(int(nx), None if ny is None else int(ny), mode, float(tol), int(max_iter),
                                      int(check_every), float(alpha), float(dt), float(t_end), *spec, precision,
                                      backend, int(device), cuda_kernel, bool(validate), _sweeps(sweeps_per_pass),
                                      out_path(out), call))


def _sweeps(t):
    """sweeps_per_pass: "auto" (0) or a whole number (its range and --check-every are checked in C++)."""
    if isinstance(t, str) and t == "auto":
        return 0
    if isinstance(t, bool) or not isinstance(t, int):
        raise ValueError(f"--sweeps-per-pass: {t!r} is not auto or a whole number")
    return t
