"""Record and replay: the real CLI with a scripted upstream where only it shows the
behaviour, a gateway on a spec's model source where the cassette layer does.

The greet story (tests/recording_helpers.py) records greet once per session, interrupts a
re-recording of it and replays it with the upstream gone; the end-to-end tests here read
it, or start from a copy of its project. Which record mode records, replays or appends is
decided by `open_model_source` alone, tested here for every mode without a CLI; how a
replay takes a changed request, and what a recording writes, are shown by sending the
shipped create_file cassette's requests (changed or not) to that source's gateway.
"""

from __future__ import annotations

import copy
import json
import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml
from vcr.serialize import deserialize
from vcr.serializers import yamlserializer

from pytest_atom.agents.claude_code.cli import CLAUDE_CODE_VERSION
from pytest_atom.errors import RecordingError
from pytest_atom.gateway import Gateway
from pytest_atom.replay.cassette import Cassette
from pytest_atom.replay.recording import divergence_report, open_model_source
from pytest_atom.replay.responder import CassetteResponder
from pytest_atom.settings.options import RunSettings
from pytest_atom.spec_loader.load import load_spec
from tests.helpers import bash, write
from tests.recording_helpers import (
    CASSETTE,
    OTHER_VERSION,
    PARTIAL,
    TURNS,
    GreetStory,
    create_file_spec,
    greet_spec,
    send,
    with_recorded,
)

pytestmark = pytest.mark.usefixtures("claude_for_pytester")


@pytest.mark.slow
def test_record_then_replay_with_the_upstream_gone(story: GreetStory) -> None:
    assert story.text("record.status") == "0", story.text("record.txt")
    # The replay ran with record mode none, every upstream stopped: replay only.
    assert story.text("replay.status") == "0", story.text("replay.txt")
    assert "1 passed" in story.text("replay.txt")
    committed = story.project / story.text("replay.run") / "committed" / "greeting.txt"
    assert committed.read_text() == "hello\n"

    text = story.recorded.read_text()
    requests, responses, metadata = deserialize(text, yamlserializer)  # vcrpy reads it
    assert metadata["claude_code_version"] == CLAUDE_CODE_VERSION
    assert metadata["spec"] == "greet.atom.yaml::greet"
    assert metadata["spec_hash"].startswith("sha256:") and metadata["recorded_at"]
    assert metadata["upstream"] == story.text("upstream.url")
    assert any(r.method == "POST" and r.path == "/v1/messages" for r in requests)
    assert any(b"event: message_start" in r["body"]["string"] for r in responses)
    assert "working directory: <RUN_DIR>/attempts/a01" in text
    assert "<DATE>" in text and "<METADATA>" in text
    assert str(story.project) not in text  # no machine paths


@pytest.mark.slow
def test_ctrl_c_during_recording_leaves_the_cassette_byte_identical(story: GreetStory) -> None:
    output = story.text("interrupted.txt")
    assert "KeyboardInterrupt" in output
    assert (story.folder / "after-interrupt.yaml").read_bytes() == story.recorded.read_bytes()
    assert (story.project / PARTIAL).exists()
    assert not list((story.project / CASSETTE).parent.glob(".*.tmp"))


@pytest.mark.slow
def test_another_cli_version_sending_the_same_requests_is_no_drift_strict_version_fails(
    story: GreetStory, pytester: pytest.Pytester
) -> None:
    # The story's replay found OTHER_VERSION in the cassette; the requests were the same,
    # so nothing Claude Code owns changed: it passed, without a drift line.
    assert f"claude_code_version: {OTHER_VERSION}" in (story.project / CASSETTE).read_text()
    assert story.text("replay.status") == "0", story.text("replay.txt")
    assert "drift:" not in story.text("replay.txt")
    # --atom-strict-version refuses before any CLI starts.
    with_recorded(pytester, story)
    strict = pytester.runpytest("--atom", "--atom-strict-version")
    strict.assert_outcomes(failed=1)
    strict.stdout.fnmatch_lines(
        [
            f"*could not run spec 'greet'*recorded with Claude Code {OTHER_VERSION}*"
            "--atom-record-mode=refresh"
        ]
    )


@pytest.mark.slow
def test_secrets_never_reach_the_cassette(story: GreetStory) -> None:
    """The story recorded greet with a secret in its workspace (named in the environment)
    and an API key passed to Claude Code."""
    secrets = json.loads(story.text("secrets.json"))
    # The agent really saw the secret, and Claude Code sent the key...
    assert secrets["token_seen"] and secrets["key_sent"]
    # ...and the cassette has neither, only a named placeholder.
    text = story.recorded.read_text()
    assert secrets["token"] not in text and secrets["api_key"] not in text
    assert "<SECRET:ATOM_CANARY_TOKEN>" in text
    stored = {
        k.lower() for i in yaml.safe_load(text)["interactions"] for k in i["request"]["headers"]
    }
    assert not stored & {"x-api-key", "authorization"}  # auth headers are never stored
    # The scrubbed cassette replays (the story's replay): the secret the agent reads again
    # is scrubbed to the same placeholder, so the conversation matches.
    assert story.text("replay.status") == "0", story.text("replay.txt")


@pytest.mark.slow
def test_timed_out_recording_keeps_the_cassette_and_the_partial(
    story: GreetStory, pytester: pytest.Pytester, gateway_for: Any
) -> None:
    cassette = with_recorded(pytester, story)
    before = cassette.read_bytes()
    spec = pytester.path / "greet.atom.yaml"
    spec.write_text(spec.read_text().replace("timeout: 120", "timeout: 15"))  # time to start
    slow = gateway_for([bash("echo started; sleep 120")])
    result = pytester.runpytest("--atom", "--atom-record-mode=all", f"--atom-upstream={slow.url}")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*agent: timed out after 15s"])
    assert cassette.read_bytes() == before
    assert "sleep 120" in (pytester.path / PARTIAL).read_text()


def test_missing_cassette_with_record_mode_none_never_reaches_the_upstream(
    pytester: pytest.Pytester, gateway_for: Any
) -> None:
    greet_spec(pytester)
    upstream = gateway_for(TURNS)
    result = pytester.runpytest("--atom", f"--atom-upstream={upstream.url}")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*record it with: pytest --atom 'greet.atom.yaml::greet' --atom-record-mode=once"]
    )
    assert upstream.exchanges == []


@pytest.mark.slow
def test_the_printed_record_command_records_the_missing_cassette(
    pytester: pytest.Pytester, gateway_for: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hint is run as printed, its upstream the API's address a person would have
    (`ANTHROPIC_BASE_URL`): the cassette is recorded, and the same run then replays it."""
    greet_spec(pytester)
    missing = pytester.runpytest("--atom")
    missing.assert_outcomes(failed=1)
    hint = next(
        line.partition("record it with: ")[2].strip()
        for line in missing.outlines
        if "record it with: " in line
    )
    assert hint.startswith("pytest --atom "), hint
    monkeypatch.setenv("ANTHROPIC_BASE_URL", gateway_for(TURNS).url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    pytester.runpytest(*shlex.split(hint)[1:]).assert_outcomes(passed=1)
    monkeypatch.delenv("ANTHROPIC_BASE_URL")
    again = pytester.runpytest("--atom")
    again.assert_outcomes(passed=1)
    assert "record it with" not in again.stdout.str()


# --- record modes: the decision per mode, then one run under xdist ----------------------


@pytest.mark.parametrize(
    ("mode", "cassette", "kind", "replays", "keeps"),
    [
        ("none", True, "replay", True, True),
        ("none", False, "scripted", None, None),
        ("once", True, "replay", True, True),
        ("once", False, "record", False, False),
        ("new_episodes", True, "record", True, True),
        ("new_episodes", False, "record", True, False),
        ("all", True, "record", False, False),
        ("all", False, "record", False, False),
    ],
)
def test_each_record_mode_replays_records_or_appends_by_the_cassette_it_finds(
    tmp_path: Path,
    claude_bin: Path,
    mode: Any,
    cassette: bool,
    kind: str,
    replays: bool | None,
    keeps: bool | None,
) -> None:
    """`once` records only what is missing, `new_episodes` replays what it has and records
    the rest onto it, `all` records anew; a script plays when there is nothing to replay."""
    spec = load_spec(create_file_spec(tmp_path, cassette=cassette))
    source = open_model_source(spec, RunSettings(record_mode=mode), paths={}, claude_bin=claude_bin)
    try:
        assert source.kind == kind
        if replays is None:
            assert not isinstance(source.responder, CassetteResponder)
            return
        tape = source.tape
        assert tape is not None and tape.replay is replays
        assert bool(tape.cassette.interactions) is keeps  # what it starts from
        if kind == "record":  # from the spec's own script: nothing leaves the machine
            assert source.upstream_gateway is not None
            assert tape.upstream_label == "scripted://create_file.yaml"
    finally:
        source.finish(spec, failed=True, cli_version=None)  # stops its script's gateway
    assert not (tmp_path / "cassettes" / "create_file" / "create-file.partial.yaml").exists()


def test_record_mode_none_without_a_cassette_or_a_script_names_the_command(
    tmp_path: Path, claude_bin: Path
) -> None:
    spec = load_spec(write(tmp_path / "greet.atom.yaml", "name: greet\nprompt: p\n"))
    with pytest.raises(RecordingError, match=r"record it with: pytest --atom .*=once"):
        open_model_source(spec, RunSettings(), paths={}, claude_bin=claude_bin)


XDIST_SPEC = """\
name: {name}
prompt: Create {name}.txt.
script: {name}.yaml
timeout: 120
accept: [file_exists: {name}.txt]
"""


@pytest.mark.slow
def test_xdist_records_each_spec_in_its_own_worker(pytester: pytest.Pytester) -> None:
    """Record mode new_episodes under xdist, no cassette yet: two workers record at once,
    each its spec's cassette, whole, and leave no partial. Record mode none under xdist is the shared replay of the
    shipped fixtures (tests/pytest/test_plugin.py::test_shipped_fixtures_pass_with_the_xfail_reported);
    what the other modes do differently is the decision above."""
    for name in ("left", "right"):
        pytester.makefile(".atom.yaml", **{name: XDIST_SPEC.format(name=name)})
        turns = [bash(f"touch {name}.txt"), {"text": "Done. EXIT_LOOP_NOW"}]
        pytester.makefile(".yaml", **{name: yaml.safe_dump({"turns": turns})})
    result = pytester.runpytest("-n", "2", "--atom", "--atom-record-mode=new_episodes")
    result.assert_outcomes(passed=2)
    recorded = sorted(p.relative_to(pytester.path) for p in pytester.path.glob("cassettes/*/*"))
    assert recorded == [Path("cassettes/left/left.yaml"), Path("cassettes/right/right.yaml")]
    for path in recorded:
        assert Cassette.load(pytester.path / path).metadata["spec"].endswith(path.stem)


# --- the cassette layer: a gateway on a spec's model source, the shipped cassette's requests


def _tool_result_changed(interaction: Any) -> Any:
    body = copy.deepcopy(interaction.body)
    body["messages"][-1]["content"][0]["content"] = "hello, there"  # was: hello, world
    return body


@pytest.mark.parametrize("mode", ["conversation", "strict", "structural"])
def test_changed_tool_result_diverges_unless_structural(
    tmp_path: Path, claude_bin: Path, mode: Any
) -> None:
    spec = load_spec(create_file_spec(tmp_path))
    source = open_model_source(spec, RunSettings(match=mode), paths={}, claude_bin=claude_bin)
    tape = source.tape
    assert tape is not None
    first, second, third = tape.cassette.interactions[:3]  # the third has `cat`'s output
    with Gateway(tape) as gateway:
        assert send(gateway, first) == send(gateway, second) == 200  # the run so far
        status = send(gateway, third, _tool_result_changed(third))
    if mode == "structural":
        assert status == 200
        assert (tape.drift.replayed, tape.drift.results_differ) == (3, 1)
        # said in the summary as a line (tests/replay/test_cross_version.py: as pytest prints it)
        assert "tool results differ in 1 request (structural match)" in (tape.drift.line() or "")
        return
    assert status == 409
    [report] = divergence_report(spec, source, CLAUDE_CODE_VERSION)
    assert (report.cause or "").startswith("likely cause: a tool result differs from the recording")
    assert "(user).content[0] (tool_result).content: recorded " in report.detail
    assert '"hello, world", live "hello, there"' in report.detail


def test_new_episodes_appends_what_does_not_match(tmp_path: Path, claude_bin: Path) -> None:
    """What matches replays; what does not is recorded (from the spec's script) and added."""
    spec = load_spec(create_file_spec(tmp_path))
    settings = RunSettings(record_mode="new_episodes")
    source = open_model_source(spec, settings, paths={}, claude_bin=claude_bin)
    tape = source.tape
    assert tape is not None
    first = tape.cassette.interactions[0]
    recorded = len(tape.cassette.interactions)
    changed = copy.deepcopy(first.body)
    changed["messages"][0]["content"] += " Please."  # the task, as the first message says it
    with Gateway(tape) as gateway:
        assert send(gateway, first) == 200  # replayed
        assert send(gateway, first, changed) == 200  # recorded from the script's first turn
    written = source.finish(spec, failed=False, cli_version=CLAUDE_CODE_VERSION)
    assert written == tmp_path / "cassettes" / "create_file" / "create-file.yaml"
    grown = [json.dumps(i.body) for i in Cassette.load(written).interactions]
    assert len(grown) == recorded + 1
    assert sum("Please." in body for body in grown) == 1


def test_a_failed_recording_keeps_the_cassette_and_the_partial(
    tmp_path: Path, claude_bin: Path
) -> None:
    """A recording that fails (a timeout, a Ctrl-C: the greet story shows one for real)
    leaves the cassette as it was and keeps what it recorded in <name>.partial.yaml."""
    spec = load_spec(create_file_spec(tmp_path))
    cassette = tmp_path / "cassettes" / "create_file" / "create-file.yaml"
    before = cassette.read_bytes()
    first = Cassette.load(cassette).interactions[0]
    source = open_model_source(
        spec, RunSettings(record_mode="all"), paths={}, claude_bin=claude_bin
    )
    assert source.tape is not None
    with Gateway(source.tape) as gateway:
        assert send(gateway, first) == 200
    written = source.finish(spec, failed=True, cli_version=CLAUDE_CODE_VERSION)
    assert written == cassette.with_name("create-file.partial.yaml")
    assert cassette.read_bytes() == before
    assert len(Cassette.load(written).interactions) == 1


def test_changed_prompt_fails_with_a_readable_diff(
    tmp_path: Path, claude_bin: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The spec's prompt changed since recording: the CLI's first request (the recorded one
    with the new prompt in it) matches nothing, and the report says the spec changed and
    shows the words that did. How pytest prints such a report: tests/replay/test_replay_errors.py."""
    monkeypatch.chdir(tmp_path)
    path = create_file_spec(tmp_path)
    path.write_text(path.read_text().replace("hello, world\nscript", "goodbye, world\nscript"))
    spec = load_spec(path)
    source = open_model_source(spec, RunSettings(), paths={}, claude_bin=claude_bin)
    assert source.tape is not None
    first = source.tape.cassette.interactions[0]
    live = copy.deepcopy(first.body)
    live["messages"][0]["content"] = live["messages"][0]["content"].replace(
        "hello, world", "goodbye, world", 1
    )
    with Gateway(source.tape) as gateway:
        assert send(gateway, first, live) == 409
    [report] = divergence_report(spec, source, CLAUDE_CODE_VERSION)
    assert report.cause == (
        "likely cause: spec changed since recording: re-record it with: pytest --atom "
        "'create_file.atom.yaml::create-file' --atom-record-mode=all"
    )
    lines = report.detail.splitlines()
    assert lines[0] == (
        "POST /v1/messages (turn): no recorded interaction matches; the closest recorded "
        "conversation differs at:"
    )
    assert lines[1] == "- messages[0] (user).content[0] (text).text: text changed in 1 place:"
    assert lines[2].startswith("    at line ")
    assert lines[3].endswith("exactly one line:\\n[hello], world")
    assert lines[4].endswith("exactly one line:\\n[goodbye], world")
