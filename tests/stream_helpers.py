"""Streams through the real gateway, driven by an HTTP client instead of Claude Code.

What the gateway does with a stream (relays it, keeps it for the cassette, bills it with
`cost.billing`'s fold, replays it, keeps a partial on a fault and names the fault) does not
need a CLI to show: `recording` opens the model source a run opens (`open_model_source`)
and serves it on 127.0.0.1, and a test sends it requests with httpx, then closes it as a run
does (`ModelSource.finish`). The requests are Claude Code's own, from a shipped
cassette (`claude_requests`), answered by real API streams (`tests/data/real_api`) or a
fault-injecting upstream (tests/faults.py).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

from pytest_atom.gateway import Gateway, Reply
from pytest_atom.gateway.server import Meter
from pytest_atom.replay.cassette import Cassette, Interaction
from pytest_atom.replay.matchers import matcher_for
from pytest_atom.replay.normalize import Normalizer, run_dates
from pytest_atom.replay.recording import ModelSource, open_model_source
from pytest_atom.replay.responder import CassetteResponder
from pytest_atom.replay.scrub import Scrubber
from pytest_atom.settings.modes import MatchMode
from pytest_atom.settings.options import RunSettings
from pytest_atom.spec.types import Spec
from pytest_atom.wire.request import GatewayRequest
from tests.helpers import REPO
from tests.real_streams import RecordedStream

#: The Claude Code a gateway-level recording says it was made with (no CLI runs here).
CLI_VERSION = "2.1.331"

#: A shipped cassette Claude Code recorded: its requests are the CLI's real request shapes.
SHIPPED = REPO / "fixtures" / "specs" / "cassettes" / "create_file" / "create-file.yaml"


class Answering:
    """An upstream that answers every Messages call with one recorded stream, an event at
    a time as the API streams it (tests/real_streams.py's `RecordedUpstream` answers only
    the agent's turns; a hand-sent request may be any kind)."""

    def __init__(self, stream: RecordedStream, delay: float = 0.0) -> None:
        self.stream = stream
        self.delay = delay

    def respond(self, request: GatewayRequest) -> Reply:
        headers = {"content-type": self.stream.content_type, "request-id": "req_real"}
        return Reply(self.stream.status, headers, self.stream.chunks(self.delay))


@contextmanager
def recording(
    spec: Spec, upstream: str, mode: str = "all", meter: Meter | None = None
) -> Iterator[tuple[ModelSource, Gateway]]:
    """The model source a recording run of `spec` opens, served by the real gateway on
    127.0.0.1 (record mode `mode`, forwarding to `upstream`), as `run_spec` serves it."""
    settings = RunSettings(record_mode=mode, upstream=upstream)  # type: ignore[arg-type]
    # claude_bin: only a replay asks the CLI's version, and none is opened here
    source = open_model_source(spec, settings, paths={}, claude_bin=Path("claude"))
    with Gateway(source.responder, meter) as gateway:
        yield source, gateway


def claude_requests(path: Path = SHIPPED) -> list[Interaction]:
    """The requests Claude Code sent when `path` was recorded, in order."""
    return Cassette.load(path).interactions


def send(url: str, interaction: Interaction, timeout: float = 60, **changes: Any) -> httpx.Response:
    """Send a recorded request again, as the CLI sent it (its body updated by `changes`)."""
    body = interaction.body
    if isinstance(body, Mapping):
        body = {**body, **changes}
    where = urlsplit(interaction.uri)
    path = where.path + (f"?{where.query}" if where.query else "")
    return httpx.request(
        interaction.method,
        url.rstrip("/") + path,
        json=body,
        headers=interaction.request_headers,
        timeout=timeout,
    )


def replaying(cassette: Path, match: MatchMode = "strict") -> CassetteResponder:
    """A replay of `cassette` as a run opens it (`recording._replay`, without the CLI's
    version, which only decides recall)."""
    return CassetteResponder(
        Cassette.load(cassette),
        Normalizer({}, run_dates()),
        Scrubber(),
        replay=True,
        matcher=matcher_for(match),
    )
