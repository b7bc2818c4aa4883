"""`atom label`: a sample taken from a run folder or from the history store's run, through
the real CLI (the run it labels is one real Claude Code run, scripted)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from pytest_atom.history.store import open_store
from tests.calibration_helpers import (
    CRITERION,
    SPEC,
    TOKEN,
    atom,
    build_deploy_project,
    run_folder,
)
from tests.helpers import once_per_session

SAMPLES = Path("specs/calibration/deploy-script/samples")


@pytest.fixture
def project(
    tmp_path_factory: pytest.TempPathFactory,
    tmp_path: Path,
    claude_bin: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Path:
    """A copy of the shared run's project (its store names the shared run folder)."""
    monkeypatch.setenv("ATOM_CLAUDE_BIN", str(claude_bin))
    shared = once_per_session(tmp_path_factory, "calibration-deploy", build_deploy_project)
    copy = tmp_path / "project"
    shutil.copytree(shared, copy, ignore=shutil.ignore_patterns(".lock", ".built"))
    monkeypatch.chdir(copy)
    return shared


@pytest.mark.slow
def test_label_takes_the_attempt_from_a_run_folder_with_the_checks_the_store_recorded(
    project: Path,
) -> None:
    run = run_folder(project)
    result = atom("label", run, SPEC, "--fail", "--note", "the token is hard-coded")
    assert result.exit_code == 0, result.output
    (path,) = SAMPLES.glob("*.yaml")
    assert path.name == f"{run.name}.yaml" and str(path) in result.output
    data = yaml.safe_load(path.read_text())
    attempt = data["attempt"]
    assert "+make deploy" in attempt["diff"] and "deploy.sh" in attempt["files"]
    assert attempt["final_message"].startswith("deploy.sh is written.")
    assert attempt["transcript"][0]["tools"][0].startswith("Bash ")
    assert [c["check"] for c in attempt["checks"]] == [
        "file_exists deploy.sh",
        "file_contains deploy.sh /make deploy/",
    ]
    assert data["source"]["run"]  # found in the history store
    assert data["labels"] == [
        {"criterion": 1, "text": CRITERION, "verdict": "fail", "note": "the token is hard-coded"}
    ]


@pytest.mark.slow
def test_no_secret_of_the_attempt_reaches_the_sample(project: Path) -> None:
    assert atom("label", run_folder(project), SPEC, "--pass").exit_code == 0
    (path,) = SAMPLES.glob("*.yaml")
    text = path.read_text()
    assert TOKEN not in text and "export GITHUB_TOKEN=<SECRET:" in text


@pytest.mark.slow
def test_label_finds_a_run_of_the_history_store_by_its_id_and_relabels_the_same_sample(
    project: Path,
) -> None:
    store = open_store(project / ".atom" / "history.db")
    (run,) = store.runs()
    store.close()
    assert atom("label", run_folder(project), SPEC, "--pass").exit_code == 0
    result = atom("label", run.id[:12], SPEC, "--fail", "--criterion", "1", "--note", "no")
    assert result.exit_code == 0, result.output
    (path,) = SAMPLES.glob("*.yaml")  # the same run: one sample, its label replaced
    labels = yaml.safe_load(path.read_text())["labels"]
    assert [(x["verdict"], x.get("note")) for x in labels] == [("fail", "no")]


@pytest.mark.slow
def test_a_run_folder_the_store_does_not_know_has_its_checks_run_again(
    project: Path, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "moved" / run_folder(project).name
    shutil.copytree(run_folder(project), elsewhere, symlinks=True)
    assert atom("label", elsewhere, SPEC, "--pass").exit_code == 0
    data = yaml.safe_load(next(SAMPLES.glob("*.yaml")).read_text())
    assert data["source"]["run"] is None
    assert [c["passed"] for c in data["attempt"]["checks"]] == [True, True]
    assert "deploy.sh" in data["attempt"]["checks"][1]["summary"]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--pass", "--criterion", "2"], "has 1 criteria: --criterion is 1 to 1, not 2"),
        ([], "give the verdict: --pass"),
    ],
)
def test_label_refuses_what_it_cannot_label_with_the_fix(
    project: Path, args: list[str], message: str
) -> None:
    result = atom("label", run_folder(project), SPEC, *args)
    assert result.exit_code == 2
    assert message in result.output
    assert not SAMPLES.exists()


@pytest.mark.slow
def test_a_run_neither_folder_nor_stored_is_named_with_where_to_look(project: Path) -> None:
    result = atom("label", "20990101T000000-nothere", SPEC, "--pass")
    assert result.exit_code == 2
    assert "neither a run folder nor a run of the store" in result.output
    assert "20990101T000000-nothere" in result.output
