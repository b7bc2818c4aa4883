"""Streams of the real Messages API, recorded by other public projects, served to Claude Code.

`tests/data/real_api/` keeps vcrpy cassettes other projects recorded from the real API, byte
for byte (their README names each source). `RecordedUpstream` is a loopback server that
answers the agent's turn with one such recorded response body, whatever the CLI asked (the
CLI sends its own request; the answer is the API's), and every other request (a title, a
token count) from an empty script. `billed_tokens` is what the API billed for the stream,
read from the stream itself: the reference every report's token figure is held to.
`record` and `replay` run a small spec through Claude Code with a stream as the agent's
answer (tests/replay/test_real_streams.py, tests/cost/test_figures.py, benchmarks/real_streams.py).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from pytest_atom.gateway import Gateway, Reply, scripted
from pytest_atom.replay.cassette import Cassette
from pytest_atom.replay.transcript import is_messages
from pytest_atom.results.spec_result import SpecResult
from pytest_atom.run.spec_run import run_spec
from pytest_atom.settings.options import RunSettings
from pytest_atom.spec.types import Spec
from pytest_atom.spec_loader.load import load_specs
from pytest_atom.wire.request import GatewayRequest

REAL_API = Path(__file__).parent / "data" / "real_api"


@dataclass(frozen=True)
class RecordedStream:
    """One recorded response: its file, its status, content type and body as recorded."""

    file: Path
    status: int
    content_type: str
    body: str

    @classmethod
    def load(cls, name: str, index: int = 0) -> RecordedStream:
        """The `index`-th response of `tests/data/real_api/<name>.yaml`."""
        file = REAL_API / f"{name}.yaml"
        data = yaml.safe_load(file.read_text(encoding="utf-8"))
        response = data["interactions"][index]["response"]
        headers = {k.lower(): v for k, v in response.get("headers", {}).items()}
        content_type = headers.get("content-type") or ["text/event-stream; charset=utf-8"]
        return cls(
            file, int(response["status"]["code"]), content_type[0], response["body"]["string"]
        )

    def events(self) -> list[tuple[str, Any]]:
        return sse_events(self.body)

    def billed_tokens(self) -> int:
        return billed_tokens(self.body)

    def chunks(self, delay: float = 0.0) -> Iterator[bytes]:
        """The recorded body an event at a time, `delay` seconds apart, as the API streams
        it: a CLI that rejects an event hangs up before the rest arrives."""
        body = self.body.encode("utf-8")
        start = 0
        while start < len(body):
            end = body.find(b"\n\n", start)
            end = len(body) if end < 0 else end + 2
            yield body[start:end]
            start = end
            if delay:
                time.sleep(delay)


def sse_events(body: str) -> list[tuple[str, Any]]:
    """(event name, data) of each SSE event, data parsed as JSON where it is JSON."""
    out: list[tuple[str, Any]] = []
    for block in body.split("\n\n"):
        name, data = "", []
        for line in block.splitlines():
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].strip())
        if name or data:
            text = "\n".join(data)
            try:
                out.append((name, json.loads(text)))
            except ValueError:
                out.append((name, text))
    return out


#: A usage object's billed token counts.
USAGE_FIELDS = (
    "input_tokens",
    "output_tokens",
    "cache_creation_input_tokens",
    "cache_read_input_tokens",
)


def billed_tokens(body: str) -> int:
    """The tokens the API billed for one answer (an SSE stream or a JSON message), folded as
    its usage docs say: `message_delta`'s usage (cumulative) over `message_start`'s, a field
    at a time where it is given; with `usage.iterations` (compaction, advisor), the sum of
    every iteration instead, since the top-level figures cover the last one only."""
    usage: dict[str, Any] = {}
    if body.lstrip().startswith("{"):
        data = json.loads(body)
        usage = dict(data.get("usage") or {}) if isinstance(data, dict) else {}
    for _, data in sse_events(body) if not usage else []:
        if not isinstance(data, dict):
            continue
        if data.get("type") == "message_start":
            usage.update(data["message"].get("usage") or {})
        elif data.get("type") == "message_delta":
            usage.update({k: v for k, v in (data.get("usage") or {}).items() if v is not None})
    iterations = usage.get("iterations")
    if isinstance(iterations, list) and iterations:
        return sum(int(it.get(f) or 0) for it in iterations for f in USAGE_FIELDS)
    return sum(int(usage.get(f) or 0) for f in USAGE_FIELDS)


class RecordedUpstream:
    """A loopback Messages API that answers the agent's turns with a recorded body.

    `turns` answers: how many of the agent's turns get the recording (the rest get the
    empty script's answer, which ends the session); `served` counts those sent."""

    def __init__(self, stream: RecordedStream, *, turns: int = 1, delay: float = 0.005) -> None:
        self.stream = stream
        self.delay = delay
        self.turns = turns
        self.served = 0
        self._rest = scripted([{"text": "EXIT_LOOP_NOW"}] * 8)
        self._lock = threading.Lock()
        self._gateway = Gateway(self)

    def respond(self, request: GatewayRequest) -> Reply:
        if request.kind == "turn":
            with self._lock:
                serve = self.served < self.turns
                self.served += serve
            if serve:
                headers = {"content-type": self.stream.content_type, "request-id": "req_real"}
                return Reply(self.stream.status, headers, self.stream.chunks(self.delay))
        return self._rest.respond(request)

    @property
    def url(self) -> str:
        return self._gateway.url

    def __enter__(self) -> RecordedUpstream:
        self._gateway.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._gateway.stop()


SPEC = """\
name: real
prompt: Answer the question in USER_PROMPT.md.
timeout: 120
attempts: 1
max_iterations: 2
"""

#: Each stream, by what it covers: its file in tests/data/real_api/ (without .yaml).
STREAMS = {
    "web-search-citations": "test_anthropic_model_web_search_tool_stream",
    "web-fetch": "test_anthropic_web_fetch_tool_stream",
    "code-execution": "test_anthropic_code_execution_tool_stream",
    "text-editor-code-execution": "test_anthropic_text_editor_code_execution_tool_stream",
    "advisor-iterations": "test_anthropic_advisor_tool_stream",
    "compaction": "test_anthropic_compaction_usage_with_cache_streaming",
    "redacted-thinking": "test_anthropic_model_thinking_part_redacted_stream",
}


def spec_in(folder: Path) -> Spec:
    (folder / "real.atom.yaml").write_text(SPEC)
    [spec] = load_specs(folder / "real.atom.yaml")
    return spec


def record(folder: Path, stream: RecordedStream, claude_bin: Path, **kw: Any) -> SpecResult:
    with RecordedUpstream(stream, **kw) as upstream:
        return run_spec(
            spec_in(folder),
            runs_dir=folder / "runs",
            settings=RunSettings(record_mode="all", upstream=upstream.url),
            claude_bin=claude_bin,
        )


def replay(folder: Path, claude_bin: Path, match: str = "strict") -> SpecResult:
    return run_spec(
        spec_in(folder),
        runs_dir=folder / "runs",
        settings=RunSettings(match=match),
        claude_bin=claude_bin,
    )


def recording_billed(path: Path) -> int:
    """What the API billed for every answer in the recording: the real stream's, and the
    script's that ends the session (its usage is in its stream too)."""
    return sum(
        billed_tokens(i.response)
        for i in Cassette.load(path).interactions
        if is_messages(i) and i.status == 200
    )


#: The stream Claude Code rejects: a web search turn the API paused.
PAUSED = "test_pause_turn_web_search_streaming_vcr"
