"""Result reuse: a finished file with the requested parameters is kept, anything else runs again."""
import stat
import sys
from pathlib import Path

import h5py
import pytest

from tally_experiments import runner
from tally_experiments.runner import ExperimentError, Runner, make_run, values_equal

FAKE_APP = """#!{python}
# A stand-in app: records its options as root attributes (as the real apps do) and logs each call.
import sys, h5py
args = sys.argv[1:]
opts = {{}}
i = 0
while i < len(args):
    key = args[i][2:].replace("-", "_")
    if i + 1 < len(args) and not args[i + 1].startswith("--"):
        opts[key] = args[i + 1]; i += 2
    else:
        opts[key] = True; i += 1
with open({log!r}, "a") as f:
    f.write(" ".join(args) + "\\n")
if opts.get("reject"):
    sys.stderr.write("fake: error: --generator x: not in this build\\n"); sys.exit(2)
if opts.get("fail"):
    sys.stderr.write("fake: error: --fail given\\n"); sys.exit(1)
out = opts.pop("out")
if opts.pop("no_output", False):
    sys.exit(0)
with h5py.File(out, "w") as f:
    f.attrs["app"] = "heat2d"
    f.attrs["status"] = opts.pop("status", "converged")
    drop = opts.pop("drop", None)
    for k, v in opts.items():
        if k == drop:
            continue
        try:
            f.attrs[k] = float(v) if "." in v or "e" in v else int(v)
        except (TypeError, ValueError):
            f.attrs[k] = v if v is not True else 1
"""


@pytest.fixture
def fake_build(tmp_path):
    build = tmp_path / "build"
    exe = build / runner.EXECUTABLES["heat2d"]
    exe.parent.mkdir(parents=True)
    log = tmp_path / "calls.log"
    exe.write_text(FAKE_APP.format(python=sys.executable, log=str(log)))
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    return build, log


def calls(log: Path) -> int:
    return len(log.read_text().splitlines()) if log.exists() else 0


def test_values_equal():
    assert values_equal(0.05, "0.05") and values_equal(b"sin".decode(), "sin")
    assert values_equal(64, 64.0) and values_equal(1e-10, 1e-10 * (1 + 1e-12))
    assert not values_equal(1e-10, 1.1e-10) and not values_equal("sin", "0")
    assert values_equal(1, True) and values_equal("true", True) and not values_equal(0, True)
    assert not values_equal(float("nan"), float("nan"))


def test_run_path_is_unique_per_options_and_stable(tmp_path):
    a = runner.run_path(tmp_path, "x", {"n": 1, "tol": 1e-6})
    assert a == runner.run_path(tmp_path, "x", {"tol": 1e-6, "n": 1})   # order does not matter
    assert a != runner.run_path(tmp_path, "x", {"n": 2, "tol": 1e-6})
    assert a != runner.run_path(tmp_path, "x", {"n": 1, "tol": 1e-7})
    assert runner.run_path(tmp_path, "a/b c", {}).name.startswith("a_b_c-")


def test_argv_formats_floats_exactly_and_flags(tmp_path):
    r = make_run("heat2d", tmp_path, "s", {"dt": 0.1 / 3, "validate": True, "xdmf": False, "n": 5})
    argv = r.argv("heat2d")
    assert argv[:6] == ["heat2d", "--dt", repr(0.1 / 3), "--validate", "--n", "5"]
    assert argv[-2:] == ["--out", str(r.path)]
    assert r.match == {"dt": 0.1 / 3, "n": 5}


def test_auto_backend_matches_any_recorded_backend(tmp_path):
    assert "backend" not in make_run("heat2d", tmp_path, "s", {"backend": "auto"}).match
    assert make_run("heat2d", tmp_path, "s", {"backend": "cpu"}).match == {"backend": "cpu"}


def test_reuse_skips_finished_runs_and_reruns_changed_ones(fake_build, tmp_path):
    build, log = fake_build
    out = tmp_path / "runs"
    rn = Runner(build, verbose=False)
    first = [make_run("heat2d", out, f"n{n}", {"nx": n, "tol": 1e-8, "mode": "steady"},
                      ok_status=("converged",)) for n in (17, 33)]
    rn.execute(first)
    assert calls(log) == 2 and rn.executed == 2 and all(r.reusable() for r in first)

    rn2 = Runner(build, verbose=False)
    rn2.execute(first + [make_run("heat2d", out, "n65", {"nx": 65, "tol": 1e-8, "mode": "steady"})])
    assert calls(log) == 3 and rn2.reused == 2 and rn2.executed == 1  # only the new one ran

    # the same file name holding other parameters (edited, or an older version): not reused
    stale = first[0]
    with h5py.File(stale.path, "r+") as f:
        f.attrs["tol"] = 1e-6
    assert any("tol=" in w for w in stale.mismatches())
    Runner(build, verbose=False).execute([stale])
    assert calls(log) == 4 and stale.reusable()

    # --no-reuse runs everything again
    Runner(build, verbose=False, reuse=False).execute(first)
    assert calls(log) == 6


def test_unusable_status_and_unreadable_file_are_not_reused(fake_build, tmp_path):
    build, log = fake_build
    r = make_run("heat2d", tmp_path, "s", {"nx": 9, "status": "max-iter"}, match_keys=["nx"],
                 ok_status=("converged",))
    with pytest.raises(ExperimentError, match="status='max-iter'"):
        Runner(build, verbose=False).execute([r])  # a run that did not converge is an error
    assert r.mismatches() == ["status='max-iter'"]
    r.path.write_bytes(b"not an HDF5 file")
    assert r.mismatches()[0].startswith("unreadable")


def test_failed_run_reports_the_apps_message(fake_build, tmp_path):
    build, _ = fake_build
    r = make_run("heat2d", tmp_path, "s", {"nx": 9, "fail": True})
    with pytest.raises(ExperimentError, match="exited with code 1.*\n.*--fail given"):
        Runner(build, verbose=False).execute([r])
    r = make_run("heat2d", tmp_path, "s", {"nx": 9, "no-output": True})
    with pytest.raises(ExperimentError, match="wrote no result file"):
        Runner(build, verbose=False).execute([r])


def test_a_parameter_the_app_does_not_record_is_an_error_not_an_endless_rerun(fake_build, tmp_path):
    build, _ = fake_build
    r = make_run("heat2d", tmp_path, "s", {"nx": 9, "drop": "nx"}, match_keys=["nx"])
    with pytest.raises(ExperimentError, match="nx not recorded"):
        Runner(build, verbose=False).execute([r])


def test_dry_run_executes_nothing(fake_build, tmp_path, capsys):
    build, log = fake_build
    rs = [make_run("heat2d", tmp_path, "s", {"nx": 9})]
    Runner(build, dry_run=True, verbose=False).execute(rs)
    assert calls(log) == 0 and not rs[0].path.exists()
    assert capsys.readouterr().out.startswith("run ")
    Runner(build, verbose=False).execute(rs)
    Runner(build, dry_run=True, verbose=False).execute(rs)
    assert capsys.readouterr().out.startswith("reuse ")


def test_extra_outputs_must_exist_for_reuse(fake_build, tmp_path):
    build, _ = fake_build
    r = make_run("heat2d", tmp_path, "s", {"nx": 9})
    r.extra_files = [tmp_path / "s.csv"]
    with pytest.raises(ExperimentError, match="output cannot be used .no s.csv"):
        Runner(build, verbose=False).execute([r])
    assert r.mismatches() == ["no s.csv"]
    r.extra_files[0].write_text("x\n")
    assert r.reusable()


def test_default_build_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("TALLY_BUILD_DIR", str(tmp_path))
    assert runner.default_build_dir() == tmp_path
    monkeypatch.delenv("TALLY_BUILD_DIR")
    assert runner.default_build_dir().parent == runner.REPO_ROOT / "build"


def test_a_group_the_build_rejects_is_skipped_and_reported(fake_build, tmp_path):
    build, log = fake_build
    runs = []
    for g, reject in (("a", False), ("b", True), ("c", False)):
        for n in (1, 2):
            r = make_run("heat2d", tmp_path, f"{g}{n}", {"nx": n, "g": g, "reject": reject})
            r.group = g
            runs.append(r)
    rn = Runner(build, verbose=False)
    rn.execute(runs)
    assert rn.unavailable == {"b": "fake: error: --generator x: not in this build"}
    assert calls(log) == 5  # b tried once, then skipped
    assert [r.path.is_file() for r in runs] == [True, True, False, False, True, True]
    # without a group, exit code 2 is an error like any other
    r = make_run("heat2d", tmp_path, "x", {"nx": 1, "reject": True})
    with pytest.raises(ExperimentError, match="exited with code 2") as e:
        Runner(build, verbose=False).execute([r])
    assert e.value.returncode == 2 and "not in this build" in e.value.detail
