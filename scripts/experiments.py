#!/usr/bin/env python3
"""Convergence and performance experiments around the tally apps.

  scripts/experiments.py all --quick --backend cpu          # every experiment, small sizes
  scripts/experiments.py heat2d-refinement --dry-run         # list the runs, run nothing
  scripts/experiments.py mcpi-convergence --out results/exp  # full size; reruns only what is missing

Outputs (in --out, default results/experiments): a CSV per table, a PNG per figure, one Markdown
section per experiment and summary.md gathering them; the apps' HDF5 files under runs/<app>/.
The code lives in scripts/tally_experiments/.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from tally_experiments.cli import main  # noqa: E402

if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:  # e.g. --dry-run | head
        sys.stderr.close()
        sys.exit(0)
