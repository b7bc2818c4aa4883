"""Recall: a replay takes the recorded verdict (and plan) without starting the session
when its whole input is unchanged; anything else starts it, as before.

What recall decides is shown over the shipped create_file cassette, with no CLI. The
real replays are shared: the session's replay of the shipped fixtures (`shipped_run`) and
the votes scenario (tests/judge_helpers.py), which counts the `claude -p` sessions each
run starts through a wrapper of the CLI.
"""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from pytest_atom.errors import SettingsError
from pytest_atom.judge.reflector import VERDICT_SCHEMA, reflector_input
from pytest_atom.replay.cassette import RECALL, Cassette, Interaction
from pytest_atom.replay.matching import compared_turns
from pytest_atom.replay.normalize import Normalizer
from pytest_atom.replay.placeholders import volatile_paths
from pytest_atom.replay.recall import Recall, SessionKey, folder_hash
from pytest_atom.replay.recording import ModelSource, open_model_source
from pytest_atom.replay.responder import CassetteResponder
from pytest_atom.replay.scrub import Scrubber
from pytest_atom.replay.staleness import interaction_kind
from pytest_atom.reports.html import render_html, report_row, spec_view
from pytest_atom.reports.summary import summary_table
from pytest_atom.reports.text import RECALLED_NOTE, verdict_line
from pytest_atom.reports.trace import TRACE_SCHEMA, build_trace
from pytest_atom.results.rows import SummaryRow
from pytest_atom.settings.modes import JUDGE_MODES
from pytest_atom.settings.options import RunSettings
from pytest_atom.settings.resolved import Layer, resolve
from pytest_atom.spec_loader.load import load_spec
from tests.helpers import REPO, ShippedRun, write
from tests.judge_helpers import kept

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


# --- what recall decides, over the shipped cassette ------------------------------------------

CREATE_FILE = SPECS / "cassettes" / "create_file" / "create-file.yaml"


def shipped_recall(*, enabled: bool = True, hashes: bool = True) -> tuple[Recall, SessionKey]:
    """A replay's recall over the shipped create_file cassette, and the key its reflector
    session was recorded with (its input's and its folder's hashes, its opening turn)."""
    cassette = Cassette.load(CREATE_FILE)
    entry = cassette.metadata[RECALL]["reflector:1"]
    if not hashes:
        del cassette.metadata[RECALL]
    request = next(i for i in cassette.interactions if interaction_kind(i) == "reflector")
    opening = compared_turns(request.body)[:1]
    key = SessionKey("reflector:1", "reflector", entry["inputs"], entry["folder"], opening)
    tape = CassetteResponder(cassette, Normalizer({}), Scrubber())
    return Recall(tape, enabled=enabled), key


def test_an_unchanged_input_recalls_the_recorded_verdict_once() -> None:
    """The recorded verdict and what its session cost then; the session is then played."""
    recall, key = shipped_recall()
    recalled = recall.recall(key)
    assert recalled is not None and recalled.role == "reflector:1"
    assert recalled.answer["score"] == 0.95 and recalled.tokens == 1286
    assert recall.recall(key) is None  # the cassette holds one such session


def test_a_changed_criterion_starts_the_reflector(tmp_path: Path) -> None:
    """A criterion is the reflector's input: changed, its hash no longer matches."""
    folder = tmp_path / "a01"
    folder.mkdir()
    recall, key = shipped_recall()
    spec = load_spec(SPECS / "create_file.atom.yaml")
    criterion = spec.criteria[0]
    changed = replace(spec, criteria=(criterion.replace("nothing else", "a smile"),))
    keys = [
        recall.key("reflector:1", "reflector", reflector_input(s, folder, [], "", 0.8), folder)
        for s in (spec, changed)
    ]
    assert keys[0] is not None and keys[1] is not None
    assert keys[0].inputs != keys[1].inputs and keys[0].folder == keys[1].folder
    assert recall.recall(replace(key, inputs=keys[1].inputs)) is None


def test_a_changed_folder_starts_the_reflector() -> None:
    """The reflector could read any file of the attempt folder: a changed one (whose hash
    test_folder_hash_... shows) starts it, though its prompt is the same."""
    recall, key = shipped_recall()
    assert recall.recall(replace(key, folder="sha256:another-folder")) is None
    assert recall.recall(key) is not None


def test_a_cassette_without_recall_hashes_runs_the_reflector() -> None:
    """Cassettes recorded before recall replay as they did: the reflector starts."""
    recall, key = shipped_recall(hashes=False)
    assert recall.recall(key) is None


def shipped_source(tmp_path: Path, claude_bin: Path, **settings: Any) -> ModelSource:
    """What a replay of a copy of the shipped create_file spec answers from (its cassette),
    under `settings`; `claude_bin` is only asked its version."""
    for name in ("create_file.atom.yaml", "scripts/create_file.yaml"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        shutil.copy(SPECS / name, tmp_path / name)
    cassettes = tmp_path / "cassettes" / "create_file"
    if not cassettes.exists():
        shutil.copytree(SPECS / "cassettes" / "create_file", cassettes)
    spec = load_spec(tmp_path / "create_file.atom.yaml")
    paths = volatile_paths(tmp_path / "runs" / "r", spec)
    return open_model_source(spec, RunSettings(**settings), paths=paths, claude_bin=claude_bin)


def test_judge_rerun_starts_the_sessions_a_replay_would_recall(
    tmp_path: Path, claude_bin: Path
) -> None:
    """``--atom-judge=rerun``: a replay of a cassette with hashes recalls nothing, the
    reflector's verdict and the planner's plan alike (one Recall serves both)."""
    sources = {judge: shipped_source(tmp_path, claude_bin, judge=judge) for judge in JUDGE_MODES}
    assert [s.kind for s in sources.values()] == ["replay", "replay"]
    assert sources["recall"].recall.enabled and not sources["rerun"].recall.enabled
    _, key = shipped_recall()
    assert sources["rerun"].recall.recall(key) is None
    assert sources["recall"].recall.recall(key) is not None


def test_strict_matching_under_another_cli_recalls_nothing(tmp_path: Path) -> None:
    """Strict matching compares the CLI's own parts of a request, which only the CLI that
    recorded them is known to send alike: under another version (asked of the binary,
    which has no package.json to read it from) every session starts."""
    other = write(tmp_path / "bin" / "claude", '#!/bin/sh\necho "9.9.9 (Claude Code)"\n')
    other.chmod(0o755)
    strict = shipped_source(tmp_path, other, match="strict")
    assert strict.tape is not None and strict.tape.drift.live_version == "9.9.9"
    assert not strict.recall.enabled
    assert shipped_source(tmp_path, other).recall.enabled  # conversation matching: recalled


# --- real replays ----------------------------------------------------------------------------


def junit_props(shipped_run: ShippedRun, name: str) -> dict[str, str | None]:
    return {
        str(p.get("name")): p.get("value")
        for case in ET.parse(shipped_run.junit).iter("testcase")
        if case.get("name") == name
        for p in case.iter("property")
    }


@pytest.mark.slow
def test_shipped_create_file_replays_with_one_cli_process(shipped_run: ShippedRun) -> None:
    """The session's replay of the shipped fixtures recalls create_file's verdict: the
    executor's session alone starts, and the recorded score and tokens are reported."""
    props = junit_props(shipped_run, "create-file")
    assert props["atom_score"] == "0.95" and props["atom_recalled"] == "reflector"
    assert props["atom_reflector_tokens"] == "1286"  # the recorded session's, as recorded
    trace = json.loads((shipped_run.traces / "create_file" / "create-file.json").read_text())
    assert trace["cost"]["dispatched_runs"] == 1
    assert [s["role"] for s in trace["children"][0]["sessions"]] == ["executor"]
    # the summary's reflector cell: the recorded tokens, recalled
    row = SummaryRow.of("create_file.atom.yaml::create-file", props)
    assert " 1286 recalled " in "\n".join(summary_table([row])) + " "


@pytest.mark.slow
def test_the_reports_say_the_verdict_was_recalled(votes_run: Path, shipped_run: ShippedRun) -> None:
    """The verdict line of a report, the trace and the HTML report name a recalled verdict."""
    result, started = kept(votes_run, "recalled")
    assert started == 1
    assert verdict_line(result).endswith("; " + RECALLED_NOTE)
    trace = build_trace(result)
    Draft202012Validator(TRACE_SCHEMA).validate(trace)
    [child] = trace["children"]
    assert child["verdict_source"] == "recalled" and child["verdict"]["score"] == 0.9
    page = render_html([report_row("task.atom.yaml::task", "passed", spec_view(result))])
    assert "recalled from the cassette: the reflector's input was unchanged" in page
    # the shipped replay's failing spec too
    trace = json.loads((shipped_run.traces / "misses_goal" / "misses-goal.json").read_text())
    [child] = trace["children"]
    assert child["verdict_source"] == "recalled" and child["verdict"]["score"] == 0.3
