"""Run folders stay small: `committed/` is no second copy, `setup:`'s output is never
committed into the attempt's git, and retention can be bounded by size."""

from __future__ import annotations

import os
import subprocess
from datetime import datetime, timedelta
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from atom_cli.run_cmd import run as run_command
from pytest_atom.diffs import changes
from pytest_atom.errors import SettingsError
from pytest_atom.files import link_tree
from pytest_atom.run.spec_run import run_spec
from pytest_atom.run.workspace import snapshot_repo
from pytest_atom.run_folders import folder_size, prune_runs, run_name, runs_over_size
from pytest_atom.settings.resolved import Layer, resolve
from pytest_atom.spec_loader.load import load_spec
from tests.helpers import bash

MB = 1_000_000


def test_link_tree_shares_files_and_keeps_links(tmp_path: Path) -> None:
    source = tmp_path / "attempt"
    (source / "pkg").mkdir(parents=True)
    (source / "pkg" / "big.bin").write_bytes(os.urandom(200_000))
    (source / "link").symlink_to("pkg/big.bin")
    (source / "__pycache__").mkdir()
    (source / "__pycache__" / "x.pyc").write_bytes(b"x")

    dest = link_tree(source, tmp_path / "committed", ignore=lambda d, names: ["__pycache__"])

    assert (dest / "pkg" / "big.bin").stat().st_ino == (source / "pkg" / "big.bin").stat().st_ino
    assert os.readlink(dest / "link") == "pkg/big.bin"
    assert not (dest / "__pycache__").exists()
    seen: set[tuple[int, int]] = set()
    alone = folder_size(source, seen)
    assert folder_size(dest, seen) < 20_000  # folders only: the file was counted already
    assert alone >= 200_000


def make_runs(runs: Path, specs: dict[str, list[tuple[int, bool]]], start: datetime) -> None:
    """Run folders per spec, oldest first: (size in MB, passed)."""
    minute = 0
    for spec, folders in specs.items():
        for size, passed in folders:
            minute += 1
            folder = runs / run_name(spec, start + timedelta(minutes=minute))
            folder.mkdir(parents=True)
            (folder / "data.bin").write_bytes(os.urandom(size * MB))
            if passed:
                (folder / "committed").mkdir()


def test_a_size_bound_deletes_the_oldest_but_never_a_specs_newest(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    start = datetime(2026, 1, 1, 12, 0, 0)
    make_runs(runs, {"a": [(2, True), (2, True), (2, True)], "b": [(2, True), (2, True)]}, start)
    names = sorted(p.name for p in runs.iterdir())

    doomed = runs_over_size(runs, 5 * MB)

    kept = set(names) - {r.path.name for r in doomed}
    assert len(doomed) == 3  # 10 MB down to 4 MB: the three oldest
    assert {n.split("-")[0] for n in kept} == {"a", "b"}  # each spec's newest stays
    assert runs_over_size(runs, 0) == []  # 0: no bound
    # A bound below the newest folders is exceeded rather than deleting them.
    assert len(runs_over_size(runs, 1)) == 3
    deleted = prune_runs(runs, 0, max_bytes=5 * MB)
    assert sorted(p.name for p in deleted) == sorted(r.path.name for r in doomed)
    assert sorted(p.name for p in runs.iterdir()) == sorted(kept)


def test_a_size_bound_keeps_this_sessions_failures(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    start = datetime(2026, 1, 1, 12, 0, 0)
    make_runs(runs, {"a": [(2, False), (2, False), (2, True)]}, start)
    session = start  # every folder started in this session
    assert runs_over_size(runs, 1, session_start=session) == []
    assert len(runs_over_size(runs, 1)) == 2  # from an earlier session: they may go


@pytest.mark.parametrize(
    ("raw", "size"),
    [("500MB", 500 * MB), ("2GiB", 2 * 2**30), ("1_000", 1000), ("1.5 GB", 1_500_000_000)],
)
def test_keep_runs_size_reads_sizes(raw: str, size: int) -> None:
    assert resolve([Layer("the ini file", {"keep_runs_size": raw})]).keep_runs_size == size


def test_a_bad_keep_runs_size_names_its_place_and_the_fix() -> None:
    with pytest.raises(SettingsError) as err:
        resolve([Layer("the ini file", {"keep_runs_size": "lots"}, key=lambda n: f"atom_{n}")])
    assert "atom_keep_runs_size in the ini file = 'lots': use a size such as 500MB" in str(
        err.value
    )


def test_both_front_ends_take_the_size_bound(pytester: pytest.Pytester) -> None:
    helped = pytester.runpytest("--help")
    helped.stdout.fnmatch_lines(["*--atom-keep-runs-size=SIZE*", "*atom_keep_runs_size*"])
    result = CliRunner().invoke(run_command, ["--help"])
    assert "--keep-runs-size SIZE" in result.output
    spec = pytester.makefile(".atom.yaml", x="prompt: p\n")
    refused = CliRunner().invoke(run_command, ["--keep-runs-size", "lots", str(spec)])
    assert refused.exit_code != 0 and "use a size such as 500MB" in refused.output


def git(folder: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=folder, capture_output=True, text=True, check=True
    ).stdout


def test_what_setup_makes_is_never_committed_into_the_attempts_git(tmp_path: Path) -> None:
    attempt = tmp_path / "a01"
    (attempt / "src").mkdir(parents=True)
    (attempt / "src" / "app.py").write_text("v1\n")
    (attempt / "requirements.txt").write_text("x\n")
    snapshot_repo(attempt)
    # What a set-up does: a virtualenv of many files, a download, an edit to a source file.
    for i in range(300):
        (attempt / ".venv" / "lib" / f"m{i}.py").parent.mkdir(parents=True, exist_ok=True)
        (attempt / ".venv" / "lib" / f"m{i}.py").write_text(f"{i}\n")
    (attempt / "blob name.bin").write_bytes(os.urandom(MB))
    (attempt / "requirements.txt").write_text("x\ny\n")
    snapshot_repo(attempt, amend=True)

    tree = git(attempt, "ls-tree", "-r", "--name-only", "HEAD").split()
    assert sorted(tree) == ["requirements.txt", "src/app.py"]
    assert git(attempt, "show", "HEAD:requirements.txt") == "x\ny\n"  # an edit is committed
    assert git(attempt, "status", "--porcelain") == ""  # the agent's status shows none of it
    assert folder_size(attempt / ".git") < MB / 2  # no second copy of the download
    # The agent's own new files and edits still show in its diff.
    (attempt / "src" / "app.py").write_text("v2\n")
    (attempt / "new.py").write_text("new\n")
    diff = changes(attempt)
    assert diff is not None and "+v2" in diff and "b/new.py" in diff
    assert "blob" not in diff and ".venv" not in diff


@pytest.mark.slow
def test_a_run_folder_is_at_most_1_3_times_its_attempt(tmp_path: Path, claude_bin: Path) -> None:
    """A spec whose set-up writes 20 MB, in a git project (`workspace: ..`), passes."""
    root = tmp_path / "project"
    specs = root / "specs"
    specs.mkdir(parents=True)
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text("print('app')\n")
    turns = [bash("ls -la blob"), {"text": "There.\n\nEXIT_LOOP_NOW"}]
    (specs / "script.yaml").write_text(yaml.safe_dump({"turns": turns}))
    (specs / "big.atom.yaml").write_text(
        "name: big\nprompt: Look at the blob.\nscript: script.yaml\ntimeout: 300\n"
        "workspace: ..\nsetup: ['head -c 20000000 /dev/urandom > blob']\n"
        "accept: [{file_exists: blob}]\n"
    )
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)

    result = run_spec(
        load_spec(specs / "big.atom.yaml"), runs_dir=root / ".atom" / "runs", claude_bin=claude_bin
    )

    assert result.passed, result.report()
    attempt = result.run_dir / "attempts" / "a01"
    blob = (attempt / "blob").stat()
    assert blob.st_size == 20 * MB
    assert (result.run_dir / "committed" / "blob").stat().st_ino == blob.st_ino  # a hard link
    assert "blob" not in git(attempt, "ls-tree", "-r", "--name-only", "HEAD").split()
    ratio = folder_size(result.run_dir) / folder_size(attempt)
    assert ratio <= 1.3, ratio
