"""The one event stream: Claude Code's stream-json, parsed in pytest_atom.events.

The unit layer reads captures of the real CLI (tests/data/stream_json). ``events-2.1.331``
(the pinned release) and ``events-2.1.197`` are one scripted session each, run through
`ClaudeRunner` (non-bare) against the scripted gateway with a ``permissions.deny`` rule
``Bash(rm:*)``: the main agent says "I'll look first." and runs ``echo hi``; it starts a
foreground general-purpose subagent "cleanup" that runs ``echo sub`` and answers "sub done";
it runs ``rm -f x.txt`` (refused by the rule); it ends with "Done." and EXIT_LOOP_NOW.
``overloaded-*`` are a CLI whose every request was answered 529. Paths are replaced by
placeholders. `test_the_captured_session_still_parses_so_live` reruns that session with
both CLIs, so a release that prints it otherwise shows here.
"""

from __future__ import annotations

import dataclasses
import io
import json
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from atom_cli.progress import Progress
from pytest_atom.agents.claude_code.runner import ClaudeRunner, claude_env
from pytest_atom.cost.limits import Budget, Limits
from pytest_atom.events import (
    AgentError,
    ApiRetry,
    AssistantText,
    Event,
    MessageUsage,
    PermissionDenied,
    Result,
    SessionStarted,
    SubagentEnded,
    SubagentStarted,
    ToolCall,
    ToolResult,
    flatten_tool_result,
    parse,
    parse_event,
    parse_line,
)
from pytest_atom.replay.transcript import permission_denials, stream_turns
from pytest_atom.reports.text import api_line
from pytest_atom.results.record import IterationRecord, RunOutcome
from pytest_atom.results.spec_result import Attempt, SpecResult
from pytest_atom.spec.types import ClaudeOptions, Spec
from pytest_atom.spec_loader.load import load_spec

DATA = Path(__file__).parents[1] / "data" / "stream_json"
VERSIONS = ("2.1.331", "2.1.197")
AGENT_CALL = "toolu_atom_0002_1"
DENY_RM = json.dumps({"permissions": {"deny": ["Bash(rm:*)"]}})
#: The session the captures hold, as scripted gateway turns (the subagent's in the middle).
TURNS: list[dict[str, Any]] = [
    {"text": "I'll look first.", "tool_use": [{"name": "Bash", "input": {"command": "echo hi"}}]},
    {
        "tool_use": [
            {
                "name": "Agent",
                "input": {
                    "description": "cleanup",
                    "prompt": "Run: echo sub",
                    "subagent_type": "general-purpose",
                },
            }
        ]
    },
    {"tool_use": [{"name": "Bash", "input": {"command": "echo sub"}}]},
    {"text": "sub done"},
    {"tool_use": [{"name": "Bash", "input": {"command": "rm -f x.txt"}}]},
    {"text": "Done.\n\nEXIT_LOOP_NOW"},
]


def captured(version: str) -> list[Event]:
    return list(parse((DATA / f"events-{version}.jsonl").read_text(encoding="utf-8")))


def of(kind: type[Any], events: list[Event]) -> list[Any]:
    return [e for e in events if isinstance(e, kind)]


def outline(events: list[Event]) -> list[str]:
    """The session's story, one line an event that says what happened (usage left out)."""
    lines = []
    for e in events:
        subagent = getattr(e, "subagent", None)
        where = f"@{subagent}" if subagent else ""
        if isinstance(e, AssistantText):
            lines.append(f"text{where} {e.text.splitlines()[0]}")
        elif isinstance(e, ToolCall):
            lines.append(f"call{where} {e.name} {e.input.get('command', '')}".rstrip())
        elif isinstance(e, ToolResult):
            lines.append(f"result{where} {e.tool_use_id} error={e.is_error}")
        elif not isinstance(e, MessageUsage):
            lines.append(type(e).__name__)
    return lines


@pytest.mark.parametrize("version", VERSIONS)
def test_a_captured_session_reads_as_its_story(version: str) -> None:
    events = captured(version)
    story = outline(events)
    # 2.1.330 on tells why a call was refused; 2.1.197 only lists it in the result.
    denied = ["PermissionDenied"] if version != "2.1.197" else []
    assert story == [
        "SessionStarted",
        "text I'll look first.",
        "call Bash echo hi",
        "result toolu_atom_0001_1 error=False",
        "call Agent",
        "SubagentStarted",
        f"call@{AGENT_CALL} Bash echo sub",
        f"result@{AGENT_CALL} toolu_atom_0003_1 error=False",
        "SubagentEnded",
        f"result {AGENT_CALL} error=False",
        "call Bash rm -f x.txt",
        *denied,
        "result toolu_atom_0005_1 error=True",
        "text Done.",
        "Result",
    ]
    [started] = of(SessionStarted, events)
    assert (started.agent_version, started.session_id) == (
        version,
        "00000000-0000-4000-8000-000000000001",
    )
    [begin], [end] = of(SubagentStarted, events), of(SubagentEnded, events)
    assert (begin.tool_use_id, begin.description, begin.subagent_type, begin.prompt) == (
        AGENT_CALL,
        "cleanup",
        "general-purpose",
        "Run: echo sub",
    )
    assert (end.tool_use_id, end.status) == (AGENT_CALL, "completed")
    results = {r.tool_use_id: r.text for r in of(ToolResult, events)}
    assert results["toolu_atom_0001_1"] == "hi" and results["toolu_atom_0003_1"] == "sub"
    assert "sub done" in results[AGENT_CALL]  # the subagent's answer, handed back
    assert results["toolu_atom_0005_1"] == (
        "Permission to use Bash with command rm -f x.txt has been denied."
    )


@pytest.mark.parametrize("version", VERSIONS)
def test_the_result_lists_the_refused_call_and_this_calls_figures(version: str) -> None:
    events = captured(version)
    [result] = of(Result, events)
    assert result.text == "Done.\n\nEXIT_LOOP_NOW" and not result.is_error
    assert result.num_turns == 4 and result.subtype == "success"
    [call] = result.denied
    assert (call.tool_name, call.tool_input) == ("Bash", {"command": "rm -f x.txt"})
    assert result.cost_usd > 0 and result.model_usage and result.usage["output_tokens"] > 0
    if version != "2.1.197":
        [why] = of(PermissionDenied, events)
        assert (why.tool_use_id, why.tool_name) == (call.tool_use_id, "Bash")
        # 2.1.330 said "rule" for a deny rule; 2.1.331 says which check of the command
        # refused it.
        assert why.reason == "subcommandResults"


@pytest.mark.parametrize("version", VERSIONS)
def test_usage_is_told_apart_per_session(version: str) -> None:
    usage = of(MessageUsage, captured(version))
    main = {u.message_id for u in usage if u.subagent is None}
    sub = {u.message_id for u in usage if u.subagent == AGENT_CALL}
    assert main == {"msg_atom_0001", "msg_atom_0002", "msg_atom_0005", "msg_atom_0006"}
    assert sub == {"msg_atom_0003"}  # the subagent's text-only answer is never printed
    assert all(u.usage.get("input_tokens") for u in usage)


@pytest.mark.parametrize("version", VERSIONS)
def test_the_record_the_budget_and_the_transcript_read_the_same_events(version: str) -> None:
    events = captured(version)
    record = IterationRecord(
        returncode=0, stdout=(DATA / f"events-{version}.jsonl").read_text(encoding="utf-8")
    )
    for event in events:
        record.apply(event)
    budget = Budget(Limits())
    assert budget.observe(events) is None
    assert [c.name for c in record.tool_calls] == ["Bash", "Agent", "Bash", "Bash"]
    assert record.texts == ["I'll look first.", "Done.\n\nEXIT_LOOP_NOW"]
    assert record.cli_version == version and record.output.endswith("EXIT_LOOP_NOW")
    assert (budget.usage.turns, budget.usage.tool_calls) == (5, 4)
    assert budget.usage.tokens == record.tokens and budget.usage.cost_usd == record.cost_usd
    turns = stream_turns(record.events)
    [agent] = turns[1].tool_uses
    [sub_turn] = agent.subagent
    assert [u.input["command"] for u in sub_turn.tool_uses] == ["echo sub"]
    by_id = {c.id: c for c in record.tool_calls}
    for turn in turns:
        for use in turn.tool_uses:
            assert (use.result, use.is_error) == (by_id[use.id].result, by_id[use.id].is_error)
    [denial] = permission_denials(record.events)
    assert denial.tool_use_id == "toolu_atom_0005_1" and turns[2].tool_uses[0].denied


def test_atom_runs_progress_shows_calls_and_refusals_as_they_stream(tmp_path: Path) -> None:
    spec_file = tmp_path / "p.atom.yaml"
    spec_file.write_text("prompt: p\n", encoding="utf-8")
    out = io.StringIO()
    progress = Progress(Console(file=out, width=200), load_spec(spec_file))
    for line in (DATA / "events-2.1.331.jsonl").read_text(encoding="utf-8").splitlines():
        for event in parse_line(line):
            progress(event)
    shown = [line.strip() for line in out.getvalue().splitlines()]
    assert shown[0].startswith("iteration 1/")
    assert "I'll look first." in shown
    assert '→ Bash {"command": "echo hi"}' in shown
    assert '→ Bash {"command": "echo sub"}' in shown  # the subagent's call too
    assert (
        "✗ Bash `rm -f x.txt`: Permission to use Bash with command rm -f x.txt has been denied."
        in shown
    )


def test_tool_results_flatten_to_one_text_whatever_their_form() -> None:
    assert flatten_tool_result("ok") == "ok"
    assert flatten_tool_result(None) == ""
    blocks = [{"type": "text", "text": "a"}, {"type": "text", "text": ""}, {"text": "b"}]
    assert flatten_tool_result(blocks) == "a\nb"  # as the string form would say it
    image = [{"type": "text", "text": "see"}, {"type": "image", "source": {}}, "junk"]
    assert flatten_tool_result(image) == "see\n[image]"


def test_lines_that_are_no_event_yield_nothing() -> None:
    assert parse_line("npm warn EBADENGINE") == []
    assert parse_line("[1, 2]") == []
    assert parse_line('{"type": "system", "subtype": "hook_started"}') == []
    assert list(parse(["", "not json", '{"type": "stream_event"}'])) == []


@pytest.mark.parametrize("version", VERSIONS)
def test_an_api_error_the_cli_gave_up_on_is_a_retry_an_error_and_the_result(version: str) -> None:
    """Captured against an upstream that answers every request 529 (overloaded), with
    ``CLAUDE_CODE_MAX_RETRIES=1``: one retry, then the CLI answers with the error itself."""
    events = list(parse((DATA / f"overloaded-{version}.jsonl").read_text(encoding="utf-8")))
    [retry] = of(ApiRetry, events)
    assert (retry.attempt, retry.max_retries, retry.error_status, retry.error) == (
        1,
        1,
        529,
        "overloaded",
    )
    assert retry.retry_delay_ms and retry.retry_delay_ms > 0
    assert of(AgentError, events) == [AgentError("server_error")]
    [result] = of(Result, events)
    assert result.is_error and result.api_error_status == 529
    assert result.text.startswith("API Error: 529") and result.cost_usd == 0.0
    record = IterationRecord(returncode=0)
    for event in events:
        record.apply(event)
    assert record.api_retries == [retry.to_dict()] and record.api_error == "server_error"
    assert record.api_error_status == 529 and not record.needs_login


def test_an_answer_without_credentials_asks_for_a_login() -> None:
    """The kind the CLI gives an answer it had no credentials for (no retry can help)."""
    [usage, error, text] = parse_event(
        {
            "type": "assistant",
            "error": "authentication_failed",
            "message": {"content": [{"type": "text", "text": "Invalid API key"}]},
        }
    )
    assert isinstance(usage, MessageUsage) and usage.message_id  # an answer of its own
    assert error == AgentError("authentication_failed")
    assert isinstance(text, AssistantText) and text.text == "Invalid API key"
    record = IterationRecord(returncode=0)
    for event in (usage, error, text):
        record.apply(event)
    assert record.needs_login


def test_events_are_frozen_values() -> None:
    call = ToolCall("t1", "Bash", {"command": "ls"}, "m1")
    with pytest.raises(dataclasses.FrozenInstanceError):
        call.name = "Read"  # type: ignore[misc]


@pytest.mark.slow
@pytest.mark.parametrize(
    "old",
    # Release 0.1's CLI does not change: CI runs it once (-m sweep), the suite the pinned one.
    [pytest.param(False, id="pinned"), pytest.param(True, id="2.1.197", marks=pytest.mark.sweep)],
)
def test_the_captured_session_still_parses_so_live(
    old: bool, claude_bin: Path, request: pytest.FixtureRequest, gateway_for: Any, tmp_path: Path
) -> None:
    """The capture's session, run again: the CLI still prints the story the capture holds."""
    binary = request.getfixturevalue("old_claude_bin") if old else claude_bin
    turns = json.loads(json.dumps(TURNS))
    if not old:  # 2.1.330 on start subagents in the background unless told otherwise
        turns[1]["tool_use"][0]["input"]["run_in_background"] = False
    gateway = gateway_for(turns)
    runner = ClaudeRunner(
        env=claude_env(gateway.url, tmp_path / "config"),
        claude_bin=binary,
        options=ClaudeOptions(args=("--settings", DENY_RM)),
    )
    (tmp_path / "work").mkdir()
    record = runner.run("Do the task.", tmp_path / "work")
    assert record.returncode == 0, record.stderr
    version = "2.1.197" if old else "2.1.331"
    live = outline(list(record.events))
    want = outline(captured(version))
    # tool ids are the gateway's, so the stories compare as they are
    assert live == want


@pytest.mark.parametrize("version", VERSIONS)
def test_a_deny_rules_refusal_is_named_a_rule_on_both_clis(version: str) -> None:
    """2.1.331's reason "subcommandResults" is no word a report can say; the refusal's own
    text tells that a permission rule refused the call."""
    [denial] = permission_denials(captured(version))
    assert denial.reason == "rule"


def test_a_long_bash_command_is_a_task_but_no_subagent() -> None:
    """Claude Code 2.1.331 reports a Bash command that runs a few seconds (`sleep 4; echo
    done`) as a `task_started` of type `local_bash`, with the Bash call's tool_use_id."""
    bash = {
        "type": "system",
        "subtype": "task_started",
        "task_id": "b1",
        "tool_use_id": "toolu_1",
        "description": "sleep 4; echo done",
        "task_type": "local_bash",
    }
    assert parse_event(bash) == []
    agent = {**bash, "task_type": "local_agent", "subagent_type": "general-purpose"}
    assert [type(e) for e in parse_event(agent)] == [SubagentStarted]
    older = {k: v for k, v in agent.items() if k != "task_type"}  # 2.1.197 and before
    assert [type(e) for e in parse_event(older)] == [SubagentStarted]


def test_a_run_whose_cli_gave_up_on_an_api_error_names_the_status(tmp_path: Path) -> None:
    """The captured give-up (529 after its one retry) is why the recording failed, and the
    report's API line ends with it (not with a timeout or a completed run)."""

    record = IterationRecord(returncode=1)
    for event in parse((DATA / "overloaded-2.1.331.jsonl").read_text(encoding="utf-8")):
        record.apply(event)
    spec = Spec(name="s", path=tmp_path / "s.atom.yaml", line=1, prompt="p")
    attempt = Attempt(1, tmp_path / "a01", RunOutcome(False, 1, reason="error"), [record])
    result = SpecResult(spec, tmp_path, [attempt], 0.0, 0.8, source="record")
    assert result.upstream_failure == "API 529"
    assert api_line(result) == (
        "the API answered 529 (overloaded) once (api_retry events), then "
        "the CLI gave up on an API error 529"
    )
