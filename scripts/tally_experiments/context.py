"""What every experiment gets: the output folder, the runner, and the study's settings."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .runner import Runner


@dataclass
class Context:
    out: Path            # tables, figures, sections; the apps' result files under out/runs/<app>/
    runner: Runner
    backend: str = "auto"
    quick: bool = False
    seed: int = 20260101
    ranks: list[int] | None = None  # scaling: the rank counts to run

    def runs_dir(self, app: str) -> Path:
        return self.out / "runs" / app

    @property
    def size_label(self) -> str:
        return "quick" if self.quick else "full"
