"""scripts/gpu-check.sh's stages and exit codes, in a made-up project: a git repository holding the
real gpu-check.sh and common.sh, with stand-ins for the README's two commands, nvidia-smi, ctest,
compute-sanitizer and the benchmark executables, so that the check's bookkeeping runs in a second on
any machine. What is asserted: a bad stage is refused before anything is written (exit 2); stages
run in several calls add up to a check of one tree (exit 4 while some are still to run, 0 once all
have passed); a change to the tree starts afresh; a failed stage fails the check (exit 1) also
when its row comes from an earlier call; a narrowed stage's rows are shown but never kept."""
import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

if shutil.which("git") is None:
    pytest.skip("no git", allow_module_level=True)

STANDINS = {
    "nvidia-smi": 'case "$*" in *-L*) echo "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-0)" ;; '
    "*name*) echo 'NVIDIA H100 80GB HBM3' ;; *) echo 'name, driver_version'; echo 'NVIDIA H100, 580' ;; esac",
    # ctest: every run passes; the rank tests say which transport their two multi-rank runs got.
    "ctest": r"""
echo "ctest $*" >>"$CALLS"
echo "1/1 Test #1: a GPU test ....   Passed    0.01 sec"
case "$*" in *"-L ranks"*) echo "1: 2 ranks, device transport: nccl"; echo "1: 3 ranks, device transport: nccl" ;; esac
exit 0
""",
    "compute-sanitizer": 'echo "compute-sanitizer $*" >>"$CALLS"\necho "========= ERROR SUMMARY: 0 errors"',
}
README_CMD = 'echo "$0" >>"$CALLS"\nexit ${TEST_README_RC:-0}\n'
BENCH = 'echo "bench $0 $*" >>"$CALLS"\necho "| a benchmark row |"\n'


def _exe(path: Path, body: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/bash\n" + body.lstrip("\n") + "\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


class Project:
    def __init__(self, tmp: Path):
        self.root = tmp / "project"
        scripts = self.root / "scripts"
        scripts.mkdir(parents=True)
        for name in ("gpu-check.sh", "common.sh"):
            shutil.copy(ROOT / "scripts" / name, scripts / name)
        for name in ("run.sh", "test.sh"):
            _exe(scripts / name, README_CMD)
        (self.root / ".gitignore").write_text("build/\n")
        # The build the README's commands leave: CUDA for sm_90, the GPU tests, the benchmarks.
        build = self.root / "build" / "default"
        build.mkdir(parents=True)
        (build / "CMakeCache.txt").write_text("CMAKE_CUDA_COMPILER:FILEPATH=/usr/local/cuda/bin/nvcc\n")
        (build / "build.ninja").write_text("FLAGS = --generate-code=arch=compute_90,code=[compute_90,sm_90]\n")
        for t in ("reduce/reduce_gpu_test", "reduce/blocks/reduce_blocks_gpu_test", "apps/heat2d/heat2d_gpu_test",
                  "apps/mcpi/mcpi_gpu_test"):
            _exe(build / "tests" / t, "exit 0")
        _exe(build / "reduce" / "bench" / "reduce-bench", BENCH)
        for app in ("heat2d", "matmul", "mcpi"):
            _exe(build / "apps" / app / app, BENCH)
        stand = tmp / "standins"
        for name, body in STANDINS.items():
            _exe(stand / name, body)
        self.calls = tmp / "calls.txt"
        self.env = {
            "PATH": f"{stand}{os.pathsep}{os.environ['PATH']}",
            "HOME": str(tmp),
            "CALLS": str(self.calls),
            "OUT": str(tmp / "out"),
            "LANG": "C",
        }
        git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(self.root)]
        self.git = git
        subprocess.run(git + ["init", "-q"], check=True)
        subprocess.run(git + ["add", "-A"], check=True)
        subprocess.run(git + ["commit", "-qm", "tree"], check=True)

    def check(self, *stages: str, **extra) -> subprocess.CompletedProcess:
        env = dict(self.env, **{k: str(v) for k, v in extra.items()})
        return subprocess.run(["bash", str(self.root / "scripts" / "gpu-check.sh"), *stages], env=env,
                              capture_output=True, text=True, timeout=60, cwd=self.root)

    def rows(self, r: subprocess.CompletedProcess) -> dict[str, str]:
        # The table's rows: the name in 28 columns, a space, the status.
        table = r.stdout[r.stdout.index("== tree:"):].splitlines()[1:]
        return {line[:28].strip(): line[29:].strip() for line in table if line and not line.startswith("|")}


@pytest.fixture
def project(tmp_path):
    return Project(tmp_path)


def test_a_bad_stage_is_refused_before_anything_is_written(project):
    r = project.check("gpu", "benchmarks")
    assert r.returncode == 2
    assert "no stage 'benchmarks'" in r.stderr and "run test gpu ranks memcheck python bench" in r.stderr
    assert not (project.root / "build" / "gpu-check-state").exists() and not Path(project.env["OUT"]).exists()


def test_stages_in_several_calls_add_up_to_one_check(project):
    r = project.check("run", "test")
    rows = project.rows(r)
    assert r.returncode == 4, r.stdout + r.stderr
    assert rows["scripts/run.sh"].startswith("ok") and rows["scripts/test.sh"].startswith("ok")
    assert rows["gpu"].startswith("NOT RUN") and rows["bench"].startswith("NOT RUN")
    r = project.check("gpu", "ranks")
    assert r.returncode == 4, r.stdout + r.stderr
    rows = project.rows(r)
    assert rows["scripts/run.sh"].endswith("[earlier run of this tree]")
    assert rows["GPU tests"].startswith("1 passed, 0 failed, 0 skipped")
    assert "NCCL in 2 of the 2" in rows["ranks through NCCL"]
    r = project.check("memcheck", "python", "bench")
    assert r.returncode == 0, r.stdout + r.stderr
    rows = project.rows(r)
    assert rows["GPU tests"].endswith("[earlier run of this tree]")
    assert rows["memcheck (compute-sanitizer)"].startswith("0 errors in")
    assert rows["bench heat2d"] == "ok"
    assert "| a benchmark row |" in r.stdout
    # The README's commands ran once, in the first call.
    assert project.calls.read_text().count("run.sh") == 1


def test_a_change_to_the_tree_starts_afresh(project):
    assert project.check("run", "test").returncode == 4
    (project.root / "scripts" / "run.sh").write_text((project.root / "scripts" / "run.sh").read_text() + "\n")
    r = project.check("gpu", "ranks", "memcheck", "python", "bench")
    assert r.returncode == 4, r.stdout
    assert project.rows(r)["run"].startswith("NOT RUN")


def test_a_failed_stage_fails_the_check_also_from_an_earlier_call(project):
    r = project.check("run", "test", TEST_README_RC=3)
    assert r.returncode == 1
    assert project.rows(r)["scripts/run.sh"] == "FAILED: exit 3 (see readme.log)"
    r = project.check("gpu", "ranks", "memcheck", "python", "bench")
    assert r.returncode == 1, r.stdout
    assert project.rows(r)["scripts/run.sh"].startswith("FAILED: exit 3")


def test_a_narrowed_stage_is_shown_and_not_kept(project):
    r = project.check("gpu", TALLY_GPU_TESTS="reduce")
    assert project.rows(r)["GPU tests"].startswith("1 passed")
    r = project.check("ranks")
    assert project.rows(r)["gpu"].startswith("NOT RUN")
