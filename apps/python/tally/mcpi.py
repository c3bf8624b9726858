"""mcpi from Python: the Monte Carlo pi estimator of apps/mcpi, one rank.

    r = tally.mcpi.estimate(n="2^24", backend="cpu")
    r.estimate, r.hits, r.error_bound, r.passed

The options are the executable's (`mcpi --help`); n, offset and batch take an int or the
executable's text ('1e8', '2^30'). Bad input raises ValueError with the executable's message. The
result (a dict, keys also attributes): estimate, hits, n, std_error, abs_error, error_bound, passed
(abs_error within error_bound: the executable's check), batch_n and batch_hits (NumPy), setup_s,
generate_count_s, total_s, generator, api, offset, seed, backend, out. The CPU backend counts the
same points as the GPU, bit for bit, for the generators it supports.

error_bound(generator, n, offset=0) is that bound: the |4 hits/n - pi| that a correct count of n
pseudo-random points exceeds with probability below 1e-20 (Bernstein's inequality), and that points
offset .. offset+n-1 of the Sobol sequences never exceed (their nets' cells).

out="run.h5" also writes the executable's HDF5 file (the same groups, datasets and attributes, by
the executable's own writer; /ranks says one rank; provenance/command_line records this call, and
the timings are this call's). A path that cannot be written raises ValueError naming out before any
work; the file is written under a temporary name once the estimate is done and renamed when
complete, so that bad input, a failure or Ctrl-C (KeyboardInterrupt, checked after each batch)
leaves no file.
"""
from . import _tally
from ._result import Result, call_text, count_text, out_path


def estimate(n=100_000_000, *, generator="philox", api="device", offset=0, seed=20260101, batch="2^32",
             backend="auto", device=0, out=None):
    """Estimates pi from n samples (and writes the executable's file to `out`); see the module's documentation."""
    call = call_text("tally.mcpi.estimate", n=n, generator=generator, api=api, offset=offset, seed=seed, batch=batch,
                     backend=backend, device=device, out=out)
    return Result(_tally.mcpi_estimate(count_text(n), generator, api, count_text(offset), int(seed), count_text(batch),
                                       backend, int(device), out_path(out), call))


def error_bound(generator, n, offset=0):
    """The |4 hits/n - pi| a correct count of samples offset .. offset+n-1 does not exceed (the module's documentation)."""
    return _tally.mcpi_error_bound(generator, int(offset), int(n))
