"""A Messages API upstream for the test suite that streams the way the real API does.

The project's scripted gateway (pytest_atom.gateway.scripted and .messages) is our
own encoder: a recording test that uses it can only find what we got right. This server is
written apart from it, from the public shapes: the Messages API streaming docs
(platform.claude.com/docs/build-with-claude/streaming: event flow, ``ping``, ``error``
events, cumulative ``message_delta`` usage), the extended-thinking docs (``thinking_delta``
then one ``signature_delta``; ``redacted_thinking`` blocks that carry ``data`` and no
delta), and the Anthropic Python SDK's stream fixtures (tests/lib/streaming/fixtures/
``tool_use_response.txt``, ``basic_response.txt``, ``incomplete_partial_json_response.txt``:
ids, an empty first ``partial_json``, ``service_tier``, usage fields) and its types
(``Usage``, ``CacheCreation``, ``MessageDeltaUsage``).

It drives several conversations at once, as Claude Code does with subagents: a request
belongs to the conversation whose key is in its first user message, and its turn is the
number of assistant messages it carries, so an answer depends on the request alone and
never on the order in which concurrent requests arrive.
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
import re
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

#: One scripted assistant turn: ``thinking``, ``redacted_thinking``, ``text``,
#: ``tool_calls`` ([{name, input}]) and ``fault``, each optional.
Turn = Mapping[str, Any]

MODEL = "claude-opus-5-5"
FAULTS = ("overloaded_at_start", "overloaded_mid_stream", "rejected")
#: What a ``rejected`` fault answers: a 409 with ``x-should-retry: false``, which the CLI
#: takes as final (a 400 it sends again, altered), so the ``claude -p`` call fails and
#: pytest-atom, recording, retries the call. Its words name a "temporary" error, so the
#: harness waits its short network backoff before the retry.
REJECTED_TEXT = "temporary rejection by the realistic upstream (a scripted fault)"
#: The user text Claude Code 2.1.330 sends after a stream that broke once content arrived.
CONTINUATION = "Your response above was cut off mid-stream"
#: The answer to requests that offer no tools (session titles, summaries).
HELPER_TEXT = "Realistic upstream session"
_REMINDER = re.compile(r"<system-reminder>.*?</system-reminder>", re.DOTALL)
_BASE58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
_OVERLOADED = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}


@dataclass(frozen=True)
class Usage:
    """The four token counts the API bills, as one message's answer reported them."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0

    @property
    def total(self) -> int:
        return (
            self.input_tokens
            + self.output_tokens
            + self.cache_creation_input_tokens
            + self.cache_read_input_tokens
        )

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_creation_input_tokens + other.cache_creation_input_tokens,
            self.cache_read_input_tokens + other.cache_read_input_tokens,
        )


@dataclass(frozen=True)
class Received:
    """One request as the upstream saw it and what it answered.

    ``kind`` is ``turn`` (a scripted conversation's turn), ``helper`` (no tools),
    ``count_tokens``, ``other`` or ``rejected`` (the 400 a request that fits no script
    gets); ``answer`` is ``ok``, the fault served, or the error message.
    """

    kind: str
    conversation: str | None
    turn: int | None
    body: Any
    streamed: bool
    answer: str
    continuation: bool = False


@dataclass(frozen=True)
class Sent:
    """The usage of one whole message the upstream answered."""

    conversation: str | None  # None: a helper call
    turn: int | None
    usage: Usage


class _Rejected(Exception):
    """A request no script answers: a 400 invalid_request_error with this message."""


@dataclass
class _Answer:
    """What one request is answered with, before it is encoded as JSON or SSE."""

    conversation: str | None
    turn: int | None
    content: list[dict[str, Any]]
    usage: Usage
    stop_reason: str
    fault: str | None = None
    continuation: bool = False
    id: str = ""
    cache_1h: bool = False


def _digest(*parts: object) -> bytes:
    return hashlib.sha256("\x1f".join(map(str, parts)).encode()).digest()


def api_id(prefix: str, *parts: object) -> str:
    """An id shaped like the API's (``msg_01`` + 22 base58 characters), fixed by `parts`."""
    number = int.from_bytes(_digest(prefix, *parts), "big")
    chars = []
    for _ in range(22):
        number, rest = divmod(number, 58)
        chars.append(_BASE58[rest])
    return f"{prefix}_01{''.join(chars)}"


def _chunks(text: str, seed: bytes, low: int = 3, high: int = 12) -> list[str]:
    """`text` cut in pieces of `low`..`high` characters, the same pieces for the same seed."""
    pick = random.Random(seed)
    pieces, at = [], 0
    while at < len(text):
        size = pick.randint(low, high)
        pieces.append(text[at : at + size])
        at += size
    return pieces


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(b.get("text", ""))
            for b in content
            if isinstance(b, dict) and b.get("type") == "text"
        )
    return ""


def first_user_text(body: Mapping[str, Any]) -> str:
    """The first user message's own text: Claude Code's ``<system-reminder>`` blocks left out."""
    for message in body.get("messages") or []:
        if isinstance(message, dict) and message.get("role") == "user":
            return _REMINDER.sub("", _text_of(message.get("content"))).strip()
    return ""


def _is_continuation(message: Any) -> bool:
    return (
        isinstance(message, dict)
        and message.get("role") == "user"
        and CONTINUATION in _text_of(message.get("content"))  # 2.1.331: in a system reminder
    )


def turn_of(messages: Sequence[Any]) -> tuple[int, bool]:
    """The turn a request asks for and whether it continues a cut-off stream.

    The turn is the number of assistant messages, except that an assistant message the CLI
    kept from a cut-off stream (one followed by its "cut off mid-stream" text) is the same
    turn asked again, not a turn of its own. Claude Code's ``role: system`` entries are
    neither; its continuation text may also be a block added to the last user message.
    """
    talk = [m for m in messages if isinstance(m, dict) and m.get("role") in ("user", "assistant")]
    turn = 0
    for at, message in enumerate(talk):
        if message.get("role") == "assistant":
            following = talk[at + 1] if at + 1 < len(talk) else None
            if not _is_continuation(following):
                turn += 1
    return turn, bool(talk) and _is_continuation(talk[-1])


def _signature(*parts: object) -> str:
    """A thinking signature: opaque base64, a few hundred characters like the API's."""
    raw = b"".join(_digest("signature", i, *parts) for i in range(8))
    return base64.b64encode(b"\x12\x08\x01\x18" + raw).decode()


def _redacted_data(*parts: object) -> str:
    raw = b"".join(_digest("redacted", i, *parts) for i in range(6))
    return base64.b64encode(b"\x0a\x02\x18\x01" + raw).decode()


def _sse(name: str, data: Mapping[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


PING = b'event: ping\ndata: {"type": "ping"}\n\n'


def sse_events(stream: str) -> list[tuple[str, Any]]:
    """``(event name, parsed data)`` of each event of an SSE body, for tests to read what was
    sent or recorded without the project's own parser (which is under test)."""
    events = []
    for block in stream.replace("\r\n", "\n").split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        if "event" in fields:
            events.append((fields["event"], json.loads(fields.get("data") or "null")))
    return events


class RealisticUpstream:
    """A threaded Messages API server on 127.0.0.1 that answers scripted conversations.

    ``conversations`` maps a key (a substring of a conversation's first user message) to
    its turns. Faults are served once per (conversation, turn); the request asked again (or
    continued, after a mid-stream cut) gets the turn whole.
    """

    def __init__(
        self, conversations: Mapping[str, Sequence[Turn]], *, delay: float = 0.003
    ) -> None:
        for key, turns in conversations.items():
            for number, turn in enumerate(turns):
                fault = turn.get("fault")
                if fault is not None and fault not in FAULTS:
                    raise ValueError(
                        f"conversation {key!r} turn {number}: unknown fault {fault!r}; "
                        f"one of {', '.join(FAULTS)}"
                    )
        self.conversations = {k: list(v) for k, v in conversations.items()}
        self.delay = delay
        self.requests: list[Received] = []
        #: The credential headers of each POST, as received: (x-api-key, authorization).
        self.credentials: list[tuple[str | None, str | None]] = []
        self.usage_sent: list[Sent] = []
        self._faults_served: set[tuple[str, int]] = set()
        self._lock = threading.Lock()
        self._counter = 0
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._started = False

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> RealisticUpstream:
        if not self._started:
            self._thread.start()
            self._started = True
        return self

    def stop(self) -> None:
        """Stop serving and free the port: a replay after this cannot reach it."""
        if self._started:
            self._server.shutdown()
            self._started = False
        self._server.server_close()

    def __enter__(self) -> RealisticUpstream:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------------ observability

    def tokens_sent(self, conversation: str | None = "*") -> int:
        """Input + output + cache-creation + cache-read tokens of every whole message sent
        (``"*"``), or of one conversation's (None: the helper calls). A stream cut by a
        fault is not counted: no client gets its final usage."""
        return sum(s.usage.total for s in self.usage_sent if conversation in ("*", s.conversation))

    def tokens_by_conversation(self) -> dict[str | None, Usage]:
        """Usage per conversation key (None for the helper calls)."""
        totals: dict[str | None, Usage] = {}
        for sent in self.usage_sent:
            totals[sent.conversation] = totals.get(sent.conversation, Usage()) + sent.usage
        return totals

    def turns(self) -> list[tuple[str | None, int | None, str]]:
        """``(conversation, turn, answer)`` of each scripted-turn request, in arrival order."""
        return [(r.conversation, r.turn, r.answer) for r in self.requests if r.kind == "turn"]

    # ------------------------------------------------------------------ answers

    def _log(self, received: Received) -> None:
        with self._lock:
            self.requests.append(received)

    def _next_request_number(self) -> int:
        with self._lock:
            self._counter += 1
            return self._counter

    def answer(self, body: Mapping[str, Any], *, serving: bool = False) -> _Answer:
        """What `body` gets, whole; raises _Rejected for a request outside every script.

        `serving` (the server's own call) takes the turn's fault if it was not served yet;
        a test that asks what a request got, afterwards, sees the whole answer.
        """
        size = len(json.dumps(body, sort_keys=True))
        if not body.get("tools"):
            text = HELPER_TEXT
            usage = Usage(input_tokens=max(1, size // 4), output_tokens=max(1, len(text) // 4))
            answer = _Answer(None, None, [{"type": "text", "text": text}], usage, "end_turn")
            answer.id = api_id("msg", "helper", first_user_text(body), size)
            return answer
        first = first_user_text(body)
        keys = [k for k in self.conversations if k in first]
        if not keys:
            raise _Rejected(
                "realistic upstream: no scripted conversation's key is in the first user "
                f"message {first[:200]!r}; keys: {', '.join(map(repr, self.conversations))}"
            )
        key = max(keys, key=len)  # the most specific, when one key contains another
        messages = body.get("messages") or []
        turn, continuation = turn_of(messages)
        script = self.conversations[key]
        if turn >= len(script):
            raise _Rejected(
                f"realistic upstream: conversation {key!r} asked for turn {turn}, but its "
                f"script has {len(script)} turn(s) (0..{len(script) - 1})"
            )
        scripted = script[turn]
        fault = scripted.get("fault")
        with self._lock:
            if fault and serving and (key, turn) not in self._faults_served:
                self._faults_served.add((key, turn))
            else:
                fault = None
        content = self._content(key, turn, scripted)
        stop = "tool_use" if any(b["type"] == "tool_use" for b in content) else "end_turn"
        out = sum(len(json.dumps(b)) for b in content) // 4
        prompt = max(4, size // 4)
        if turn == 0:  # the first turn writes the cache, later ones read it
            created, read = prompt * 3 // 4, 0
        else:
            read = prompt * 3 // 4
            created = prompt // 8
        usage = Usage(prompt - created - read, max(1, out), created, read)
        answer = _Answer(key, turn, content, usage, stop, fault, continuation)
        answer.id = api_id("msg", key, turn)
        answer.cache_1h = turn == 0
        return answer

    def _content(self, key: str, turn: int, scripted: Turn) -> list[dict[str, Any]]:
        content: list[dict[str, Any]] = []
        if scripted.get("thinking"):
            thinking = str(scripted["thinking"])
            content.append(
                {"type": "thinking", "thinking": thinking, "signature": _signature(key, turn)}
            )
        if scripted.get("redacted_thinking"):
            content.append({"type": "redacted_thinking", "data": _redacted_data(key, turn)})
        if scripted.get("text"):
            content.append({"type": "text", "text": str(scripted["text"])})
        for number, call in enumerate(scripted.get("tool_calls") or []):
            content.append(
                {
                    "type": "tool_use",
                    "id": api_id("toolu", key, turn, number),
                    "name": call["name"],
                    "input": dict(call.get("input") or {}),
                }
            )
        if not content:
            content.append({"type": "text", "text": ""})
        return content

    # ------------------------------------------------------------------ encodings

    def message(self, answer: _Answer) -> dict[str, Any]:
        """The whole message, as a non-streaming request gets it."""
        return {
            "id": answer.id,
            "type": "message",
            "role": "assistant",
            "model": MODEL,
            "content": answer.content,
            "stop_reason": answer.stop_reason,
            "stop_sequence": None,
            "usage": self._usage(answer.usage, answer.cache_1h, final=True),
        }

    @staticmethod
    def _usage(usage: Usage, cache_1h: bool, *, final: bool) -> dict[str, Any]:
        created = usage.cache_creation_input_tokens
        return {
            "input_tokens": usage.input_tokens,
            "cache_creation_input_tokens": created,
            "cache_read_input_tokens": usage.cache_read_input_tokens,
            "cache_creation": {
                "ephemeral_5m_input_tokens": 0 if cache_1h else created,
                "ephemeral_1h_input_tokens": created if cache_1h else 0,
            },
            # message_start reports the output so far, like the API (1, 6 in the fixtures)
            "output_tokens": usage.output_tokens if final else 1,
            "service_tier": "standard",
        }

    def events(self, answer: _Answer) -> Iterator[bytes]:
        """The SSE stream of `answer`: whole, or cut by its fault."""
        start = {**self.message(answer), "content": [], "stop_reason": None}
        start["usage"] = self._usage(answer.usage, answer.cache_1h, final=False)
        yield _sse("message_start", {"type": "message_start", "message": start})
        yield PING
        if answer.fault == "overloaded_at_start":
            yield _sse("error", _OVERLOADED)
            return
        # overloaded_mid_stream: the blocks before the last thinking/text one whole, that one
        # half-streamed, then the error (a turn of tool calls only: half of the first call).
        cut_block = None
        if answer.fault == "overloaded_mid_stream":
            prose = [i for i, b in enumerate(answer.content) if b["type"] in ("thinking", "text")]
            cut_block = prose[-1] if prose else 0
        sent = 0
        for index, block in enumerate(answer.content):
            deltas = list(self._block_events(answer, index, block))
            if index == cut_block:
                for event in deltas[: max(2, len(deltas) // 2)]:
                    yield event
                yield _sse("error", _OVERLOADED)
                return
            for event in deltas:
                sent += 1
                if sent % 9 == 0:
                    yield PING
                yield event
        usage = answer.usage
        yield _sse(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": answer.stop_reason, "stop_sequence": None},
                "usage": {  # cumulative counts (MessageDeltaUsage)
                    "input_tokens": usage.input_tokens,
                    "cache_creation_input_tokens": usage.cache_creation_input_tokens,
                    "cache_read_input_tokens": usage.cache_read_input_tokens,
                    "output_tokens": usage.output_tokens,
                },
            },
        )
        yield _sse("message_stop", {"type": "message_stop"})

    @staticmethod
    def _block_events(answer: _Answer, index: int, block: Mapping[str, Any]) -> Iterator[bytes]:
        seed = _digest(answer.id, index)

        def delta(payload: dict[str, Any]) -> bytes:
            return _sse(
                "content_block_delta",
                {"type": "content_block_delta", "index": index, "delta": payload},
            )

        kind = block["type"]
        opening: dict[str, Any]
        if kind == "thinking":
            opening = {"type": "thinking", "thinking": "", "signature": ""}
        elif kind == "text":
            opening = {"type": "text", "text": ""}
        elif kind == "tool_use":
            opening = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
        else:  # redacted_thinking arrives whole in its start event
            opening = dict(block)
        yield _sse(
            "content_block_start",
            {"type": "content_block_start", "index": index, "content_block": opening},
        )
        if kind == "thinking":
            for piece in _chunks(block["thinking"], seed, 4, 16):
                yield delta({"type": "thinking_delta", "thinking": piece})
            yield delta({"type": "signature_delta", "signature": block["signature"]})
        elif kind == "text":
            for piece in _chunks(block["text"], seed):
                yield delta({"type": "text_delta", "text": piece})
        elif kind == "tool_use":
            yield delta({"type": "input_json_delta", "partial_json": ""})
            for piece in _chunks(json.dumps(block["input"]), seed):
                yield delta({"type": "input_json_delta", "partial_json": piece})
        yield _sse("content_block_stop", {"type": "content_block_stop", "index": index})

    def headers(self, number: int) -> dict[str, str]:
        """The headers every API answer carries: ids and the rate-limit family."""
        reset = (datetime.now(UTC) + timedelta(seconds=60)).strftime("%Y-%m-%dT%H:%M:%SZ")
        digest = _digest("request", number).hex()
        return {
            "request-id": api_id("req", "request", number),
            "anthropic-organization-id": "00000000-0000-4000-8000-000000000000",
            "anthropic-ratelimit-requests-limit": "4000",
            "anthropic-ratelimit-requests-remaining": str(3999 - number % 4000),
            "anthropic-ratelimit-requests-reset": reset,
            "anthropic-ratelimit-tokens-limit": "2000000",
            "anthropic-ratelimit-tokens-remaining": "1998000",
            "anthropic-ratelimit-tokens-reset": reset,
            "anthropic-ratelimit-input-tokens-limit": "1600000",
            "anthropic-ratelimit-input-tokens-remaining": "1598000",
            "anthropic-ratelimit-input-tokens-reset": reset,
            "anthropic-ratelimit-output-tokens-limit": "400000",
            "anthropic-ratelimit-output-tokens-remaining": "400000",
            "anthropic-ratelimit-output-tokens-reset": reset,
            "cf-ray": f"{digest[:16]}-SJC",
            "server": "cloudflare",
            "via": "1.1 google",
        }


def _handler(upstream: RealisticUpstream) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: the test reads `.requests`, not stderr."""

        def _send_json(self, status: int, payload: Any, number: int, final: bool = False) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            for name, value in upstream.headers(number).items():
                self.send_header(name, value)
            if final:
                self.send_header("x-should-retry", "false")
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)

        def _error(
            self, status: int, kind: str, message: str, number: int, final: bool = False
        ) -> None:
            body = {"type": "error", "error": {"type": kind, "message": message}}
            body["request_id"] = upstream.headers(number)["request-id"]
            self._send_json(status, body, number, final)

        def do_HEAD(self) -> None:
            upstream._log(Received("other", None, None, None, False, f"HEAD {self.path}"))
            self.send_response(200 if urlsplit(self.path).path == "/" else 404)
            self.send_header("content-length", "0")
            self.end_headers()

        def do_GET(self) -> None:
            number = upstream._next_request_number()
            upstream._log(Received("other", None, None, None, False, f"GET {self.path}"))
            self._error(404, "not_found_error", f"Not found: {self.path}", number)

        def do_POST(self) -> None:
            number = upstream._next_request_number()
            with upstream._lock:
                upstream.credentials.append(
                    (self.headers.get("x-api-key"), self.headers.get("authorization"))
                )
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length)
            path = urlsplit(self.path).path
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                upstream._log(Received("other", None, None, None, False, "bad json"))
                self._error(400, "invalid_request_error", "request body is not JSON", number)
                return
            if path == "/v1/messages/count_tokens":
                tokens = max(1, len(json.dumps(body, sort_keys=True)) // 4)
                upstream._log(Received("count_tokens", None, None, body, False, "ok"))
                self._send_json(200, {"input_tokens": tokens}, number)
                return
            if path != "/v1/messages":
                upstream._log(Received("other", None, None, body, False, f"POST {path}"))
                self._error(404, "not_found_error", f"Not found: {path}", number)
                return
            streamed = bool(body.get("stream"))
            try:
                answer = upstream.answer(body, serving=True)
            except _Rejected as rejected:
                upstream._log(Received("rejected", None, None, body, streamed, str(rejected)))
                self._error(400, "invalid_request_error", str(rejected), number)
                return
            kind = "helper" if answer.conversation is None else "turn"
            upstream._log(
                Received(
                    kind,
                    answer.conversation,
                    answer.turn,
                    body,
                    streamed,
                    answer.fault or "ok",
                    answer.continuation,
                )
            )
            if answer.fault == "rejected":
                self._error(409, "invalid_request_error", REJECTED_TEXT, number, final=True)
                return
            if not answer.fault:  # counted before it is sent: a client may ask at once
                with upstream._lock:
                    upstream.usage_sent.append(Sent(answer.conversation, answer.turn, answer.usage))
            if not streamed:
                if answer.fault:
                    self._error(529, "overloaded_error", "Overloaded", number)
                    return
                self._send_json(200, upstream.message(answer), number)
            else:
                self._stream(answer, number)

        def _stream(self, answer: _Answer, number: int) -> None:
            self.send_response(200)
            for name, value in upstream.headers(number).items():
                self.send_header(name, value)
            self.send_header("content-type", "text/event-stream; charset=utf-8")
            self.send_header("cache-control", "no-cache")
            self.send_header("transfer-encoding", "chunked")
            self.end_headers()
            try:
                for event in upstream.events(answer):
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
                    self.wfile.flush()
                    if upstream.delay:
                        time.sleep(upstream.delay)
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True  # the client went away: nothing to finish

    return Handler
