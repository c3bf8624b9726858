"""heat2d from Python: the 2-D heat equation solver of apps/heat2d, one rank, in either mode.

Explicit (Jacobi for the steady state, or explicit time steps):

    r = tally.heat2d.solve(nx=129, tol=1e-8, backend="cpu")
    r.status, r.iterations, r.field.shape          # 'converged', ..., (129, 129)

The options are the executable's (`heat2d --help`), as keywords; bad input raises ValueError with
the executable's message. The result is a dict (keys also attributes): status ('converged',
'diverged', 'max-iter', 't-end'), iterations, final_residual, residual_iteration and residual_value
(NumPy arrays: the checked sweeps), field (NumPy (ny, nx), float32 or float64), sim_time, dt, r,
analytic_error ({'max', 'l2'} or None), eigen_max_abs_diff and validation_passed (validate=True),
timings (seconds), solve_s, backend, precision, out. A diverged run is a status, not an exception.

Implicit, as TeaLeaf runs it (the executable's --deck and --set):

    r = tally.heat2d.solve(deck="data/tealeaf/tea_bm_1.in", solver="cg", backend="cpu")
    r.summary["temperature"], r.iterations["total"], r.iterations["per_step"], r.field.shape

deck= is a TeaLeaf input deck (a path), set= a list of deck lines read after it (set alone: the deck
is those lines); solver, eps, eps_norm, max_iters, preconditioner and reproducible override the
deck as the executable's options do, and cheby_steps_per_pass ("auto", 1, 2 or 5: Chebyshev's steps a pass
over memory on CUDA, the same bits for each) as --cheby-steps-per-pass. The result is what `heat2d --deck ... --json` prints: summary
(volume, mass, density, energy, temperature), steps, steps_asked, status ('converged', 'max-iters',
'diverged'), converged, iterations (total and per_step), timings, solver, preconditioner, eps,
eps_norm, reproducible, backend, x_cells, y_cells; plus field, energy and density (NumPy (y_cells,
x_cells), float64). A solve that does not converge is a status, not an exception. An option of the
other mode raises ValueError naming it.

out="run.h5" also writes the executable's HDF5 file (the same groups, datasets and attributes, by
the executable's own writer; provenance/command_line records this call, and the timings are this
call's; xdmf=True adds the XDMF sidecar, as --xdmf does, and so does a deck's visit_frequency). A path that cannot be
written raises ValueError naming out before any work; the file is written under a temporary name
once the solve is done and renamed when complete, so that bad input, a failure or Ctrl-C
(KeyboardInterrupt, which stops the solve at its next checked sweep or time step) leaves no file.
"""
import json

from . import _tally
from ._result import Result, call_text, out_path

# The explicit mode's keywords and their defaults: given with another value in the implicit mode,
# they are refused by name (as the executable refuses --nx with --deck).
_EXPLICIT = dict(nx=128, ny=None, mode="steady", tol=1e-10, max_iter=1_000_000, check_every=1, alpha=1.0, dt=0.0,
                 t_end=0.0, bc_top="sin", bc_bottom="0", bc_left="0", bc_right="0", init="0", precision="double",
                 cuda_kernel="persistent", validate=False, sweeps_per_pass="auto")
_IMPLICIT = dict(solver=None, eps=None, eps_norm="l2", max_iters=None, preconditioner=None, reproducible="on",
                 cheby_steps_per_pass="auto")


def solve(nx=128, ny=None, *, mode="steady", tol=1e-10, max_iter=1_000_000, check_every=1, alpha=1.0, dt=0.0,
          t_end=0.0, bc_top="sin", bc_bottom="0", bc_left="0", bc_right="0", init="0", precision="double",
          backend="auto", device=0, cuda_kernel="persistent", validate=False, sweeps_per_pass="auto",
          deck=None, set=None, solver=None, eps=None, eps_norm="l2", max_iters=None, preconditioner=None,
          reproducible="on", cheby_steps_per_pass="auto", xdmf=False, out=None):
    """Solves one heat2d problem (and writes the executable's file to `out`); see the module's documentation."""
    given = locals()
    if deck is not None or set is not None:
        for name, default in _EXPLICIT.items():
            if given[name] != default:
                raise ValueError(f"--{name.replace('_', '-')}: an option of the explicit mode; "
                                 "with deck= or set= the deck sets the problem")
        return _solve_deck(deck, set, solver, eps, eps_norm, max_iters, preconditioner, reproducible,
                           cheby_steps_per_pass, backend, device, xdmf, out)
    for name, default in _IMPLICIT.items():
        if given[name] != default:
            raise ValueError(f"--{name.replace('_', '-')}: an option of the implicit mode, which deck= or set= selects")
    call = call_text("tally.heat2d.solve", nx=nx, ny=ny, mode=mode, tol=tol, max_iter=max_iter, check_every=check_every,
                     alpha=alpha, dt=dt, t_end=t_end, bc_top=bc_top, bc_bottom=bc_bottom, bc_left=bc_left,
                     bc_right=bc_right, init=init, precision=precision, backend=backend, device=device,
                     cuda_kernel=cuda_kernel, validate=validate, sweeps_per_pass=sweeps_per_pass, xdmf=xdmf,
                     out=out)
    spec = [str(v) if not isinstance(v, str) else v for v in (bc_top, bc_bottom, bc_left, bc_right, init)]
    return Result(_tally.heat2d_solve(int(nx), None if ny is None else int(ny), mode, float(tol), int(max_iter),
                                      int(check_every), float(alpha), float(dt), float(t_end), *spec, precision,
                                      backend, int(device), cuda_kernel, bool(validate), _sweeps(sweeps_per_pass),
                                      bool(xdmf), out_path(out), call))


def _solve_deck(deck, lines, solver, eps, eps_norm, max_iters, preconditioner, reproducible, cheby_steps, backend,
                device, xdmf, out):
    """The implicit mode: the executable's --deck run on one rank; its --json line as a dict, and the fields."""
    import os
    call = call_text("tally.heat2d.solve", deck=deck, set=lines, solver=solver, eps=eps, eps_norm=eps_norm,
                     max_iters=max_iters, preconditioner=preconditioner, reproducible=reproducible,
                     cheby_steps_per_pass=cheby_steps, backend=backend, device=device, xdmf=xdmf, out=out)
    if isinstance(lines, str):
        lines = [lines]  # one deck line
    if eps is not None and not float(eps) > 0:
        raise ValueError(f"--eps: must be a number > 0 (got {eps!r})")
    if deck is not None and not os.path.isfile(deck):
        raise ValueError(f"--deck: File does not exist: {os.fspath(deck)}")
    path = out_path(out)
    r = _tally.heat2d_deck("" if deck is None else os.fsdecode(os.fspath(deck)), [str(x) for x in (lines or [])],
                           solver or "", 0.0 if eps is None else float(eps), eps_norm,
                           0 if max_iters is None else _positive(max_iters, "--max-iters"), preconditioner or "",
                           reproducible, str(cheby_steps), backend, int(device), bool(xdmf), path, call)
    result = Result(json.loads(r.pop("json")))
    for group in ("summary", "timings"):  # JSON writes 100.0 as 100: floats, as the file holds them
        result[group] = {k: float(v) if isinstance(v, int) else v for k, v in result[group].items()}
    result.update(r)
    result["out"] = path
    return result


def _positive(v, name):
    if isinstance(v, bool) or int(v) != v or v < 1:
        raise ValueError(f"{name}: must be a positive integer (got {v!r})")
    return int(v)


def _sweeps(t):
    """sweeps_per_pass: "auto" (0) or a whole number (its range and --check-every are checked in C++)."""
    if isinstance(t, str) and t == "auto":
        return 0
    if isinstance(t, bool) or not isinstance(t, int):
        raise ValueError(f"--sweeps-per-pass: {t!r} is not auto or a whole number")
    return t
