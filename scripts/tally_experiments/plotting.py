"""matplotlib on the Agg backend (no display), with the few helpers every figure uses."""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402,F401

plt.rcParams.update({
    "figure.dpi": 110,
    "savefig.dpi": 130,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "grid.linestyle": ":",
    "legend.fontsize": 8,
    "axes.titlesize": 10,
    "axes.labelsize": 9,
})


def subplots(nrows: int = 1, ncols: int = 1, width: float = 6.0, height: float = 4.5, **kw):
    return plt.subplots(nrows, ncols, figsize=(width * ncols, height * nrows), squeeze=False, **kw)


def save(fig, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def data_ticks(ax, values, axis: str = "x", fmt=None) -> None:
    """Log-axis ticks at the measured values, printed as plain numbers (no crowded 3x10^1 labels)."""
    from matplotlib.ticker import FixedLocator, NullLocator

    a = ax.xaxis if axis == "x" else ax.yaxis
    vals = sorted(set(float(v) for v in values))
    a.set_major_locator(FixedLocator(vals))
    a.set_minor_locator(NullLocator())
    a.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: fmt(v) if fmt else f"{v:g}"))


def reciprocal_label(v: float) -> str:
    """0.015625 -> '1/64' (a grid spacing), other values as %g."""
    m = 1.0 / v if v else 0.0
    return f"1/{round(m)}" if m and abs(m - round(m)) < 1e-9 * m else f"{v:g}"
