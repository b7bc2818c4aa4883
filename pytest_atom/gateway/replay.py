"""Record and replay: the gateway modes backed by a cassette.

One responder serves every record mode. It may *replay* (answer from recorded
interactions) and it may *forward* (send the request upstream, stream the answer back as
it arrives, and keep it for the cassette):

=============  ======  =======
mode           replay  forward
=============  ======  =======
none           yes     no
once           yes     only when there was no cassette
new_episodes   yes     yes, what does not match
all            no      yes
=============  ======  =======

A request that cannot be replayed or forwarded is a *divergence*: the CLI gets an API
error it neither retries nor falls back on, and the test fails with a diff against the
closest recorded request.
"""

from __future__ import annotations

import difflib
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx

from pytest_atom.cassette import Cassette, Interaction
from pytest_atom.gateway import messages
from pytest_atom.gateway.messages import coalesce_sse, parse_sse
from pytest_atom.gateway.normalize import Normalizer, structural
from pytest_atom.gateway.server import AbortReply, GatewayRequest, Reply
from pytest_atom.scrub import SECRET_HEADERS, Scrubber

#: Request headers worth keeping in a cassette: they say what the CLI asked for.
_KEPT_REQUEST_HEADERS = ("anthropic-version", "anthropic-beta", "content-type", "x-app")
_HOP_BY_HOP = {
    "host",
    "content-length",
    "connection",
    "transfer-encoding",
    "accept-encoding",
    "keep-alive",
    "upgrade",
    "te",
    "trailer",
    "proxy-connection",
}


@dataclass
class Divergence:
    """A live request that matched nothing recorded."""

    request: GatewayRequest
    live: Any
    closest: Interaction | None

    def describe(self) -> str:
        head = f"{self.request.method} {self.request.endpoint}: no recorded interaction matches"
        if self.closest is None:
            return head + " (the cassette has nothing left for this endpoint)"
        return (
            head
            + "; closest recorded request differs at:\n"
            + describe_difference(self.live, self.closest.body)
        )


@dataclass
class Drift:
    """A request served in structural mode although its tool results differ."""

    request: GatewayRequest
    difference: str


@dataclass
class CassetteResponder:
    cassette: Cassette
    normalizer: Normalizer
    scrubber: Scrubber
    replay: bool = True
    upstream: str | None = None  # forwarding target; None: never forward
    upstream_label: str | None = None  # what the cassette's URIs say instead of a local port
    match: str = "strict"  # or "structural"
    divergences: list[Divergence] = field(default_factory=list)
    drifts: list[Drift] = field(default_factory=list)
    recorded: int = 0
    faults: list[UpstreamFault] = field(default_factory=list)  # recording: what went wrong
    upstream_timeout: float = 600.0  # seconds of upstream silence before a request fails

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._played = [False] * len(self.cassette.interactions)
        self._waiting: list[tuple[GatewayRequest, Any, float]] = []  # sent, no answer yet
        self._client = (
            httpx.Client(timeout=httpx.Timeout(self.upstream_timeout, connect=30.0))
            if self.upstream
            else None
        )

    def close(self) -> None:
        if self._client is not None:
            self._client.close()

    def respond(self, request: GatewayRequest) -> Reply:
        live = self._normalized_body(request)
        if self.replay:
            with self._lock:
                hit = self._take(request, live)
            if hit is not None:
                return self._replay(hit)
        if self.upstream is not None:
            return self._forward(request, live)
        with self._lock:
            closest = self._closest(request, live)
            self.divergences.append(Divergence(request, live, closest))
        return Reply.error(
            400,
            "invalid_request_error",
            "pytest-atom replay: this request matches nothing in the cassette; the test "
            "report shows the difference. Re-record with --atom-record-mode=all if the change "
            "is intended.",
        )

    def _normalized_body(self, request: GatewayRequest) -> Any:
        if request.json is not None:
            return self.normalizer.body(self.scrubber.scrub_obj(request.json))
        return self.normalizer.text(self.scrubber.scrub(request.body.decode("utf-8", "replace")))

    def _candidates(self, request: GatewayRequest) -> Iterator[int]:
        for index, recorded in enumerate(self.cassette.interactions):
            if (
                not self._played[index]
                and recorded.method == request.method
                and recorded.endpoint == request.endpoint
            ):
                yield index

    def _take(self, request: GatewayRequest, live: Any) -> Interaction | None:
        """The first unplayed interaction with this endpoint and body (any arrival order)."""
        candidates = list(self._candidates(request))
        for index in candidates:
            if self.cassette.interactions[index].body == live:
                self._played[index] = True
                return self.cassette.interactions[index]
        if self.match == "structural":
            shape = structural(live)
            for index in candidates:
                recorded = self.cassette.interactions[index]
                if structural(recorded.body) == shape:
                    self._played[index] = True
                    self.drifts.append(Drift(request, describe_difference(live, recorded.body)))
                    return recorded
        return None

    def _closest(self, request: GatewayRequest, live: Any) -> Interaction | None:
        pool = [self.cassette.interactions[i] for i in self._candidates(request)] or [
            i for i in self.cassette.interactions if i.endpoint == request.endpoint
        ]
        if not pool:
            return None
        live_text = _canonical(live)
        return max(
            pool,
            key=lambda i: difflib.SequenceMatcher(
                None, live_text, _canonical(i.body), autojunk=False
            ).quick_ratio(),
        )

    def _replay(self, recorded: Interaction) -> Reply:
        headers = {
            "content-type": recorded.response_headers.get("content-type", "application/json")
        }
        return Reply(recorded.status, headers, self.normalizer.paths_in(recorded.response).encode())

    def _forward(self, request: GatewayRequest, live: Any) -> Reply:
        """Send upstream and stream the answer back; keep it only if it is a whole exchange.

        What goes wrong upstream never raises: a refused, reset or silent upstream becomes
        an API error naming it (502 or 504, which the CLI retries), a transient status
        (429, 529, 5xx) passes through with the headers the CLI's retry logic reads but
        stays out of the cassette, and a stream that breaks off ends in an SSE error event.
        Each is noted in `faults`, so a recording that never got past one is not saved.
        """
        assert self._client is not None and self.upstream is not None
        timeout = self._client.timeout
        headers = {k: v for k, v in request.headers.items() if k not in _HOP_BY_HOP}
        headers["accept-encoding"] = "identity"  # keep the recorded body readable text
        waiting = (request, live, time.monotonic())
        with self._lock:
            self._waiting.append(waiting)
        try:
            upstream = self._client.send(
                self._client.build_request(
                    request.method,
                    self.upstream.rstrip("/") + request.path,
                    headers=headers,
                    content=request.body,
                ),
                stream=True,
            )
        except httpx.HTTPError as exc:
            what = _failure(exc, timeout, mid_stream=False)
            self._fault(request, live, what)
            status = 504 if isinstance(exc, httpx.TimeoutException) else 502
            return Reply.error(status, "api_error", self._upstream_message(what))
        finally:
            with self._lock:
                self._waiting.remove(waiting)
        passed = _passed_headers(upstream.headers)
        if upstream.status_code in TRANSIENT_STATUSES or upstream.status_code >= 500:
            try:
                body = upstream.read()
            except httpx.HTTPError:
                body = b""
            finally:
                upstream.close()
            self._fault(request, live, _answered(upstream.status_code, body))
            return Reply(upstream.status_code, passed, body)
        with self._lock:  # reserve the slot in arrival order; filled when the stream ends
            slot = len(self.cassette.interactions)
            self.cassette.interactions.append(None)  # type: ignore[arg-type]
            self._played.append(True)
        sse = "text/event-stream" in upstream.headers.get("content-type", "")

        def stream() -> Iterator[bytes]:
            chunks: list[bytes] = []
            pending = b""  # SSE: the start of an event not yet complete
            try:
                for chunk in upstream.iter_raw():
                    chunks.append(chunk)
                    if not sse:
                        yield chunk
                        continue
                    pending += chunk
                    cut = _event_end(pending)
                    if cut:  # whole events only, so an error event can follow cleanly
                        yield pending[:cut]
                        pending = pending[cut:]
                failure = _incomplete(b"".join(chunks)) if sse else None
            except httpx.HTTPError as exc:
                failure = _failure(exc, timeout, mid_stream=True)
            finally:
                upstream.close()
            if failure is None:
                self._keep(slot, request, live, upstream, b"".join(chunks))
                if pending:
                    yield pending
                return
            self._fault(request, live, failure)
            if not sse:
                raise AbortReply(failure)  # no valid JSON can end this body: cut it
            yield _sse_error(self._upstream_message(failure))

        return Reply(upstream.status_code, passed, stream())

    def _upstream_message(self, what: str) -> str:
        return f"pytest-atom gateway: upstream {self.upstream} {what}"

    def _fault(self, request: GatewayRequest, live: Any, what: str) -> None:
        with self._lock:
            self.faults.append(
                UpstreamFault(
                    request.method,
                    request.endpoint,
                    live,
                    f"{request.method} {request.endpoint}: upstream {self.upstream} {what}",
                    len(self.cassette.interactions),
                )
            )

    def _keep(
        self, slot: int, request: GatewayRequest, live: Any, upstream: httpx.Response, body: bytes
    ) -> None:
        text = body.decode("utf-8", "replace")
        if "text/event-stream" in upstream.headers.get("content-type", ""):
            text = coalesce_sse(text)
        base = self.upstream_label or self.upstream or ""
        interaction = Interaction(
            method=request.method,
            uri=base.rstrip("/") + request.path,
            body=live,
            status=upstream.status_code,
            response=self.normalizer.paths_out(self.scrubber.scrub(text)),
            request_headers={
                k: request.headers[k]
                for k in _KEPT_REQUEST_HEADERS
                if k in request.headers and k not in SECRET_HEADERS
            },
            response_headers={"content-type": upstream.headers.get("content-type", "")},
        )
        with self._lock:
            self.cassette.interactions[slot] = interaction
            self.recorded += 1

    def finished_interactions(self) -> list[Interaction]:
        """The cassette's interactions minus slots whose stream never completed."""
        with self._lock:
            return [i for i in self.cassette.interactions if i is not None]

    def unrecovered_faults(self) -> list[UpstreamFault]:
        """Faults no later whole exchange of the same request made good, and requests the
        upstream has still not answered (the run ended while the gateway waited).

        The CLI retries the very request that failed, so a retry that got through leaves
        the cassette as if nothing had happened; one that never did leaves a hole in it
        that a replay would fall into.
        """
        now = time.monotonic()
        with self._lock:
            unanswered = [
                UpstreamFault(
                    request.method,
                    request.endpoint,
                    live,
                    f"{request.method} {request.endpoint}: upstream {self.upstream} had not "
                    f"answered after {now - started:.0f} s when the run ended",
                    0,  # made good by any whole answer to the same request
                )
                for request, live, started in self._waiting
            ]
            return [
                fault
                for fault in unanswered + self.faults
                if not any(
                    kept is not None
                    and kept.method == fault.method
                    and kept.endpoint == fault.endpoint
                    and kept.body == fault.body
                    for kept in self.cassette.interactions[fault.position :]
                )
            ]


#: Statuses the CLI retries (besides every 5xx): passed through, never kept in a cassette.
TRANSIENT_STATUSES = frozenset({408, 409, 429})
#: Response headers passed through to the CLI: what its retry logic reads, and the
#: request id its error messages quote. Every other upstream header stays upstream.
_PASSED_RESPONSE_HEADERS = ("content-type", "retry-after", "retry-after-ms", "x-should-retry")
_PASSED_RESPONSE_PREFIXES = ("anthropic-ratelimit-", "request-id")


@dataclass
class UpstreamFault:
    """Something that went wrong upstream while recording; `description` names it."""

    method: str
    endpoint: str
    body: Any  # the normalized request, to recognise the retry that made it good
    description: str
    position: int  # how many interactions (slots) the cassette had when it happened


def _passed_headers(headers: httpx.Headers) -> dict[str, str]:
    passed = {k: headers[k] for k in _PASSED_RESPONSE_HEADERS if k in headers}
    passed.setdefault("content-type", "application/json")
    for name, value in headers.items():
        if name.lower().startswith(_PASSED_RESPONSE_PREFIXES):
            passed[name.lower()] = value
    return passed


def _answered(status: int, body: bytes) -> str:
    """``answered 529 (overloaded_error: Overloaded)``: the status and what the API said."""
    try:
        error = json.loads(body).get("error") or {}
        detail = f"{error.get('type', 'error')}: {error.get('message', '')}".strip(": ")
    except (ValueError, AttributeError):
        detail = body.decode("utf-8", "replace").strip()
    detail = " ".join(detail.split())[:200]
    return f"answered {status}" + (f" ({detail})" if detail else "")


def _failure(exc: httpx.HTTPError, timeout: httpx.Timeout, *, mid_stream: bool) -> str:
    """What a transport error means, as a person says it."""
    detail = str(exc) or type(exc).__name__
    lowered = detail.lower()
    if isinstance(exc, httpx.ConnectTimeout):
        return f"did not accept the connection within {timeout.connect:g} s"
    if isinstance(exc, httpx.TimeoutException):
        silent = f"{timeout.read:g} s"
        return (
            f"went silent mid-stream for {silent}"
            if mid_stream
            else f"did not answer within {silent}"
        )
    if isinstance(exc, httpx.ConnectError):
        if "refused" in lowered:
            return "refused the connection"
        return f"could not be reached ({detail})"
    where = " mid-stream" if mid_stream else " before answering"
    if "reset" in lowered:
        return f"reset the connection{where} ({detail})"
    return f"closed the connection{where} ({type(exc).__name__}: {detail})"


def _event_end(buffer: bytes) -> int:
    """The index just past the last complete SSE event in `buffer`; 0 when there is none."""
    ends = [i + len(sep) for sep in (b"\n\n", b"\r\n\r\n") if (i := buffer.rfind(sep)) >= 0]
    return max(ends, default=0)


def _incomplete(body: bytes) -> str | None:
    """Why a finished SSE body is not a whole answer (None when it is)."""
    names = [name for name, _ in parse_sse(body.decode("utf-8", "replace"))]
    if "error" in names:
        return "sent an error event mid-stream"
    if "message_stop" not in names:
        return "ended the stream without message_stop (a cut-off answer)"
    return None


def _sse_error(text: str) -> bytes:
    """An SSE error event: how the API itself reports a failure inside a stream."""
    return b"event: error\ndata: " + messages.error_body("api_error", text) + b"\n\n"


def _canonical(body: Any) -> str:
    return body if isinstance(body, str) else json.dumps(body, indent=1, sort_keys=True)


def describe_difference(live: Any, recorded: Any, limit: int = 5) -> str:
    """Where two normalized bodies differ, named as a person reads a conversation.

    Paths read like ``messages[2] (user) content[0] tool_result``; changed text comes as a
    unified diff of the recorded (-) against the live (+) value.
    """
    found: list[str] = []

    def walk(a: Any, b: Any, path: list[Any]) -> None:
        if len(found) >= limit or a == b:
            return
        if isinstance(a, dict) and isinstance(b, dict):
            for key in list(dict.fromkeys([*b, *a])):
                if key not in a or key not in b:
                    found.append(
                        f"- {_describe_path(path + [key], live)}: "
                        f"{'only in the recording' if key in b else 'only in the live request'}"
                    )
                else:
                    walk(a[key], b[key], path + [key])
            return
        if isinstance(a, list) and isinstance(b, list):
            for i in range(min(len(a), len(b))):
                walk(a[i], b[i], path + [i])
            if len(a) != len(b) and len(found) < limit:
                found.append(
                    f"- {_describe_path(path, live)}: {len(b)} items recorded, {len(a)} live"
                )
            return
        where = _describe_path(path, live)
        if isinstance(a, str) and isinstance(b, str):
            diff = difflib.unified_diff(
                b.splitlines(), a.splitlines(), "recorded", "live", lineterm="", n=1
            )
            body = "\n".join("    " + line for line in list(diff)[2:22])
            found.append(f"- {where}: text changed\n{body}")
        else:
            found.append(f"- {where}: recorded {json.dumps(b)[:200]}, live {json.dumps(a)[:200]}")

    walk(live, recorded, [])
    return "\n".join(found) or "- (no difference after normalization)"


def _describe_path(path: list[Any], root: Any) -> str:
    """``messages[2] (user) content[0] tool_result`` rather than a bare JSON path."""
    parts: list[str] = []
    node = root
    for step in path:
        try:
            node = node[step]
        except (KeyError, IndexError, TypeError):
            node = None
        part = f"[{step}]" if isinstance(step, int) else f".{step}"
        if isinstance(node, dict) and isinstance(step, int):
            tag = node.get("role") or node.get("type")
            if node.get("type") == "tool_result":
                tag = "tool_result"
            part += f" ({tag})" if tag else ""
        parts.append(part)
    return "".join(parts).lstrip(".")
