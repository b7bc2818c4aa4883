"""A dataset through the real Claude Code CLI: each case recorded into its own cassette,
replayed offline by ``-k`` or by `atom run --case`, and a case whose variables changed
since its recording named as the reason its replay diverged."""

from __future__ import annotations

import json
import sys

import pytest

from pytest_atom.replay.cassette import Cassette
from tests.helpers import Scenario, pytester_once, write

SPEC = """\
name: notes
prompt: |
  Write the word {{ word }} into {{ file }}, on one line.
cases: notes.csv
script: turns.yaml
env: {NOTE_FILE: "{{ file }}", NOTE_WORD: "{{ word }}"}
max_iterations: 2
accept:
  - file_contains: {path: "{{ file }}", pattern: "^{{ word }}$"}
"""

CSV = "id,file,word\nred,red.txt,crimson\nblue,blue.txt,navy\ngreen,green.txt,olive\n"

SCRIPT = """\
turns:
  - tool_use:
      - name: Bash
        input: {command: "printf '%s\\\\n' \\"$NOTE_WORD\\" > \\"$NOTE_FILE\\""}
  - text: Done. EXIT_LOOP_NOW
"""

#: Runs an `atom run` of the project in the inner pytester's folder.
ATOM = "import sys; from atom_cli.main import main; sys.argv[0] = 'atom'; main()"


def _play(inner: pytest.Pytester) -> dict[str, pytest.RunResult]:
    write(inner.path / "notes.atom.yaml", SPEC)
    write(inner.path / "notes.csv", CSV)
    write(inner.path / "turns.yaml", SCRIPT)
    args = ("--atom", "notes.atom.yaml", "-p", "no:cacheprovider", "-rA")
    runs = {"record": inner.runpytest(*args, "--atom-record-mode=once")}
    runs["replay"] = inner.runpytest(*args, "-k", "blue or green", "--atom-report", "traces")
    runs["atom-run"] = inner.run(
        sys.executable, "-c", ATOM, "run", "notes.atom.yaml", "--case", "red"
    )
    runs["typo"] = inner.run(sys.executable, "-c", ATOM, "run", "notes.atom.yaml", "--case", "rde")
    write(inner.path / "notes.csv", CSV.replace("navy", "azure"))
    runs["changed"] = inner.runpytest(*args, "-k", "blue")
    return runs


@pytest.fixture
def dataset(
    pytester: pytest.Pytester, tmp_path_factory: pytest.TempPathFactory, claude_for_pytester: None
) -> Scenario:
    return pytester_once(pytester, tmp_path_factory, "dataset-replay", _play)


@pytest.mark.slow
def test_each_case_is_recorded_into_its_own_cassette(dataset: Scenario) -> None:
    record = dataset.runs["record"]
    assert record.ret == 0 and record.outcomes == {"passed": 3}, record.output
    folder = dataset.project / "cassettes" / "notes" / "notes"
    assert sorted(p.name for p in folder.iterdir()) == ["blue.yaml", "green.yaml", "red.yaml"]
    metadata = {p.stem: Cassette.load(p).metadata for p in folder.iterdir()}
    assert metadata["red"]["spec"] == "notes.atom.yaml::notes[red]"
    assert len({m["case_hash"] for m in metadata.values()}) == 3
    assert len({m["prompt_hash"] for m in metadata.values()}) == 3
    assert "notes.atom.yaml::notes over 3 cases: 3/3 passed" in record.output


@pytest.mark.slow
def test_k_replays_the_selected_cases_offline(dataset: Scenario) -> None:
    replay = dataset.runs["replay"]
    assert replay.ret == 0 and replay.outcomes == {"passed": 2, "deselected": 1}, replay.output
    assert "PASSED notes.atom.yaml::notes[blue]" in replay.output
    assert "notes[red]" not in replay.output.split("deselected")[-1]
    traces = [json.loads(p.read_text()) for p in (dataset.project / "traces").rglob("*.json")]
    specs = {t["atom"]["spec"]["name"]: t["atom"]["spec"] for t in traces if "atom" in t}
    assert specs["notes[blue]"]["case"] == "blue"
    assert specs["notes[blue]"]["case_vars"] == {"file": "blue.txt", "word": "navy"}


@pytest.mark.slow
def test_atom_run_case_runs_one_case(dataset: Scenario) -> None:
    run = dataset.runs["atom-run"]
    assert run.ret == 0, run.output
    assert "notes[red]" in run.output and "notes[blue]" not in run.output
    typo = dataset.runs["typo"]
    assert typo.ret == 2
    assert "--case rde is no case of these specs (cases: red, blue, green)" in typo.output
    assert "did you mean 'red'?" in typo.output


@pytest.mark.slow
def test_a_case_changed_since_recording_is_named_when_its_replay_diverges(
    dataset: Scenario,
) -> None:
    changed = dataset.runs["changed"]
    assert changed.ret == 1, changed.output
    assert "case changed since recording: case 'blue'" in changed.output
