"""Build Messages API responses: a JSON message, its SSE stream, and API errors.

Every mode of the gateway that makes up an answer goes through here, so one place has to
agree with what the official SDK and the Claude Code CLI parse; cassettes, transcripts and
reports read answers back through it too (`fold_sse`, `read_reply`).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_atom.cost.billing import Billed, billed, merge_usage
from pytest_atom.words import plural


def message(
    message_id: str,
    model: str,
    content: Sequence[Mapping[str, Any]],
    *,
    input_tokens: int,
    output_tokens: int,
) -> dict[str, Any]:
    """A complete assistant message; `stop_reason` follows from its blocks."""
    stop = "tool_use" if any(b.get("type") == "tool_use" for b in content) else "end_turn"
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [dict(b) for b in content],
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
    }


def _event(name: str, data: Mapping[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


def sse_stream(msg: Mapping[str, Any]) -> bytes:
    """Encode a complete message as the SSE events a streaming call would send."""
    start = {**msg, "content": [], "stop_reason": None, "stop_sequence": None}
    start["usage"] = {"input_tokens": msg["usage"]["input_tokens"], "output_tokens": 1}
    events: list[dict[str, Any]] = [{"type": "message_start", "message": start}]
    for index, block in enumerate(msg["content"]):
        if block["type"] == "text":
            empty: dict[str, Any] = {"type": "text", "text": ""}
            delta: dict[str, Any] = {"type": "text_delta", "text": block["text"]}
        elif block["type"] == "tool_use":
            empty = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        else:
            raise ValueError(f"cannot stream a content block of type {block['type']!r}")
        events += [
            {"type": "content_block_start", "index": index, "content_block": empty},
            {"type": "content_block_delta", "index": index, "delta": delta},
            {"type": "content_block_stop", "index": index},
        ]
    events += [
        {
            "type": "message_delta",
            "delta": {"stop_reason": msg["stop_reason"], "stop_sequence": None},
            "usage": {"output_tokens": msg["usage"]["output_tokens"]},
        },
        {"type": "message_stop"},
    ]
    return b"".join(_event(event["type"], event) for event in events)


def error_body(error_type: str, text: str) -> bytes:
    """The Messages API error envelope; the CLI prints `error.message` to the user."""
    return json.dumps({"type": "error", "error": {"type": error_type, "message": text}}).encode()


def sample_for_schema(schema: Mapping[str, Any], hint: str) -> Any:
    """The smallest value a structured-output side request (a session title) accepts: its
    content never matters to a test, only that it parses."""
    kind = schema.get("type")
    if kind == "object":
        props: Mapping[str, Any] = schema.get("properties", {})
        return {k: sample_for_schema(props.get(k, {}), hint) for k in schema.get("required", [])}
    if kind == "array":
        return []
    if kind in ("integer", "number"):
        return 0
    if kind == "boolean":
        return False
    if "enum" in schema:
        return schema["enum"][0]
    return hint


def estimate_tokens(data: bytes | str) -> int:
    """A stable stand-in for token counts: scripted runs need numbers, not accuracy."""
    return max(1, len(data) // 4)


_DELTA_FIELDS = {
    "text_delta": "text",
    "input_json_delta": "partial_json",
    "thinking_delta": "thinking",
    "signature_delta": "signature",
    "citations_delta": None,  # not concatenable: kept as is
}


def parse_sse(text: str) -> list[tuple[str, str]]:
    """(event, data) pairs of an SSE body; comments and retry lines are dropped."""
    events = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        name, data = "message", []
        for line in block.split("\n"):
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].lstrip(" "))
        if data:
            events.append((name, "\n".join(data)))
    return events


def coalesce_sse(text: str) -> str:
    """Merge each content block's many deltas into one, keeping every other event as is:
    a cassette then reads as the model's words, and a path split across two deltas becomes
    one string normalization can find. Anything that does not parse is returned unchanged."""
    try:
        events = [(name, json.loads(data)) for name, data in parse_sse(text)]
    except ValueError:
        return text
    if not events:
        return text
    out: list[bytes] = []
    pending: dict[int, dict[str, Any]] = {}
    for name, data in events:
        if not isinstance(data, dict):
            return text
        field = _DELTA_FIELDS.get(str((data.get("delta") or {}).get("type")), None)
        if name == "content_block_delta" and field:
            index = data["index"]
            held = pending.get(index)
            if held is not None and held["delta"]["type"] == data["delta"]["type"]:
                _append_delta(held["delta"], data["delta"])
                continue
            if held is not None:
                out.append(_event("content_block_delta", held))
            pending[index] = copy.deepcopy(data)
            continue
        if name == "content_block_stop" and data.get("index") in pending:
            out.append(_event("content_block_delta", pending.pop(data["index"])))
        elif name != "ping" and pending and name != "content_block_start":
            # A stream that breaks off mid-block: its deltas stay before what came after.
            out += [_event("content_block_delta", held) for held in pending.values()]
            pending.clear()
        out.append(_event(name, data))
    out += [_event("content_block_delta", held) for held in pending.values()]
    return b"".join(out).decode("utf-8")


def _append_delta(target: dict[str, Any], delta: Mapping[str, Any]) -> None:
    """Add a delta's piece to `target` (a held delta, or the block)."""
    field = _DELTA_FIELDS.get(str(delta.get("type")))
    if field:
        target[field] = str(target.get(field, "")) + str(delta.get(field, ""))


def _fold_delta(block: dict[str, Any], delta: Mapping[str, Any]) -> None:
    """A delta into its block: text-like pieces joined (`_append_delta`), a citation added
    to the block's ``citations``, a compaction summary's piece to its ``content``."""
    kind = delta.get("type")
    if kind == "citations_delta" and isinstance(delta.get("citation"), dict):
        block.setdefault("citations", []).append(delta["citation"])
    elif kind == "compaction_delta" and isinstance(delta.get("content"), str):
        block["content"] = str(block.get("content") or "") + delta["content"]
    else:
        _append_delta(block, delta)


def fold_sse(text: str) -> dict[str, Any]:
    """The message an SSE body carries, the inverse of `sse_stream`, for reading a recording:
    ``{"content", "usage", "model", "error"}``, each block with its deltas folded in, the
    usage merged (`cost.billing.merge_usage`), the last ``error`` event. Non-JSON events are
    skipped."""
    blocks: dict[int, dict[str, Any]] = {}
    usages: list[Any] = []
    model: str | None = None
    error: dict[str, Any] | None = None
    for name, raw in parse_sse(text):
        try:
            event = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(event, dict):
            continue
        if name in ("message_start", "message_delta"):
            found = event.get("message") if name == "message_start" else event
            found = found if isinstance(found, dict) else {}
            usages.append(found.get("usage"))
            model = found.get("model") if isinstance(found.get("model"), str) else model
        elif name == "error":
            error = event
        elif name == "content_block_start" and isinstance(event.get("content_block"), dict):
            blocks[_index(event, len(blocks))] = dict(event["content_block"])
        elif name == "content_block_delta" and isinstance(event.get("delta"), dict):
            block = blocks.setdefault(_index(event, 0), {"type": "text", "text": ""})
            _fold_delta(block, event["delta"])
    content = [_parsed_input(blocks[i]) for i in sorted(blocks)]
    return {"content": content, "usage": merge_usage(usages), "model": model, "error": error}


def _index(event: Mapping[str, Any], default: int) -> int:
    """An event's block index; `default` when a hand-edited recording holds no number there."""
    index = event.get("index", default)
    return index if isinstance(index, int) and not isinstance(index, bool) else default


def answer_billed(response: str, asked: Any = None) -> tuple[Billed, str | None] | None:
    """What one Messages-API answer (a JSON message or an SSE stream) billed, and the
    model it is priced as: the one the request `asked` for, else the answer's. None for an
    API error, which bills nothing."""
    data = _json_body(response)
    if isinstance(data, dict):
        if data.get("type") == "error":
            return None
        used, answered = billed(data.get("usage")), data.get("model")
    else:
        folded = fold_sse(response)
        used, answered = billed(folded["usage"]), folded["model"]
    model = asked if isinstance(asked, str) else answered if isinstance(answered, str) else None
    return used, model


def _json_body(response: str) -> Any:
    """A response's JSON body; None for an SSE stream (or anything else that is no JSON)."""
    try:
        return json.loads(response) if response.lstrip().startswith("{") else None
    except ValueError:
        return None


def _parsed_input(block: dict[str, Any]) -> dict[str, Any]:
    """A tool call's streamed JSON input as its value (an empty stream: ``{}``)."""
    raw = block.pop("partial_json", None)
    if raw is not None:
        try:
            block["input"] = json.loads(raw) if raw.strip() else {}
        except ValueError:
            block["input"] = raw
    return block


@dataclass
class Reply:
    """An assistant answer rebuilt from a recorded response (SSE stream or JSON body)."""

    blocks: list[dict[str, Any]] = field(default_factory=list)
    billed: Billed = field(default_factory=Billed)
    model: str | None = None
    error: str | None = None

    def usage_text(self) -> str:
        """``12 in, 3 out, 5 cache read tokens``, then each step billed on top of the answer
        (``+ advisor claude-opus-5: 900 in, 300 out tokens``) and the server tool requests."""
        text = self.billed.message.text()
        for step in self.billed.iterations:
            who = f" {step.model}" if step.model else ""
            text += f"; + {step.kind}{who}: {step.tokens.text()}"
        for key, count in self.billed.server_tool_use.items():
            text += f"; {requests_text(key, count)}"
        return text


def _error_text(data: Any, status: int) -> str:
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict):
        return f"{error.get('type', 'error')}: {error.get('message', '')}".strip()
    return f"HTTP {status}"


def read_reply(response: str, status: int) -> Reply:
    """The answer a recorded response carries: a JSON message, an API error, or a stream
    (`fold_sse`); a stream that ends without an answer but with an error status says so."""
    reply = Reply()
    data = _json_body(response)
    if data is not None:  # a non-streamed message or an API error
        if status >= 400 or (isinstance(data, dict) and data.get("type") == "error"):
            reply.error = _error_text(data, status)
        elif isinstance(data, dict):
            reply.blocks = [b for b in data.get("content") or [] if isinstance(b, dict)]
            reply.billed = billed(data.get("usage"))
            model = data.get("model")
            reply.model = model if isinstance(model, str) else None
        return reply
    folded = fold_sse(response)
    reply.blocks = folded["content"]
    reply.billed = billed(folded["usage"])
    reply.model = folded["model"]
    if folded["error"] is not None:
        reply.error = _error_text(folded["error"], status)
    elif status >= 400:
        reply.error = f"HTTP {status}"
    return reply


def requests_text(key: str, count: int) -> str:
    """A ``server_tool_use`` count in words: ``web_search_requests`` 1: ``1 web search request``."""
    return plural(count, key.replace("_", " ").removesuffix("s"))
