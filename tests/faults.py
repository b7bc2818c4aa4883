"""A fault-injecting Messages API upstream on 127.0.0.1, for recording under faults.

Tests point ``--atom-upstream`` at it. It answers agent turns (requests that offer tools)
with faults, either one fault always or a sequence of faults and then the script, and
everything else from a ScriptedResponder; a fault never consumes a scripted turn, so a
retry gets the turn the fault withheld. It works at the socket level because the faults
that matter are the ones an HTTP framework would smooth over: a connection reset before
or in the middle of a stream, a stream that ends cleanly without ``message_stop``, a
request never answered.
"""

from __future__ import annotations

import io
import json
import socket
import struct
import threading
import time
from collections.abc import Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from pytest_atom.gateway import Reply, scripted
from pytest_atom.gateway.messages import error_body, message, sse_stream
from pytest_atom.wire.request import GatewayRequest

#: Fault name -> (status, error type, message, extra headers) for the HTTP error answers.
ERROR_ANSWERS: dict[str, tuple[int, str, str, dict[str, str]]] = {
    "429": (429, "rate_limit_error", "Number of requests has exceeded your rate limit.", {}),
    "529": (529, "overloaded_error", "Overloaded", {}),
    "500": (500, "api_error", "Internal server error", {}),
    "400": (
        400,
        "invalid_request_error",
        "prompt is too long: 212345 tokens > 200000 maximum",
        {"x-should-retry": "false"},
    ),
}
#: Faults that break the stream after a 200 status line, once content arrived: a reset, a
#: clean end without ``message_stop``, and the API's own ``overloaded_error`` event.
STREAM_FAULTS = ("reset_mid_stream", "truncated", "overloaded_mid_stream")
#: The event the API itself ends an overloaded stream with.
OVERLOADED_EVENT = b"event: error\ndata: " + error_body("overloaded_error", "Overloaded") + b"\n\n"
#: reset: RST as soon as the request is read; hang: read it and never answer.
FAULTS = (*ERROR_ANSWERS, *STREAM_FAULTS, "reset", "hang")


def _partial_stream() -> tuple[bytes, bytes]:
    """A stream's first half (up to a text delta) and the rest minus ``message_stop``."""
    msg = message(
        "msg_fault_0001",
        "fault",
        [{"type": "text", "text": "This answer will be cut off."}],
        input_tokens=10,
        output_tokens=10,
    )
    events = sse_stream(msg).split(b"\n\n")
    head = b"\n\n".join(events[:3]) + b"\n\n"  # message_start, block start, the delta
    rest = b"\n\n".join(e for e in events[3:] if e and b"message_stop" not in e) + b"\n\n"
    return head, rest


class FaultyUpstream:
    """An upstream that answers every agent turn with `faults` (a name), or the first
    turns with `faults` (a list of names) in order and the rest from the script.
    """

    def __init__(
        self,
        turns: Sequence[Mapping[str, Any]],
        faults: str | Sequence[str],
        *,
        retry_after: int | None = 1,
        methods: tuple[str, ...] = ("POST",),
    ) -> None:
        names = [faults] if isinstance(faults, str) else list(faults)
        for name in names:
            if name not in FAULTS:
                raise ValueError(f"unknown fault {name!r}; one of {', '.join(FAULTS)}")
        self.always = faults if isinstance(faults, str) else None
        self.queue = names
        self.retry_after = retry_after
        self.methods = methods  # HEAD: the CLI's preflight, which it does not retry
        self.script = scripted(turns)
        self.timed_log: list[tuple[float, str]] = []  # (monotonic time, "<kind> <answer>")
        self.stopping = threading.Event()
        self._faulted = 0
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def log(self) -> list[str]:
        """``<request kind> <fault or ok>`` for each request, in arrival order."""
        return [what for _, what in self.timed_log]

    @property
    def faulted(self) -> int:
        return self._faulted

    def start(self) -> FaultyUpstream:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()  # releases hanging handlers
        self._server.shutdown()
        self._server.server_close()

    def take_fault(self, request: GatewayRequest) -> str | None:
        """The fault for this request, if it gets one."""
        if request.method not in self.methods or (
            request.method == "POST" and request.kind != "turn"
        ):
            return None
        with self._lock:
            if self.always is None and self._faulted >= len(self.queue):
                return None
            fault = self.always or self.queue[self._faulted]
            self._faulted += 1
            return fault


def _handler(upstream: FaultyUpstream) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: the log list says what happened."""

        def _handle(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            request = GatewayRequest(
                self.command,
                self.path,
                {k.lower(): v for k, v in self.headers.items()},
                self.rfile.read(length) if length else b"",
            )
            fault = upstream.take_fault(request)
            upstream.timed_log.append((time.monotonic(), f"{request.kind} {fault or 'ok'}"))
            if fault is None:
                self._reply(upstream.script.respond(request))
            elif fault in ERROR_ANSWERS:
                status, kind, text, headers = ERROR_ANSWERS[fault]
                if fault in ("429", "529") and upstream.retry_after is not None:
                    headers = {**headers, "retry-after": str(upstream.retry_after)}
                self._reply(
                    Reply(
                        status,
                        {"content-type": "application/json", **headers},
                        error_body(kind, text),
                    )
                )
            elif fault == "hang":
                upstream.stopping.wait()
                self.close_connection = True
            elif fault == "reset":
                self._reset()
            else:
                streamed = isinstance(request.json, dict) and bool(request.json.get("stream"))
                self._broken_stream(fault, streamed)

        def _reply(self, reply: Reply) -> None:
            body = reply.body if isinstance(reply.body, bytes) else b"".join(reply.body)
            self.send_response(reply.status)
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.send_header("request-id", "req_fault_test")
            if self.command == "HEAD":  # headers only: a body would corrupt the keep-alive
                self.send_header("content-length", "0")
                self.end_headers()
                return
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _chunk(self, data: bytes) -> None:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()

        def _broken_stream(self, fault: str, streamed: bool) -> None:
            head, rest = _partial_stream()
            if not streamed:  # a JSON message, cut short
                head, rest = b'{"id": "msg_fault_0001", "type": "mess', b'age", "content": ['
            self.send_response(200)
            self.send_header(
                "content-type", "text/event-stream" if streamed else "application/json"
            )
            self.send_header("transfer-encoding", "chunked")
            self.end_headers()
            self._chunk(head)
            if fault == "overloaded_mid_stream" and streamed:
                self._chunk(OVERLOADED_EVENT)
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
                return
            if fault == "truncated":  # a clean end of the body, but no message_stop
                self._chunk(rest)
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
                return
            self._reset()

        def _reset(self) -> None:
            """RST instead of FIN, as a peer that crashed would send."""
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.close_connection = True
            self.wfile.close()  # the socket closes (with RST) only when its files are closed too
            self.rfile.close()
            self.connection.close()
            self.wfile, self.rfile = io.BytesIO(), io.BytesIO()  # for the handler's own cleanup

        do_GET = do_POST = do_HEAD = _handle

    return Handler


def refused_url() -> str:
    """A 127.0.0.1 URL on which nothing listens: connecting is refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def jsonl_events(text: str) -> list[dict[str, Any]]:
    """The JSON objects among a stream-json transcript's lines."""
    events = []
    for line in text.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict):
            events.append(event)
    return events
