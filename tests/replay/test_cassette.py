"""Cassettes on disk and the responder that replays or records them, over real HTTP."""

from __future__ import annotations

import json
import os
import re
import stat
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from vcr.cassette import Cassette as VcrCassette
from vcr.persisters.filesystem import FilesystemPersister
from vcr.record_mode import RecordMode
from vcr.serialize import deserialize
from vcr.serializers import yamlserializer

from pytest_atom.errors import CassetteError
from pytest_atom.gateway import scripted
from pytest_atom.gateway.messages import coalesce_sse, message, parse_sse, sse_stream
from pytest_atom.replay import fastyaml
from pytest_atom.replay.cassette import FORMAT, Cassette, Interaction
from pytest_atom.replay.divergence import Divergence, describe_difference
from pytest_atom.replay.matchers import matcher_for
from pytest_atom.replay.normalize import Normalizer
from pytest_atom.replay.responder import CassetteResponder
from pytest_atom.replay.scrub import Scrubber
from tests.cassette_helpers import (
    TOOLS,
    URI,
    post,
    recorded,
    replayer,
    reply_msg,
    serve,
    turn_body,
)

CANARY = "sk-ant-canary-aaaaaaaaaaaaaaaa"
REPO = Path(__file__).resolve().parents[2]
SHIPPED = sorted(REPO.glob("fixtures/specs/cassettes/**/*.yaml")) + sorted(
    REPO.glob("examples/*/specs/cassettes/**/*.yaml")
)  # a case's cassette is one folder deeper: cassettes/<spec file>/<spec>/<case>.yaml
#: Cassettes as release 0.1 wrote them (format 1), kept as test data.
FORMAT_1 = sorted(REPO.glob("tests/data/*/cassettes/*/*.yaml"))


def sse_text(msg: dict[str, Any]) -> str:
    return sse_stream(msg).decode()


def title_body() -> dict[str, Any]:
    return {
        "model": "claude-haiku",
        "max_tokens": 512,
        "messages": [{"role": "user", "content": "Write a title for: fix the tests"}],
    }


def sample(tmp_path: Path) -> Cassette:
    sse = sse_text(
        message(
            "msg_1",
            "claude-x",
            [
                {"type": "text", "text": "I'll edit it. café ✓"},
                {
                    "type": "tool_use",
                    "id": "toolu_1",
                    "name": "Edit",
                    "input": {"file_path": "<WORKSPACE>/a.py"},
                },
            ],
            input_tokens=12,
            output_tokens=34,
        )
    )
    return Cassette(
        tmp_path / "sub" / "create-file.yaml",
        [
            Interaction(
                "POST",
                URI,
                {
                    "model": "claude-x",
                    "stream": True,
                    "tools": TOOLS,
                    "messages": [{"role": "user", "content": "Create a.py\nplease"}],
                },
                200,
                sse,
                {"anthropic-version": "2023-06-01", "content-type": "application/json"},
                {"content-type": "text/event-stream"},
            ),
            Interaction(
                "POST",
                URI + "/count_tokens",
                "not json at all",
                429,
                json.dumps({"type": "error", "error": {"type": "rate_limit_error"}}),
                {},
                {"content-type": "application/json"},
            ),
        ],
        {"spec": "specs/create-file.yaml", "recorded_with": {"claude": "2.1.197"}},
    )


# --- the file format -----------------------------------------------------------------------


def test_round_trip_is_field_by_field_equal(tmp_path: Path) -> None:
    cassette = sample(tmp_path)
    path = cassette.save()
    assert path == tmp_path / "sub" / "create-file.yaml" and path.is_file()
    loaded = Cassette.load(path)
    assert loaded.path == path and loaded.metadata == cassette.metadata
    assert len(loaded.interactions) == 2
    for got, want in zip(loaded.interactions, cassette.interactions, strict=True):
        assert (got.method, got.uri, got.body, got.status) == (
            want.method,
            want.uri,
            want.body,
            want.status,
        )
        assert got.response == want.response
        assert got.request_headers == want.request_headers
        assert got.response_headers == want.response_headers
    assert loaded.interactions[0].response.endswith("\n\n")  # SSE's trailing blank line kept
    assert loaded.interactions[1].endpoint == "/v1/messages/count_tokens"


def test_save_to_another_path_leaves_own_path(tmp_path: Path) -> None:
    cassette = sample(tmp_path)
    other = tmp_path / "elsewhere" / "copy.yaml"
    assert cassette.save(other) == other
    assert not cassette.path.exists() and Cassette.load(other).interactions == cassette.interactions


def test_vcrpy_loads_the_saved_file(tmp_path: Path) -> None:
    cassette = sample(tmp_path)
    text = cassette.save().read_text(encoding="utf-8")
    requests, responses, metadata = deserialize(text, yamlserializer)
    shared = metadata.pop("shared")
    assert metadata == {"format": FORMAT, **cassette.metadata}
    assert [r.method for r in requests] == ["POST", "POST"]
    assert [r.uri for r in requests] == [URI, URI + "/count_tokens"]
    # The stored body refers to the tools; the block holds them, as JSON.
    stored = json.loads(requests[0].body)
    (name,) = shared
    assert stored == {**cassette.interactions[0].body, "tools": {"$shared": name}}
    assert name.startswith("tools-") and json.loads(shared[name]) == TOOLS
    assert requests[1].body == b"not json at all"
    assert requests[0].headers["anthropic-version"] == "2023-06-01"
    assert [r["status"]["code"] for r in responses] == [200, 429]
    assert responses[1]["status"]["message"] == "Too Many Requests"
    assert responses[0]["body"]["string"] == cassette.interactions[0].response.encode()
    assert responses[1]["body"]["string"] == cassette.interactions[1].response.encode()


def test_vcrpy_persister_and_cassette_load_a_format_2_file(tmp_path: Path) -> None:
    cassette = compared_turns(tmp_path)
    path = cassette.save()
    requests, responses, metadata = FilesystemPersister.load_cassette(path, yamlserializer)
    assert len(requests) == len(responses) == 4 and metadata["format"] == FORMAT
    played = VcrCassette.load(
        path=str(path),
        serializer=yamlserializer,
        persister=FilesystemPersister,
        record_mode=RecordMode.NONE,
    )
    assert len(played) == 4 and played.get_metadata("format", None) == FORMAT
    assert played.get_metadata("claude_code_version", None) == "2.1.330"  # compared_turns()'s
    assert played.requests[2].method == "POST"
    assert [r["body"]["string"] for r in played.responses] == [
        i.response.encode() for i in cassette.interactions
    ]


def test_saved_yaml_is_readable(tmp_path: Path) -> None:
    cassette = sample(tmp_path)
    cassette.interactions[0].body = {"model": "claude-x", "max_tokens": 10}
    text = cassette.save().read_text(encoding="utf-8")
    lines = text.splitlines()
    assert "    body: |-" in lines
    assert any(re.fullmatch(r' {6,}"model": "claude-x",', line) for line in lines)
    assert any(re.fullmatch(r' {6,}"max_tokens": 10', line) for line in lines)
    sse_lines = [line.strip() for line in lines]
    for event in ("message_start", "content_block_start", "content_block_delta", "message_stop"):
        assert f"event: {event}" in sse_lines
    assert "\\n" not in text  # no escaped one-line strings
    assert text.startswith("# pytest-atom cassette")


def test_save_is_atomic_when_serialization_fails(tmp_path: Path) -> None:
    cassette = sample(tmp_path)
    path = cassette.save()
    before = path.read_bytes()
    cassette.interactions.pop()
    cassette.metadata["bad"] = object()
    with pytest.raises(yaml.YAMLError):
        cassette.save()
    assert path.read_bytes() == before
    assert list(path.parent.glob(".*.tmp")) == []
    assert [p.name for p in path.parent.iterdir()] == ["create-file.yaml"]


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@pytest.mark.parametrize("mask", [None, 0o002, 0o027])
def test_saved_file_permissions_follow_umask(tmp_path: Path, mask: int | None) -> None:
    old = os.umask(mask) if mask is not None else None
    try:
        current = _umask()
        path = sample(tmp_path).save()
        assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~current
    finally:
        if old is not None:
            os.umask(old)


def test_partial_path_sits_beside_the_cassette(tmp_path: Path) -> None:
    assert Cassette(Path("x/create-file.yaml")).partial_path == Path("x/create-file.partial.yaml")
    assert Cassette(tmp_path / "a.b.yaml").partial_path == tmp_path / "a.b.partial.yaml"


GOOD = Cassette(Path("unused"), [Interaction("GET", "http://x/", "", 200, "ok")]).dumps()


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        (None, "cannot read cassette"),
        ("interactions: [\n  - {request: \n", "is not valid YAML"),
        ("metadata: {}\nversion: 1\n", "is not a cassette"),
        (
            "interactions:\n- request: {method: GET, uri: 'http://x/', body: ''}\n",
            "malformed interaction",
        ),
    ],
)
def test_cassette_errors_name_the_file(tmp_path: Path, content: str | None, fragment: str) -> None:
    path = tmp_path / "broken.yaml"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    with pytest.raises(CassetteError) as info:
        Cassette.load(path)
    assert str(path) in str(info.value) and fragment in str(info.value)
    if content is not None:  # the same folder, valid content: loads
        path.write_text(GOOD, encoding="utf-8")
        assert Cassette.load(path).interactions[0].response == "ok"


@pytest.mark.parametrize(
    "content",
    [
        "interactions:\n- request: []\n  response: {status: {code: 200}}\n",
        "interactions:\n- request: {method: GET, uri: 'http://x/', headers: [a]}\n"
        "  response: {status: {code: 200}}\n",
        "metadata: [a]\ninteractions: []\n",
    ],
)
def test_malformed_shapes_are_cassette_errors(tmp_path: Path, content: str) -> None:
    path = tmp_path / "odd.yaml"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(CassetteError, match=re.escape(str(path))):
        Cassette.load(path)


# --- format 2: what every request repeats, stored once ---------------------------------------

SYSTEM = [{"type": "text", "text": "You are Claude Code.\n" + "Be careful. " * 200}]
AGENT_TOOLS = [
    {"name": n, "description": f"the {n} tool " * 50, "input_schema": {"type": "object"}}
    for n in ("Bash", "Edit", "Read", "Write", "Grep", "Glob")
]


def compared_turns(tmp_path: Path) -> Cassette:
    """Three turns of one session, as the CLI sends them, and a title request beside them."""
    prompt = {"role": "user", "content": [{"type": "text", "text": "Create hello.txt"}]}
    turns: list[dict[str, Any]] = []
    interactions = []
    for n in range(1, 4):
        newest = json.loads(json.dumps([prompt, *turns]))  # fresh objects, as recorded
        newest[-1]["content"][-1]["cache_control"] = {"type": "ephemeral"}  # moves each turn
        body = {
            "model": "claude-opus-5-5",
            "system": json.loads(json.dumps(SYSTEM)),
            "tools": json.loads(json.dumps(AGENT_TOOLS)),
            "messages": newest,
            "stream": True,
        }
        interactions.append(
            Interaction("POST", URI, body, 200, sse_text(reply_msg(f"turn {n}", n)))
        )
        use = {"type": "tool_use", "id": f"<TOOL_ID:{n}>", "name": "Bash", "input": {"n": n}}
        result = {"type": "tool_result", "tool_use_id": f"<TOOL_ID:{n}>", "content": f"out {n}"}
        turns += [{"role": "assistant", "content": [use]}, {"role": "user", "content": [result]}]
    interactions.insert(1, Interaction("POST", URI, title_body(), 200, json.dumps(reply_msg("T"))))
    return Cassette(
        tmp_path / "conversation.yaml", interactions, {"claude_code_version": "2.1.330"}
    )


def test_system_tools_and_repeated_messages_are_stored_once(tmp_path: Path) -> None:
    cassette = compared_turns(tmp_path)
    text = cassette.save().read_text(encoding="utf-8")
    assert len(text) < len(cassette.dumps(format=1)) / 2
    assert text.count("You are Claude Code.") == 1 and text.count('"name": "Grep"') == 1
    assert text.count('"text": "Create hello.txt"') == 2  # shared, and once with cache_control
    assert text.count('"content": "out 1"') == 2  # the same: in turn 2 it is the newest
    data = yaml.safe_load(text)
    assert data["version"] == 1 and data["metadata"]["format"] == FORMAT
    bodies = [json.loads(i["request"]["body"]) for i in data["interactions"]]
    names = {b["system"]["$shared"] for b in bodies if "system" in b}
    assert len(names) == 1 and names.pop().startswith("system-")
    assert "system" not in bodies[1] and bodies[1]["messages"] == title_body()["messages"]
    # Turn 3 names the prompt and the first tool call, which turns 2 and 3 both carry; the rest
    # it alone carries (the first result had a cache_control in turn 2): inline.
    last = bodies[3]["messages"]
    assert [m.get("$shared", "")[:8] for m in last] == ["message-"] * 2 + [""] * 3
    assert last[-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    # Readable in a diff: each reference on one line, each block indented JSON.
    assert re.search(r'^ {8}"tools": \{"\$shared": "tools-[0-9a-f]{12}"\},$', text, re.MULTILINE)
    assert re.search(r"^    tools-[0-9a-f]{12}: \|-\n      \[\n        \{\n", text, re.MULTILINE)


def test_format_2_loads_whole_bodies_that_share_their_blocks(tmp_path: Path) -> None:
    cassette = compared_turns(tmp_path)
    loaded = Cassette.load(cassette.save())
    assert loaded.format == FORMAT and loaded.metadata == cassette.metadata
    assert [i.body for i in loaded.interactions] == [i.body for i in cassette.interactions]
    first, _, second, third = (i.body for i in loaded.interactions)
    assert first["tools"] is second["tools"] is third["tools"]
    assert first["system"] is third["system"]
    assert second["messages"][1] is third["messages"][1]  # the first assistant turn, once
    # Saving what was loaded writes the same bytes: no churn in a diff.
    again = loaded.save(tmp_path / "again.yaml").read_text(encoding="utf-8")
    assert again == cassette.path.read_text(encoding="utf-8")


@pytest.mark.parametrize("path", FORMAT_1, ids=lambda p: p.name)
def test_format_1_cassettes_load_and_resave_as_format_2(tmp_path: Path, path: Path) -> None:
    raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert "format" not in raw["metadata"], "the test data is the previous release's format"
    old = Cassette.load(path)
    assert old.format == 1 and old.metadata == raw["metadata"]
    inline = [i["request"]["body"] for i in raw["interactions"]]
    assert [json.loads(b) if b.startswith("{") else b for b in inline] == [
        i.body for i in old.interactions
    ]
    resaved = Cassette.load(old.save(tmp_path / path.name))
    assert resaved.format == FORMAT and resaved.metadata == old.metadata
    assert resaved.interactions == old.interactions
    assert (tmp_path / path.name).stat().st_size < path.stat().st_size


def test_format_1_bodies_are_never_resolved(tmp_path: Path) -> None:
    body = {"messages": [{"$shared": "message-0123456789ab"}], "tools": {"$shared": "x"}}
    old = Cassette(tmp_path / "old.yaml", [Interaction("POST", URI, body, 200, "{}")])
    old.path.write_text(old.dumps(format=1), encoding="utf-8")
    assert Cassette.load(old.path).interactions[0].body == body


def test_a_newer_format_asks_for_a_newer_pytest_atom(tmp_path: Path) -> None:
    text = compared_turns(tmp_path).dumps().replace(f"format: {FORMAT}\n", "format: 7\n", 1)
    path = tmp_path / "future.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(CassetteError) as info:
        Cassette.load(path)
    message = str(info.value)
    assert str(path) in message and "cassette format 7" in message
    assert "newer pytest-atom" in message and "Upgrade pytest-atom" in message


@pytest.mark.parametrize(
    ("edit", "fragment"),
    [
        (lambda t: t.replace(f"format: {FORMAT}\n", "format: two\n", 1), "'metadata.format: "),
        (lambda t: re.sub(r"(?m)^    (tools-[0-9a-f]+):", r"    gone-\1:", t), "does not hold"),
        (lambda t: re.sub(r"(?m)^  shared:\n", "  shared: [a]\n  unused:\n", t), "shared"),
        (lambda t: re.sub(r"(?m)^(    tools-[0-9a-f]+: \|-\n      )\[", r"\1{[", t), "not JSON"),
    ],
)
def test_broken_shared_blocks_are_cassette_errors(
    tmp_path: Path, edit: Callable[[str], str], fragment: str
) -> None:
    path = tmp_path / "broken.yaml"
    text = compared_turns(tmp_path).dumps()
    assert edit(text) != text
    path.write_text(edit(text), encoding="utf-8")
    with pytest.raises(CassetteError) as info:
        Cassette.load(path)
    assert str(path) in str(info.value) and fragment in str(info.value)
    assert "record it again" in str(info.value)


YAML_SAMPLES = [
    "",
    "plain",
    "- 1\n- 2.5\n- yes\n- ~\n- 2026-01-01\n- 0x1F\n- '3'\n- .inf\n",
    "a: &x [1, {b: c}]\nb: *x\n",
    "&a [*a]\n",
    "<<: {a: 1}\nb: 2\n",
    "'<<': 1\n",
    "!!binary aGk=\n",
    "a: !!str 1\n",
    "? [1, 2]\n: x\n",
    "--- a\n--- b\n",
    "a: b\na: c\n",
    "x: *nope\n",
    "a: &d 1\nb: &d 2\n",
    "a: =\n",
    "a: 'q'\nb: \"\\u00e9\\n\"\nc: |\n  x\n   y\nd: |+\n  z\n\ne: >-\n  f\n  g\n",
    "a: [unclosed\n",
    "key:\n\t- tab\n",
]


@pytest.mark.parametrize("text", YAML_SAMPLES)
def test_fastyaml_gives_what_yaml_load_gives(text: str) -> None:
    def outcome(load: Callable[[str], Any]) -> Any:
        try:
            value = load(text)
        except yaml.YAMLError as exc:
            return type(exc)
        return repr(value)  # repr: a list that contains itself compares too

    assert outcome(fastyaml.load) == outcome(lambda t: yaml.load(t, Loader=yaml.CSafeLoader))


def test_fastyaml_reads_cassettes_as_yaml_load_does(tmp_path: Path) -> None:
    texts = [p.read_text(encoding="utf-8") for p in SHIPPED]
    texts.append(compared_turns(tmp_path).dumps())
    texts.append(sample(tmp_path).dumps())
    for text in texts:
        assert fastyaml.load(text) == yaml.load(text, Loader=yaml.CSafeLoader)


# --- coalescing streams ----------------------------------------------------------------------


def _event(name: str, data: dict[str, Any]) -> str:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n"  # spaced JSON: unlike sse_stream's


def split_deltas(sse: str, pieces: int) -> str:
    """Cut every delta's text into `pieces` consecutive deltas, as a live stream sends them."""
    out = []
    for name, raw in parse_sse(sse):
        data = json.loads(raw)
        delta = data.get("delta", {})
        field = {
            "text_delta": "text",
            "input_json_delta": "partial_json",
            "thinking_delta": "thinking",
            "signature_delta": "signature",
        }.get(delta.get("type"))
        if name != "content_block_delta" or field is None:
            out.append(_event(name, data))
            continue
        value: str = delta[field]
        step = max(1, -(-len(value) // pieces))
        for start in range(0, len(value), step):
            out.append(
                _event(name, {**data, "delta": {**delta, field: value[start : start + step]}})
            )
    return "".join(out)


def test_coalesce_restores_one_delta_per_block() -> None:
    msg = message(
        "msg_1",
        "claude-x",
        [
            {"type": "text", "text": "I'll fix /tmp/x/run/workspace/calc.py now."},
            {
                "type": "tool_use",
                "id": "toolu_1",
                "name": "Edit",
                "input": {
                    "file_path": "/tmp/x/run/workspace/calc.py",
                    "old_string": "a",
                    "new_string": "b",
                },
            },
        ],
        input_tokens=10,
        output_tokens=20,
    )
    whole = sse_text(msg)
    split = split_deltas(whole, 4)
    assert split.count("content_block_delta\n") == 8 and split != whole
    assert coalesce_sse(split) == whole
    assert coalesce_sse(whole) == whole


def test_coalesce_returns_non_sse_text_unchanged() -> None:
    text = json.dumps(reply_msg("hello"), indent=2)
    assert coalesce_sse(text) == text


def test_coalesce_returns_unparsable_data_unchanged() -> None:
    text = "event: content_block_delta\ndata: {not json\n\n"
    assert coalesce_sse(text) == text
    listed = "event: x\ndata: [1, 2]\n\n"
    assert coalesce_sse(listed) == listed


def test_coalesce_keeps_thinking_and_signature_deltas_apart() -> None:
    start = {
        "type": "message_start",
        "message": {
            "id": "m",
            "type": "message",
            "role": "assistant",
            "content": [],
            "usage": {"input_tokens": 1},
        },
    }
    block = {"type": "thinking", "thinking": "", "signature": ""}
    stream = "".join(
        [
            _event("message_start", start),
            _event(
                "content_block_start",
                {"type": "content_block_start", "index": 0, "content_block": block},
            ),
            *[
                _event(
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": 0,
                        "delta": {"type": "thinking_delta", "thinking": t},
                    },
                )
                for t in ("Let me ", "think ", "about it.")
            ],
            *[
                _event(
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": 0,
                        "delta": {"type": "signature_delta", "signature": s},
                    },
                )
                for s in ("EqQBCkgI", "AhABGAIi")
            ],
            _event("content_block_stop", {"type": "content_block_stop", "index": 0}),
            _event("message_stop", {"type": "message_stop"}),
        ]
    )
    events = [(name, json.loads(data)) for name, data in parse_sse(coalesce_sse(stream))]
    assert [name for name, _ in events] == [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_delta",
        "content_block_stop",
        "message_stop",
    ]
    assert events[2][1]["delta"] == {"type": "thinking_delta", "thinking": "Let me think about it."}
    assert events[3][1]["delta"] == {"type": "signature_delta", "signature": "EqQBCkgIAhABGAIi"}
    assert events[0][1] == start


# --- replaying over HTTP -------------------------------------------------------------------


def test_concurrent_requests_get_their_own_recordings(tmp_path: Path) -> None:
    title_reply, turn_reply = reply_msg("Fixing tests", 1), reply_msg("Done.", 2)
    responder = replayer(
        [recorded(title_body(), title_reply), recorded(turn_body(), turn_reply)], tmp_path
    )
    got: dict[str, httpx.Response] = {}
    barrier = threading.Barrier(2)

    def send(name: str, body: dict[str, Any]) -> None:
        barrier.wait()
        got[name] = post(gateway, body)

    with serve(responder) as gateway:
        threads = [
            threading.Thread(target=send, args=a)
            for a in (("turn", turn_body()), ("title", title_body()))
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        assert got["turn"].status_code == 200 and got["turn"].json() == turn_reply
        assert got["title"].status_code == 200 and got["title"].json() == title_reply
        assert got["turn"].headers["content-type"] == "application/json"
        assert responder.divergences == []

        again = post(gateway, turn_body())
    assert again.status_code == 409
    error = again.json()
    assert error["type"] == "error" and error["error"]["type"] == "invalid_request_error"
    assert "matches nothing in the cassette" in error["error"]["message"]
    assert len(responder.divergences) == 1
    described = responder.divergences[0].describe()
    assert described.startswith("POST /v1/messages (turn): its recording was already played")


def test_replayed_response_gets_live_paths(tmp_path: Path) -> None:
    text = "I'll edit <WORKSPACE>/calc.py"
    responder = CassetteResponder(
        Cassette(
            tmp_path / "c.yaml",
            [
                Interaction(
                    "POST",
                    URI,
                    title_body(),
                    200,
                    sse_text(reply_msg(text)),
                    {},
                    {"content-type": "text/event-stream"},
                )
            ],
        ),
        Normalizer({str(tmp_path / "ws"): "<WORKSPACE>"}),
        Scrubber(env={}),
    )
    with serve(responder) as gateway:
        response = post(gateway, title_body())
    assert response.headers["content-type"] == "text/event-stream"
    assert f"I'll edit {tmp_path / 'ws'}/calc.py" in response.text
    assert "<WORKSPACE>" not in response.text


def test_divergence_names_the_message_and_diffs_the_text(tmp_path: Path) -> None:
    responder = replayer([recorded(turn_body(result="3 passed"), reply_msg("ok"))], tmp_path)
    with serve(responder) as gateway:
        response = post(gateway, turn_body(result="1 failed, 2 passed"))
    assert response.status_code == 409
    (divergence,) = responder.divergences
    text = divergence.describe()
    assert "messages[2] (user)" in text and "tool_result" in text
    assert '(tool_result).content: recorded "3 passed", live "1 failed, 2 passed"' in text
    assert "POST /v1/messages" in text


def test_describe_difference_reports_added_keys_and_lengths() -> None:
    live = {
        "messages": [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}],
        "x": 1,
    }
    rec = {"messages": [{"role": "user", "content": "a"}], "y": 2}
    text = describe_difference(live, rec)
    assert "- y: only in the recording" in text and "- x: only in the live request" in text
    assert "- messages: 1 item recorded, 2 live" in text
    assert describe_difference(rec, rec) == "- (no difference after normalization)"


def test_a_long_text_shows_each_changed_part_with_context_not_the_whole_text() -> None:
    """The sandbox's path list is one line of ~2,600 characters: both values of what
    changed, with context, each on a line of its own."""
    paths = ",".join(f'"<RUN_DIR>/claude-config/{n}"' for n in range(80))
    recorded_text = f'Filesystem: {{"denyOnly":["<TMP>/cc-daemon-<UID>",{paths}]}}\nmore'
    live_text = recorded_text.replace("<TMP>/cc-daemon-<UID>", "/tmp/cc-daemon-0")
    live_text = live_text.replace("config/79", "config/seventy-nine")
    assert len(recorded_text) > 2000
    text = describe_difference(
        {"messages": [{"role": "system", "content": live_text}]},
        {"messages": [{"role": "system", "content": recorded_text}]},
    )
    lines = text.splitlines()
    assert lines[0] == "- messages[0] (system).content: text changed in 2 places:"
    assert lines[1] == "    at line 1, character 27:"
    assert lines[2].startswith('      recorded Filesystem: {"denyOnly":["[<TMP>/cc-daemon-<UID>]"')
    assert lines[3].startswith('      live     Filesystem: {"denyOnly":["[/tmp/cc-daemon-0]"')
    assert lines[5].endswith('config/[79]"]}\\nmore') and "[seventy-nine]" in lines[6]
    assert len(lines) == 7 and max(map(len, lines)) < 200


def test_divergence_without_anything_recorded_of_its_kind(tmp_path: Path) -> None:
    responder = replayer([], tmp_path, matcher=matcher_for("strict"))
    with serve(responder) as gateway:
        assert post(gateway, title_body()).status_code == 409
    (divergence,) = responder.divergences
    assert isinstance(divergence, Divergence) and divergence.closest is None
    assert divergence.describe().endswith("(the cassette has none of this kind)")


def test_claude_codes_own_requests_get_a_stand_in_when_unrecorded(tmp_path: Path) -> None:
    """A preflight, title or token count that the recording lacks never fails a replay."""
    responder = replayer([], tmp_path)
    with serve(responder) as gateway:
        title = post(gateway, title_body())
        tokens = httpx.post(f"{gateway.url}/v1/messages/count_tokens", json=title_body())
        head = httpx.head(f"{gateway.url}/")
    assert title.status_code == 200 and title.json()["content"] == []
    assert tokens.status_code == 200 and tokens.json()["input_tokens"] > 0
    assert head.status_code == 200
    assert responder.divergences == [] and len(responder.served) == 3


def test_structural_match_serves_with_drift_others_diverge(tmp_path: Path) -> None:
    rec = recorded(turn_body(result="3 passed"), reply_msg("recorded answer"))
    live = turn_body(result="1 failed, 2 passed")
    structural = replayer([rec], tmp_path, matcher=matcher_for("structural"))
    with serve(structural) as gateway:
        served = post(gateway, live)
    assert served.status_code == 200 and served.json() == reply_msg("recorded answer")
    assert structural.drift.results_differ == 1 and structural.divergences == []
    assert "tool results differ in 1 request (structural match)" in (structural.drift.line() or "")
    with serve(structural) as gateway:  # played once: a structural match does not repeat it
        assert post(gateway, live).status_code == 409
    for mode in ("conversation", "strict"):
        other = replayer([rec], tmp_path, matcher=matcher_for(mode))
        with serve(other) as gateway:
            assert post(gateway, live).status_code == 409
        assert len(other.divergences) == 1 and other.drift.replayed == 0
    with serve(replayer([rec], tmp_path, matcher=matcher_for("structural"))) as gateway:
        assert post(gateway, turn_body(prompt="Something else.")).status_code == 409


def test_identical_recordings_play_in_order(tmp_path: Path) -> None:
    first, second = reply_msg("first", 1), reply_msg("second", 2)
    responder = replayer([recorded(turn_body(), first), recorded(turn_body(), second)], tmp_path)
    with serve(responder) as gateway:
        assert post(gateway, turn_body()).json() == first
        assert post(gateway, turn_body()).json() == second
        assert post(gateway, turn_body()).status_code == 409


# --- forwarding and recording ----------------------------------------------------------------


def test_forwarded_stream_is_recorded_without_secrets(tmp_path: Path) -> None:
    body = {**turn_body(prompt=f"My key is {CANARY}."), "stream": True}
    cassette = Cassette(tmp_path / "c.yaml")
    with serve(scripted([{"text": "hello"}])) as upstream:
        responder = CassetteResponder(
            cassette,
            Normalizer({}),
            Scrubber(env={}),
            replay=False,
            upstream=upstream.url,
            upstream_label="scripted://test",
        )
        with serve(responder) as gateway:
            response = post(
                gateway, body, **{"x-api-key": CANARY, "anthropic-version": "2023-06-01"}
            )
        upstream_seen = upstream.exchanges
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/event-stream"
    events = [(name, json.loads(data)) for name, data in parse_sse(response.text)]
    assert events[0][0] == "message_start" and events[-1][0] == "message_stop"
    assert [d["delta"]["text"] for n, d in events if n == "content_block_delta"] == ["hello"]
    assert upstream_seen[0].request.headers["x-api-key"] == CANARY  # forwarded, not stored
    assert responder.recorded == 1
    (interaction,) = responder.finished_interactions()
    assert interaction.uri.startswith("scripted://test/v1/messages")
    assert interaction.response == response.text
    assert interaction.response_headers == {"content-type": "text/event-stream"}
    assert interaction.request_headers == {
        "anthropic-version": "2023-06-01",
        "content-type": "application/json",
    }
    assert interaction.body["messages"][0]["content"] == "My key is <SECRET:REDACTED>."
    assert interaction.body["messages"][1]["content"][0]["id"] == "<TOOL_ID:1>"
    dumped = cassette.dumps()
    assert CANARY not in dumped and CANARY not in json.dumps(interaction.request_headers)
    # What was recorded replays: the same request is served from the cassette.
    cassette.save()
    with serve(replayer(Cassette.load(cassette.path).interactions, tmp_path)) as gateway:
        again = post(gateway, body)
    assert again.status_code == 200 and again.text == response.text
