"""The input digest (pytest_atom.outcome_cache.input_digest): each part changes when its input does, and
only then; what the workspace copy leaves out, per-run paths and housekeeping settings
never change it. Real files, a real git repository, no CLI."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from pytest_atom.outcome_cache.input_digest import PARTS
from pytest_atom.settings.options import RunSettings
from tests.cache_helpers import CHANGES, CacheProject, isolated_project


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> CacheProject:
    return isolated_project(tmp_path, monkeypatch)


def test_every_part_has_a_change_test() -> None:
    assert list(CHANGES) == list(PARTS)


@pytest.mark.parametrize("part", list(CHANGES))
def test_changing_one_input_changes_that_part_alone(
    part: str, project: CacheProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = project.digest()
    assert project.digest() == before  # unchanged inputs: the same digest, part by part
    settings = CHANGES[part](project, monkeypatch)
    after = project.digest(settings)
    # A tool's file is in a toolchain folder too: the folder's tree changes with it.
    also = [f"toolchain {project.root.parent / 'tools'}"] if part == "tools" else []
    assert after.changed(before.parts) == [part, *also]
    assert after.value != before.value


def test_a_changed_case_changes_the_spec_part(project: CacheProject) -> None:
    spec = project.spec()
    first = project.digest(spec=replace(spec, case="small", case_vars={"n": 1}))
    other_vars = project.digest(spec=replace(spec, case="small", case_vars={"n": 2}))
    other_case = project.digest(spec=replace(spec, case="big", case_vars={"n": 1}))
    assert other_vars.changed(first.parts) == ["spec"]
    assert other_case.changed(first.parts) == ["spec"]


def test_each_repeat_has_its_own_digest(project: CacheProject) -> None:
    assert project.digest(repeat=1).value != project.digest(repeat=2).value


@pytest.mark.parametrize(
    "change",
    [
        lambda ws: os.chmod(ws / "notes.txt", 0o755),
        lambda ws: (ws / "new.txt").write_text("new\n"),
        lambda ws: (ws / "notes.txt").unlink(),
        lambda ws: os.symlink("notes.txt", ws / "link"),
        lambda ws: (ws / "sub").mkdir() or (ws / "sub" / "deep.txt").write_text("deep\n"),
    ],
    ids=["made-executable", "file-added", "file-removed", "link-added", "file-in-a-new-folder"],
)
def test_the_workspace_part_sees_what_the_agent_would(
    change: Callable[[Path], object], project: CacheProject
) -> None:
    before = project.digest()
    change(project.workspace)
    assert project.digest().changed(before.parts) == ["workspace"]


@pytest.mark.parametrize(
    "change",
    [
        lambda ws: (
            (ws / "__pycache__").mkdir() or (ws / "__pycache__" / "x.pyc").write_bytes(b"\0")
        ),
        lambda ws: (ws / ".venv" / "bin").mkdir(parents=True),
        lambda ws: (ws / "other.atom.yaml").write_text("name: other\nprompt: p\n"),
    ],
    ids=["a-cache", "a-virtualenv", "a-spec-file"],
)
def test_what_the_copy_leaves_out_never_changes_the_digest(
    change: Callable[[Path], object], project: CacheProject
) -> None:
    before = project.digest()
    change(project.workspace)
    assert project.digest() == before


def test_housekeeping_settings_and_uncalled_variables_never_change_the_digest(
    project: CacheProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = project.digest()
    monkeypatch.setenv("SOME_TOKEN", "not-passed-to-a-run")
    monkeypatch.setenv("HOME", "/elsewhere")  # a run gets its own
    housekeeping = RunSettings(keep_runs=3, seed=7, html=Path("r.html"), cache=True)
    assert project.digest(housekeeping) == before


def test_no_part_holds_a_value_only_its_hash(
    project: CacheProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LANG", "secret-looking-value-123")
    found = project.digest()
    assert all("secret-looking" not in value for value in found.parts.values())


def test_the_project_prompts_are_an_input_named_by_their_folder(project: CacheProject) -> None:
    before = project.digest()
    prompts = project.root / ".atom" / "prompts"
    prompts.mkdir()
    (prompts / "reflector.md").write_text("judge strictly\n")
    assert project.digest().changed(before.parts) == ["file .atom/prompts"]


def test_a_criterions_calibration_and_the_required_kappa_are_inputs(
    project: CacheProject,
) -> None:
    """Whether a criterion gates or is advisory reads both (pytest_atom.judge.trust)."""
    spec = replace(project.spec(), criteria=("It says hello.",))
    before = project.digest(spec=spec)
    calibration = project.spec_file.parent / "calibration" / "greet" / "calibration.json"
    calibration.parent.mkdir(parents=True)
    calibration.write_text("{}\n")
    assert project.digest(spec=spec).changed(before.parts) == ["spec"]
    required = project.digest(RunSettings(require_calibration=0.6), spec=spec)
    assert required.changed(project.digest(spec=spec).parts) == ["setting require_calibration"]


def _git(folder: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=folder, check=True, capture_output=True)


def _commit(folder: Path) -> None:
    _git(folder, "add", "--all")
    _git(folder, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "c")


def test_in_git_an_ignored_file_never_changes_the_digest_a_tracked_one_does(
    project: CacheProject,
) -> None:
    _git(project.root, "init", "-q")
    (project.root / ".gitignore").write_text("*.log\n")
    _commit(project.root)
    before = project.digest()
    (project.workspace / "debug.log").write_text("noise\n")
    assert project.digest() == before
    (project.workspace / "notes.txt").write_text("tracked, changed\n")
    assert project.digest().changed(before.parts) == ["workspace"]


def test_a_ref_workspace_is_its_commit_not_the_working_files(project: CacheProject) -> None:
    _git(project.root, "init", "-q")
    _commit(project.root)
    text = project.spec_file.read_text().replace(
        "workspace: ws", "workspace: {path: ws, ref: HEAD}"
    )
    project.spec_file.write_text(text)
    _commit(project.root)
    before = project.digest()
    (project.workspace / "notes.txt").write_text("edited, not committed\n")
    assert project.digest() == before
    _commit(project.root)
    assert project.digest().changed(before.parts) == ["workspace"]
