"""The realistic upstream (tests/upstream.py) against the official Anthropic SDK.

The SDK is the reference parser of the real API's streams: if it reads what the upstream
sends (thinking with its signature, parallel tool inputs, usage, a mid-stream error), the
upstream's shapes are the API's and not merely ours.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anthropic
import httpx
import pytest

from pytest_atom.cassettes.cassette import FAULT_HEADER, Cassette
from pytest_atom.model.modes import MatchMode
from pytest_atom.model.result import SpecResult
from pytest_atom.model.settings import RunSettings
from pytest_atom.model.spec import load_specs
from pytest_atom.model.spec_types import Spec
from pytest_atom.reports.cassette_transcript import cassette_lines
from pytest_atom.reports.transcript import stream_turns
from pytest_atom.run.spec_run import run_spec
from tests.helpers import record_through_upstream
from tests.upstream import RealisticUpstream, Turn, Usage, first_user_text, sse_events, turn_of

TASK = "Count the files in this folder."
SCRIPT: dict[str, list[Turn]] = {
    TASK: [
        {
            "thinking": "Let me look at the folder first, then count.",
            "redacted_thinking": True,
            "text": "I'll run both.",
            "tool_calls": [
                {"name": "Bash", "input": {"command": "ls", "description": "List"}},
                {"name": "Bash", "input": {"command": "ls | wc -l", "description": "Count"}},
            ],
        },
        {"text": "There are 3 files.\nEXIT_LOOP_NOW"},
    ],
    "Cut me off": [
        {"thinking": "Thinking hard.", "text": "A long answer", "fault": "overloaded_mid_stream"}
    ],
    "Fail first": [{"text": "Fine now.", "fault": "overloaded_at_start"}],
}
TOOLS: list[Any] = [
    {"name": "Bash", "description": "Run", "input_schema": {"type": "object", "properties": {}}}
]


@pytest.fixture
def upstream() -> Iterator[RealisticUpstream]:
    with RealisticUpstream(SCRIPT, delay=0) as server:
        yield server


@pytest.fixture
def client(upstream: RealisticUpstream) -> Iterator[anthropic.Anthropic]:
    with anthropic.Anthropic(base_url=upstream.url, api_key="test", max_retries=0) as sdk:
        yield sdk


def ask(text: str, *history: Any) -> list[Any]:
    return [{"role": "user", "content": [{"type": "text", "text": text}]}, *history]


def test_the_sdk_reads_thinking_parallel_tools_and_usage(
    upstream: RealisticUpstream, client: anthropic.Anthropic
) -> None:
    with client.messages.stream(
        model="claude-opus-5-5", max_tokens=1000, messages=ask(TASK), tools=TOOLS
    ) as stream:
        kinds = [event.type for event in stream]
        final = stream.get_final_message()
    thinking, redacted, text, *blocks = final.content
    calls = [c for c in blocks if isinstance(c, anthropic.types.ToolUseBlock)]
    assert len(calls) == len(blocks) == 2
    assert thinking.type == "thinking" and thinking.thinking.startswith("Let me look")
    assert len(thinking.signature) > 100
    assert redacted.type == "redacted_thinking" and redacted.data
    assert text.type == "text" and text.text == "I'll run both."
    assert [(c.type, c.input) for c in calls] == [
        ("tool_use", {"command": "ls", "description": "List"}),
        ("tool_use", {"command": "ls | wc -l", "description": "Count"}),
    ]
    assert all(c.id.startswith("toolu_01") for c in calls) and calls[0].id != calls[1].id
    assert final.id.startswith("msg_01") and final.stop_reason == "tool_use"
    usage = final.usage
    assert usage.cache_creation_input_tokens and usage.input_tokens and usage.output_tokens > 1
    assert usage.cache_creation and usage.service_tier == "standard"
    assert kinds.count("thinking") > 2 and "signature" in kinds and "input_json" in kinds
    sent = upstream.usage_sent[0].usage
    assert sent == Usage(
        usage.input_tokens,
        usage.output_tokens,
        usage.cache_creation_input_tokens or 0,
        usage.cache_read_input_tokens or 0,
    )
    assert upstream.tokens_sent() == sent.total


def test_raw_stream_has_pings_headers_and_small_deltas(upstream: RealisticUpstream) -> None:
    body = {"model": "m", "max_tokens": 10, "stream": True, "tools": TOOLS, "messages": ask(TASK)}
    reply = httpx.post(f"{upstream.url}/v1/messages?beta=true", json=body)
    assert reply.headers["content-type"] == "text/event-stream; charset=utf-8"
    assert reply.headers["request-id"].startswith("req_01") and reply.headers["cf-ray"]
    for name in ("requests", "tokens"):
        for part in ("limit", "remaining", "reset"):
            assert reply.headers[f"anthropic-ratelimit-{name}-{part}"]
    events = sse_events(reply.text)
    names = [name for name, _ in events]
    assert names[:2] == ["message_start", "ping"] and names.count("ping") > 1
    assert names[-2:] == ["message_delta", "message_stop"]
    deltas = [data["delta"] for name, data in events if name == "content_block_delta"]
    texts = [d["text"] for d in deltas if d["type"] == "text_delta"]
    assert len(texts) > 1 and all(3 <= len(t) <= 12 for t in texts[:-1])
    partial = [d["partial_json"] for d in deltas if d["type"] == "input_json_delta"]
    assert partial[0] == "" and all(len(p) <= 12 for p in partial)
    kinds = [d["type"] for d in deltas]
    assert kinds.count("thinking_delta") > 1
    assert kinds[kinds.index("thinking_delta") :].index("signature_delta") > 1
    usage = events[-2][1]["usage"]
    assert set(usage) == {
        "input_tokens",
        "cache_creation_input_tokens",
        "cache_read_input_tokens",
        "output_tokens",
    }
    # The same request again: the same ids (a replay sees stable ids).
    again = httpx.post(f"{upstream.url}/v1/messages?beta=true", json=body)
    assert again.text == reply.text


def test_a_later_turn_reads_the_cache(
    client: anthropic.Anthropic, upstream: RealisticUpstream
) -> None:
    first = client.messages.create(model="m", max_tokens=10, messages=ask(TASK), tools=TOOLS)
    history = [
        {"role": "assistant", "content": [b.model_dump() for b in first.content]},
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": b.id, "content": "a b c"}
                for b in first.content
                if b.type == "tool_use"
            ],
        },
    ]
    second = client.messages.create(
        model="m", max_tokens=10, messages=ask(TASK, *history), tools=TOOLS
    )
    assert second.content[0].type == "text" and "EXIT_LOOP_NOW" in second.content[0].text
    assert second.stop_reason == "end_turn" and second.usage.cache_read_input_tokens
    assert upstream.turns() == [(TASK, 0, "ok"), (TASK, 1, "ok")]
    assert not upstream.requests[0].streamed


def test_a_mid_stream_overload_is_the_sdks_error_once(
    client: anthropic.Anthropic, upstream: RealisticUpstream
) -> None:
    seen: list[str] = []
    with pytest.raises(anthropic.APIStatusError) as raised:
        with client.messages.stream(
            model="m", max_tokens=10, messages=ask("Cut me off now"), tools=TOOLS
        ) as stream:
            seen.extend(event.type for event in stream)
    assert raised.value.body == {
        "type": "error",
        "error": {"type": "overloaded_error", "message": "Overloaded"},
    }
    assert "text" in seen or "thinking" in seen  # content arrived before the cut
    assert "message_stop" not in seen
    # Claude Code continues with its own text instead of resending: the turn comes whole.
    history = [
        {"role": "assistant", "content": [{"type": "text", "text": "A long"}]},
        {
            "role": "user",
            "content": "Your response above was cut off mid-stream. Resume directly from where it stops.",
        },
    ]
    whole = client.messages.create(
        model="m", max_tokens=10, messages=ask("Cut me off now", *history), tools=TOOLS
    )
    assert [b.type for b in whole.content] == ["thinking", "text"]
    assert upstream.turns() == [
        ("Cut me off", 0, "overloaded_mid_stream"),
        ("Cut me off", 0, "ok"),
    ]
    assert upstream.requests[-1].continuation
    assert list(upstream.tokens_by_conversation()) == ["Cut me off"]  # the cut one not counted


def test_an_overload_at_start_is_served_once(
    client: anthropic.Anthropic, upstream: RealisticUpstream
) -> None:
    def stream() -> str:
        with client.messages.stream(
            model="m", max_tokens=10, messages=ask("Fail first"), tools=TOOLS
        ) as events:
            return events.get_final_text()

    with pytest.raises(anthropic.APIStatusError, match="overloaded_error"):
        stream()
    assert stream() == "Fine now."


def test_count_tokens_helpers_and_loud_misses(
    client: anthropic.Anthropic, upstream: RealisticUpstream
) -> None:
    counted = client.messages.count_tokens(model="m", messages=ask(TASK))
    assert counted.input_tokens > 0
    helper = client.messages.create(model="m", max_tokens=10, messages=ask("Title this session"))
    assert helper.content[0].type == "text" and helper.content[0].text
    with pytest.raises(anthropic.BadRequestError, match="no scripted conversation"):
        client.messages.create(model="m", max_tokens=10, messages=ask("Unknown"), tools=TOOLS)
    past = ask(TASK, {"role": "assistant", "content": "x"}, {"role": "user", "content": "y"})
    past += [{"role": "assistant", "content": "x"}, {"role": "user", "content": "y"}]
    with pytest.raises(anthropic.BadRequestError, match="asked for turn 2, but its script has 2"):
        client.messages.create(model="m", max_tokens=10, messages=past, tools=TOOLS)
    assert httpx.head(upstream.url).status_code == 200
    assert httpx.get(f"{upstream.url}/nothing").status_code == 404
    assert list(upstream.tokens_by_conversation()) == [None]  # the helper call only


def test_a_request_is_read_the_way_claude_code_writes_it() -> None:
    """Claude Code wraps text in system reminders, adds ``role: system`` entries, and after a
    stream cut off mid-way sends its continuation (as a block of the last user message when
    nothing of the answer was kept, or after the kept part): the same turn asked again."""
    cut = {"type": "text", "text": "Your response above was cut off mid-stream. Resume."}
    first = {
        "role": "user",
        "content": [
            {"type": "text", "text": "<system-reminder>\nCount the files.</system-reminder>"},
            {"type": "text", "text": TASK},
        ],
    }
    system = {"role": "system", "content": "Today's date is 2026-11-24."}
    assert first_user_text({"messages": [first, system]}) == TASK
    assert turn_of([first, system]) == (0, False)
    assert turn_of([{**first, "content": [*first["content"], cut]}, system]) == (0, True)
    kept = {"role": "assistant", "content": [{"type": "thinking", "thinking": "Hm"}]}
    whole = {"role": "assistant", "content": "Whole."}
    result = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t"}]}
    assert turn_of([first, system, kept, {"role": "user", "content": [cut]}]) == (0, True)
    history = [first, system, kept, {"role": "user", "content": [cut]}, whole, result]
    assert turn_of(history) == (1, False)
    # Claude Code 2.1.331 wraps the same text in a system reminder.
    wrapped = {"type": "text", "text": f"<system-reminder>\n{cut['text']}\n</system-reminder>"}
    assert turn_of([first, system, kept, {"role": "user", "content": [wrapped]}]) == (0, True)


# ---------------------------------------------------------------- the real CLI through it
# Claude Code records through the project's gateway in front of the realistic upstream and
# replays offline. Each session's facts are recorded once per module.


@dataclass(frozen=True)
class Recorded:
    """One spec recorded through a realistic upstream, which is stopped by now."""

    spec: Spec
    result: SpecResult
    upstream: RealisticUpstream
    cassette: Path

    def replay(self, claude_bin: Path, match: MatchMode = "conversation") -> SpecResult:
        runs = self.cassette.parents[2] / "runs"
        return run_spec(
            self.spec, runs_dir=runs, settings=RunSettings(match=match), claude_bin=claude_bin
        )

    def main_bodies(self) -> list[Any]:
        key = next(iter(self.upstream.conversations))
        return [r.body for r in self.upstream.requests if r.conversation == key]


def record_spec(
    folder: Path,
    claude_bin: Path,
    prompt: str,
    accept: str,
    script: Mapping[str, Sequence[Turn]],
) -> Recorded:
    """Record `prompt` (the first key of `script`) with `accept` checks, upstream then stopped."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "probe.atom.yaml").write_text(
        f"name: probe\nprompt: {prompt}\ntimeout: 180\naccept:\n{accept}", encoding="utf-8"
    )
    [spec] = load_specs(folder / "probe.atom.yaml")
    result, upstream = record_through_upstream(spec, script, claude_bin)
    return Recorded(spec, result, upstream, folder / "cassettes" / "probe" / "probe.yaml")


def own_modes(replays: int) -> tuple[MatchMode, ...]:
    """The match modes a shape's own test replays it in. In the suite (one replay) the
    default one: its strict replay is test_the_three_shapes_replay_strict_under_xdist's, so
    each shape replays once per mode. A sweep (`--replays 5`) replays both here."""
    return ("conversation",) if replays == 1 else ("conversation", "strict")


def bash_call(command: str, description: str) -> dict[str, Any]:
    return {"name": "Bash", "input": {"command": command, "description": description}}


def file_is(path: str, word: str) -> str:
    return f'  - file_contains: {{path: {path}, pattern: "^{word}$"}}\n'


PARALLEL = "List the folder and count its files, in parallel."
THINKING = "Listing and counting are independent: run both at once."


@pytest.fixture(scope="module")
def parallel(tmp_path_factory: pytest.TempPathFactory, claude_bin: Path) -> Recorded:
    script: dict[str, list[Turn]] = {
        PARALLEL: [
            {
                "thinking": THINKING,
                "text": "I'll run both.",
                "tool_calls": [
                    bash_call("ls > listing.txt", "List"),
                    bash_call("echo 2 > count.txt", "Count"),
                ],
            },
            {"text": "Both done.\nEXIT_LOOP_NOW"},
        ]
    }
    accept = file_is("count.txt", "2") + "  - file_exists: listing.txt\n"
    return record_spec(tmp_path_factory.mktemp("parallel"), claude_bin, PARALLEL, accept, script)


@pytest.mark.slow
def test_parallel_tool_calls_with_thinking_record_and_replay_offline(
    parallel: Recorded, claude_bin: Path, replays: int
) -> None:
    assert parallel.result.passed, parallel.result.report()
    assert parallel.upstream.turns() == [(PARALLEL, 0, "ok"), (PARALLEL, 1, "ok")]
    # Claude Code sent back the thinking with its signature and both calls, by their ids.
    thinking, _text, *calls = parallel.main_bodies()[1]["messages"][-2]["content"]
    first = parallel.upstream.message(parallel.upstream.answer(parallel.main_bodies()[0]))
    assert thinking == first["content"][0] and thinking["thinking"] == THINKING
    assert [c["id"] for c in calls] == [b["id"] for b in first["content"][2:]]
    results = parallel.main_bodies()[1]["messages"][-1]["content"]
    assert {r["tool_use_id"] for r in results} == {c["id"] for c in calls}
    # The cassette holds the stream as sent: pings, the signature, both calls.
    streams = [
        sse_events(i.response)
        for i in Cassette.load(parallel.cassette).interactions
        if "event-stream" in i.response_headers.get("content-type", "")
    ]
    events = [event for stream in streams for event in stream]
    assert ("ping", {"type": "ping"}) in events
    deltas = [data["delta"] for name, data in events if name == "content_block_delta"]
    assert {"type": "signature_delta", "signature": thinking["signature"]} in deltas
    started = [data["content_block"] for name, data in events if name == "content_block_start"]
    assert [b["id"] for b in started if b["type"] == "tool_use"] == [c["id"] for c in calls]
    for match in own_modes(replays):
        for attempt in range(replays):
            replayed = parallel.replay(claude_bin, match)
            assert replayed.passed, f"{match} replay {attempt + 1}/{replays}:\n{replayed.report()}"


@pytest.mark.slow
@pytest.mark.parametrize("fault", ["overloaded_at_start", "overloaded_mid_stream"])
def test_claude_code_gets_past_an_overload_from_the_upstream(
    tmp_path: Path, claude_bin: Path, fault: str, replays: int
) -> None:
    """The upstream serves a fault once, and tells the CLI's way past it from a new turn: a
    resend of the same request (at start), or its own "cut off mid-stream" continuation."""
    prompt = "Write the count file."
    script: dict[str, list[Turn]] = {
        prompt: [
            {
                "thinking": "The count is two; write it, then check the file is there.",
                "text": "I'll write the count file now, with the number two in it.",
                "tool_calls": [bash_call("echo 2 > count.txt", "Count")],
                "fault": fault,
            },
            {"text": "Done.\nEXIT_LOOP_NOW"},
        ]
    }
    recorded = record_spec(tmp_path, claude_bin, prompt, file_is("count.txt", "2"), script)
    assert recorded.upstream.turns() == [(prompt, 0, fault), (prompt, 0, "ok"), (prompt, 1, "ok")]
    resent = recorded.upstream.requests[1]
    assert recorded.result.passed, recorded.result.report()
    kept = [
        i.response_headers.get(FAULT_HEADER) for i in Cassette.load(recorded.cassette).interactions
    ]
    if fault == "overloaded_at_start":
        assert resent.body == recorded.upstream.requests[0].body and not resent.continuation
        assert not any(kept)  # the identical resend made it good: no need to replay the fault
    else:
        assert resent.continuation
        # Claude Code continued past the cut: the broken stream is kept as it saw it, so a
        # replay breaks the same way and the continuation matches what was recorded.
        assert [k for k in kept if k] == ["sent an error event mid-stream"]
    for match in ("conversation", "strict"):
        for attempt in range(replays):
            replayed = recorded.replay(claude_bin, match)
            assert replayed.passed, f"{match} replay {attempt + 1}/{replays}:\n{replayed.report()}"


SURVEY = "Survey the project with two helper agents."
SIDES = ("north", "south")


def agent_call(side: str, background: bool) -> dict[str, Any]:
    call: dict[str, Any] = {
        "description": f"Survey {side}",
        "prompt": f"Write the word {side} into {side}.txt, then report.",
        "subagent_type": "general-purpose",
    }
    if not background:
        call["run_in_background"] = False
    return {"name": "Agent", "input": call}


@pytest.fixture(scope="module", params=["foreground", "background"])
def subagents(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, claude_bin: Path
) -> Recorded:
    """Two `Agent` subagents launched in one turn, each running one Bash command (north
    sleeps a second, so they finish in the other order) and answering."""
    background = request.param == "background"
    final: Turn = {"text": "Both agents finished.\nEXIT_LOOP_NOW"}
    launch: Turn = {
        "thinking": "Two independent surveys: one agent each.",
        "text": "Launching two agents.",
        "tool_calls": [agent_call(side, background) for side in SIDES],
    }
    # In the background the main agent speaks again before the agents finish, and once
    # per completion notification (how many depends on timing): spare final turns.
    main = (
        [launch, {"text": "Waiting for the agents."}, final, final, final]
        if background
        else [launch, final]
    )
    script: dict[str, list[Turn]] = {SURVEY: main}
    for side in SIDES:
        sleep = "sleep 1; " if side == "north" else ""
        script[f"Write the word {side}"] = [
            {
                "thinking": f"Just write {side}.",
                "tool_calls": [bash_call(f"{sleep}echo {side} > {side}.txt", f"Write {side}")],
            },
            {"text": f"Wrote {side}.txt."},
        ]
    accept = "".join(file_is(f"{side}.txt", side) for side in SIDES)
    folder = tmp_path_factory.mktemp(f"subagents-{request.param}")
    return record_spec(folder, claude_bin, SURVEY, accept, script)


def tool_results(body: Any) -> dict[str, str]:
    """tool_use_id -> result text of every tool result in a request."""
    found = {}
    for message in body["messages"]:
        for block in message["content"] if isinstance(message["content"], list) else []:
            if block.get("type") == "tool_result":
                content = block["content"]
                text = (
                    content
                    if isinstance(content, str)
                    else "".join(part.get("text", "") for part in content)
                )
                found[block["tool_use_id"]] = text
    return found


@pytest.mark.slow
def test_two_subagents_record_through_the_upstream(subagents: Recorded) -> None:
    assert subagents.result.passed, subagents.result.report()
    upstream = subagents.upstream
    subs = [f"Write the word {side}" for side in SIDES]
    for key in subs:  # each subagent is a conversation of its own, turn by turn
        assert [(c, t) for c, t, _ in upstream.turns() if c == key] == [(key, 0), (key, 1)]
    main = [t for c, t, _ in upstream.turns() if c == SURVEY]
    assert main == list(range(len(main))) and len(main) >= 2
    # Every session's tokens are in the upstream's sum, subagents included.
    per = upstream.tokens_by_conversation()
    assert set(per) == {SURVEY, *subs} and all(u.cache_read_input_tokens for u in per.values())
    assert upstream.tokens_sent() == sum(u.total for u in per.values())
    # What Claude Code writes into the Agent results: ids and times that change every run.
    calls = upstream.message(upstream.answer(subagents.main_bodies()[0]))["content"][2:]
    results = tool_results(subagents.main_bodies()[1])
    assert set(results) == {call["id"] for call in calls}
    for text in results.values():
        assert re.search(r"agentId: a[0-9a-f]{16} ", text), text
    later = json.dumps(subagents.main_bodies()[-1])  # the whole history, notifications too
    if "Async agent launched successfully" in next(iter(results.values())):
        assert all("output_file: " in text for text in results.values())
        for call in calls:  # each completion is notified, naming its tool_use_id
            assert f"<tool-use-id>{call['id']}</tool-use-id>" in later
        assert later.count("<status>completed</status>") == 2
        assert re.search(r"<duration_ms>\d+</duration_ms>", later)
    else:
        for text in results.values():
            assert re.search(
                r"<usage>subagent_tokens: \d+\ntool_uses: 1\nduration_ms: \d+</usage>", text
            )


@pytest.mark.slow
def test_a_subagent_is_shown_under_the_agent_call_that_started_it(subagents: Recorded) -> None:
    # atom cassette show: each subagent's session right under its Agent call
    lines = [
        str(line) for line in cassette_lines(subagents.cassette, Cassette.load(subagents.cassette))
    ]
    for side in SIDES:
        call = next(n for n, line in enumerate(lines) if f'"description": "Survey {side}"' in line)
        assert lines[call + 1].strip() == f"subagent: Survey {side} (2 turns)", lines[
            call : call + 3
        ]
        command = next(n for n, line in enumerate(lines) if f"echo {side} > {side}.txt" in line)
        assert call < command and lines[command].startswith(" " * 16)  # nested, indented
    assert sum(line.startswith("Session ") for line in lines) == 1  # the main agent's only
    # the HTML report's conversation (stream_turns): the same nesting from the CLI's events
    [first, *_] = stream_turns(subagents.result.records[0].events)
    for agent in first.tool_uses:
        side = agent.input["description"].split()[-1]
        commands = [c.input["command"] for t in agent.subagent for c in t.tool_uses]
        assert [c.endswith(f"echo {side} > {side}.txt") for c in commands] == [True], commands


@pytest.mark.slow
def test_two_subagents_replay_offline(subagents: Recorded, claude_bin: Path, replays: int) -> None:
    """One replay per own mode (strict: test_the_three_shapes_replay_strict_under_xdist).
    That the subagents' finishing order does not matter is tests/test_task_ids.py's, and
    20 replays on a busy machine are benchmarks/subagents.py's."""
    for match in own_modes(replays):
        for attempt in range(replays):
            replayed = subagents.replay(claude_bin, match)
            assert replayed.passed, f"{match} replay {attempt + 1}/{replays}:\n{replayed.report()}"


JUDGED = "Write the word judged into verdict.txt."
#: The reflector's prompt (prompts/REFLECTOR.md), which quotes the task: the upstream takes
#: the longest key found, so this one must be the longer.
AUDITOR = "You are a clinical auditor. An autonomous agent worked on the task below"


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory, claude_bin: Path) -> Recorded:
    """A spec with criteria: the reflector is a session of its own through the same
    upstream, its verdict asked for with a JSON schema."""
    verdict = {
        "score": 0.93,
        "decision": "proceed",
        "criteria": [{"criterion": "verdict.txt says judged.", "met": True, "evidence": "cat"}],
        "feedback": "",
        "flaky": [],
    }
    script: dict[str, list[Turn]] = {
        JUDGED: [
            {
                "thinking": "One command.",
                "tool_calls": [bash_call("echo judged > verdict.txt", "Write")],
            },
            {"text": "Written.\nEXIT_LOOP_NOW"},
        ],
        AUDITOR: [
            {
                "thinking": "The file is there.",
                "tool_calls": [{"name": "StructuredOutput", "input": verdict}],
            },
            {"text": "Judged."},
        ],
    }
    accept = file_is("verdict.txt", "judged") + "criteria: [verdict.txt says judged.]\n"
    folder = tmp_path_factory.mktemp("judged")
    return record_spec(folder, claude_bin, JUDGED, accept, script)


@pytest.mark.slow
def test_a_judged_spec_records_and_replays_offline(
    judged: Recorded, claude_bin: Path, replays: int
) -> None:
    assert judged.result.passed, judged.result.report()
    assert judged.result.score == 0.93
    assert {c for c, _, _ in judged.upstream.turns()} == {JUDGED, AUDITOR}
    for match in own_modes(replays):
        for attempt in range(replays):
            replayed = judged.replay(claude_bin, match)
            assert replayed.passed and replayed.score == 0.93, (
                f"{match} replay {attempt + 1}/{replays}:\n{replayed.report()}"
            )


@pytest.mark.slow
def test_the_three_shapes_replay_strict_under_xdist(
    pytester: pytest.Pytester,
    parallel: Recorded,
    subagents: Recorded,
    judged: Recorded,
    claude_for_pytester: None,
) -> None:
    """Parallel tool calls with thinking, two concurrent subagents and a judged spec, each
    in a folder of its own, replayed offline by `pytest --atom -n 2 --atom-match=strict`."""
    for name, recorded in (("parallel", parallel), ("subagents", subagents), ("judged", judged)):
        folder = pytester.path / name
        cassette = folder / recorded.cassette.relative_to(recorded.spec.path.parent)
        cassette.parent.mkdir(parents=True)
        shutil.copy(recorded.spec.path, folder / recorded.spec.path.name)
        shutil.copy(recorded.cassette, cassette)
    result = pytester.runpytest("--atom", "-n", "2", "--atom-match=strict")
    result.assert_outcomes(passed=3)
