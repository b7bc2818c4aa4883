"""Run-folder retention on real folder trees: what stays, what goes, what is never touched."""

from __future__ import annotations

import shutil
from datetime import datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

from atom_cli.main import main
from pytest_atom.run.spec_run import new_run_dir
from pytest_atom.run_folders import prune_runs, run_folders, runs_to_delete
from pytest_atom.settings.options import DEFAULT_KEEP_RUNS
from pytest_atom.spec_loader.load import load_specs
from tests.helpers import REPO


def make_run(runs: Path, spec: str, stamp: str, *, passed: bool, id: str = "abc123") -> Path:
    folder = runs / f"{spec}-{stamp}-{id}"
    (folder / "attempts" / "a01").mkdir(parents=True)
    (folder / "attempts" / "a01" / "out.txt").write_text("work")
    if passed:
        (folder / "committed").mkdir()
    return folder


def names(paths: list[Path]) -> list[str]:
    return sorted(p.name for p in paths)


def test_keeps_the_newest_runs_of_each_spec(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    greet = [make_run(runs, "greet", f"20260101-1200{s:02d}", passed=True) for s in range(5)]
    fix = [
        make_run(runs, "fix-failing-test", f"20260101-1300{s:02d}", passed=True) for s in range(2)
    ]

    deleted = prune_runs(runs, keep=2)

    assert names(deleted) == names(greet[:3])
    assert names([r.path for r in run_folders(runs)]) == names(greet[3:] + fix)
    assert not greet[0].exists()


def test_failed_runs_of_the_latest_session_stay_older_failures_go(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    old_failed = make_run(runs, "greet", "20260101-090000", passed=False)
    old_passed = make_run(runs, "greet", "20260101-090500", passed=True)
    new_failed = [make_run(runs, "greet", f"20260102-1000{s:02d}", passed=False) for s in range(3)]
    newest = make_run(runs, "greet", "20260102-110000", passed=True)
    session_start = datetime(2026, 1, 2, 10, 0, 0, 500_000)  # the first run's second counts

    doomed = runs_to_delete(runs, keep=1, session_start=session_start)

    assert names([r.path for r in doomed]) == names([old_failed, old_passed])
    prune_runs(runs, keep=1, session_start=session_start)
    assert names([r.path for r in run_folders(runs)]) == names([*new_failed, newest])
    # Without a session, failures get no protection.
    assert names(prune_runs(runs, keep=1)) == names(new_failed)


def test_zero_keeps_everything_and_negative_is_refused(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    for s in range(3):
        make_run(runs, "greet", f"20260101-1200{s:02d}", passed=True)
    assert prune_runs(runs, keep=0) == []
    assert len(run_folders(runs)) == 3
    with pytest.raises(ValueError, match="keep every run"):
        runs_to_delete(runs, keep=-1)


def test_nothing_but_run_folders_is_touched(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    for s in range(3):
        make_run(runs, "greet", f"20260101-1200{s:02d}", passed=True)
    keepers = [
        runs / "notes.txt",  # a file
        runs / "greet-old-copy",  # not the run name shape
        runs / "greet-20261399-999999-abc123",  # no such date
        runs / "greet-20260101-120000-ABC123",  # upper-case id: not new_run_dir's
    ]
    keepers[0].write_text("mine")
    for folder in keepers[1:]:
        folder.mkdir()
    outside = tmp_path / "elsewhere-20250101-000000-abc123"
    outside.mkdir()
    (outside / "precious").write_text("x")
    link = runs / "greet-20250101-000000-def456"  # the oldest name, but a symlink out
    link.symlink_to(outside, target_is_directory=True)

    deleted = prune_runs(runs, keep=1)

    assert len(deleted) == 2 and all(p.parent == runs for p in deleted)
    assert all(p.exists() for p in keepers)
    assert link.is_symlink() and (outside / "precious").exists()


def test_a_missing_runs_folder_is_no_error(tmp_path: Path) -> None:
    assert prune_runs(tmp_path / "nowhere", keep=DEFAULT_KEEP_RUNS) == []


def test_the_names_new_run_dir_gives_are_recognised(tmp_path: Path) -> None:
    spec_file = tmp_path / "greet.atom.yaml"
    spec_file.write_text("name: fix-the-build-2\nprompt: hi\n")
    [spec] = load_specs(spec_file)
    folder = new_run_dir(tmp_path / "runs", spec)
    [run] = run_folders(tmp_path / "runs")
    assert run.path == folder and run.spec == "fix-the-build-2" and run.failed
    assert abs((datetime.now() - run.started).total_seconds()) < 5


# --- Applied at the end of a pytest session and of `atom run` --------------------------------


def old_runs(root: Path, count: int) -> list[Path]:
    runs = root / ".atom" / "runs"
    return [make_run(runs, "greet", f"20250101-1200{s:02d}", passed=True) for s in range(count)]


@pytest.mark.parametrize(
    ("args", "left"),
    [((), 10), (("--atom-keep-runs=3",), 3), (("--atom-keep-runs=0",), 12), (("-n", "2"), 10)],
)
def test_the_plugin_prunes_at_session_end(
    pytester: pytest.Pytester, args: tuple[str, ...], left: int
) -> None:
    runs = old_runs(pytester.path, 12)
    pytester.makepyfile("def test_ok():\n    pass\n")
    pytester.runpytest("--atom", *args).assert_outcomes(passed=1)
    assert [p.exists() for p in runs] == [False] * (12 - left) + [True] * left


def test_the_ini_option_is_read_and_checked(pytester: pytest.Pytester) -> None:
    runs = old_runs(pytester.path, 4)
    pytester.makepyfile("def test_ok():\n    pass\n")
    pytester.makeini("[pytest]\natom_keep_runs = 2\n")
    pytester.runpytest("--atom").assert_outcomes(passed=1)
    assert [p.exists() for p in runs] == [False, False, True, True]

    pytester.makeini("[pytest]\natom_keep_runs = lots\n")
    result = pytester.runpytest("--atom")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*atom_keep_runs in the ini file = 'lots': use a whole number >= 0*"]
    )
    bad = pytester.runpytest("--atom", "--atom-keep-runs=-1")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(["*use a whole number >= 0 (0 keeps every run folder), not '-1'*"])
    assert runs[2].exists()  # a usage error prunes nothing


@pytest.mark.slow
def test_atom_run_prunes_and_keeps_its_own_failed_run(
    claude_bin: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("ATOM_CLAUDE_BIN", str(claude_bin))
    monkeypatch.chdir(tmp_path)
    shutil.copytree(REPO / "fixtures" / "specs", tmp_path / "specs")
    runs = tmp_path / ".atom" / "runs"
    older = [
        make_run(runs, "misses-goal", "20250101-120000", passed=False),
        make_run(runs, "misses-goal", "20250101-120100", passed=True),
        make_run(runs, "create-file", "20250101-120200", passed=True),
    ]

    result = CliRunner().invoke(main, ["run", "specs/misses_goal.atom.yaml", "--keep-runs", "1"])

    assert result.exit_code == 0, result.output  # the spec fails, as its xfail expects
    [new] = [r for r in run_folders(runs) if r.spec == "misses-goal"]
    assert new.failed and new.path not in older  # this run's failure stays, older ones go
    assert [p.exists() for p in older] == [False, False, True]
