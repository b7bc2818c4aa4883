"""Forwarding: the half of the cassette responder that records.

A request the cassette does not answer goes upstream; its answer streams back to the CLI
as it arrives and is kept for the cassette once it is whole. What goes wrong upstream never
raises: it becomes the API error or the broken stream the CLI would have met, and an
`UpstreamFault` that decides whether the recording can be trusted.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator, Mapping
from typing import Any

import httpx

from pytest_atom.environment import CREDENTIAL_PLACEHOLDERS
from pytest_atom.gateway.messages import answer_billed, coalesce_sse, parse_sse
from pytest_atom.gateway.server import AbortReply, Reply
from pytest_atom.replay.cassette import CUT_HEADER, FAULT_HEADER, Cassette, Interaction
from pytest_atom.replay.normalize import Normalizer
from pytest_atom.replay.scrub import SECRET_HEADERS, Scrubber
from pytest_atom.results.record import UpstreamFault
from pytest_atom.wire.request import GatewayRequest
from pytest_atom.wire.roles import ROLE_HEADER

#: Request headers a cassette keeps: what the CLI asked for, and whose session it was.
_KEPT_REQUEST_HEADERS = (
    "anthropic-version",
    "anthropic-beta",
    "content-type",
    "x-app",
    ROLE_HEADER,
)
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


class Forwarding:
    """The forwarding and fault-keeping methods of `CassetteResponder` (its state is there)."""

    cassette: Cassette
    normalizer: Normalizer
    scrubber: Scrubber
    upstream: str | None
    upstream_label: str | None
    credentials: Mapping[str, str]
    recorded: int
    faults: list[UpstreamFault]
    _lock: threading.Lock
    _played: list[bool]
    _waiting: list[tuple[GatewayRequest, Any, float]]
    _client: httpx.Client | None

    def _forward(self, request: GatewayRequest, live: Any) -> Reply:
        """Send upstream and stream the answer back; keep it only if it is a whole exchange.
        A refused, reset or silent upstream becomes a 502 or 504 (which the CLI retries), a
        transient status passes through unkept, a broken stream reaches the CLI as it broke;
        each is noted in `faults`, so a recording that never got past one is not saved."""
        upstream = self._send_upstream(request, live)
        if isinstance(upstream, Reply):
            return upstream
        passed = _passed_headers(upstream.headers)
        if upstream.status_code in TRANSIENT_STATUSES or upstream.status_code >= 500:
            return self._pass_transient(request, live, upstream, passed)
        with self._lock:  # reserve the slot in arrival order; filled when the stream ends
            slot = len(self.cassette.interactions)
            self.cassette.interactions.append(None)  # type: ignore[arg-type]
            self._played.append(True)
        assert self._client is not None
        body = self._relay(slot, request, live, upstream, self._client.timeout)
        return Reply(upstream.status_code, passed, body)

    def _send_upstream(self, request: GatewayRequest, live: Any) -> httpx.Response | Reply:
        """The upstream's streamed response, or the 502 or 504 that stands in for one that
        never came; while waiting, listed in `_waiting` (a run ending meanwhile: a fault)."""
        assert self._client is not None and self.upstream is not None
        # The role marker goes on too: a scripted upstream plays each role's lane by it.
        headers = {k: v for k, v in request.headers.items() if k not in _HOP_BY_HOP}
        headers = with_credentials(headers, self.credentials)  # the real key, upstream only
        headers["accept-encoding"] = "identity"  # keep the recorded body readable text
        waiting = (request, live, time.monotonic())
        with self._lock:
            self._waiting.append(waiting)
        try:
            return self._client.send(
                self._client.build_request(
                    request.method,
                    self.upstream.rstrip("/") + request.path,
                    headers=headers,
                    content=request.body,
                ),
                stream=True,
            )
        except httpx.HTTPError as exc:
            what = _failure(exc, self._client.timeout, mid_stream=False)
            self._fault(request, live, what)
            status = 504 if isinstance(exc, httpx.TimeoutException) else 502
            message = f"pytest-atom gateway: upstream {self.upstream} {what}"
            return Reply.error(status, "api_error", message)
        finally:
            with self._lock:
                self._waiting.remove(waiting)

    def _pass_transient(
        self,
        request: GatewayRequest,
        live: Any,
        upstream: httpx.Response,
        passed: dict[str, str],
    ) -> Reply:
        """Hand a transient status (429, 529, 5xx) to the CLI, whose retry logic deals with
        it, and note it as a fault; never recorded, as a replay must not repeat it."""
        try:
            body = upstream.read()
        except httpx.HTTPError:
            body = b""
        finally:
            upstream.close()
        self._fault(request, live, _answered(upstream.status_code, body))
        return Reply(upstream.status_code, passed, body)

    def _relay(
        self,
        slot: int,
        request: GatewayRequest,
        live: Any,
        upstream: httpx.Response,
        timeout: httpx.Timeout,
    ) -> Iterator[bytes]:
        """Stream the upstream's body to the CLI as it arrives and keep it in `slot`.

        A broken stream reaches the CLI as it broke: the whole events, then the same end.
        What Claude Code does next depends on that end (2.1.332: a cut connection makes it
        resend the identical request, a clean end without ``message_stop`` take the cut
        answer as the turn, an overload event continue with "Your response above was cut
        off…" once a block had ended, else give up), so a replay ends it the same way."""
        sse = "text/event-stream" in upstream.headers.get("content-type", "")
        chunks: list[bytes] = []
        pending = b""  # SSE: the start of an event not yet complete
        broken = False
        try:
            for chunk in upstream.iter_raw():
                chunks.append(chunk)
                if not sse:
                    yield chunk
                    continue
                pending += chunk
                cut = _event_end(pending)
                if cut:
                    yield pending[:cut]
                    pending = pending[cut:]
            failure = _incomplete(b"".join(chunks)) if sse else None
        except httpx.HTTPError as exc:
            failure, broken = _failure(exc, timeout, mid_stream=True), True
        except GeneratorExit:
            # The CLI hung up mid-stream: what it was sent is kept, so a replay sends it again.
            if sse:
                received = b"".join(chunks)
                what = "sent a stream the CLI stopped reading mid-way"
                self._fault(request, live, what, slot=slot)
                relayed = received[: len(received) - len(pending)]
                self._keep(slot, request, live, upstream, relayed, fault=what)
            raise
        finally:
            upstream.close()
        if failure is not None and not sse:
            self._fault(request, live, failure)
            raise AbortReply(failure)  # no valid JSON can end this body: cut it
        if failure is not None:
            self._fault(request, live, failure, slot=slot)
        received = b"".join(chunks)
        if broken:  # the whole events relayed, then the connection cut the same way
            relayed = received[: len(received) - len(pending)]
            self._keep(slot, request, live, upstream, relayed, fault=failure, cut=True)
            raise AbortReply(failure)
        # Whole, or ended cleanly short of message_stop: kept and relayed as it came.
        self._keep(slot, request, live, upstream, received, fault=failure)
        if pending:
            yield pending

    def _fault(
        self, request: GatewayRequest, live: Any, what: str, slot: int | None = None
    ) -> None:
        with self._lock:
            self.faults.append(
                UpstreamFault(
                    request.method,
                    request.endpoint,
                    live,
                    f"{request.method} {request.endpoint}: upstream {self.upstream} {what}",
                    len(self.cassette.interactions),
                    slot,
                    what.split(" (")[0],
                )
            )

    def _keep(
        self,
        slot: int,
        request: GatewayRequest,
        live: Any,
        upstream: httpx.Response,
        body: bytes,
        fault: str | None = None,
        *,
        cut: bool = False,
    ) -> None:
        text = body.decode("utf-8", "replace")
        if "text/event-stream" in upstream.headers.get("content-type", ""):
            text = coalesce_sse(text)
        base = self.upstream_label or self.upstream or ""
        headers = {"content-type": upstream.headers.get("content-type", "")}
        if fault is not None:
            headers[FAULT_HEADER] = fault
        if cut:
            headers[CUT_HEADER] = "connection"  # a replay cuts it there too
        interaction = Interaction(
            method=request.method,
            uri=base.rstrip("/") + request.path,
            body=live,
            status=upstream.status_code,
            response=self.normalizer.paths_out(self.scrubber.scrub(text)),
            request_headers=kept_headers(request),
            response_headers=headers,
        )
        with self._lock:
            self.cassette.interactions[slot] = interaction
            self.recorded += 1

    def finished_interactions(self) -> list[Interaction]:
        """What a cassette keeps: every whole exchange, and every broken stream as the CLI
        saw it, except one that the CLI's identical retry made good."""
        with self._lock:
            superseded = {f.slot for f in self.faults if f.slot is not None and self._made_good(f)}
            return [
                interaction
                for n, interaction in enumerate(self.cassette.interactions)
                if interaction is not None and n not in superseded
            ]

    def _made_good(self, fault: UpstreamFault) -> bool:
        """Whether a later whole exchange of the same request made up for `fault`."""
        return any(
            kept is not None
            and FAULT_HEADER not in kept.response_headers
            and kept.method == fault.method
            and kept.endpoint == fault.endpoint
            and kept.body == fault.body
            for kept in self.cassette.interactions[fault.position :]
        )

    def fault_notes(self) -> list[dict[str, Any]]:
        """What a cassette notes of each fault met while recording (``upstream_faults``):
        the request, what broke, whether the broken stream is in the cassette or was made
        good by the CLI's retry, and the tokens its stream billed."""
        with self._lock:
            notes: list[dict[str, Any]] = []
            for fault in self.faults:
                kept = self.cassette.interactions[fault.slot] if fault.slot is not None else None
                note: dict[str, Any] = {
                    "request": f"{fault.method} {fault.endpoint}",
                    "what": fault.what,
                    "in_cassette": kept is not None and not self._made_good(fault),
                }
                billed = answer_billed(kept.response) if kept is not None else None
                if billed is not None and billed[0].tokens:
                    note["tokens"] = billed[0].tokens
                notes.append(note)
            return notes

    def disturbances(self) -> list[UpstreamFault]:
        """Every upstream fault met while recording, made good or not: a recording they
        touched replaces a good cassette only when its spec passes (`ModelSource.finish`)."""
        with self._lock:
            return list(self.faults)

    def faults_to_report(self, unfinished: bool) -> list[UpstreamFault]:
        """The faults a report names: those that left a hole, and, when the run did not
        finish, the broken streams kept as the CLI saw them, which explain why."""
        holes = self.unrecovered_faults()
        if not unfinished:
            return holes
        with self._lock:
            kept = [f for f in self.faults if f.slot is not None and not self._made_good(f)]
        return holes + kept

    def unrecovered_faults(self) -> list[UpstreamFault]:
        """Faults that leave a hole in the cassette: neither made good by the CLI's retry nor
        kept as what the CLI saw, and requests the upstream has still not answered."""
        now = time.monotonic()
        with self._lock:
            unanswered = [
                UpstreamFault(
                    request.method,
                    request.endpoint,
                    live,
                    f"{request.method} {request.endpoint}: upstream {self.upstream} {what}",
                    0,  # made good by any whole answer to the same request
                    what=what,
                )
                for request, live, started in self._waiting
                for what in [f"had not answered after {now - started:.0f} s when the run ended"]
            ]
            return [
                fault
                for fault in unanswered + self.faults
                if fault.slot is None and not self._made_good(fault)
            ]


#: Statuses the CLI retries (besides every 5xx): passed through, never kept in a cassette.
TRANSIENT_STATUSES = frozenset({408, 409, 429})
#: Response headers passed through: what the CLI's retry logic reads, and the request id.
_PASSED_RESPONSE_HEADERS = ("content-type", "retry-after", "retry-after-ms", "x-should-retry")
_PASSED_RESPONSE_PREFIXES = ("anthropic-ratelimit-", "request-id")


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


def with_credentials(headers: Mapping[str, str], credentials: Mapping[str, str]) -> dict[str, str]:
    """`headers` with the real credential (`credentials`: NAME -> value) in place of its
    placeholder in the credential headers: the CLI only ever held the placeholder."""
    swaps = [
        (CREDENTIAL_PLACEHOLDERS[n], v)
        for n, v in credentials.items()
        if v and n in CREDENTIAL_PLACEHOLDERS
    ]
    out = dict(headers)
    for name, value in headers.items():
        if name.lower() in SECRET_HEADERS:
            for placeholder, real in swaps:
                value = value.replace(placeholder, real)
            out[name] = value
    return out


def kept_headers(request: GatewayRequest) -> dict[str, str]:
    return {
        k: request.headers[k]
        for k in _KEPT_REQUEST_HEADERS
        if k in request.headers and k not in SECRET_HEADERS
    }
