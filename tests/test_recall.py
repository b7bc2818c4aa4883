"""Recall: a replay takes the recorded verdict (and plan) without starting the session
when its whole input is unchanged; anything else starts it, as before.

The slow tests count the `claude -p` processes a real replay starts, through a wrapper
script that `ATOM_CLAUDE_BIN` names: one line per process, then the real CLI.
"""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from pytest_atom.cassettes.cassette import Cassette, Interaction
from pytest_atom.cassettes.recall import RECALL_KEY, folder_hash
from pytest_atom.cassettes.replay import CassetteResponder
from pytest_atom.cassettes.scrub import Scrubber
from pytest_atom.gateway.matching import compared_turns
from pytest_atom.gateway.normalize import Normalizer
from pytest_atom.judge.reflector import VERDICT_SCHEMA
from pytest_atom.model.settings import Layer, SettingsError, resolve
from pytest_atom.reports.trace import TRACE_SCHEMA
from tests.helpers import REPO

SPECS = REPO / "fixtures" / "specs"


def _hash(folder: Path) -> str:
    return folder_hash(folder, Normalizer({str(folder.parent): "<RUN_DIR>"}).paths_out)


def test_folder_hash_is_the_content_whatever_the_run_folder(tmp_path: Path) -> None:
    """Two runs' folders of the same content hash alike, their own paths in files too;
    git's state and caches are left out; a changed byte, name or mode changes it."""
    one, two = tmp_path / "run1" / "a01", tmp_path / "run2" / "a01"
    for folder in (one, two):
        (folder / "sub").mkdir(parents=True)
        (folder / "sub" / "hello.txt").write_text("hello, world\n")
        (folder / "where.txt").write_text(f"I ran in {folder}\n")
        (folder / ".git").mkdir()
        (folder / ".git" / "index").write_bytes(folder.parent.name.encode())
        (folder / "__pycache__").mkdir()
    (two / "__pycache__" / "x.pyc").write_bytes(b"\x00\x01")
    assert _hash(one) == _hash(two)
    (two / "sub" / "hello.txt").write_text("hello, world!\n")
    assert _hash(one) != _hash(two)
    (two / "sub" / "hello.txt").write_text("hello, world\n")
    (two / "where.txt").chmod(0o755)
    assert _hash(one) != _hash(two)
    (two / "where.txt").chmod(0o644)
    (two / "sub" / "hello.txt").rename(two / "sub" / "hullo.txt")
    assert _hash(one) != _hash(two)


def _reflector_request(
    turns: list[dict[str, Any]], answer: dict[str, object] | None
) -> Interaction:
    """A recorded reflector request (it offers StructuredOutput) and its JSON answer."""
    tools = [{"name": "Read"}, {"name": "StructuredOutput", "input_schema": VERDICT_SCHEMA}]
    block = (
        {"type": "tool_use", "id": "t", "name": "StructuredOutput", "input": answer}
        if answer is not None
        else {"type": "tool_use", "id": "t", "name": "Read", "input": {"file_path": "x"}}
    )
    return Interaction(
        "POST",
        "scripted://x/v1/messages",
        {"messages": turns, "tools": tools},
        200,
        json.dumps({"type": "message", "content": [block]}),
    )


def test_the_tape_gives_each_recorded_session_once(tmp_path: Path) -> None:
    """A recalled session is the first unplayed one with that opening: its requests up to
    the next that opens alone, its answer the last StructuredOutput; then it is played."""
    opening = {"role": "user", "content": "Judge this."}
    read = {"role": "assistant", "content": [{"type": "text", "text": "reading"}]}
    result = {"role": "user", "content": [{"type": "text", "text": "x holds 1"}]}
    cassette = Cassette(
        tmp_path / "c.yaml",
        [
            _reflector_request([opening], None),  # the first session reads a file,
            _reflector_request([opening, read, result], {"score": 1}),  # then answers
            _reflector_request([{"role": "user", "content": "Other."}], {"score": 0.2}),
            _reflector_request([opening], {"score": 0.5}),  # a second session, same opening
        ],
    )
    tape = CassetteResponder(cassette, Normalizer({}), Scrubber())
    [first] = compared_turns({"messages": [opening]})
    assert tape.recall_session("planner", first) is None  # another kind of session
    assert tape.recall_session("reflector", first) == {"score": 1}
    assert tape.unplayed() == 2
    assert tape.recall_session("reflector", first) == {"score": 0.5}
    assert tape.recall_session("reflector", first) is None
    assert tape.unplayed() == 1  # "Other." was never recalled


def test_judge_setting_goes_through_the_resolver() -> None:
    settings = resolve([Layer("the command line", {"judge": "rerun"})])
    assert settings.judge == "rerun"
    assert resolve([]).judge == "recall"
    with pytest.raises(SettingsError, match=r"atom_judge in the ini file = 'again': use one of"):
        resolve([Layer("the ini file", {"judge": "again"}, key=lambda n: f"atom_{n}")])


# --- real replays, counting the CLI processes ---------------------------------------------


def _sessions(log: Path) -> int:
    count = len(log.read_text().splitlines()) if log.exists() else 0
    log.unlink(missing_ok=True)
    return count


def _copy_spec(pytester: pytest.Pytester, stem: str) -> Path:
    """A spec of fixtures/specs, its script and cassette (and workspaces) copied."""
    (pytester.path / "scripts").mkdir(exist_ok=True)
    shutil.copy(SPECS / f"{stem}.atom.yaml", pytester.path)
    shutil.copy(SPECS / "scripts" / f"{stem}.yaml", pytester.path / "scripts")
    shutil.copytree(SPECS / "cassettes" / stem, pytester.path / "cassettes" / stem)
    shutil.copytree(SPECS / "workspaces", pytester.path / "workspaces", dirs_exist_ok=True)
    return pytester.path / f"{stem}.atom.yaml"


def _replay(
    pytester: pytest.Pytester, spec: Path, *args: str
) -> tuple[pytest.RunResult, dict[str, str | None]]:
    junit = pytester.path / "junit.xml"
    result = pytester.runpytest_subprocess(
        "--atom", str(spec), "-p", "no:cacheprovider", "--junitxml", str(junit), *args
    )
    props = {str(p.get("name")): p.get("value") for p in ET.parse(junit).getroot().iter("property")}
    return result, props


@pytest.mark.slow
def test_shipped_create_file_replays_with_one_cli_process(
    pytester: pytest.Pytester, counted: Path
) -> None:
    """The shipped cassette recalls its verdict: the executor's session alone starts, the
    recorded score is reported and the report says where the verdict came from;
    ``--atom-judge=rerun`` starts the reflector and gets the same verdict."""
    spec = _copy_spec(pytester, "create_file")
    result, props = _replay(pytester, spec)
    result.assert_outcomes(passed=1)
    assert _sessions(counted) == 1
    assert props["atom_score"] == "0.95" and props["atom_recalled"] == "reflector"
    assert props["atom_reflector_tokens"] == "1286"  # the recorded session's, as recorded
    result.stdout.fnmatch_lines(
        ["*create-file  passed    0.95*1286 recalled*"]
    )  # role cells: tokens

    result, props = _replay(pytester, spec, "--atom-judge=rerun")
    result.assert_outcomes(passed=1)
    assert _sessions(counted) == 2
    assert props["atom_score"] == "0.95" and "atom_recalled" not in props
    assert props["atom_reflector_tokens"] == "1286"


@pytest.mark.slow
def test_a_changed_criterion_starts_the_reflector(pytester: pytest.Pytester, counted: Path) -> None:
    """A criterion is the reflector's input: changed, the reflector runs, and its request
    no longer matches the recording (the report says to re-judge)."""
    spec = _copy_spec(pytester, "create_file")
    spec.write_text(spec.read_text().replace("and nothing else.", "and a smile."))
    result, props = _replay(pytester, spec)
    result.assert_outcomes(failed=1)
    assert _sessions(counted) == 2
    assert "atom_recalled" not in props
    result.stdout.fnmatch_lines(["*the reflector's input changed*--atom-rejudge*"])


@pytest.mark.slow
def test_a_cassette_without_recall_hashes_runs_the_reflector(
    pytester: pytest.Pytester, counted: Path
) -> None:
    """Cassettes recorded before recall replay as they did: the reflector starts."""
    spec = _copy_spec(pytester, "create_file")
    path = pytester.path / "cassettes" / "create_file" / "create-file.yaml"
    cassette = Cassette.load(path)
    assert cassette.metadata.pop(RECALL_KEY)
    cassette.save()
    result, props = _replay(pytester, spec)
    result.assert_outcomes(passed=1)
    assert _sessions(counted) == 2
    assert props["atom_score"] == "0.95" and "atom_recalled" not in props


@pytest.mark.slow
def test_the_reports_say_the_verdict_was_recalled(pytester: pytest.Pytester, counted: Path) -> None:
    """The failure report, the trace and the HTML report name a recalled verdict."""
    spec = _copy_spec(pytester, "misses_goal")
    result, props = _replay(
        pytester, spec, "--runxfail", "--atom-report", "traces", "--atom-html", "report.html"
    )
    result.assert_outcomes(failed=1)
    assert _sessions(counted) == 1 and props["atom_recalled"] == "reflector"
    result.stdout.fnmatch_lines(
        ["*verdict: fail, score 0.3 *; verdict recalled from the cassette: the reflector's*"]
    )
    trace = json.loads((pytester.path / "traces" / "misses_goal" / "misses-goal.json").read_text())
    Draft202012Validator(TRACE_SCHEMA).validate(trace)
    [child] = trace["children"]
    assert child["verdict_source"] == "recalled" and child["verdict"]["score"] == 0.3
    html = (pytester.path / "report.html").read_text()
    assert "recalled from the cassette: the reflector's input was unchanged" in html


RECORDED_SPEC = """\
name: notes
prompt: |
  Create a file named hello.txt in the current folder containing exactly one line:
  hello, world
workspace: workspaces/notes
script: scripts/create_file.yaml
max_iterations: 3
criteria:
  - hello.txt holds the greeting "hello, world" and nothing else.
"""


@pytest.mark.slow
def test_recording_stores_the_hashes_and_a_changed_folder_reruns(
    pytester: pytest.Pytester, counted: Path
) -> None:
    """A recording stores what recall needs; a file of the attempt folder the agent never
    touched, changed, changes neither the executor's conversation nor the reflector's
    prompt (it is in no diff), but the reflector could read it: the reflector runs, its
    conversation still matches, and the verdict is the same."""
    (pytester.path / "scripts").mkdir()
    shutil.copy(SPECS / "scripts" / "create_file.yaml", pytester.path / "scripts")
    notes = pytester.path / "workspaces" / "notes" / "NOTES.md"
    notes.parent.mkdir(parents=True)
    notes.write_text("Remember the greeting.\n")
    spec = pytester.path / "notes.atom.yaml"
    spec.write_text(RECORDED_SPEC)
    result, _ = _replay(pytester, spec, "--atom-record-mode=all")
    result.assert_outcomes(passed=1)
    assert _sessions(counted) == 2
    cassette = Cassette.load(pytester.path / "cassettes" / "notes" / "notes.yaml")
    entry = cassette.metadata[RECALL_KEY]["reflector:1"]
    assert set(entry) == {"inputs", "folder", "tokens", "cost_usd"}

    result, props = _replay(pytester, spec)
    result.assert_outcomes(passed=1)
    assert _sessions(counted) == 1 and props["atom_recalled"] == "reflector"

    notes.write_text("Remember the greeting, and smile.\n")
    result, props = _replay(pytester, spec)
    result.assert_outcomes(passed=1)
    assert _sessions(counted) == 2 and "atom_recalled" not in props
    assert props["atom_score"] == "0.95"


@pytest.mark.slow
def test_a_replayed_plan_is_recalled(pytester: pytest.Pytester, counted: Path) -> None:
    """Planner mode: the plan comes from the cassette, and only the steps' executors run."""
    spec = _copy_spec(pytester, "planned")
    result, props = _replay(pytester, spec)
    result.assert_outcomes(passed=1)
    assert props["atom_recalled"] == "planner"
    assert props["atom_plan"] == "plan: implement, test"
    recalled = _sessions(counted)
    result, props = _replay(pytester, spec, "--atom-judge=rerun")
    result.assert_outcomes(passed=1)
    assert _sessions(counted) == recalled + 1
