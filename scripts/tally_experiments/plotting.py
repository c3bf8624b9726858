"""matplotlib on the Agg backend (no display), with the few helpers every figure uses."""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

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
