"""pytest set-up: the package on sys.path, the build tree, and skipping when an app is missing."""
import os
import sys
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(SCRIPTS))

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
        pytest.skip(f"the tally Python module is not built ({e}); configure with nanobind installed "
                    f"(-DTALLY_PYTHON=ON) or pip install . [looked in {tree}]")


@pytest.fixture(scope="session")
def tally():
    return import_tally()
