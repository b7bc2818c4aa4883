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
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import httpx

from pytest_atom.gateway.messages import estimate_tokens, message, read_reply, sse_stream
from pytest_atom.gateway.server import AbortReply, Reply
from pytest_atom.replay.cassette import CUT_HEADER, FAULT_HEADER, Cassette, Interaction
from pytest_atom.replay.divergence import Divergence, divergence_reply
from pytest_atom.replay.matchers import Matcher, matcher_for
from pytest_atom.replay.matching import called_tools, compared_turns, note_served, offered_tools
from pytest_atom.replay.normalize import (
    Normalizer,
    mask_machine,
    renumber_task_ids,
    results_in_call_order,
)
from pytest_atom.replay.scrub import Scrubber
from pytest_atom.replay.upstream import Forwarding, kept_headers
from pytest_atom.results.drift import Drift
from pytest_atom.results.record import UpstreamFault
from pytest_atom.settings.modes import DEFAULT_MATCH
from pytest_atom.wire.request import (
    CONVERSATION_KINDS,
    GatewayRequest,
    Kind,
    request_kind,
)
from pytest_atom.wire.roles import STRUCTURED_OUTPUT


@dataclass
class CassetteResponder(Forwarding):
    """Answers the CLI from a cassette, forwarding (`Forwarding`) what it may not replay."""

    cassette: Cassette
    normalizer: Normalizer
    scrubber: Scrubber
    replay: bool = True
    upstream: str | None = None  # forwarding target; None: never forward
    upstream_label: str | None = None  # what the cassette's URIs say instead of a local port
    #: The recording's real credentials (NAME -> value), on forwarded requests only.
    credentials: Mapping[str, str] = field(default_factory=dict, repr=False)
    #: Request kinds always forwarded, never replayed (re-judging forwards the reflector's).
    forward_kinds: frozenset[str] = frozenset()
    #: Request kinds whose system prompt the user owns and a replay matches on (an SDK app's).
    owned_system: frozenset[str] = frozenset()
    drift: Drift = field(default_factory=Drift)
    divergences: list[Divergence] = field(default_factory=list)
    #: Every replayed answer with the live request it answered: what a refresh writes back.
    served: list[Interaction] = field(default_factory=list)
    recorded: int = 0
    faults: list[UpstreamFault] = field(default_factory=list)  # recording: what went wrong
    upstream_timeout: float = 600.0  # seconds of upstream silence before a request fails
    #: How a live request finds its recording (`replay.matchers`).
    matcher: Matcher = field(default_factory=lambda: matcher_for(DEFAULT_MATCH))

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._arrival = threading.Condition(self._lock)
        self._released = 0  # recorded requests before this one are no longer waited for
        interactions = self.cassette.interactions
        for interaction in interactions:  # recorded before these masks existed
            interaction.body = results_in_call_order(mask_machine(interaction.body))
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
        if not self.matcher.exact and kind not in CONVERSATION_KINDS:
            return self._stand_in(request, kind, live)
        with self._lock:
            self.divergences.append(
                Divergence(
                    request,
                    kind,
                    live,
                    self._closest(request, kind, live),
                    self.matcher,
                    system=kind in self.owned_system,
                )
            )
        return divergence_reply()

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
            key = self._keys[index] = self.matcher.key(
                kind, recorded.body, system=kind in self.owned_system
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
        An identical body is looked for first, the common and cheapest case."""
        with self._lock:
            candidates = list(self._candidates(request, kind))
            hit = next((i for i in candidates if self.cassette.interactions[i].body == live), None)
            exact = hit is not None
            if hit is None and not self.matcher.exact:
                key = self.matcher.key(kind, live, system=kind in self.owned_system)
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
                        self.matcher,
                        missing,
                        system=kind in self.owned_system,
                    )
                )
                return divergence_reply()
            self._played[hit] = True
            self._arrival.notify_all()
            self._await_predecessors(hit)
            return self._serve(request, kind, live, recorded, exact=exact)

    def _await_predecessors(self, index: int) -> None:
        """Hold the answer to recorded request `index` until every conversation request
        recorded before it has arrived (caller holds the lock), at most `ORDER_WAIT` seconds.

        Concurrent sessions make the CLI's next requests depend on timing (a subagent's
        notification folds into the main agent's next message, or gets one of its own):
        answering in the recorded order makes a replay take the same path."""
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
        CLI offered them: a call to a tool neither offers (a model's invention) is part of
        the conversation and replays as it is. Deferred tools count as offered."""
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
        results_differ = not exact and self.matcher.results_differ(kind, live, recorded.body)
        note_served(self.drift, live, recorded.body, exact=exact, results_differ=results_differ)
        self.served.append(replace(recorded, body=live, request_headers=kept_headers(request)))
        headers = {
            "content-type": recorded.response_headers.get("content-type", "application/json")
        }
        body = self.normalizer.paths_in(recorded.response).encode()
        if CUT_HEADER in recorded.response_headers:
            # Cut where the recording's connection was, so Claude Code does what it did then.
            return Reply(recorded.status, headers, _cut(body, recorded.response_headers))
        return Reply(recorded.status, headers, body)

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
        pool = self.matcher.closest_pool(kind, live, pool)

        def text(body: Any) -> str:
            if not self.matcher.exact and kind in CONVERSATION_KINDS:
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
        """The answer of the first unplayed recorded session of `kind` that opens with
        `opening` (its first turn), its requests marked played; None when there is none. A
        session runs up to the next request carrying the opening turn alone; its answer is
        its last StructuredOutput call (the CLI asks again when one fails the schema)."""
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


#: Seconds an answer is held for a request recorded before it that has not arrived yet.
ORDER_WAIT = 5.0

_NO_USAGE = {"input_tokens": 1, "output_tokens": 1}


def _cut(body: bytes, headers: dict[str, str]) -> Iterator[bytes]:
    """`body`, then the connection cut without ending it, as the recording's was."""
    yield body
    raise AbortReply(headers.get(FAULT_HEADER) or "cut as recorded")


def _canonical(body: Any) -> str:
    return body if isinstance(body, str) else json.dumps(body, indent=1, sort_keys=True)
