"""The transcripts (replay.transcript, reports.cassette_transcript) as pure functions: no CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_atom.events import parse
from pytest_atom.gateway.messages import coalesce_sse, fold_sse, message, read_reply, sse_stream
from pytest_atom.replay.cassette import Cassette, Interaction
from pytest_atom.replay.transcript import (
    Mark,
    call_marks,
    refusal_in_result,
    stream_turns,
    trajectory_summary,
)
from pytest_atom.reports.cassette_transcript import Line, cassette_lines
from tests.helpers import capture

URI = "https://api.anthropic.com/v1/messages"
TOOLS = [{"name": "Bash", "input_schema": {"type": "object"}}]


def _sse(*events: tuple[str, dict[str, Any]]) -> str:
    return "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events)


def _delta(index: int, **delta: Any) -> tuple[str, dict[str, Any]]:
    return "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}


#: A live-looking stream: text and tool input split over several deltas, usage in two parts.
SPLIT_STREAM = _sse(
    (
        "message_start",
        {
            "type": "message_start",
            "message": {"usage": {"input_tokens": 10, "cache_read_input_tokens": 4}},
        },
    ),
    (
        "content_block_start",
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    ),
    _delta(0, type="text_delta", text="Let me "),
    _delta(0, type="text_delta", text="look."),
    (
        "content_block_start",
        {
            "type": "content_block_start",
            "index": 1,
            "content_block": {"type": "tool_use", "id": "t1", "name": "Bash", "input": {}},
        },
    ),
    _delta(1, type="input_json_delta", partial_json='{"command": "ls'),
    _delta(1, type="input_json_delta", partial_json=' /tmp"}'),
    ("message_delta", {"type": "message_delta", "usage": {"output_tokens": 7}}),
)


def test_fold_sse_joins_split_deltas_into_blocks_and_merges_usage() -> None:
    folded = fold_sse(SPLIT_STREAM)
    assert folded["content"] == [
        {"type": "text", "text": "Let me look."},
        {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls /tmp"}},
    ]
    assert folded["usage"] == {"input_tokens": 10, "cache_read_input_tokens": 4, "output_tokens": 7}
    assert folded["error"] is None


def test_fold_sse_reads_a_coalesced_stream_as_the_live_one() -> None:
    """Recording coalesces deltas; reading the cassette back must give the same message."""
    assert coalesce_sse(SPLIT_STREAM) != SPLIT_STREAM
    assert fold_sse(coalesce_sse(SPLIT_STREAM)) == fold_sse(SPLIT_STREAM)


def test_fold_sse_is_the_inverse_of_sse_stream() -> None:
    msg = message(
        "m1",
        "opus",
        [{"type": "text", "text": "hi"}, {"type": "tool_use", "id": "t", "name": "X", "input": {}}],
        input_tokens=3,
        output_tokens=2,
    )
    folded = fold_sse(sse_stream(msg).decode())
    assert folded["content"] == msg["content"]
    assert folded["usage"] == msg["usage"]


def test_fold_sse_keeps_unparsable_tool_input_as_text_and_skips_broken_events() -> None:
    stream = _sse(
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "tool_use", "id": "t", "name": "X", "input": {}},
            },
        ),
        _delta(0, type="input_json_delta", partial_json='{"cut'),
    )
    folded = fold_sse(stream + "event: ping\ndata: {not json\n\n")
    assert folded["content"][0]["input"] == '{"cut'


def test_read_reply_of_a_stream_counts_tokens_and_reports_an_error_event() -> None:
    reply = read_reply(SPLIT_STREAM, 200)
    used = reply.billed.message
    assert (used.input, used.output, used.cache_read) == (10, 7, 4)
    assert reply.usage_text() == "10 in, 7 out, 4 cache read tokens"
    assert reply.error is None
    broken = SPLIT_STREAM + _sse(
        ("error", {"type": "error", "error": {"type": "overloaded_error", "message": "busy"}})
    )
    assert read_reply(broken, 200).error == "overloaded_error: busy"


def test_read_reply_of_json_bodies_and_bare_error_statuses() -> None:
    msg = message("m", "opus", [{"type": "text", "text": "ok"}], input_tokens=5, output_tokens=1)
    reply = read_reply(json.dumps(msg), 200)
    assert reply.blocks == [{"type": "text", "text": "ok"}] and reply.billed.message.input == 5
    assert read_reply('{"type": "error"}', 200).error == "HTTP 200"
    assert read_reply("", 502).error == "HTTP 502"


def _turn(messages: list[dict[str, Any]], answer: dict[str, Any]) -> Interaction:
    return Interaction(
        "POST", URI, {"tools": TOOLS, "messages": messages}, 200, sse_stream(answer).decode()
    )


def test_cassette_lines_group_turns_into_sessions_with_only_new_user_content() -> None:
    prompt = {"role": "user", "content": "Run it."}
    call = message(
        "m1",
        "opus",
        [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "make\nmake test"}}],
        input_tokens=100,
        output_tokens=20,
    )
    done = message(
        "m2", "opus", [{"type": "text", "text": "Done."}], input_tokens=1, output_tokens=1
    )
    result = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1"}]}
    follow_up = [prompt, {"role": "assistant", "content": call["content"]}, result]
    cassette = Cassette(Path("c.yaml"), [_turn([prompt], call), _turn(follow_up, done)])
    lines = list(cassette_lines(Path("c.yaml"), cassette))
    text = "\n".join(map(str, lines))
    assert text.count("Session ") == 1 and "Session 1: 2 turns (tools: Bash)" in text
    assert text.count("Run it.") == 1  # the second turn shows only the tool result
    assert "      tool_use Bash\n        $ make\n          make test" in text
    assert "      tool_result t1:\n        (empty)" in text
    assert text.endswith(
        "Totals: 1 session, 2 turns, 1 tool call, 0 verdicts, 0 side requests; "
        "billed 122 tokens, $0.0010 at today's prices; answers 101 input / 21 output tokens"
    )
    assert Line("  Turn 2", "bold", suffix="  [2] POST /v1/messages") in lines


def test_cassette_lines_clip_long_text_as_a_dim_note_unless_max_lines_is_zero() -> None:
    prompt = {"role": "user", "content": "\n".join(f"l{i}" for i in range(10))}
    answer = message("m", "opus", [{"type": "text", "text": "x"}], input_tokens=1, output_tokens=1)
    cassette = Cassette(Path("c.yaml"), [_turn([prompt], answer)])
    clipped = list(cassette_lines(Path("c.yaml"), cassette, max_lines=3))
    assert Line("... (7 more lines)", "dim", prefix="      ") in clipped
    assert "      l3" not in map(str, clipped)
    whole = list(map(str, cassette_lines(Path("c.yaml"), cassette, max_lines=0)))
    assert "      l9" in whole and not any("more line" in line for line in whole)


def test_cassette_lines_without_turns_list_the_requests_under_no_conversation() -> None:
    head = Interaction("HEAD", "https://api.anthropic.com/", None, 200, "")
    lines = list(cassette_lines(Path("c.yaml"), Cassette(Path("c.yaml"), [head])))
    assert Line("No conversation", "bold") in lines
    assert "  [1] HEAD / -> 200" in map(str, lines)
    assert str(lines[0]) == "Cassette      c.yaml"


def test_a_subagents_turns_hang_under_the_agent_call_that_started_it() -> None:
    """Captured from Claude Code 2.1.330: two Agent calls, each subagent runs one Bash
    command; the CLI tags a subagent's events with its Agent call's id."""
    stdout = capture("subagents-2.1.330.jsonl")
    [launch, *rest] = stream_turns(parse(stdout))
    agents = launch.tool_uses
    assert [a.name for a in agents] == ["Agent", "Agent"]
    for agent in agents:
        [turn] = agent.subagent  # its final text-only answer is not printed by the CLI
        [bash] = turn.tool_uses
        assert bash.name == "Bash" and bash.result is not None
        assert bash.input["command"] in agent.input["prompt"]  # its own command
    # no subagent's call leaks into the main agent's turns
    assert all(call.name != "Bash" for turn in rest for call in turn.tool_uses)


# ---------------------------------------------------------------------------------- marks


@pytest.mark.parametrize(
    ("name", "tool_input", "denied", "marks"),
    [
        ("Skill", {"skill": "/greet"}, None, ["skill greet"]),
        ("Skill", {"skill": "docs:release-notes", "args": "x"}, None, ["skill docs:release-notes"]),
        ("Agent", {"description": "d", "prompt": "p"}, None, ["subagent general-purpose"]),
        ("Task", {"subagent_type": "reviewer", "prompt": "p"}, None, ["subagent reviewer"]),
        ("mcp__tickets__create", {"title": "t"}, None, ["mcp tickets"]),
        ("mcp__tickets__create", {}, "rule", ["mcp tickets", "refused by a permission rule"]),
        ("Bash", {"command": "curl x"}, "hook", ["refused by a hook"]),
        ("Write", {"file_path": "/x"}, "workingDir", ["refused by the attempt folder's boundary"]),
        ("Bash", {"command": "ls"}, None, []),
        ("Skill", "not a mapping", None, ["skill ?"]),
        ("mcp_tickets", {}, None, []),  # one underscore: not Claude Code's MCP naming
    ],
)
def test_call_marks_say_what_a_call_is_and_who_refused_it(
    name: str, tool_input: Any, denied: str | None, marks: list[str]
) -> None:
    assert [m.text for m in call_marks(name, tool_input, denied)] == marks


def test_an_mcp_mark_names_the_server_and_the_tool_and_tags_plain_text() -> None:
    [mark] = call_marks("mcp__tickets__create_bulk", {})
    assert mark == Mark("mcp", "tickets", "create_bulk")
    assert mark.tag == "[mcp tickets]"


@pytest.mark.parametrize(
    ("result", "reason"),
    [  # the error results Claude Code 2.1.330 gives the model (configured-2.1.330.jsonl)
        ("PreToolUse:Bash hook error: no network tools", "hook"),
        ("Permission to use Bash with command rm -f x.txt has been denied.", "rule"),
        ("Permission to use Write has been denied.", "rule"),
        (
            "Claude requested permissions to write to /x/outside.txt, but you haven't granted "
            "it yet.",
            "workingDir",
        ),
        ("Exit code 1\nrm: cannot remove 'x': Permission denied", None),
        ("PostToolUse:Bash hook error: lint failed", None),  # the call ran; a later hook spoke
    ],
)
def test_refusal_in_result_reads_who_refused_from_the_clis_text(
    result: str, reason: str | None
) -> None:
    assert refusal_in_result(result) == reason


def test_a_sessions_marks_count_its_subagents_calls_too() -> None:
    """configured-2.1.330: a skill, a subagent whose two commands a rule and a hook refuse,
    an MCP call and a write outside the attempt folder (see tests/checks/test_trajectory.py)."""
    turns = stream_turns(parse(capture("configured-2.1.330.jsonl")))
    assert trajectory_summary(turns) == "1 skill · 1 subagent · 1 MCP call · 3 refused"
    plain = capture("subagents-2.1.330.jsonl")
    assert trajectory_summary(stream_turns(parse(plain))) == "2 subagents"
    assert trajectory_summary(stream_turns(parse(json.dumps({"type": "result"})))) == ""
