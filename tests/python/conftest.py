"""pytest set-up: the experiments' package (scripts/tally_experiments) on sys.path, the build tree,
and skipping when an app or the Python module is missing (the module's absence said once, at the end)."""
import os
import sys
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"
sys.path.insert(0, str(SCRIPTS))
MODULE_MISSING = "the tally Python module is not built"

from tally_experiments import runner  # noqa: E402


@pytest.fixture(scope="session")
def build_dir() -> Path:
    return runner.default_build_dir()


def require_app(build_dir: Path, app: str) -> Path:
    """The app's executable, or a skip that says where it was looked for and how to build it."""
    try:
        return runner.find_executable(build_dir, app)
    except runner.MissingExecutable as e:
        pytest.skip(f"{e} [TALLY_BUILD_DIR={os.environ.get('TALLY_BUILD_DIR', '<unset>')}]")


def import_tally():
    """The `tally` Python package: the one the CMake build assembled under <build>/python, else an
    installed one (pip install .); a skip that says how to build it otherwise."""
    import importlib
    tree = runner.default_build_dir() / "python"
    if (tree / "tally" / "__init__.py").is_file() and str(tree) not in sys.path:
        sys.path.insert(0, str(tree))
    try:
        return importlib.import_module("tally")
    except ImportError as e:
        pytest.skip(f"{MODULE_MISSING} ({e}); configure with nanobind installed "
                    f"(-DTALLY_PYTHON=ON) or pip install . [looked in {tree}]")


@pytest.fixture(scope="session")
def tally():
    return import_tally()


def pytest_terminal_summary(terminalreporter):
    """One line when the module's tests were skipped for want of the module (a build without nanobind)."""
    skipped = [r for r in terminalreporter.stats.get("skipped", []) if MODULE_MISSING in str(r.longrepr)]
    if skipped:
        terminalreporter.write_line(f"tests/python: {MODULE_MISSING}: {len(skipped)} of its tests skipped, not run "
                                    "(it is built when nanobind is installed at configure time, or by pip install .)")
