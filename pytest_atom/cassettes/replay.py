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
import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import httpx

from pytest_atom.cassettes.cassette import FAULT_HEADER, Cassette, Interaction
from pytest_atom.cassettes.scrub import SECRET_HEADERS, Scrubber
from pytest_atom.gateway.matching import (
    CONVERSATION_KINDS,
    DEFAULT_MATCH,
    Drift,
    Kind,
    MatchMode,
    called_tools,
    compared_turns,
    match_key,
    offered_tools,
    owned_system,
    request_kind,
)
from pytest_atom.gateway.normalize import (
    Normalizer,
    mask_machine,
    renumber_task_ids,
    results_in_call_order,
)
from pytest_atom.gateway.server import AbortReply, GatewayRequest, Reply
from pytest_atom.model import messages
from pytest_atom.model.messages import (
    coalesce_sse,
    estimate_tokens,
    message,
    parse_sse,
    read_reply,
    sse_stream,
)
from pytest_atom.model.roles import ROLE_HEADER, STRUCTURED_OUTPUT
from pytest_atom.words import plural

#: Request headers worth keeping in a cassette: they say what the CLI asked for, and
#: whose session it was (the harness's role marker, see agents.roles).
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


@dataclass
class Divergence:
    """A live request that matched nothing recorded (or a recorded turn it cannot replay)."""

    request: GatewayRequest
    kind: Kind
    live: Any  # the normalized live body
    closest: Interaction | None
    mode: MatchMode = DEFAULT_MATCH
    reason: str | None = None  # set when a recording matched but cannot be replayed
    system: bool = False  # the system prompt is the user's (an SDK app's): it must match too

    def describe(self, limit: int | None = 5) -> str:
        """What differs; `limit=None` lists every differing field (the first divergence)."""
        head = f"{self.request.method} {self.request.endpoint} ({self.kind})"
        if self.reason:
            return f"{head}: {self.reason}"
        if self.closest is None:
            return head + ": no recorded interaction matches (the cassette has none of this kind)"
        live, recorded, what = self.live, self.closest.body, "request"
        if self.mode != "strict" and self.kind in CONVERSATION_KINDS:
            blank = self.mode == "structural"
            live_body, recorded_body = live, recorded
            live = {"messages": compared_turns(live, blank_results=blank)}
            recorded = {"messages": compared_turns(recorded, blank_results=blank)}
            what = "conversation"
            if self.system:
                live["system"] = owned_system(live_body)
                recorded["system"] = owned_system(recorded_body)
                what = "conversation and system prompt"
        if live == recorded:
            return (
                f"{head}: its recording was already played; the live run sent this {what} "
                "more often than was recorded"
            )
        return (
            f"{head}: no recorded interaction matches; the closest recorded {what} differs at:\n"
            + describe_difference(live, recorded, limit)
        )

    def where(self) -> tuple[Where, list[str]] | None:
        """Where this divergence lies, with the machine lines that differ (``machine``);
        None when it has no closest recording or a reason of its own."""
        if self.closest is None or self.reason:
            return None
        live, recorded = self.live, self.closest.body
        if self.kind not in CONVERSATION_KINDS:
            return ("played" if live == recorded else "cli"), []
        blank = self.mode == "structural"
        live_turns = compared_turns(live, blank_results=blank)
        recorded_turns = compared_turns(recorded, blank_results=blank)
        if live_turns == recorded_turns:
            if (
                self.system
                and self.mode != "strict"
                and owned_system(live) != owned_system(recorded)
            ):
                return "system", []
            if self.mode != "strict" or live == recorded:
                return "played", []
            labels = _machine_labels(live, recorded)
            return ("machine", labels) if labels else ("cli", [])
        if len(live_turns) == len(recorded_turns) and all(
            a["role"] == b["role"]
            and len(a["content"]) == len(b["content"])
            and all(
                x == y or (x["type"] == y["type"] == "tool_result")
                for x, y in zip(a["content"], b["content"], strict=True)
            )
            for a, b in zip(live_turns, recorded_turns, strict=True)
        ):
            return "tool_result", []
        return "conversation", []


#: Where a divergence lies: Claude Code's own parts of the request only (``cli``), of which
#: only a machine detail (``machine``); a tool result (``tool_result``); the rest of the
#: conversation (``conversation``); an SDK app's own system prompt (``system``); nowhere, as
#: its recording was already played (``played``).
Where = Literal["cli", "machine", "tool_result", "conversation", "system", "played"]

#: A line of the environment block (`` - OS Version: …``) or the sandbox's configuration
#: (``Filesystem: {…}``): where Claude Code writes what it finds on the machine.
_MACHINE_LINE = re.compile(r"(?: - ([A-Z][\w ]*): |(Filesystem|Network): )")


def machine_line(text: str, at: int) -> str | None:
    """The label of the machine-describing line of `text` that holds position `at`."""
    start = text.rfind("\n", 0, at) + 1
    match = _MACHINE_LINE.match(text, start)
    if match is None:
        return None
    label = match.group(1) or match.group(2)
    return f"the sandbox's {label.lower()} list" if match.group(2) else f"'{label}'"


@dataclass
class CassetteResponder:
    cassette: Cassette
    normalizer: Normalizer
    scrubber: Scrubber
    replay: bool = True
    upstream: str | None = None  # forwarding target; None: never forward
    upstream_label: str | None = None  # what the cassette's URIs say instead of a local port
    match: MatchMode = DEFAULT_MATCH
    #: Request kinds always forwarded, never replayed (re-judging forwards the reflector's).
    forward_kinds: frozenset[str] = frozenset()
    #: Request kinds whose system prompt the user owns and a replay matches on: an SDK
    #: app's turns (it sets its own), never Claude Code's reflector or planner.
    owned_system: frozenset[str] = frozenset()
    drift: Drift = field(default_factory=Drift)
    divergences: list[Divergence] = field(default_factory=list)
    #: Every replayed answer with the live request it answered, in serving order: what a
    #: refresh writes back.
    served: list[Interaction] = field(default_factory=list)
    recorded: int = 0
    faults: list[UpstreamFault] = field(default_factory=list)  # recording: what went wrong
    upstream_timeout: float = 600.0  # seconds of upstream silence before a request fails

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._arrival = threading.Condition(self._lock)
        self._released = 0  # recorded requests before this one are no longer waited for
        interactions = self.cassette.interactions
        for interaction in interactions:  # recorded before these existed
            interaction.body = results_in_call_order(mask_machine(interaction.body))
        # Task ids numbered by arrival (before they were numbered by the calls they answer).
        bodies, responses = renumber_task_ids(
            [i.body for i in interactions], [i.response for i in interactions]
        )
        for interaction, body, response in zip(interactions, bodies, responses, strict=True):
            interaction.body, interaction.response = body, response
        self.original_count = len(self.cassette.interactions)
        self._played = [False] * self.original_count
        self._keys: dict[int, str] = {}
        self._kinds = [
            request_kind(i.method, i.endpoint, i.body, i.role) for i in self.cassette.interactions
        ]
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
        live = self._normalized_body(request, scrub=False)
        kind = request_kind(request.method, request.endpoint, live, request.role)
        if self.replay and kind not in self.forward_kinds:
            reply = self._replay_from_tape(request, kind, live)
            if reply is None:
                # Recorded bodies are scrubbed; scrubbing costs, so only a miss pays for it.
                scrubbed = self._normalized_body(request, scrub=True)
                if scrubbed != live:
                    reply = self._replay_from_tape(request, kind, scrubbed)
                live = scrubbed
            if reply is not None:
                return reply
        else:
            live = self._normalized_body(request, scrub=True)
        if self.upstream is not None:
            return self._forward(request, live)
        if self.match != "strict" and kind not in CONVERSATION_KINDS:
            return self._stand_in(request, kind, live)
        with self._lock:
            self.divergences.append(
                Divergence(
                    request,
                    kind,
                    live,
                    self._closest(request, kind, live),
                    self.match,
                    system=kind in self.owned_system,
                )
            )
        return _divergence_reply()

    def _normalized_body(self, request: GatewayRequest, *, scrub: bool) -> Any:
        if request.json is not None:
            return self.normalizer.body(
                self.scrubber.scrub_obj(request.json) if scrub else request.json
            )
        text = request.body.decode("utf-8", "replace")
        return self.normalizer.text(self.scrubber.scrub(text) if scrub else text)

    def _key(self, index: int) -> str:
        key = self._keys.get(index)
        if key is None:
            recorded = self.cassette.interactions[index]
            kind = self._kinds[index]
            key = self._keys[index] = match_key(
                kind, recorded.body, self.match, system=kind in self.owned_system
            )
        return key

    def _candidates(self, request: GatewayRequest, kind: str) -> Iterator[int]:
        for index, recorded in enumerate(self.cassette.interactions):
            if (
                not self._played[index]
                and self._kinds[index] == kind
                and recorded.method == request.method
                and recorded.endpoint == request.endpoint
            ):
                yield index

    def _replay_from_tape(self, request: GatewayRequest, kind: Kind, live: Any) -> Reply | None:
        """The first unplayed recording that matches, in any arrival order; None if none.

        An identical body is looked for first: it is the common case and the cheapest test;
        only then is the live request reduced to its match key.
        """
        with self._lock:
            candidates = list(self._candidates(request, kind))
            hit = next((i for i in candidates if self.cassette.interactions[i].body == live), None)
            exact = hit is not None
            if hit is None and self.match != "strict":
                key = match_key(kind, live, self.match, system=kind in self.owned_system)
                hit = next((i for i in candidates if self._key(i) == key), None)
            if hit is None:
                return None
            recorded = self.cassette.interactions[hit]
            missing = None if exact else self._tools_not_offered(kind, recorded, live)
            if missing:
                self.divergences.append(
                    Divergence(
                        request,
                        kind,
                        live,
                        recorded,
                        self.match,
                        missing,
                        system=kind in self.owned_system,
                    )
                )
                return _divergence_reply()
            self._played[hit] = True
            self._arrival.notify_all()
            self._await_predecessors(hit)
            return self._serve(request, kind, live, recorded, exact=exact)

    def _await_predecessors(self, index: int) -> None:
        """Hold the answer to recorded request `index` until every conversation request
        recorded before it has arrived, as it had when it was recorded (caller holds the lock).

        Concurrent sessions make the CLI's next requests depend on timing: a background
        subagent that finishes while the main agent is between requests has its task
        notification folded into the main agent's next message, one that finishes later
        gets a message of its own. Answering in the recorded order makes a replay take the
        same path. A request the live run never sends (another CLI version) stops holding
        anyone after `ORDER_WAIT` seconds.
        """
        if self._kinds[index] not in CONVERSATION_KINDS:
            return

        def arrived() -> bool:
            return all(
                self._played[j] or self._kinds[j] not in CONVERSATION_KINDS
                for j in range(self._released, index)
            )

        if not self._arrival.wait_for(arrived, timeout=ORDER_WAIT):
            self._released = max(self._released, index)  # given up on: waited for no more

    def _tools_not_offered(self, kind: Kind, recorded: Interaction, live: Any) -> str | None:
        """A recorded turn may call only tools the live CLI still offers, where the recording
        CLI offered them: a call to a tool neither offers (a model's invention, which the CLI
        answers "No such tool available") is part of the conversation and replays as it is.
        Deferred tools (MCP tools behind ToolSearch) count as offered."""
        if kind not in CONVERSATION_KINDS:
            return None
        offered = offered_tools(live)
        was_offered = offered_tools(recorded.body)
        missing = [t for t in called_tools(recorded.response) if t in was_offered - offered]
        if not missing:
            return None
        return (
            f"the recording calls tool {', '.join(sorted(set(missing)))}, which this Claude Code "
            f"does not offer (it offers {', '.join(sorted(offered)) or 'no tools'})"
        )

    def _serve(
        self,
        request: GatewayRequest,
        kind: Kind,
        live: Any,
        recorded: Interaction,
        *,
        exact: bool = False,
    ) -> Reply:
        exact = exact or recorded.body == live
        results_differ = (
            not exact
            and self.match == "structural"
            and kind in CONVERSATION_KINDS
            and match_key(kind, live, "conversation")
            != match_key(kind, recorded.body, "conversation")
        )
        self.drift.served(live, recorded.body, exact=exact, results_differ=results_differ)
        self.served.append(replace(recorded, body=live, request_headers=_kept_headers(request)))
        headers = {
            "content-type": recorded.response_headers.get("content-type", "application/json")
        }
        return Reply(recorded.status, headers, self.normalizer.paths_in(recorded.response).encode())

    def _stand_in(self, request: GatewayRequest, kind: Kind, live: Any) -> Reply:
        """Claude Code's own requests (preflights, titles, token counts) that the recording
        lacks: any recorded answer of the same kind will do, else a minimal one."""
        with self._lock:
            for recorded_kind, recorded in zip(
                self._kinds, self.cassette.interactions, strict=False
            ):
                if (
                    recorded_kind == kind
                    and recorded.endpoint == request.endpoint
                    and FAULT_HEADER not in recorded.response_headers
                ):
                    return self._serve(request, kind, live, recorded)
            uri = (self.cassette.metadata.get("upstream") or "replay://").rstrip("/")
            stand_in = Interaction(
                request.method, uri + request.path, live, 200, "", response_headers={}
            )
            if kind == "count_tokens":
                stand_in.response = json.dumps({"input_tokens": estimate_tokens(request.body)})
            elif kind == "side":
                body = request.json if isinstance(request.json, dict) else {}
                msg = message("msg_atom_stand_in", str(body.get("model") or ""), [], **_NO_USAGE)
                stream = bool(body.get("stream"))
                stand_in.response = (
                    sse_stream(msg) if stream else json.dumps(msg).encode()
                ).decode()
                stand_in.response_headers["content-type"] = (
                    "text/event-stream" if stream else "application/json"
                )
            return self._serve(request, kind, live, stand_in)

    def _closest(self, request: GatewayRequest, kind: Kind, live: Any) -> Interaction | None:
        interactions = self.cassette.interactions
        pool = [interactions[i] for i in self._candidates(request, kind)] or [
            i for k, i in zip(self._kinds, interactions, strict=False) if k == kind
        ]
        if not pool:
            return None
        if self.match == "strict" and kind in CONVERSATION_KINDS:
            # The recording of the same conversation, when there is one: the difference
            # then lies in Claude Code's part of the request, and the report can say so.
            key = match_key(kind, live, DEFAULT_MATCH)
            same = [i for i in pool if match_key(kind, i.body, DEFAULT_MATCH) == key]
            pool = same or pool

        def text(body: Any) -> str:
            if self.match != "strict" and kind in CONVERSATION_KINDS:
                return json.dumps(compared_turns(body), indent=1, sort_keys=True)
            return _canonical(body)

        live_text = text(live)
        return max(
            pool,
            key=lambda i: difflib.SequenceMatcher(
                None, live_text, text(i.body), autojunk=False
            ).quick_ratio(),
        )

    def unplayed(self, kinds: tuple[str, ...] = CONVERSATION_KINDS) -> int:
        """Recorded requests of these kinds that the live run never sent."""
        with self._lock:
            return sum(
                1
                for n, played in enumerate(self._played)
                if not played and n < len(self._kinds) and self._kinds[n] in kinds
            )

    def recall_session(self, kind: Kind, opening: dict[str, Any]) -> Any | None:
        """The answer of the first unplayed recorded session of `kind` (a reflector's, a
        planner's) that opens with `opening` (its first turn, as `conversation` gives it),
        its requests marked played; None when the cassette holds no such answer.

        A session is its requests from one that carries the opening turn alone up to the
        next such request; its answer is the last StructuredOutput call it received (the CLI
        asks again when one fails the schema). Marked played, nothing waits for its
        requests (`_await_predecessors`) and no later session can take them.
        """
        with self._lock:
            session: list[int] = []
            for index, recorded in enumerate(self.cassette.interactions):
                if self._played[index] or self._kinds[index] != kind:
                    continue
                turns = compared_turns(recorded.body)
                if not turns or turns[0] != opening:
                    continue
                if len(turns) == 1 and session:
                    break  # the next session with the same opening
                session.append(index)
            answers = [
                block.get("input")
                for index in session
                for block in read_reply(
                    self.cassette.interactions[index].response,
                    self.cassette.interactions[index].status,
                ).blocks
                if block.get("type") == "tool_use" and block.get("name") == STRUCTURED_OUTPUT
            ]
            if not answers:
                return None
            for index in session:
                self._played[index] = True
            self._arrival.notify_all()
            return answers[-1]

    def _forward(self, request: GatewayRequest, live: Any) -> Reply:
        """Send upstream and stream the answer back; keep it only if it is a whole exchange.

        What goes wrong upstream never raises: a refused, reset or silent upstream becomes
        an API error naming it (502 or 504, which the CLI retries), a transient status
        (429, 529, 5xx) passes through with the headers the CLI's retry logic reads but
        stays out of the cassette, and a stream that breaks off ends in an SSE error event.
        Each is noted in `faults`, so a recording that never got past one is not saved.
        """
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
        """The upstream's streamed response, or the API error that stands in for one that
        never came (502 refused or reset, 504 silent), so the CLI retries as it would.

        While it waits, the request is listed in `_waiting`, so a run that ends before the
        upstream answered reports that request as a fault.
        """
        assert self._client is not None and self.upstream is not None
        # The role marker goes on too: a scripted upstream (recording from a script) plays
        # each role's lane by it, and the API ignores a header it does not know.
        headers = {k: v for k, v in request.headers.items() if k not in _HOP_BY_HOP}
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
            return Reply.error(status, "api_error", self._upstream_message(what))
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
        it, and note it as a fault; it is never recorded, as a replay must not repeat it.
        """
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
        """Stream the upstream's body to the CLI as it arrives and keep it in `slot` once
        it is whole. An SSE body is relayed in whole events only, so when the stream breaks
        off an error event can follow cleanly; a broken JSON body is cut instead.
        """
        sse = "text/event-stream" in upstream.headers.get("content-type", "")
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
                if cut:
                    yield pending[:cut]
                    pending = pending[cut:]
            failure = _incomplete(b"".join(chunks)) if sse else None
        except httpx.HTTPError as exc:
            failure = _failure(exc, timeout, mid_stream=True)
        except GeneratorExit:
            # The CLI hung up mid-stream: it rejected what it read ("The response stream
            # was malformed"), or it was stopped. What it was sent is the evidence, kept
            # as it was sent, so a replay sends it the same and the CLI rejects it again.
            if sse:
                received = b"".join(chunks)
                relayed = received[: len(received) - len(pending)]
                what = "sent a stream the CLI stopped reading mid-way"
                self._fault(request, live, what, slot=slot)
                self._keep(slot, request, live, upstream, relayed, fault=what)
            raise
        finally:
            upstream.close()
        if failure is None:
            self._keep(slot, request, live, upstream, b"".join(chunks))
            if pending:
                yield pending
            return
        if not sse:
            self._fault(request, live, failure)
            raise AbortReply(failure)  # no valid JSON can end this body: cut it
        error = _sse_error(self._upstream_message(failure))
        # What the CLI saw is kept as it saw it: the whole events relayed, then the error.
        # Claude Code resends a stream that broke before any content, but continues one
        # that broke after ("Your response above was cut off mid-stream…"); a replay must
        # break the same way for that continuation to follow.
        received = b"".join(chunks)
        relayed = received[: len(received) - len(pending)]
        self._fault(request, live, failure, slot=slot)
        self._keep(slot, request, live, upstream, relayed + error, fault=failure)
        yield error

    def _upstream_message(self, what: str) -> str:
        return f"pytest-atom gateway: upstream {self.upstream} {what}"

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
    ) -> None:
        text = body.decode("utf-8", "replace")
        if "text/event-stream" in upstream.headers.get("content-type", ""):
            text = coalesce_sse(text)
        base = self.upstream_label or self.upstream or ""
        headers = {"content-type": upstream.headers.get("content-type", "")}
        if fault is not None:
            headers[FAULT_HEADER] = fault
        interaction = Interaction(
            method=request.method,
            uri=base.rstrip("/") + request.path,
            body=live,
            status=upstream.status_code,
            response=self.normalizer.paths_out(self.scrubber.scrub(text)),
            request_headers=_kept_headers(request),
            response_headers=headers,
        )
        with self._lock:
            self.cassette.interactions[slot] = interaction
            self.recorded += 1

    def finished_interactions(self) -> list[Interaction]:
        """What a cassette keeps: every whole exchange, and every broken stream as the CLI
        saw it, except one that the CLI's identical retry made good (a replay need not sit
        through the retry's back-off to reach the same answer)."""
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

    def disturbances(self) -> list[UpstreamFault]:
        """Every upstream fault met while recording, made good or not: a retried status, a
        reset, a stream cut off that the CLI continued. A recording they touched is not
        trusted to replace a good cassette unless its spec passes (`ModelSource.finish`)."""
        with self._lock:
            return list(self.faults)

    def faults_to_report(self, unfinished: bool) -> list[UpstreamFault]:
        """The faults a report names: those that left a hole, and, when the run did not
        finish, also the broken streams kept as the CLI saw them, which explain why."""
        holes = self.unrecovered_faults()
        if not unfinished:
            return holes
        with self._lock:
            kept = [f for f in self.faults if f.slot is not None and not self._made_good(f)]
        return holes + kept

    def unrecovered_faults(self) -> list[UpstreamFault]:
        """Faults that leave a hole in the cassette a replay would fall into: neither made
        good by the CLI's retry nor kept as what the CLI saw (a refused or reset request, a
        status the CLI gave up on), and requests the upstream has still not answered (the
        run ended while the gateway waited)."""
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
                if fault.slot is None and not self._made_good(fault)
            ]


#: Seconds an answer is held for a request recorded before it that has not arrived yet.
ORDER_WAIT = 5.0
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
    slot: int | None = None  # where the broken stream was kept as the CLI saw it, if it was


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


_NO_USAGE = {"input_tokens": 1, "output_tokens": 1}


def _kept_headers(request: GatewayRequest) -> dict[str, str]:
    return {
        k: request.headers[k]
        for k in _KEPT_REQUEST_HEADERS
        if k in request.headers and k not in SECRET_HEADERS
    }


def _divergence_reply() -> Reply:
    """An API error the CLI neither retries nor falls back on; the test report explains."""
    return Reply.refusal(
        "pytest-atom replay: this request matches nothing in the cassette; the test report "
        "shows the difference and its likely cause."
    )


def _canonical(body: Any) -> str:
    return body if isinstance(body, str) else json.dumps(body, indent=1, sort_keys=True)


def describe_difference(live: Any, recorded: Any, limit: int | None = 5) -> str:
    """Where two normalized bodies differ, named as a person reads a conversation.

    Paths read like ``messages[2] (user).content[0] (tool_result)``, each with both values;
    of a long text, only the parts that differ, with some context on each side
    (`text_difference`), never the whole text.
    """
    found: list[str] = []
    limit = limit or 100  # every field, within reason

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
                    f"- {_describe_path(path, live)}: {plural(len(b), 'item')} recorded, {len(a)} live"
                )
            return
        where = _describe_path(path, live)
        if isinstance(a, str) and isinstance(b, str):
            found.append(f"- {where}: " + text_difference(b, a))
        else:
            found.append(f"- {where}: recorded {json.dumps(b)[:200]}, live {json.dumps(a)[:200]}")

    walk(live, recorded, [])
    return "\n".join(found) or "- (no difference after normalization)"


#: Characters of unchanged text shown on each side of a change, and of a change itself.
_CONTEXT, _CHANGE = 40, 160
#: A string this short, on one line, is shown whole.
_SHORT = 100
#: Changes shown of one text; a text differing in more places is said to.
_HUNKS = 4


def text_difference(recorded: str, live: str) -> str:
    """Both values of a changed text: whole when short, else each differing part with
    `_CONTEXT` characters around it, on one line each (newlines shown as ``\\n``)."""
    if max(len(recorded), len(live)) <= _SHORT and "\n" not in recorded + live:
        return f"recorded {json.dumps(recorded)}, live {json.dumps(live)}"
    hunks = _hunks(recorded, live)
    lines = [f"text changed in {plural(len(hunks), 'place')}:"]
    for rec_start, rec_end, live_start, live_end in hunks[:_HUNKS]:
        line = live.count("\n", 0, live_start) + 1
        lines.append(
            f"    at line {line}, character {live_start - live.rfind(chr(10), 0, live_start)}:"
        )
        lines.append(f"      recorded {_excerpt(recorded, rec_start, rec_end)}")
        lines.append(f"      live     {_excerpt(live, live_start, live_end)}")
    if len(hunks) > _HUNKS:
        lines.append(f"    (+{len(hunks) - _HUNKS} more)")
    return "\n".join(lines)


def _hunks(a: str, b: str) -> list[tuple[int, int, int, int]]:
    """The differing spans of `a` and `b`, as (a_start, a_end, b_start, b_end); spans less
    than two contexts apart are one. The common head and tail are cut off first, so only
    what lies between is compared character by character."""
    head = 0
    while head < min(len(a), len(b)) and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < min(len(a), len(b)) - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    a_mid, b_mid = a[head : len(a) - tail], b[head : len(b) - tail]
    if max(len(a_mid), len(b_mid)) > 20_000:  # too long to compare closely: one span
        return [(head, len(a) - tail, head, len(b) - tail)]
    matcher = difflib.SequenceMatcher(None, a_mid, b_mid, autojunk=False)
    spans: list[list[int]] = []
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            continue
        if spans and i1 + head - spans[-1][1] < 2 * _CONTEXT:
            spans[-1][1], spans[-1][3] = i2 + head, j2 + head
        else:
            spans.append([i1 + head, i2 + head, j1 + head, j2 + head])
    return [_whole_words(a, b, *span) for span in spans] or [(head, head, head, head)]


def _whole_words(
    a: str, b: str, a_start: int, a_end: int, b_start: int, b_end: int
) -> tuple[int, int, int, int]:
    """A span widened to whole words: ``[false]`` and ``[true]``, not ``[fals]e``."""
    while a_start and b_start and a[a_start - 1] == b[b_start - 1] and a[a_start - 1].isalnum():
        a_start, b_start = a_start - 1, b_start - 1
    while a_end < len(a) and b_end < len(b) and a[a_end] == b[b_end] and a[a_end].isalnum():
        a_end, b_end = a_end + 1, b_end + 1
    return a_start, a_end, b_start, b_end


def _excerpt(text: str, start: int, end: int) -> str:
    """``…before[changed]after…``: the change in brackets, its surroundings clipped."""
    change = text[start:end]
    if len(change) > _CHANGE:
        change = change[: _CHANGE // 2] + "…" + change[-_CHANGE // 2 :]
    before = text[max(0, start - _CONTEXT) : start]
    after = text[end : end + _CONTEXT]
    shown = (
        ("…" if start > _CONTEXT else "")
        + before
        + "["
        + change
        + "]"
        + after
        + ("…" if end + _CONTEXT < len(text) else "")
    )
    return shown.replace("\n", "\\n")


def _machine_labels(live: Any, recorded: Any) -> list[str]:
    """The machine lines (`machine_line`) in which two bodies differ, when every
    difference lies in one; else an empty list."""
    labels: list[str] = []

    def walk(a: Any, b: Any) -> bool:
        if a == b:
            return True
        if isinstance(a, dict) and isinstance(b, dict):
            return a.keys() == b.keys() and all(walk(a[k], b[k]) for k in a)
        if isinstance(a, list) and isinstance(b, list):
            return len(a) == len(b) and all(walk(x, y) for x, y in zip(a, b, strict=True))
        if not (isinstance(a, str) and isinstance(b, str)):
            return False
        for _, _, start, _ in _hunks(b, a):
            label = machine_line(a, start)
            if label is None:
                return False
            labels.append(label)
        return True

    return list(dict.fromkeys(labels)) if walk(live, recorded) else []


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
