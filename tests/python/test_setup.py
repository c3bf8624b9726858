"""scripts/setup.sh in made-up environments: tools that are on PATH but not Debian packages (cmake
from pip, Kitware or a module) are never installed again; only what is missing is, and only by root
with apt-get; otherwise the one command is printed. Every outside command setup.sh could change the
machine with (apt-get, dpkg, pip) is a stand-in that records its arguments, and the CMake probe is
answered by the stand-in cmake, so these run in a second or two and touch nothing."""
import os
import stat
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SETUP = ROOT / "scripts" / "setup.sh"

# Stand-ins. Each records "name args..." in $CALLS; the probe's answer is $TEST_MISSING until a
# stand-in apt-get has installed something.
STANDINS = {
    "cmake": r"""
if [ "$1" = --version ]; then echo "cmake version ${TEST_CMAKE_VERSION:-4.4.0}"; echo; echo "CMake suite maintained and supported by Kitware (kitware.com/cmake)."; exit 0; fi
echo "cmake $*" >>"$CALLS"
echo "-- The CXX compiler identification is GNU 13.2.0"
echo "-- tally-setup: compiler: ${TEST_COMPILER:-GNU}"
if [ -e "$STATE/apt-installed" ]; then echo "-- tally-setup: missing: "; else echo "-- tally-setup: missing: ${TEST_MISSING:-}"; fi
""",
    "ninja": 'if [ "$1" = --version ]; then echo 1.12.1; exit 0; fi\necho "ninja $*" >>"$CALLS"',
    # apt-get: records its command (options dropped) and remembers an install.
    "apt-get": r"""
while [ "$1" = -o ]; do shift 2; done
echo "apt-get $*" >>"$CALLS"
[ -n "${TEST_APT_FAIL:-}" ] && exit 100  # no network
[ "$1" = install ] && touch "$STATE/apt-installed"
exit 0
""",
    "dpkg": 'echo "dpkg $*" >>"$CALLS"\nexit 1',
    "dpkg-query": 'echo "dpkg-query $*" >>"$CALLS"\nexit 1',
    "sudo": 'echo "sudo $*" >>"$CALLS"\nexit 1',
    "id": 'if [ "$1" = -u ]; then echo "${TEST_UID:-0}"; else echo "uid=${TEST_UID:-0}"; fi',
    "nvcc": 'echo "nvcc: NVIDIA (R) Cuda compiler driver"',
    "clang-format": 'echo "Debian clang-format version 14.0.6"',
    # python: answers setup's import check from $TEST_PYMISSING; records pip, which fails (installs
    # nothing) with $TEST_PIP_FAIL.
    "python": r"""
if [ "$1" = - ]; then
  shift; cat >/dev/null
  for m in "$@"; do case " ${TEST_PYMISSING:-} " in *" $m "*) echo "$m" ;; esac; done
  exit 0
fi
echo "python $*" >>"$CALLS"
[ -n "${TEST_PIP_FAIL:-}" ] && exit 1
exit 0
""",
}


def _write_exe(path: Path, body: str) -> None:
    path.write_text("#!/bin/sh\n" + body.lstrip("\n") + "\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


class Env:
    """A PATH of stand-ins ahead of links to every other command of this machine's PATH, less the
    hidden ones (so 'no ninja, no make' can be made on a machine that has both)."""

    def __init__(self, tmp: Path, hide=(), drop_standins=()):
        self.tmp = tmp
        self.calls = tmp / "calls.txt"
        self.state = tmp / "state"
        self.state.mkdir()
        stand = tmp / "standins"
        stand.mkdir()
        for name, body in STANDINS.items():
            if name not in drop_standins:
                _write_exe(stand / name, body)
        farm = tmp / "system"
        farm.mkdir()
        shadowed = set(STANDINS) | set(hide)  # a dropped stand-in is hidden too
        for d in os.environ.get("PATH", "").split(os.pathsep):
            if not d or not os.path.isdir(d):
                continue
            for entry in os.scandir(d):
                if entry.name in shadowed or (farm / entry.name).exists():
                    continue
                if entry.is_file() and os.access(entry.path, os.X_OK):
                    (farm / entry.name).symlink_to(entry.path)
        self.env = {
            "PATH": f"{stand}{os.pathsep}{farm}",
            "HOME": str(tmp),
            "TMPDIR": str(tmp),
            "CALLS": str(self.calls),
            "STATE": str(self.state),
            "PYTHON": str(stand / "python"),
            "LANG": "C",
        }

    def run(self, **extra) -> subprocess.CompletedProcess:
        env = dict(self.env, **{k: str(v) for k, v in extra.items()})
        return subprocess.run(["bash", str(SETUP)], env=env, capture_output=True, text=True, timeout=60)

    def recorded(self) -> list[str]:
        return self.calls.read_text().splitlines() if self.calls.exists() else []

    def installs(self) -> list[str]:
        """The words of every apt-get install / dpkg / pip call."""
        words = []
        for line in self.recorded():
            if line.startswith(("apt-get install", "dpkg", "python -m pip")):
                words += line.split()
        return words


def test_tools_from_outside_dpkg_are_used_not_installed(tmp_path):
    """The issue's GPU machine: cmake 4.4 and ninja on PATH, not Debian packages, running as root."""
    e = Env(tmp_path)
    r = e.run(TEST_UID=0)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "" and r.stderr == ""  # quiet when everything is there
    calls = e.recorded()
    assert any(c.startswith("cmake -S") for c in calls), calls  # libraries asked of CMake
    assert not any(c.startswith(("apt-get", "dpkg", "sudo")) for c in calls), calls


def test_root_installs_only_the_missing_libraries(tmp_path):
    e = Env(tmp_path)
    r = e.run(TEST_UID=0, TEST_MISSING="Eigen3 MPI")
    assert r.returncode == 0, r.stderr
    apt = [c for c in e.recorded() if c.startswith("apt-get")]
    assert apt[0].startswith("apt-get update")
    assert len(apt) == 2, apt  # update once, one install
    words = apt[1].split()
    assert {"libeigen3-dev", "libopenmpi-dev", "openmpi-bin"} <= set(words)
    for tool in ("cmake", "ninja-build", "g++", "libhdf5-dev", "catch2", "libcli11-dev"):
        assert tool not in words
    # Asked CMake again after installing: the second answer is what counts.
    assert sum(c.startswith("cmake -S") for c in e.recorded()) == 2


def test_skip_setup_does_nothing(tmp_path):
    e = Env(tmp_path, hide=("make",), drop_standins=("cmake", "ninja"))  # set-up would fail here
    r = e.run(TALLY_SKIP_SETUP=1, TEST_UID=0)
    assert r.returncode == 0
    assert r.stdout == "" and r.stderr == ""
    assert e.recorded() == []


def test_missing_tool_as_non_root_prints_the_command(tmp_path):
    e = Env(tmp_path, hide=("make",), drop_standins=("ninja",))  # no ninja and no make
    r = e.run(TEST_UID=1000)
    assert r.returncode != 0
    assert "sudo apt-get update && sudo apt-get install -y --no-install-recommends ninja-build\n" in r.stderr
    assert "ninja (or make)" in r.stderr
    assert e.installs() == []
    assert not any(c.startswith("apt-get") for c in e.recorded())


def test_make_stands_in_for_ninja(tmp_path):
    """No ninja but make: nothing is missing (the build uses the Makefile generator)."""
    e = Env(tmp_path, drop_standins=("ninja",))
    if not (tmp_path / "system" / "make").exists():
        pytest.skip("no make on this machine's PATH")
    r = e.run(TEST_UID=0)
    assert r.returncode == 0, r.stderr
    assert e.installs() == []
    probe = [c for c in e.recorded() if c.startswith("cmake -S")]
    assert probe and "-G Unix Makefiles" in probe[0]


def test_missing_libraries_as_non_root(tmp_path):
    e = Env(tmp_path)
    r = e.run(TEST_UID=1000, TEST_MISSING="HDF5 Catch2 MPI")
    assert r.returncode == 1  # HDF5 and Catch2 are needed
    line = [l for l in r.stderr.splitlines() if "apt-get install" in l]
    assert len(line) == 1, r.stderr
    assert line[0].split()[-4:] == ["libhdf5-dev", "catch2", "libopenmpi-dev", "openmpi-bin"]
    assert e.installs() == []


def test_only_mpi_missing_as_non_root_goes_on(tmp_path):
    """MPI is wanted, not needed: the command is printed and the build goes on with one rank."""
    e = Env(tmp_path)
    r = e.run(TEST_UID=1000, TEST_MISSING="MPI")
    assert r.returncode == 0
    assert "sudo apt-get install -y --no-install-recommends libopenmpi-dev openmpi-bin" in r.stderr
    assert "one rank" in r.stderr


def test_no_apt_get_names_the_packages(tmp_path):
    e = Env(tmp_path, hide=("apt-get",), drop_standins=("apt-get",))
    r = e.run(TEST_UID=0, TEST_MISSING="CLI11")
    assert r.returncode == 1
    assert "no apt-get here" in r.stderr and "libcli11-dev" in r.stderr
    assert e.installs() == []


def test_cmake_too_old_is_reported_not_installed(tmp_path):
    e = Env(tmp_path)
    r = e.run(TEST_UID=0, TEST_CMAKE_VERSION="3.22.1")
    assert r.returncode == 1
    assert "cmake 3.22.1 is older than 3.25" in r.stderr
    assert e.installs() == []


def test_missing_python_module_is_installed_with_pip(tmp_path):
    e = Env(tmp_path)
    r = e.run(TEST_UID=0, TEST_PYMISSING="h5py")
    assert r.returncode == 0, r.stderr
    pip = [c for c in e.recorded() if c.startswith("python -m pip install")]
    assert len(pip) == 1 and pip[0].split()[-1] == "h5py"


def test_generator_falls_back_to_makefiles_without_ninja(tmp_path):
    """scripts/common.sh: -G Ninja with ninja, Unix Makefiles without, nothing for a configured dir."""
    script = f'source "{ROOT}/scripts/common.sh"; generator_args "$1"; printf "%s|" "${{generator[@]}}"'
    for has_ninja, want in ((True, "-G|Ninja|"), (False, "-G|Unix Makefiles|")):
        sub = tmp_path / str(has_ninja)
        sub.mkdir()
        e = Env(sub, drop_standins=() if has_ninja else ("ninja",))
        out = subprocess.run(["bash", "-c", script, "x", str(sub / "new")], env=e.env, capture_output=True, text=True)
        assert out.stdout == want, out.stderr
    configured = tmp_path / "configured"
    configured.mkdir()
    (configured / "CMakeCache.txt").write_text("")
    out = subprocess.run(["bash", "-c", script, "x", str(configured)], env=e.env, capture_output=True, text=True)
    assert out.stdout == "|"  # printf of no arguments


def test_root_without_network(tmp_path):
    """apt-get fails (a GPU node with no network): MPI alone missing goes on, a needed library fails."""
    e = Env(tmp_path)
    r = e.run(TEST_UID=0, TEST_MISSING="MPI", TEST_APT_FAIL=1)
    assert r.returncode == 0, r.stderr
    assert "one rank" in r.stderr and "libopenmpi-dev openmpi-bin" in r.stderr
    r = e.run(TEST_UID=0, TEST_MISSING="Eigen3 MPI", TEST_APT_FAIL=1)
    assert r.returncode == 1
    assert "Eigen3 >= 3.3" in r.stderr and "libeigen3-dev" in r.stderr


def test_parallel_hdf5_is_wanted_not_needed(tmp_path):
    """libhdf5-openmpi-dev (beside libhdf5-dev): installed by root where apt works; elsewhere the
    command is printed and the build goes on (multi-rank fields gathered to rank 0)."""
    e = Env(tmp_path)
    r = e.run(TEST_UID=0, TEST_MISSING="PHDF5")
    assert r.returncode == 0, r.stderr
    apt = [c for c in e.recorded() if c.startswith("apt-get install")]
    assert len(apt) == 1 and apt[0].split()[-1] == "libhdf5-openmpi-dev", apt
    assert "libhdf5-dev" not in apt[0].split()
    (tmp_path / "no-network").mkdir()
    e = Env(tmp_path / "no-network")
    r = e.run(TEST_UID=0, TEST_MISSING="PHDF5", TEST_APT_FAIL=1)
    assert r.returncode == 0, r.stderr
    assert "libhdf5-openmpi-dev" in r.stderr and "gathered to rank 0" in r.stderr
    (tmp_path / "user").mkdir()
    e = Env(tmp_path / "user")
    r = e.run(TEST_UID=1000, TEST_MISSING="MPI PHDF5")
    assert r.returncode == 0, r.stderr
    assert "libopenmpi-dev openmpi-bin libhdf5-openmpi-dev" in r.stderr and "one rank" in r.stderr
    assert e.installs() == []


def test_python_module_wanted_not_needed_without_network(tmp_path):
    """pip cannot install nanobind (a GPU node with no network): the build goes on without the Python
    module, whose tests report skipped; a module the tests need that pip cannot install fails."""
    e = Env(tmp_path)
    r = e.run(TEST_UID=0, TEST_PYMISSING="nanobind scikit_build_core", TEST_PIP_FAIL=1)
    assert r.returncode == 0, r.stderr
    assert "going on without the Python module" in r.stderr and "nanobind scikit_build_core" in r.stderr
    r = e.run(TEST_UID=0, TEST_PYMISSING="pytest nanobind", TEST_PIP_FAIL=1)
    assert r.returncode == 1
    assert "pip could not install pytest;" in r.stderr


def test_clang_format_is_wanted_not_needed(tmp_path):
    """Root with apt installs clang-format; without a network, or as a user, set-up says so and goes on."""
    e = Env(tmp_path, hide=("clang-format-14",), drop_standins=("clang-format",))
    r = e.run(TEST_UID=0)
    assert r.returncode == 0, r.stderr
    assert [c for c in e.recorded() if c.startswith("apt-get install")] == ["apt-get install -y -qq --no-install-recommends clang-format"]
    r = e.run(TEST_UID=0, TEST_APT_FAIL=1)
    assert r.returncode == 0 and "no clang-format: going on without it" in r.stderr, r.stderr
    r = e.run(TEST_UID=1000)
    assert r.returncode == 0
    assert "sudo apt-get install -y --no-install-recommends clang-format" in r.stderr
