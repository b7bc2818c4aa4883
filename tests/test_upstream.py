"""The realistic upstream (tests/upstream.py) against the official Anthropic SDK.

The SDK is the reference parser of the real API's streams: if it reads what the upstream
sends (thinking with its signature, parallel tool inputs, usage, a mid-stream error), the
upstream's shapes are the API's and not merely ours.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anthropic
import httpx
import pytest

from tests.upstream import RealisticUpstream, Turn, Usage

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
    events = [
        block.split("\n", 1)[0].removeprefix("event: ")
        for block in reply.text.split("\n\n")
        if block
    ]
    assert events[:2] == ["message_start", "ping"] and events.count("ping") > 1
    assert events[-2:] == ["message_delta", "message_stop"]
    texts = [
        piece.split('"text":"', 1)[1]
        for piece in reply.text.split("\n\n")
        if '"text_delta"' in piece
    ]
    assert len(texts) > 1
    partial = [p for p in reply.text.split("\n\n") if '"input_json_delta"' in p]
    assert '"partial_json":""' in partial[0]
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
