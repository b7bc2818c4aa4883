"""The model gateway: a local HTTP server the Claude Code CLI talks to.

The CLI is pointed at it with ``ANTHROPIC_BASE_URL``. The server only parses HTTP and
hands each request to a *responder*, which decides the answer (scripted turns, a live
upstream being recorded, a cassette being replayed), so every mode streams alike.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol

from pytest_atom.cost.billing import Billed
from pytest_atom.cost.prices import RoleBills
from pytest_atom.cost.spend import SpendLimit
from pytest_atom.errors import AtomError
from pytest_atom.gateway import messages
from pytest_atom.wire.request import Exchange, GatewayRequest


@dataclass
class Reply:
    """A response; `body` may be an iterator so recorded streams pass through live."""

    status: int
    headers: dict[str, str]
    body: bytes | Iterable[bytes]

    @classmethod
    def json(cls, data: Any, status: int = 200) -> Reply:
        return cls(status, {"content-type": "application/json"}, json.dumps(data).encode())

    @classmethod
    def error(cls, status: int, error_type: str, text: str) -> Reply:
        return cls(
            status, {"content-type": "application/json"}, messages.error_body(error_type, text)
        )

    @classmethod
    def refusal(cls, text: str) -> Reply:
        """An API error Claude Code gives up on at once: the gateway's own "cannot answer".

        Claude Code 2.1.330 sends a request again, altered, after a 400; a 409 with
        ``x-should-retry: false`` is taken as final by both 2.1.197 and 2.1.330 (measured)."""
        reply = cls.error(409, "invalid_request_error", text)
        reply.headers["x-should-retry"] = "false"
        return reply


class AbortReply(AtomError):
    """Raised by a streaming reply's body to cut the connection without ending the body:
    the client sees the broken stream it would see from the API itself."""


class Responder(Protocol):
    """What a gateway mode implements; called from several threads at once."""

    def respond(self, request: GatewayRequest) -> Reply: ...


@dataclass
class Meter:
    """What the answers that passed through the gateway billed, by the request's role, and
    the spending limit they count against (only `paid` roles: a replayed answer is free)."""

    paid: frozenset[str] = frozenset()
    spend: SpendLimit | None = None
    bills: RoleBills = field(default_factory=RoleBills)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, role: str, used: Billed, usd: float | None, model: str | None = None) -> None:
        """Count one answer of `role`'s (`usd` None: priced at `model` here)."""
        with self.lock:
            usd = self.bills.add(role, used, model, usd)
        if self.spend is not None and role in self.paid:
            self.spend.add(usd)

    def refusal(self, request: GatewayRequest) -> Reply | None:
        """The gateway's answer instead of forwarding a paid request past the limit."""
        role = request.role or "executor"
        if self.spend is None or role not in self.paid or not self.spend.reached:
            return None
        return Reply.refusal(f"pytest-atom: {self.spend.crossing()}; nothing more is sent upstream")


def _messages_call(request: GatewayRequest) -> bool:
    return request.method == "POST" and request.endpoint == "/v1/messages"


def _metered(reply: Reply, request: GatewayRequest, meter: Meter) -> Reply:
    """`reply` whose body is folded, once it has passed through, into what it billed."""
    model = request.json.get("model") if isinstance(request.json, dict) else None
    role = request.role or "executor"

    def count(body: bytes) -> None:
        answer = messages.answer_billed(body.decode("utf-8", "replace"), model)
        if answer is not None:
            meter.add(role, answer[0], None, answer[1])

    if reply.status >= 400:
        return reply  # an API error bills nothing
    if isinstance(reply.body, bytes):
        count(reply.body)
        return reply
    return Reply(reply.status, reply.headers, _tee(reply.body, count))


def _tee(body: Iterable[bytes], done: Any) -> Iterator[bytes]:
    """`body`'s chunks as they come; `done` gets all of them once it ends, is cut or closed."""
    chunks: list[bytes] = []
    inner = iter(body)
    try:
        for chunk in inner:
            chunks.append(chunk)
            yield chunk
    finally:
        close = getattr(inner, "close", None)
        if close is not None:
            close()
        done(b"".join(chunks))


@dataclass
class _State:
    responder: Responder
    exchanges: list[Exchange] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    meter: Meter = field(default_factory=Meter)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out as separate writes; with Nagle's algorithm on, the body
    # waits for the client's delayed ACK (about 40 ms a request on a keep-alive socket).
    disable_nagle_algorithm = True
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the stdlib's per-request stderr lines."""

    def _handle(self) -> None:
        started = time.perf_counter()
        length = int(self.headers.get("content-length") or 0)
        request = GatewayRequest(
            method=self.command,
            path=self.path,
            headers={k.lower(): v for k, v in self.headers.items()},
            body=self.rfile.read(length) if length else b"",
        )
        state = self.server.state
        messages_call = _messages_call(request)
        refused = state.meter.refusal(request) if messages_call else None
        try:
            reply = refused or state.responder.respond(request)
        except Exception as exc:  # noqa: BLE001 - a responder bug must reach the CLI as an API error
            reply = Reply.refusal(f"pytest-atom gateway: {exc!r}")
        if messages_call and refused is None:
            reply = _metered(reply, request, state.meter)
        try:
            self._send(reply)
        finally:
            with state.lock:
                state.exchanges.append(
                    Exchange(request, reply.status, time.perf_counter() - started)
                )

    def _send(self, reply: Reply) -> None:
        self.send_response(reply.status)
        for name, value in reply.headers.items():
            if name.lower() not in ("content-length", "transfer-encoding", "connection"):
                self.send_header(name, value)
        if self.command == "HEAD":  # headers only: a body would corrupt the keep-alive stream
            self.send_header("content-length", "0")
            self.end_headers()
            if not isinstance(reply.body, bytes):
                for _ in reply.body:  # let a recording responder finish its bookkeeping
                    pass
            return
        if isinstance(reply.body, bytes):
            self.send_header("content-length", str(len(reply.body)))
            self.end_headers()
            self.wfile.write(reply.body)
            return
        # Unknown length: chunked, flushed per chunk so a live stream is never held back.
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        body = iter(reply.body)
        try:
            for chunk in body:
                if chunk:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                    self.wfile.flush()
        except AbortReply:
            self.close_connection = True  # no terminating chunk: the client sees a broken body
            return
        finally:
            close = getattr(body, "close", None)
            if close is not None:
                close()  # the client hung up: let a recording body release its upstream
        self.wfile.write(b"0\r\n\r\n")

    do_GET = do_POST = do_HEAD = do_PUT = do_DELETE = _handle


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    state: _State

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client dropping a connection is normal; anything else (a bug: upstream faults
        become API errors) is one line, no traceback."""
        error = sys.exc_info()[1]
        if not isinstance(error, ConnectionError):
            print(f"pytest-atom gateway: {type(error).__name__}: {error}", file=sys.stderr)


class Gateway:
    """A model gateway on 127.0.0.1, a context manager; ``ANTHROPIC_BASE_URL`` is its `url`."""

    def __init__(self, responder: Responder, meter: Meter | None = None) -> None:
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.state = _State(responder, meter=meter or Meter())
        # A short poll interval: stop() waits for the loop, and runs start and stop a lot.
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def responder(self) -> Responder:
        return self._server.state.responder

    @responder.setter
    def responder(self, responder: Responder) -> None:
        self._server.state.responder = responder

    @property
    def meter(self) -> Meter:
        return self._server.state.meter

    @property
    def exchanges(self) -> list[Exchange]:
        with self._server.state.lock:
            return list(self._server.state.exchanges)

    def start(self) -> Gateway:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        close = getattr(self.responder, "close", None)
        if close is not None:
            close()  # a recording responder holds an upstream connection pool

    def __enter__(self) -> Gateway:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
