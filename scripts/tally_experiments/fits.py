"""Rates from measured data: observed order between successive grids and log-log slope fits."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def observed_orders(h, err) -> np.ndarray:
    """p_i = log(e_i / e_{i+1}) / log(h_i / h_{i+1}) between successive grids (len(h) - 1 values).
    NaN where an error is not positive and finite (an order from a zero error means nothing)."""
    h = np.asarray(h, dtype=float)
    e = np.asarray(err, dtype=float)
    if h.shape != e.shape or h.ndim != 1:
        raise ValueError("h and err must be 1-D arrays of the same length")
    with np.errstate(divide="ignore", invalid="ignore"):
        ok = (e > 0) & np.isfinite(e)
        p = np.log(e[:-1] / e[1:]) / np.log(h[:-1] / h[1:])
        p[~(ok[:-1] & ok[1:])] = np.nan
    return p


@dataclass
class PowerFit:
    """y ~ c * x**slope, fitted by least squares on (log x, log y)."""

    slope: float
    coef: float
    slope_stderr: float  # NaN with fewer than 3 points
    npoints: int

    def __call__(self, x):
        return self.coef * np.asarray(x, dtype=float) ** self.slope


def power_fit(x, y) -> PowerFit:
    """Least-squares fit of log y = log c + slope * log x over the points where both are positive."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    ok = (x > 0) & (y > 0) & np.isfinite(x) & np.isfinite(y)
    lx, ly = np.log(x[ok]), np.log(y[ok])
    n = lx.size
    if n < 2 or np.ptp(lx) == 0:
        raise ValueError(f"a power fit needs at least two distinct positive points (got {n})")
    A = np.vstack([lx, np.ones_like(lx)]).T
    (slope, icpt), *_ = np.linalg.lstsq(A, ly, rcond=None)
    stderr = float("nan")
    if n > 2:
        resid = ly - (slope * lx + icpt)
        s2 = float(resid @ resid) / (n - 2)
        stderr = float(np.sqrt(s2 / np.sum((lx - lx.mean()) ** 2)))
    return PowerFit(float(slope), float(np.exp(icpt)), stderr, int(n))


def reference_line(x, slope: float, anchor_x: float, anchor_y: float) -> np.ndarray:
    """y = anchor_y * (x / anchor_x)**slope: a reference slope drawn through a measured point."""
    return anchor_y * (np.asarray(x, dtype=float) / anchor_x) ** slope
