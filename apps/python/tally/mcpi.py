"""mcpi from Python: the Monte Carlo pi estimator of apps/mcpi, one rank.

    r = tally.mcpi.estimate(n="2^24", backend="cpu")
    r.estimate, r.hits, r.std_error, r.passed

The options are the executable's (`mcpi --help`); n, offset and batch take an int or the
executable's text ('1e8', '2^30'). Bad input raises ValueError with the executable's message. The
result (a dict, keys also attributes): estimate, hits, n, std_error, abs_error, passed (within 5
standard errors, the executable's check), batch_n and batch_hits (NumPy), setup_s,
generate_count_s, generator, api, offset, seed, backend. The CPU backend counts the same points as
the GPU, bit for bit, for the generators it supports.

No HDF5 output: the executable's writer is part of its main.cpp; run the executable for the file.
"""
from . import _tally
from ._result import Result, count_text


def estimate(n=100_000_000, *, generator="philox", api="device", offset=0, seed=20260101, batch="2^32",
             backend="auto", device=0):
    """Estimates pi from n samples; see the module's documentation."""
    return Result(_tally.mcpi_estimate(count_text(n), generator, api, count_text(offset), int(seed), count_text(batch),
                                       backend, int(device)))
