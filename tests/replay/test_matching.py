"""Match modes and drift, without a CLI: what decides a replay match and what is only drift."""

from __future__ import annotations

import copy
import json
from typing import Any

import httpx
import pytest

from pytest_atom.gateway.messages import message, sse_stream
from pytest_atom.replay.cassette import Interaction
from pytest_atom.replay.matchers import matcher_for
from pytest_atom.replay.matching import NO_OUTPUT, called_tools, compared_turns, note_served
from pytest_atom.replay.normalize import Normalizer
from pytest_atom.replay.recording import ModelSource, divergence_report
from pytest_atom.results.drift import Drift
from pytest_atom.wire.request import request_kind
from pytest_atom.wire.roles import ROLE_HEADER
from tests.cassette_helpers import TOOLS, post, recorded, replayer, reply_msg, serve, turn_body
from tests.helpers import scripted_spec

REMINDER = "<system-reminder>\nToday's date is <DATE>.\n</system-reminder>\n\n"


def cli_2_1_197(body: dict[str, Any]) -> dict[str, Any]:
    """How another Claude Code release wraps the same conversation (seen between releases)."""
    other = copy.deepcopy(body)
    first = other["messages"][0]
    first["content"] = [
        {"type": "text", "text": REMINDER},
        {"type": "text", "text": first["content"], "cache_control": {"type": "ephemeral"}},
    ]
    other["messages"].append({"role": "system", "content": [], "output_config": {"effort": "x"}})
    other.update(model="claude-older", max_tokens=64000, thinking={"type": "adaptive"})
    other["system"] = [{"type": "text", "text": "You are Claude Code, an older release."}]
    other["tools"] = [{**TOOLS[0], "input_schema": {"properties": {"run_in_background": {}}}}]
    return other


def test_conversation_ignores_what_claude_code_owns() -> None:
    live, old = turn_body(), cli_2_1_197(turn_body())
    assert live != old
    assert compared_turns(live) == compared_turns(old)
    assert matcher_for("conversation").key("turn", live) == matcher_for("conversation").key(
        "turn", old
    )
    assert matcher_for("strict").key("turn", live) != matcher_for("strict").key("turn", old)


@pytest.mark.parametrize(
    "change",
    [
        lambda b: b["messages"][0].update(content="Fix the other tests."),  # the task
        lambda b: b["messages"][1]["content"][0]["input"].update(command="rm -rf /"),
        lambda b: b["messages"][2]["content"][0].update(content="1 failed"),  # a tool result
    ],
    ids=["prompt", "tool input", "tool result"],
)
def test_what_the_user_owns_decides(change: Any) -> None:
    changed = turn_body()
    change(changed)
    assert matcher_for("conversation").key("turn", changed) != matcher_for("conversation").key(
        "turn", turn_body()
    )


def test_structural_blanks_tool_results_only() -> None:
    other_result = turn_body(result="1 failed, 1 passed")
    assert matcher_for("structural").key("turn", other_result) == matcher_for("structural").key(
        "turn", turn_body()
    )
    other_prompt = turn_body(prompt="Something else.")
    assert matcher_for("structural").key("turn", other_prompt) != matcher_for("structural").key(
        "turn", turn_body()
    )


def test_claude_codes_own_tool_result_notes_are_folded() -> None:
    """Two releases answer an output-less Bash call with different words."""
    old = turn_body(result="(Bash completed with no output)")
    new = turn_body(
        result="[This command modified 1 file you've previously read: calc/x.py. "
        "Call Read before editing.]"
    )
    assert compared_turns(old)[2]["content"][0]["content"] == NO_OUTPUT
    assert matcher_for("conversation").key("turn", old) == matcher_for("conversation").key(
        "turn", new
    )


def test_claude_codes_words_around_the_users_answers_are_folded() -> None:
    """2.1.332 words a free-text answer to AskUserQuestion unlike 2.1.197; the answer is
    the user's and decides a match."""
    old = turn_body(
        result='Your questions have been answered: "Colour?"="blue, I think". '
        "You can now continue with these answers in mind."
    )
    new = turn_body(
        result='The user answered: "Colour?"="blue, I think". Read the answers '
        "carefully — they may request clarification, changes, or that you not "
        "proceed — and follow what they actually say."
    )
    other = turn_body(result='The user answered: "Colour?"="red". Read the answers carefully.')
    assert compared_turns(old)[2]["content"][0]["content"] == '<ANSWERED> "Colour?"="blue, I think"'
    assert matcher_for("conversation").key("turn", old) == matcher_for("conversation").key(
        "turn", new
    )
    assert matcher_for("conversation").key("turn", other) != matcher_for("conversation").key(
        "turn", new
    )


def test_request_kinds() -> None:
    """The role is the harness's marker; Claude Code's StructuredOutput tool says nothing
    about a live request (only an old, unmarked recording is guessed from it)."""
    structured = {**turn_body(), "tools": [*TOOLS, {"name": "StructuredOutput"}]}
    assert request_kind("POST", "/v1/messages", turn_body(), None) == "turn"
    assert request_kind("POST", "/v1/messages", turn_body(), "executor") == "turn"
    assert request_kind("POST", "/v1/messages", structured, None) == "turn"
    assert request_kind("POST", "/v1/messages", turn_body(), "reflector") == "reflector"
    assert request_kind("POST", "/v1/messages", turn_body(), "planner") == "planner"
    assert request_kind("POST", "/v1/messages", {"messages": []}, "reflector") == "side"
    assert request_kind("POST", "/v1/messages/count_tokens", turn_body(), None) == "count_tokens"
    assert request_kind("HEAD", "/", "", None) == "head"
    old = Interaction("POST", "http://x/v1/messages", structured, 200, "")
    assert old.role == "reflector"  # recorded before the marker: the old guess
    marked = Interaction(
        "POST", "http://x/v1/messages", structured, 200, "", {ROLE_HEADER: "executor"}
    )
    assert marked.role == "executor"  # the marker wins over any guess
    # side requests match by kind alone: their prompts are Claude Code's
    assert matcher_for("conversation").key(
        "side", {"messages": [{"role": "user", "content": "a"}]}
    ) == (matcher_for("conversation").key("side", {"messages": [{"role": "user", "content": "b"}]}))


def test_called_tools_from_sse_and_json() -> None:
    msg = message(
        "m", "x", [{"type": "tool_use", "id": "t", "name": "Write", "input": {}}], **_usage()
    )
    assert called_tools(sse_stream(msg).decode()) == ["Write"]
    assert called_tools(json.dumps(msg)) == ["Write"]
    assert called_tools(json.dumps(reply_msg("hi"))) == []


def _usage() -> dict[str, int]:
    return {"input_tokens": 1, "output_tokens": 1}


def test_drift_line_names_versions_model_tools_and_counts() -> None:
    drift = Drift(recorded_version="2.1.197", live_version="2.1.330")
    old, live = cli_2_1_197(turn_body()), turn_body()
    live["tools"] = [{**TOOLS[0], "input_schema": {"properties": {"allow_large": {}}}}]
    note_served(drift, live, old, exact=False, results_differ=False)
    note_served(drift, live, live, exact=True, results_differ=False)
    assert drift.line() == (
        "recorded with Claude Code 2.1.197, replayed with 2.1.330: model claude-older → "
        "claude-x, tools +Bash.allow_large −Bash.run_in_background, system prompt changed, "  # noqa: RUF001
        "role-system messages changed, max_tokens 64000 → 1000, "
        'thinking {"type": "adaptive"} → (absent), '
        "Claude Code's own text in the messages changed; "
        "2 requests: 1 identical, 1 matched on the conversation"
    )


def test_a_changed_role_system_message_is_named_and_the_system_prompt_is_not() -> None:
    """The sandbox's path list lives in a `role: system` message, not in `system`."""
    recorded = {**turn_body(), "messages": [*turn_body()["messages"], role_system("a")]}
    live = {**turn_body(), "messages": [*turn_body()["messages"], role_system("b")]}
    drift = Drift(recorded_version="2.1.330", live_version="2.1.330")
    note_served(drift, live, recorded, exact=False, results_differ=False)
    assert drift.changes() == ["role-system messages changed"]
    assert drift.line() == (
        "recorded and replayed with Claude Code 2.1.330: role-system messages changed; "
        "1 request: 0 identical, 1 matched on the conversation"
    )


def role_system(text: str) -> dict[str, Any]:
    return {"role": "system", "content": [{"type": "text", "text": text}]}


@pytest.mark.parametrize(
    ("field", "value", "said"),
    [
        ("temperature", 0.5, "temperature (absent) → 0.5"),
        ("output_config", {"effort": "high"}, 'output_config {"effort": "high"} → (absent)'),
        ("max_tokens", 2000, "max_tokens 2000 → 1000"),
    ],
)
def test_each_sampling_field_is_named(field: str, value: Any, said: str) -> None:
    live = turn_body()
    recorded = {**live, field: value}
    if field == "temperature":
        live, recorded = {**live, field: value}, turn_body()
    drift = Drift()
    note_served(drift, live, recorded, exact=False, results_differ=False)
    assert drift.changes() == [said]


def test_reworded_tools_are_named_by_tool() -> None:
    live = turn_body()
    recorded = {**live, "tools": [{**TOOLS[0], "description": "an older wording"}]}
    drift = Drift()
    note_served(drift, live, recorded, exact=False, results_differ=False)
    assert drift.changes() == ["tools reworded Bash"]


def test_no_drift_line_for_a_byte_exact_replay() -> None:
    drift = Drift(recorded_version="2.1.330", live_version="2.1.330")
    note_served(drift, turn_body(), turn_body(), exact=True, results_differ=False)
    assert drift.line() is None


def test_no_drift_line_when_nothing_claude_code_owns_changed_under_another_version() -> None:
    """A newer CLI that sent the very same requests changed nothing worth a line."""
    drift = Drift(recorded_version="2.1.330", live_version="2.1.331")
    note_served(drift, turn_body(), turn_body(), exact=True, results_differ=False)
    assert drift.line() is None


def test_a_recorded_call_of_a_tool_no_longer_offered_diverges(tmp_path: Any) -> None:
    writes = message(
        "m", "x", [{"type": "tool_use", "id": "t", "name": "Write", "input": {}}], **_usage()
    )
    offered = {**turn_body(), "tools": [*TOOLS, {"name": "Write"}]}
    responder = replayer([recorded(offered, writes)], tmp_path)
    with serve(responder) as gateway:
        reply = post(gateway, turn_body())  # the live CLI offers Bash only
    assert reply.status_code == 409
    (divergence,) = responder.divergences
    assert "the recording calls tool Write, which this Claude Code does not offer" in (
        divergence.describe()
    )


def test_conversation_match_serves_another_releases_recording(tmp_path: Any) -> None:
    responder = replayer([recorded(cli_2_1_197(turn_body()), reply_msg("ok"))], tmp_path)
    with serve(responder) as gateway:
        reply: httpx.Response = post(gateway, turn_body())
    assert reply.status_code == 200 and reply.json() == reply_msg("ok")
    assert responder.divergences == [] and responder.drift.loose == 1
    (served,) = responder.served  # what a refresh writes back: the live request
    assert served.body == Normalizer({}).body(turn_body())
    assert served.response == json.dumps(reply_msg("ok"))


# --- where a divergence lies, and the cause the report gives --------------------------------


def diverge(tmp_path: Any, live: dict[str, Any], recorded_body: dict[str, Any], **kw: Any) -> Any:
    """The first divergence of a live request against one recorded request."""
    responder = replayer([recorded(recorded_body, reply_msg("ok"))], tmp_path, **kw)
    with serve(responder) as gateway:
        assert post(gateway, live).status_code == 409
    responder.cassette.metadata["claude_code_version"] = "2.1.330"
    return responder


def causes(tmp_path: Any, responder: Any, cli_version: str) -> str:
    spec = scripted_spec(tmp_path)
    (report, *_) = divergence_report(spec, ModelSource("replay", responder), cli_version)
    return report.splitlines()[0]


def test_a_changed_tool_result_under_a_newer_cli_is_not_blamed_on_the_version(
    tmp_path: Any,
) -> None:
    responder = diverge(tmp_path, turn_body(result="1 failed"), turn_body(result="2 passed"))
    assert responder.divergences[0].where() == ("tool_result", [])
    lead = causes(tmp_path, responder, "2.1.331")
    assert lead.startswith("likely cause: a tool result differs from the recording: the workspace")
    assert "or Claude Code 2.1.331 words its own part of it unlike 2.1.330" in lead
    assert "recorded with another Claude Code version" not in lead


def test_a_changed_user_text_is_the_conversation_whatever_the_version(tmp_path: Any) -> None:
    responder = diverge(tmp_path, turn_body(prompt="Fix it all."), turn_body())
    assert responder.divergences[0].where() == ("conversation", [])
    assert causes(tmp_path, responder, "2.1.331") == (
        "likely cause: the conversation differs from the recording (below)"
    )


def test_strict_blames_the_version_only_when_the_conversation_is_the_same(tmp_path: Any) -> None:
    live = {**turn_body(), "max_tokens": 64000}
    responder = diverge(tmp_path, live, turn_body(), matcher=matcher_for("strict"))
    assert responder.divergences[0].where() == ("cli", [])
    assert causes(tmp_path, responder, "2.1.331").startswith(
        "likely cause: recorded with another Claude Code version (2.1.330; this run 2.1.331), "
        "and strict matching compares Claude Code's own parts of the request too; refresh"
    )
    assert causes(tmp_path, responder, "2.1.330").startswith(
        "likely cause: Claude Code's own parts of the request differ"
    )


@pytest.mark.parametrize(
    ("recorded_line", "live_line", "label"),
    [
        (" - Hostname: build-7", " - Hostname: laptop", "'Hostname'"),
        ('Filesystem: {"read": ["/opt/a"]}', 'Filesystem: {"read": ["/opt/b"]}', "filesystem"),
    ],
)
def test_a_machine_line_as_the_only_difference_is_named(
    tmp_path: Any, recorded_line: str, live_line: str, label: str
) -> None:
    """A detail not masked yet (a future CLI's): the environment block or the sandbox."""

    def body(line: str) -> dict[str, Any]:
        text = f"# Environment\n - Platform: linux\n{line}\n - Shell: bash"
        entry = {"role": "system", "content": [{"type": "text", "text": text}]}
        return {**turn_body(), "messages": [*turn_body()["messages"], entry]}

    responder = diverge(
        tmp_path, body(live_line), body(recorded_line), matcher=matcher_for("strict")
    )
    where, labels = responder.divergences[0].where()
    assert where == "machine" and len(labels) == 1 and label in labels[0]
    lead = causes(tmp_path, responder, "2.1.331")
    assert lead.startswith(f"likely cause: a machine detail differs ({labels[0]}): the cassette")
    assert "another Claude Code version" not in lead
