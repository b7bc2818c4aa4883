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
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx

from pytest_atom.cassette import Cassette, Interaction
from pytest_atom.gateway.messages import coalesce_sse
from pytest_atom.gateway.normalize import Normalizer, structural
from pytest_atom.gateway.server import GatewayRequest, Reply
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

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._played = [False] * len(self.cassette.interactions)
        self._client = (
            httpx.Client(timeout=httpx.Timeout(600.0, connect=30.0)) if self.upstream else None
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
        assert self._client is not None and self.upstream is not None
        headers = {k: v for k, v in request.headers.items() if k not in _HOP_BY_HOP}
        headers["accept-encoding"] = "identity"  # keep the recorded body readable text
        upstream = self._client.send(
            self._client.build_request(
                request.method,
                self.upstream.rstrip("/") + request.path,
                headers=headers,
                content=request.body,
            ),
            stream=True,
        )
        with self._lock:  # reserve the slot in arrival order; filled when the stream ends
            slot = len(self.cassette.interactions)
            self.cassette.interactions.append(None)  # type: ignore[arg-type]
            self._played.append(True)

        def stream() -> Iterator[bytes]:
            chunks: list[bytes] = []
            try:
                for chunk in upstream.iter_raw():
                    chunks.append(chunk)
                    yield chunk
            finally:
                upstream.close()
                self._keep(slot, request, live, upstream, b"".join(chunks))

        content_type = upstream.headers.get("content-type", "application/json")
        return Reply(upstream.status_code, {"content-type": content_type}, stream())

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
