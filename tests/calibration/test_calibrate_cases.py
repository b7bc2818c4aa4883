"""A dataset spec's judge calibrated per case through the real CLI: `atom label` keeps the
case a run ran, `atom calibrate` shows each sample its own case's rendered criterion, and a
templated criterion's calibration pools every case under its words as written, which each
case's run then finds (not stale, not missing)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from pytest_atom.history.store import open_store
from pytest_atom.judge.calibration import (
    CriterionCalibration,
    calibration_file,
    calibration_state,
    judge_identity,
    save_calibration,
    stale_because,
)
from pytest_atom.run_folders import parse_run_name
from pytest_atom.spec.types import Spec
from pytest_atom.spec_loader.load import load_specs
from tests.calibration_helpers import atom
from tests.helpers import once_per_session, write

SPEC = "specs/notes.atom.yaml"
TEMPLATE = "{{ file }} holds the word {{ word }}."
_SPEC = f"""\
name: notes
prompt: Write the word {{{{ word }}}} into {{{{ file }}}}.
script: turns.yaml
timeout: 120
cases:
  - {{id: red, file: red.txt, word: crimson}}
  - {{id: blue, file: blue.txt, word: navy}}
criteria:
  - "{TEMPLATE}"
accept:
  - file_exists: "{{{{ file }}}}"
"""
_VERDICT = """\
  - verdict:
      score: 0.9
      decision: proceed
      criteria: [{criterion: "the word is there", met: true, evidence: "It is."}]
      feedback: ""
"""
_SCRIPT = (
    "turns:\n"
    "  - tool_use:\n"
    "      - {name: Bash, input: {command: 'echo word > red.txt; echo word > blue.txt'}}\n"
    "  - text: 'Done.\\n\\nEXIT_LOOP_NOW'\n"
    "reflector:\n" + _VERDICT * 2
)


def _project(folder: Path) -> None:
    """The project and one `atom run` of both cases (executor and judge scripted)."""
    write(folder / ".atom" / "config.yaml", "keep_runs: 0\n")
    write(folder / SPEC, _SPEC)
    write(folder / "specs" / "turns.yaml", _SCRIPT)
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(folder)
        result = atom("run", SPEC)
    assert result.exit_code == 0, result.output


def _case_of(folder: Path) -> str:
    named = parse_run_name(folder.name)
    assert named is not None, folder
    return named[0].removeprefix("notes-")


@pytest.mark.slow
def test_each_sample_is_judged_on_its_own_cases_criterion_and_the_cases_pool(
    tmp_path_factory: pytest.TempPathFactory,
    tmp_path: Path,
    claude_bin: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ATOM_CLAUDE_BIN", str(claude_bin))
    shared = once_per_session(tmp_path_factory, "calibration-cases", _project)
    project = tmp_path / "project"
    shutil.copytree(shared, project, ignore=shutil.ignore_patterns(".lock", ".built"))
    monkeypatch.chdir(project)
    runs = {_case_of(p): p for p in Path(".atom/runs").iterdir() if p.is_dir()}
    assert sorted(runs) == ["blue", "red"]
    assert atom("label", runs["red"], SPEC, "--pass").exit_code == 0
    labelled = atom("label", runs["blue"], SPEC, "--fail")
    assert labelled.exit_code == 0, labelled.output
    folder = Path("specs/calibration/notes")
    samples = {p.name: yaml.safe_load(p.read_text()) for p in (folder / "samples").iterdir()}
    by_case = {data["case"]: data for data in samples.values()}
    assert by_case["red"]["labels"][0]["text"] == "red.txt holds the word crimson."
    assert by_case["blue"]["labels"][0]["text"] == "blue.txt holds the word navy."

    recorded = atom("calibrate", SPEC, "--record-mode=once")
    assert recorded.exit_code == 0, recorded.output
    assert recorded.output.startswith(f"{SPEC}::notes (judge: record)")  # no one case's name
    cassette = (folder / "cassette.yaml").read_text()
    assert "red.txt holds the word crimson." in cassette  # each sample's own case
    assert "blue.txt holds the word navy." in cassette
    stored = json.loads((folder / "calibration.json").read_text())
    (criterion,) = stored["criteria"]
    assert criterion["identity"]["criterion"] == TEMPLATE  # the cases pooled
    assert criterion["samples"] == 2
    assert criterion["confusion"]["human_fail_judge_pass"] == 1  # blue: the human said fail


def _cases(folder: Path) -> list[Spec]:
    write(folder / "turns.yaml", _SCRIPT)
    return load_specs(write(folder / "notes.atom.yaml", _SPEC))


@pytest.mark.slow
def test_a_stored_run_of_several_cases_is_labelled_by_the_case_named(
    tmp_path_factory: pytest.TempPathFactory,
    tmp_path: Path,
    claude_bin: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ATOM_CLAUDE_BIN", str(claude_bin))
    shared = once_per_session(tmp_path_factory, "calibration-cases", _project)
    project = tmp_path / "project"
    shutil.copytree(shared, project, ignore=shutil.ignore_patterns(".lock", ".built"))
    monkeypatch.chdir(project)
    store = open_store(Path(".atom/history.db"))
    (run,) = store.runs()
    store.close()
    unnamed = atom("label", run.id, SPEC, "--pass")
    assert unnamed.exit_code != 0
    assert "ran 2 cases of spec 'notes' (blue, red): name one as" in unnamed.output
    named = atom("label", run.id, f"{SPEC}::notes[blue]", "--fail")
    assert named.exit_code == 0, named.output
    (sample,) = Path("specs/calibration/notes/samples").iterdir()
    data = yaml.safe_load(sample.read_text())
    assert data["case"] == "blue"
    assert data["labels"][0]["text"] == "blue.txt holds the word navy."


def test_every_case_finds_the_calibration_its_template_pooled(tmp_path: Path) -> None:
    red, blue = _cases(tmp_path)
    assert (red.criteria, blue.criteria) == (
        ("red.txt holds the word crimson.",),
        ("blue.txt holds the word navy.",),
    )
    pooled = CriterionCalibration(
        judge_identity(red, TEMPLATE, "2.1.332"), 12, 1.0, 1.0, 1.0, 1.0, {}
    )
    save_calibration(calibration_file(red), "notes", {TEMPLATE: pooled})
    for case in (red, blue):
        ((found, today),) = calibration_state(case, "2.1.332")
        assert found is not None and found.identity == pooled.identity
        assert stale_because(found.identity, today) is None


def test_a_sample_without_its_case_is_refused_naming_the_fix(tmp_path: Path) -> None:
    from pytest_atom.calibration.judging import case_of
    from pytest_atom.calibration.samples import AttemptSeen, Sample
    from pytest_atom.errors import CalibrationError

    red, blue = _cases(tmp_path)
    old = Sample(tmp_path / "old.yaml", "notes", AttemptSeen(diff=""))
    with pytest.raises(CalibrationError, match=r"add `case: ID`") as caught:
        case_of(old, red, {"red": red, "blue": blue})
    assert "red, blue" in str(caught.value) and "old.yaml" in str(caught.value)
    assert case_of(old, red, {}) is red  # a spec without cases: as before
    assert case_of(Sample(old.path, "notes", old.attempt, case="blue"), red, {"blue": blue}) is blue
