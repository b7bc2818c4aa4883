"""Output paths are checked before any spec runs: a runs folder,
``--atom-report`` or ``--atom-html`` that cannot be written is a usage error naming the
option and the path, under pytest and ``atom run`` alike, never a traceback after the
specs ran. No CLI starts: each run stops at configure time (a spec that did run would
start Claude Code, which `tests/cli_starts.py` fails in an unmarked test).

The suite runs as root, whom permission bits do not stop, so "cannot be written" is
shown with what stops root too: a parent that is a regular file, a folder under /proc
(no regular file can be created there), and a read-only bind mount (bubblewrap, which
the sandbox needs anyway).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from atom_cli.main import main
from pytest_atom.settings.output_paths import output_problem
from tests.helpers import write

SPEC = "prompt: Say done.\nscript: turns.yaml\n"
TURNS = "turns:\n  - text: Done. EXIT_LOOP_NOW\n"


@pytest.fixture
def project(pytester: pytest.Pytester) -> Path:
    """A project whose one spec would run (and start the CLI) if the check let it."""
    write(pytester.path / "pytest.ini", "[pytest]\n")
    write(pytester.path / "specs" / "a.atom.yaml", SPEC)
    write(pytester.path / "specs" / "turns.yaml", TURNS)
    write(pytester.path / "afile", "a regular file\n")
    (pytester.path / "adir").mkdir()
    return pytester.path


def test_each_wrong_kind_of_output_path_is_named_with_the_fix(tmp_path: Path) -> None:
    write(tmp_path / "afile", "x")
    (tmp_path / "adir").mkdir()
    assert "is a file, not a folder" in str(output_problem(tmp_path / "afile", "dir"))
    assert "is a folder, not a file" in str(output_problem(tmp_path / "adir", "file"))
    under_file = output_problem(tmp_path / "afile" / "runs", "dir")
    assert under_file is not None and "afile is a file, not a folder" in under_file
    assert "cannot be written: /proc refuses new files" in str(
        output_problem(Path("/proc/atom-nowhere/runs"), "dir")
    )
    assert output_problem(tmp_path / "new" / "deeper", "dir") is None  # created when needed
    assert output_problem(tmp_path / "adir" / "r.html", "file") is None
    assert not (tmp_path / "new").exists()  # the check itself leaves nothing behind
    assert sorted(p.name for p in tmp_path.iterdir()) == ["adir", "afile"]


@pytest.mark.parametrize(
    ("option", "error"),
    [
        ("--atom-report=afile", "ERROR: --atom-report afile: is a file, not a folder"),
        ("--atom-html=adir", "ERROR: --atom-html adir: is a folder, not a file"),
        (
            "--atom-html=afile/r.html",
            "ERROR: --atom-html afile/r.html: cannot be created: afile is a file, not a folder",
        ),
        (
            "--atom-runs-dir=/proc/atom-nowhere/runs",
            "ERROR: --atom-runs-dir /proc/atom-nowhere/runs: cannot be written: /proc refuses",
        ),
    ],
)
def test_a_wrong_output_path_is_a_usage_error_before_any_spec_runs(
    pytester: pytest.Pytester, project: Path, option: str, error: str
) -> None:
    result = pytester.runpytest("--atom", option)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    output = "\n".join(result.outlines + result.errlines)
    assert error in output
    assert "Traceback" not in output
    assert not (project / ".atom").exists()  # no spec ran: no run folder, no last-run.json


def test_an_output_path_from_the_ini_file_says_where_it_was_set(
    pytester: pytest.Pytester, project: Path
) -> None:
    write(project / "pytest.ini", "[pytest]\natom_runs_dir = afile/runs\n")
    result = pytester.runpytest("--atom")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "ERROR: runs_dir afile/runs (from atom_runs_dir in the ini file or runs_dir: in "
            ".atom/config.yaml; --atom-runs-dir overrides it): cannot be created: afile is a "
            "file, not a folder"
        ]
    )


def test_atom_run_says_the_same_with_its_own_option_names(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(project)
    for option, error in (
        (["--html", "afile/r.html"], "--html afile/r.html: cannot be created: afile is a file"),
        (["--runs-dir", "/proc/atom-nowhere"], "--runs-dir /proc/atom-nowhere: cannot be written"),
    ):
        result = CliRunner().invoke(main, ["run", *option, "specs/a.atom.yaml"])
        assert result.exit_code == 2, result.output
        assert error in result.output
        assert result.exception is None or isinstance(result.exception, SystemExit)
    assert not (project / ".atom").exists()


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap for a read-only mount")
def test_a_read_only_atom_folder_is_a_usage_error_not_a_traceback_after_the_run(
    project: Path,
) -> None:
    """`.atom/` mounted read-only (root writes through mode bits, not through a read-only
    mount): the default runs folder cannot be made, said before any spec runs."""
    atom = project / ".atom"
    atom.mkdir()
    bind = ["bwrap", "--bind", "/", "/", "--ro-bind", str(atom), str(atom)]
    command = [*bind, "--dev", "/dev", "--proc", "/proc", sys.executable, "-m", "pytest"]
    done = subprocess.run(
        [*command, "--atom", "-p", "no:cacheprovider", "-p", "no:xdist"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, done.stdout + done.stderr
    assert (
        "ERROR: runs_dir .atom/runs (the default; --atom-runs-dir changes it): cannot be "
        "written: .atom refuses new files (Read-only file system)" in done.stderr
    )
    assert "Traceback" not in done.stdout + done.stderr
    assert not list(atom.iterdir())
