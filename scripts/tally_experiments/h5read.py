"""Reading the apps' HDF5 files into plain Python values (h5py + numpy)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np


def plain(value: Any) -> Any:
    """An HDF5 attribute as a plain Python value: bytes -> str, numpy scalars -> int/float/bool,
    one-element arrays -> their element, other arrays -> lists."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, np.ndarray):
        if value.shape == () or value.size == 1:
            return plain(value.reshape(-1)[0])
        return [plain(v) for v in value.tolist()]
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    return value


def attrs(obj) -> dict[str, Any]:
    """All attributes of an h5py group or dataset as a dict of plain values."""
    return {k: plain(v) for k, v in obj.attrs.items()}


def read_attrs(path: Path, group: str = "/") -> dict[str, Any]:
    """Attributes of one group of a file; {} when the group does not exist."""
    import h5py

    with h5py.File(path, "r") as f:
        if group not in f:
            return {}
        return attrs(f[group])


def read_dataset(path: Path, name: str) -> np.ndarray | None:
    import h5py

    with h5py.File(path, "r") as f:
        if name not in f:
            return None
        return np.asarray(f[name][()])


def as_bool(value: Any) -> bool:
    """Booleans as the C++ writer may store them (bool, 0/1, "true"/"false")."""
    if isinstance(value, str):
        return value.strip().lower() in ("true", "1", "yes")
    return bool(value)
