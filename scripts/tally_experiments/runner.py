"""Running the apps: where the executables are, which runs can be reused, and executing the rest.

A run is an app with its options and the result file it writes. An existing result file is reused
when every recorded root attribute named in the run's `match` equals the requested value (so a long
study can be stopped and resumed, and a file made with other parameters is never mistaken for it).
"""
from __future__ import annotations

import hashlib
import importlib
import inspect
import math
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from . import h5read

REPO_ROOT = Path(__file__).resolve().parents[2]

# Where each executable lives inside a CMake build tree.
EXECUTABLES = {
    "heat2d": "apps/heat2d/heat2d",
    "matmul": "apps/matmul/matmul",
    "mcpi": "apps/mcpi/mcpi",
    "reduce-bench": "reduce/bench/reduce-bench",
}


# The Python module's function for each app (tally.<module>.<function>), used in place of the
# executable when it takes every option of a run and can write the same result file (out=).
MODULE_FUNCTIONS = {"heat2d": ("heat2d", "solve"), "matmul": ("matmul", "run"), "mcpi": ("mcpi", "estimate")}


class ExperimentError(RuntimeError):
    """A run failed or its output cannot be used: the message says which and why."""

    def __init__(self, message: str, returncode: int | None = None, detail: str = ""):
        super().__init__(message)
        self.returncode = returncode
        self.detail = detail  # the app's last stderr line


class MissingExecutable(ExperimentError):
    pass


def default_build_dir() -> Path:
    """$TALLY_BUILD_DIR, else build/default, else build/cpu under the repository root."""
    env = os.environ.get("TALLY_BUILD_DIR")
    if env:
        return Path(env)
    for name in ("default", "cpu"):
        candidate = REPO_ROOT / "build" / name
        if candidate.is_dir():
            return candidate
    return REPO_ROOT / "build" / "default"


def find_executable(build_dir: Path, app: str) -> Path:
    rel = EXECUTABLES[app]
    for candidate in (build_dir / rel, build_dir / Path(rel).name):
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    raise MissingExecutable(
        f"{app}: executable not found at {build_dir / rel} (build it: cmake --build {build_dir} "
        f"--target {app}, or point --build-dir / $TALLY_BUILD_DIR at a build tree that has it)")


def format_value(value: Any) -> str:
    """A command-line value: floats in full precision (repr), so the app records exactly it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    return str(value)


def values_equal(recorded: Any, requested: Any, rel: float = 1e-9) -> bool:
    """Whether a recorded attribute equals a requested value (numbers to a relative 1e-9, so
    "0.05" and 0.05 match; strings exactly; booleans in any of their stored forms)."""
    if isinstance(requested, bool):
        return h5read.as_bool(recorded) == requested
    try:
        a, b = float(recorded), float(requested)
    except (TypeError, ValueError):
        return str(recorded) == str(requested)
    if math.isnan(a) or math.isnan(b):
        return False
    return a == b or abs(a - b) <= rel * max(abs(a), abs(b))


@dataclass
class Run:
    """One execution of an app."""

    app: str
    options: dict[str, Any]          # option name without "--" -> value (True: a flag)
    path: Path                       # the result file (--out)
    match: dict[str, Any] = field(default_factory=dict)   # root attribute -> required value
    ok_status: tuple[str, ...] | None = None  # statuses that make a usable result (None: any)
    label: str = ""
    # Runs sharing a group (e.g. one generator) are skipped together when the build rejects one of
    # them as unsupported (exit code 2): the experiment reports the group as unavailable.
    group: str | None = None
    extra_files: list[Path] = field(default_factory=list)  # other outputs that must exist for reuse
    ranks: int = 1  # > 1: started by the MPI launcher with that many ranks (launcher_prefix)

    def argv(self, exe: Path | str) -> list[str]:
        argv = launcher_prefix(self.ranks) + [str(exe)]
        for name, value in self.options.items():
            if value is True:
                argv.append(f"--{name}")
            elif value is False or value is None:
                continue
            else:
                argv += [f"--{name}", format_value(value)]
        argv += ["--out", str(self.path)]
        return argv

    def mismatches(self) -> list[str]:
        """Why the existing result file cannot be reused ([] when it can)."""
        if not self.path.is_file():
            return ["no result file"]
        for extra in self.extra_files:
            if not extra.is_file():
                return [f"no {extra.name}"]
        try:
            recorded = h5read.read_attrs(self.path)
        except Exception as e:  # unreadable, truncated, not HDF5
            return [f"unreadable ({e.__class__.__name__}: {e})"]
        why = []
        if recorded.get("app") not in (None, self.app):
            why.append(f"app={recorded.get('app')!r}")
        for key, want in self.match.items():
            if key not in recorded:
                why.append(f"{key} not recorded")
            elif not values_equal(recorded[key], want):
                why.append(f"{key}={recorded[key]!r} (want {want!r})")
        ranks = int(h5read.read_attrs(self.path, "ranks").get("ranks", 1))  # no /ranks group: one rank
        if ranks != self.ranks:
            why.append(f"ranks={ranks} (want {self.ranks})")
        if self.ok_status is not None and recorded.get("status") not in self.ok_status:
            why.append(f"status={recorded.get('status')!r}")
        return why

    def reusable(self) -> bool:
        return not self.mismatches()


# Multi-rank runs: NVLink multicast stays off on shared machines (it can take the host's GPUs out
# of service), so every launch sets these, whatever the caller's environment holds.
MULTI_GPU_ENV = {"NCCL_NVLS_ENABLE": "0", "NVSHMEM_DISABLE_NVLS": "1", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1"}


def launcher_prefix(ranks: int) -> list[str]:
    """`mpiexec -n R` (--oversubscribe so that a laptop or CI runs more ranks than cores; as root,
    OpenMPI also wants --allow-run-as-root); [] for one rank, which runs the program directly."""
    if ranks <= 1:
        return []
    launcher = os.environ.get("TALLY_MPIEXEC", "mpiexec")
    prefix = [launcher, "-n", str(ranks), "--oversubscribe"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        prefix.append("--allow-run-as-root")
    return prefix


def launch_env(ranks: int) -> dict[str, str]:
    """The environment of a run: the caller's, the multicast switches, and for CPU runs of several
    ranks an even share of the cores each (OpenMP would otherwise start nproc threads per rank)."""
    env = {**os.environ, **MULTI_GPU_ENV}
    if ranks > 1 and "OMP_NUM_THREADS" not in os.environ:
        env["OMP_NUM_THREADS"] = str(max(1, (os.cpu_count() or 1) // ranks))
    return env


def run_path(folder: Path, stem: str, options: dict[str, Any]) -> Path:
    """A result file name that is readable and unique for the options: '<stem>-<hash8>.h5'."""
    key = ";".join(f"{k}={format_value(v)}" for k, v in sorted(options.items()))
    digest = hashlib.sha1(key.encode()).hexdigest()[:8]
    safe = re.sub(r"[^A-Za-z0-9_.+-]", "_", stem)
    return folder / f"{safe}-{digest}.h5"


def make_run(app: str, folder: Path, stem: str, options: dict[str, Any], *,
             match_keys: Iterable[str] | None = None, ok_status: tuple[str, ...] | None = None,
             label: str = "", ranks: int = 1) -> Run:
    """A run whose reuse check compares the recorded root attributes named by match_keys (default:
    every valued option, '-' -> '_') with the requested values. --backend auto matches any backend."""
    match: dict[str, Any] = {}
    keys = list(match_keys) if match_keys is not None else [
        k for k, v in options.items() if not isinstance(v, bool) and v is not None]
    for k in keys:
        v = options[k]
        if k == "backend" and v == "auto":
            continue
        match[k.replace("-", "_")] = v
    path = run_path(folder, f"{stem}-r{ranks}" if ranks > 1 else stem, options)
    return Run(app, dict(options), path, match, ok_status, label or stem, ranks=ranks)


def load_module(build_dir: Path):
    """The build tree's `tally` Python module, or None when the tree has none (or it fails to load).
    The module comes from that tree only, so that runs in-process and executables agree."""
    tree = build_dir / "python"
    if not (tree / "tally" / "__init__.py").is_file():
        return None
    if str(tree) not in sys.path:
        sys.path.insert(0, str(tree))
    try:
        mod = importlib.import_module("tally")
    except ImportError:
        return None
    if not Path(mod.__file__).resolve().is_relative_to(tree.resolve()):
        return None  # another tally (installed) was imported first: not this build's
    return mod


def module_call(module, run: "Run"):
    """fn(**kwargs) that writes run.path in-process, or None when the module cannot do this run
    (several ranks, no such function, an option it does not take, no out= keyword)."""
    if module is None or run.ranks > 1 or run.app not in MODULE_FUNCTIONS:
        return None
    sub, name = MODULE_FUNCTIONS[run.app]
    try:
        fn = getattr(importlib.import_module(f"{module.__name__}.{sub}"), name)
        params = inspect.signature(fn).parameters
    except (ImportError, AttributeError, ValueError):
        return None
    kwargs = {}
    for key, value in run.options.items():
        if value is False or value is None:
            continue
        kw = key.replace("-", "_")
        if kw not in params:
            return None
        kwargs[kw] = value
    if "out" not in params:
        return None
    kwargs["out"] = str(run.path)
    return lambda: fn(**kwargs)


@dataclass
class Runner:
    """Executes runs (or lists them with dry_run), reusing finished result files. A run of one rank
    goes through the build tree's Python module when it can write the same file (no process and no
    CUDA context per point); in_process=False runs every one through its executable."""

    build_dir: Path
    dry_run: bool = False
    reuse: bool = True
    verbose: bool = True
    in_process: bool = True
    executed: int = 0
    executed_in_process: int = 0
    reused: int = 0
    unavailable: dict[str, str] = field(default_factory=dict)  # group -> the app's reason
    _module: Any = None
    _module_loaded: bool = False

    def module(self):
        if not self._module_loaded:
            self._module = load_module(self.build_dir) if self.in_process else None
            self._module_loaded = True
        return self._module

    def log(self, msg: str) -> None:
        if self.verbose:
            print(msg, file=sys.stderr, flush=True)

    def exe(self, app: str) -> Path:
        return find_executable(self.build_dir, app)

    def plan(self, runs: list[Run]) -> list[tuple[Run, str]]:
        """Each run with what would happen to it: 'reuse' or 'run (<why>)'."""
        out = []
        for r in runs:
            why = r.mismatches() if self.reuse else ["--no-reuse"]
            out.append((r, "reuse" if not why else "run (" + "; ".join(why) + ")"))
        return out

    def execute(self, runs: list[Run]) -> list[Run]:
        """Runs what is needed, in order. With dry_run, prints the plan and runs nothing."""
        planned = self.plan(runs)
        if self.dry_run:
            for app in dict.fromkeys(r.app for r in runs):
                try:
                    self.exe(app)
                except MissingExecutable as e:
                    print(f"# note: {e}")
            for r, what in planned:
                exe = self.build_dir / EXECUTABLES[r.app]
                verb, _, why = what.partition(" ")
                print(f"{verb:5s} {' '.join(r.argv(exe))}" + (f"   # {why.strip('()')}" if why else ""))
            return runs
        todo = [r for r, what in planned if what != "reuse"]
        if todo and module_call(self.module(), todo[0]) is None:
            self.exe(todo[0].app)  # fail before the first run when the app is missing
        for i, (r, what) in enumerate(planned, 1):
            if what == "reuse":
                self.reused += 1
                continue
            if r.group is not None and r.group in self.unavailable:
                continue
            r.path.parent.mkdir(parents=True, exist_ok=True)
            call = module_call(self.module(), r)
            if call is not None:
                argv = [f"tally.{'.'.join(MODULE_FUNCTIONS[r.app])}(...)"]
                t0 = time.perf_counter()
                try:
                    call()
                    proc = subprocess.CompletedProcess(argv, 0, "", "")
                except ValueError as e:  # the executable's exit code 2: bad input for this build
                    proc = subprocess.CompletedProcess(argv, 2, "", str(e))
            else:
                argv = r.argv(self.exe(r.app))
                t0 = time.perf_counter()
                proc = subprocess.run(argv, capture_output=True, text=True, env=launch_env(r.ranks))
            dt = time.perf_counter() - t0
            if proc.returncode != 0:
                tail = (proc.stderr or proc.stdout).strip().splitlines()[-5:]
                if proc.returncode == 2 and r.group is not None and not self.dry_run:
                    # bad input for this build (e.g. a generator it cannot reproduce): skip the group
                    self.unavailable[r.group] = tail[-1] if tail else "rejected (exit code 2)"
                    self.log(f"[{i}/{len(planned)}] {r.label}: unavailable in this build: "
                             f"{self.unavailable[r.group]}")
                    continue
                raise ExperimentError(
                    f"{r.app} exited with code {proc.returncode}: {' '.join(argv)}\n  " + "\n  ".join(tail),
                    proc.returncode, tail[-1] if tail else "")
            if not r.path.is_file():
                raise ExperimentError(f"{r.app} wrote no result file {r.path}: {' '.join(argv)}")
            self.executed += 1
            self.executed_in_process += call is not None
            self.log(f"[{i}/{len(planned)}] {r.label}: {dt:.2f} s" + (" (in-process)" if call is not None else ""))
            why = r.mismatches()
            if why:  # not converged, or the app does not record what it was asked (reuse would never work)
                raise ExperimentError(f"{r.app} finished but its output cannot be used ({'; '.join(why)}): "
                                      f"{' '.join(argv)}")
        return runs
