"""Command-line parsing and --dry-run (which lists runs and writes nothing)."""
import subprocess
import sys
from pathlib import Path

import pytest

from tally_experiments import cli, heat2d, mcpi
from tally_experiments.context import Context
from tally_experiments.runner import Runner

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "experiments.py"


def parse(*argv):
    return cli.build_parser().parse_args(list(argv))


def test_defaults():
    a = parse("heat2d-refinement")
    assert a.experiment == "heat2d-refinement"
    assert a.backend == "auto" and not a.quick and not a.dry_run and not a.no_reuse
    assert a.out == cli.DEFAULT_OUT and a.build_dir is None


def test_every_experiment_and_all_parse_with_the_common_options(tmp_path):
    for name in list(cli.EXPERIMENTS) + ["all"]:
        a = parse(name, "--backend", "cpu", "--quick", "--dry-run", "--out", str(tmp_path),
                  "--build-dir", str(tmp_path / "b"), "--no-reuse", "--seed", "5", "--quiet")
        assert (a.experiment, a.backend, a.quick, a.dry_run, a.no_reuse, a.seed, a.quiet) == \
            (name, "cpu", True, True, True, 5, True)
        assert a.out == tmp_path and a.build_dir == tmp_path / "b"


@pytest.mark.parametrize("argv", [[], ["nonsense"], ["all", "--backend", "gpu"], ["all", "--seed", "x"],
                                  ["heat2d-refinement", "--unknown"]])
def test_bad_command_lines_exit_2(argv, capsys):
    with pytest.raises(SystemExit) as e:
        parse(*argv)
    assert e.value.code == 2
    assert "usage" in capsys.readouterr().err


def test_build_dir_from_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("TALLY_BUILD_DIR", str(tmp_path))
    ctx = cli.make_context(parse("all"))
    assert ctx.runner.build_dir == tmp_path


def test_dry_run_lists_every_run_and_writes_nothing(tmp_path):
    out = tmp_path / "out"
    p = subprocess.run([sys.executable, str(SCRIPT), "all", "--quick", "--dry-run", "--backend", "cpu",
                        "--out", str(out), "--build-dir", str(tmp_path / "nobuild")],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    ctx = Context(out=out, runner=Runner(tmp_path), backend="cpu", quick=True)
    expected = sum(len(make(ctx)) for _, make, _ in cli.EXPERIMENTS.values())
    assert sum(1 for ln in lines if ln.startswith("run ")) == expected
    assert any("heat2d: executable not found" in ln for ln in lines)  # says what is missing
    assert "--backend cpu" in lines[-1]
    assert not out.exists()


def test_quick_is_smaller_than_full(tmp_path):
    quick = Context(out=tmp_path, runner=Runner(tmp_path), quick=True)
    full = Context(out=tmp_path, runner=Runner(tmp_path), quick=False)
    assert max(heat2d.iteration_sizes(True)) < max(heat2d.iteration_sizes(False))
    assert len(mcpi.runs(quick)) < len(mcpi.runs(full))
    assert all(s.endswith(".h5") for s in (str(r.path) for r in heat2d.refinement_runs(quick)))


def test_missing_app_is_reported_with_exit_1(tmp_path):
    p = subprocess.run([sys.executable, str(SCRIPT), "heat2d-iterations", "--quick", "--backend", "cpu",
                        "--out", str(tmp_path / "o"), "--build-dir", str(tmp_path / "nobuild")],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 1
    assert "heat2d: executable not found" in p.stderr and "--target heat2d" in p.stderr
