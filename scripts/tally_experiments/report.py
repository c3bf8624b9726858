"""Output: CSV tables, Markdown sections, and summary.md assembled from the sections present."""
from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Any, Sequence

# The order of the sections in summary.md (each experiment writes <name>.md next to its tables).
SECTIONS = ["heat2d-refinement", "heat2d-iterations", "heat2d-blocking", "tealeaf", "mcpi-convergence", "matmul-levels",
            "reduce-bandwidth", "scaling"]


def fmt(value: Any, digits: int = 4) -> str:
    """A table cell: floats to `digits` significant digits, NaN/None as '-'."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if math.isnan(value):
            return "-"
        if value != 0 and (abs(value) >= 1e5 or abs(value) < 1e-3):
            return f"{value:.{digits - 1}e}"
        return f"{value:.{digits}g}"
    return str(value)


def write_csv(path: Path, header: Sequence[str], rows: Sequence[Sequence[Any]]) -> Path:
    """Full-precision CSV (repr of floats, empty for NaN/None)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        for row in rows:
            w.writerow(["" if v is None or (isinstance(v, float) and math.isnan(v))
                        else repr(v) if isinstance(v, float) else v for v in row])
    return path


def read_csv(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def md_table(header: Sequence[str], rows: Sequence[Sequence[Any]], digits: int = 4) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    for row in rows:
        lines.append("| " + " | ".join(fmt(v, digits) for v in row) + " |")
    return "\n".join(lines)


def write_section(out: Path, name: str, text: str) -> Path:
    path = out / f"{name}.md"
    path.write_text(text.rstrip() + "\n")
    return path


def write_summary(out: Path, header: str) -> Path:
    """summary.md: a header, then every experiment section found in `out`, in a fixed order."""
    parts = [header.rstrip()]
    for name in SECTIONS:
        section = out / f"{name}.md"
        if section.is_file():
            parts.append(section.read_text().rstrip())
    path = out / "summary.md"
    path.write_text("\n\n".join(parts) + "\n")
    return path
