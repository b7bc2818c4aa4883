"""The scripted gateway speaks the Messages API as the official SDK reads it."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import anthropic
import httpx
import pytest
from anthropic.types import MessageParam, ToolParam

from pytest_atom.errors import ScriptError
from pytest_atom.gateway import Gateway, Script
from pytest_atom.wire.roles import ROLE_HEADER

TOOLS: list[ToolParam] = [
    {"name": "Bash", "description": "run", "input_schema": {"type": "object"}}
]
USER: list[MessageParam] = [{"role": "user", "content": "hi"}]


_clients: list[anthropic.Anthropic] = []


def client(gateway: Gateway) -> anthropic.Anthropic:
    sdk = anthropic.Anthropic(base_url=gateway.url, api_key="placeholder", max_retries=0)
    _clients.append(sdk)
    return sdk


@pytest.fixture(autouse=True)
def _close_clients() -> Any:
    """Close every SDK client: an open keep-alive socket is a ResourceWarning (an error here)."""
    yield
    while _clients:
        _clients.pop().close()


def test_sdk_stream_reader_parses_text_and_tool_use(gateway_for: Any) -> None:
    gateway = gateway_for(
        [
            {
                "text": "Running it.",
                "tool_use": [
                    {"name": "Bash", "input": {"command": "ls -la", "description": "list"}}
                ],
            }
        ]
    )
    with client(gateway).messages.stream(
        model="claude-test",
        max_tokens=100,
        messages=USER,
        tools=TOOLS,
    ) as stream:
        events = [event.type for event in stream]
        final = stream.get_final_message()
    assert events[0] == "message_start" and events[-1] == "message_stop"
    assert final.stop_reason == "tool_use"
    assert final.content[0].type == "text" and final.content[0].text == "Running it."
    tool = final.content[1]
    assert tool.type == "tool_use" and tool.name == "Bash"
    assert tool.input == {"command": "ls -la", "description": "list"}
    assert final.model == "claude-test"
    assert final.usage.output_tokens > 0


def test_sdk_reads_non_streaming_message(gateway_for: Any) -> None:
    gateway = gateway_for([{"text": "Done. EXIT_LOOP_NOW"}])
    msg = client(gateway).messages.create(
        model="m",
        max_tokens=10,
        messages=USER,
        tools=TOOLS,
    )
    assert msg.stop_reason == "end_turn"
    assert msg.content[0].type == "text" and msg.content[0].text == "Done. EXIT_LOOP_NOW"


def test_side_requests_do_not_consume_turns(gateway_for: Any) -> None:
    gateway = gateway_for([{"text": "first"}, {"text": "second"}])
    sdk = client(gateway)
    tokens = sdk.messages.count_tokens(model="m", messages=USER)
    title = sdk.messages.create(model="m", max_tokens=10, messages=USER)
    turn = sdk.messages.create(model="m", max_tokens=10, messages=USER, tools=TOOLS)
    assert tokens.input_tokens > 0
    assert title.content[0].type == "text" and title.content[0].text == "Scripted session"
    assert turn.content[0].type == "text" and turn.content[0].text == "first"
    # An exchange is logged once its answer is sent: the client may read the answer first.
    deadline = time.monotonic() + 5
    while len(gateway.exchanges) < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert [e.request.kind for e in gateway.exchanges] == ["count_tokens", "side", "turn"]


def test_structured_side_request_gets_json_matching_its_schema(gateway_for: Any) -> None:
    gateway = gateway_for([{"text": "x"}])
    schema = {"type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]}
    reply = httpx.post(
        f"{gateway.url}/v1/messages",
        json={
            "model": "m",
            "messages": USER,
            "tools": [],
            "output_config": {"format": {"type": "json_schema", "schema": schema}},
        },
    )
    assert reply.json()["content"][0]["text"] == '{"title": "Scripted session"}'


def test_exhausted_script_is_a_non_retryable_api_error(gateway_for: Any) -> None:
    gateway = gateway_for([{"text": "only turn"}])
    sdk = client(gateway)
    sdk.messages.create(model="m", max_tokens=10, messages=USER, tools=TOOLS)
    with pytest.raises(anthropic.ConflictError, match="has 1 turn but the agent asked for turn 2"):
        sdk.messages.create(model="m", max_tokens=10, messages=USER, tools=TOOLS)
    assert len(gateway.exchanges) == 2  # x-should-retry: false, so the SDK did not retry


def test_message_and_tool_ids_are_unique_per_turn(gateway_for: Any) -> None:
    use = {"name": "Bash", "input": {"command": "true"}}
    gateway = gateway_for([{"tool_use": [use, use]}, {"tool_use": [use]}])
    sdk = client(gateway)
    first = sdk.messages.create(model="m", max_tokens=10, messages=USER, tools=TOOLS)
    second = sdk.messages.create(model="m", max_tokens=10, messages=USER, tools=TOOLS)
    ids = [b.id for b in [*first.content, *second.content] if b.type == "tool_use"]
    assert len(set(ids)) == 3
    assert first.id != second.id


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("turns: []\n", "non-empty 'turns:' list at"),
        ("turns:\n  - text: ok\n  - say: hi\n", "'tool_use', 'verdict' and/or 'plan' at "),
        ("turns:\n  - tool_use: [{input: {}}]\n", "'tool_use' is a list of {name"),
        ("- just a list\n", "must be a mapping with a 'turns:' list"),
    ],
)
def test_malformed_script_names_file_and_line(tmp_path: Path, text: str, problem: str) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(text)
    with pytest.raises(ScriptError) as err:
        Script.load(path)
    assert problem in str(err.value)
    assert "s.yaml" in str(err.value)


def test_script_error_points_at_the_bad_turn(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("turns:\n  - text: ok\n  - say: hi\n")
    with pytest.raises(ScriptError, match=r"s\.yaml:3$"):
        Script.load(path)


#: A verdict the reflector's schema takes (a script's verdicts are checked when it loads).
VERDICT = {"score": 0.9, "decision": "proceed", "criteria": [], "feedback": "done"}


def test_reflector_requests_take_reflector_turns(gateway_for: Any) -> None:
    """The lane is the role the request is marked with, not the tools it offers: an
    unmarked request offering StructuredOutput is still the agent's."""
    gateway = gateway_for([{"text": "agent"}])
    gateway.responder.script = Script.from_data(
        {
            "turns": [{"text": "agent"}, {"text": "agent 2"}],
            "reflector": [{"verdict": VERDICT}],
        }
    )
    judge_tools: list[ToolParam] = [
        *TOOLS,
        {"name": "StructuredOutput", "input_schema": {"type": "object"}},
    ]
    sdk = client(gateway)
    judge = {ROLE_HEADER: "reflector"}
    verdict = sdk.messages.create(
        model="m", max_tokens=9, messages=USER, tools=TOOLS, extra_headers=judge
    )
    agent = sdk.messages.create(model="m", max_tokens=9, messages=USER, tools=judge_tools)
    assert verdict.content[0].type == "tool_use" and verdict.content[0].name == "StructuredOutput"
    assert verdict.content[0].input == VERDICT
    assert agent.content[0].type == "text" and agent.content[0].text == "agent"
    with pytest.raises(anthropic.ConflictError, match="has 1 reflector turn but the reflector"):
        sdk.messages.create(
            model="m", max_tokens=9, messages=USER, tools=TOOLS, extra_headers=judge
        )


def test_shipped_scripts_load() -> None:
    scripts = sorted((Path(__file__).parents[2] / "fixtures" / "specs" / "scripts").glob("*.yaml"))
    assert len(scripts) >= 3
    for path in scripts:
        assert Script.load(path).turns
