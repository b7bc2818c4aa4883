"""The realistic upstream (tests/upstream.py) against the official Anthropic SDK.

The SDK is the reference parser of the real API's streams: if it reads what the upstream
sends (thinking with its signature, parallel tool inputs, usage, a mid-stream error), the
upstream's shapes are the API's and not merely ours. Below, the project's gateway records
from it and replays its overloads, driven by an HTTP client as Claude Code drives it; the
real CLI through both is tests/replay/test_upstream_cli.py's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx
import pytest

from pytest_atom.gateway import Gateway
from pytest_atom.gateway.messages import coalesce_sse, fold_sse
from pytest_atom.replay.cassette import FAULT_HEADER, Cassette
from pytest_atom.replay.matchers import matcher_for
from pytest_atom.replay.normalize import Normalizer
from pytest_atom.replay.responder import CassetteResponder
from pytest_atom.replay.scrub import Scrubber
from pytest_atom.settings.modes import MatchMode
from tests.upstream import (
    CONTINUATION,
    RealisticUpstream,
    Turn,
    Usage,
    first_user_text,
    sse_events,
    turn_of,
)

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


# ---------------------------------------------------------------- the gateway in front of it
# What the gateway does with an overload is its own behaviour: shown here with an HTTP
# client sending what Claude Code sends (the same request again after an overload at the
# start of a stream; its continuation after one mid-stream), recorded, then replayed.

Record = Callable[[dict[str, list[Turn]]], tuple[Gateway, CassetteResponder]]


@pytest.fixture
def recording(tmp_path: Path) -> Iterator[Record]:
    """Start a recording gateway in front of a realistic upstream playing a script."""
    started: list[tuple[Gateway, RealisticUpstream]] = []

    def start(script: dict[str, list[Turn]]) -> tuple[Gateway, CassetteResponder]:
        upstream = RealisticUpstream(script, delay=0).start()
        tape = CassetteResponder(
            Cassette(tmp_path / "recorded.yaml"),
            Normalizer({}),
            Scrubber(env={}),
            replay=False,
            upstream=upstream.url,
        )
        started.append((Gateway(tape).start(), upstream))
        return started[-1][0], tape

    yield start
    for gateway, upstream in started:
        gateway.stop()
        upstream.stop()


def turn_body(prompt: str, *history: Any) -> dict[str, Any]:
    return {
        "model": "m",
        "max_tokens": 10,
        "stream": True,
        "tools": TOOLS,
        "messages": ask(prompt, *history),
    }


def replay(tape: CassetteResponder, match: MatchMode, bodies: list[Any]) -> list[str]:
    """What a replaying gateway answers `bodies` with, from what `tape` recorded, saved and
    loaded again as a run loads its cassette."""
    path = Cassette(tape.cassette.path, tape.finished_interactions()).save()
    player = CassetteResponder(
        Cassette.load(path),
        Normalizer({}),
        Scrubber(env={}),
        replay=True,
        matcher=matcher_for(match),
    )
    with Gateway(player) as gateway:
        answers = [httpx.post(f"{gateway.url}/v1/messages", json=body) for body in bodies]
    assert [a.status_code for a in answers] == [200] * len(bodies)
    return [a.text for a in answers]


def names(stream: str) -> list[str]:
    return [name for name, _ in sse_events(stream)]


@pytest.mark.parametrize("match", ["conversation", "strict"])
def test_an_overload_at_start_reaches_the_client_and_only_its_resend_is_kept(
    recording: Record, match: MatchMode
) -> None:
    gateway, tape = recording(
        {"Fail first": [{"text": "Fine now.", "fault": "overloaded_at_start"}]}
    )
    body = turn_body("Fail first, then answer")
    failed = httpx.post(f"{gateway.url}/v1/messages", json=body)
    assert names(failed.text)[:3] == ["message_start", "ping", "error"]
    assert '"overloaded_error"' in failed.text and "message_stop" not in failed.text
    # Claude Code sends the same request again: the whole answer, the one kept.
    whole = httpx.post(f"{gateway.url}/v1/messages", json=body)
    assert names(whole.text)[-1] == "message_stop" and "Fine now." not in failed.text
    [kept] = tape.finished_interactions()
    assert FAULT_HEADER not in kept.response_headers
    assert len(tape.disturbances()) == 1 and tape.unrecovered_faults() == []
    # A replay need not sit through the CLI's back-off: the resend's answer comes first time.
    [replayed] = replay(tape, match, [body])
    assert fold_sse(replayed) == fold_sse(whole.text) and "overloaded_error" not in replayed


@pytest.mark.parametrize("match", ["conversation", "strict"])
def test_a_mid_stream_overload_is_kept_as_the_client_saw_it_and_replays_the_same(
    recording: Record, match: MatchMode
) -> None:
    script: dict[str, list[Turn]] = {
        "Cut me off": [
            {
                "thinking": "Thinking hard.",
                "text": "A long answer",
                "fault": "overloaded_mid_stream",
            }
        ]
    }
    gateway, tape = recording(script)
    body = turn_body("Cut me off now")
    cut = httpx.post(f"{gateway.url}/v1/messages", json=body)
    events = names(cut.text)
    assert "content_block_delta" in events and "message_stop" not in events
    # The upstream's overload, as it came: nothing of the gateway's after it (an api_error
    # of its own made Claude Code give up where the API's overload lets it go on).
    assert events[-2:] == ["content_block_delta", "error"] and "overloaded_error" in cut.text
    assert "pytest-atom gateway" not in cut.text
    # Claude Code continues with its own text instead of resending: the turn comes whole.
    history = [
        {"role": "assistant", "content": [{"type": "text", "text": "A long"}]},
        {"role": "user", "content": f"{CONTINUATION}. Resume directly from where it stops."},
    ]
    continued = turn_body("Cut me off now", *history)
    whole = httpx.post(f"{gateway.url}/v1/messages", json=continued)
    assert names(whole.text)[-1] == "message_stop"
    broken, kept = tape.finished_interactions()
    assert broken.response_headers[FAULT_HEADER] == "sent an error event mid-stream"
    assert FAULT_HEADER not in kept.response_headers and tape.unrecovered_faults() == []
    # Kept as relayed (its deltas joined as a cassette keeps them), the overload included.
    assert names(broken.response)[-1] == "error" and names(broken.response).count("error") == 1
    assert "message_stop" not in broken.response and "content_block_delta" in broken.response
    # A replay breaks the same way, so the continuation that follows matches the recorded.
    again, rest = replay(tape, match, [body, continued])
    assert fold_sse(again) == fold_sse(broken.response) == fold_sse(cut.text)
    assert names(coalesce_sse(again)) == names(broken.response)
    assert fold_sse(rest) == fold_sse(whole.text)
