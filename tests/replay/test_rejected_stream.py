"""A stream Claude Code rejects is evidence.

Claude Code 2.1.331 gives up on a stream it cannot read once some of it was shown: an event
that is not JSON, or a delta for a block already closed, ends its turn with "API Error: The
response stream was malformed. The response above may be incomplete.", and it hangs up
without reading the rest. What the upstream sent until then is kept (a `.partial.yaml`
that `atom cassette show` reads), and the outcome is an upstream error saying the CLI
rejected the stream, not the agent's failure.

Here at the gateway, with an HTTP client that hangs up where the CLI does, and from the
CLI's words; Claude Code's own rejection of a stream is shown end to end on a real stream
it rejects (tests/replay/test_real_streams.py).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from pathlib import Path

import httpx
from click.testing import CliRunner

from atom_cli.cassette_cmd import cassette
from pytest_atom.gateway.messages import parse_sse
from pytest_atom.replay.cassette import FAULT_HEADER
from pytest_atom.results.record import IterationRecord, RunOutcome
from pytest_atom.results.spec_result import Attempt, SpecResult
from pytest_atom.spec.types import Spec
from pytest_atom.spec_loader.load import load_specs
from tests.real_streams import RecordedStream, RecordedUpstream
from tests.stream_helpers import CLI_VERSION, claude_requests, recording

SPEC = """\
name: greet
prompt: Create greeting.txt saying hello.
timeout: 90
accept:
  - file_contains: {path: greeting.txt, pattern: "^hello$"}
"""
REJECTED = "The response stream was malformed. The response above may be incomplete."


def _event(name: str, data: Mapping[str, object]) -> str:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n"


def malformed_stream(padding: int = 0) -> RecordedStream:
    """A text block shown whole, then an event that is not JSON, then the rest of a normal
    stream (`padding` more deltas make it long enough to hang up on)."""
    start = {
        "type": "message_start",
        "message": {
            "id": "msg_bad",
            "type": "message",
            "role": "assistant",
            "content": [],
            "model": "claude-opus-5-5",
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 100, "output_tokens": 1},
        },
    }
    text = {"type": "text", "text": ""}
    delta = {"type": "text_delta", "text": "Working on it. "}
    body = (
        _event("message_start", start)
        + _event(
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": text},
        )
        + _event("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta})
        + _event("content_block_stop", {"type": "content_block_stop", "index": 0})
        + 'event: content_block_delta\ndata: {"type":"content_block_delta","index":1,"delta":{"type":"text_d\n\n'
        + "".join(
            _event(
                "content_block_delta", {"type": "content_block_delta", "index": 1, "delta": delta}
            )
            for _ in range(padding)
        )
        + _event(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn"},
                "usage": {"output_tokens": 12},
            },
        )
        + _event("message_stop", {"type": "message_stop"})
    )
    return RecordedStream(Path("malformed"), 200, "text/event-stream; charset=utf-8", body)


def test_a_stream_the_cli_hangs_up_on_is_kept_as_it_was_sent(tmp_path: Path) -> None:
    """The gateway keeps what it relayed when the client stops reading mid-stream, marked,
    and the failed recording keeps it in a partial that `atom cassette show` reads."""
    (tmp_path / "greet.atom.yaml").write_text(SPEC)
    [spec] = load_specs(tmp_path / "greet.atom.yaml")
    [turn, *_] = claude_requests()
    with RecordedUpstream(malformed_stream(padding=200), delay=0.02) as upstream:
        with recording(spec, upstream.url) as (source, gateway):
            tape = source.tape
            assert tape is not None
            with httpx.stream(
                "POST", f"{gateway.url}/v1/messages", json=turn.body, headers=turn.request_headers
            ) as reply:
                seen = b""
                for chunk in reply.iter_raw():
                    seen += chunk
                    if b"text_d\n" in seen:
                        break  # the client rejects the stream here and hangs up
            deadline = time.monotonic() + 10
            while not tape.finished_interactions() and time.monotonic() < deadline:
                time.sleep(0.05)
    [kept] = tape.finished_interactions()
    assert kept.response_headers[FAULT_HEADER] == ("sent a stream the CLI stopped reading mid-way")
    names = [name for name, _ in parse_sse(kept.response)]
    assert names[:4] == [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
    ]
    assert "message_stop" not in names  # the rest never reached the client
    assert tape.unrecovered_faults() == []  # kept as sent: no hole
    # The CLI gave up (test_the_clis_words_on_a_stream_it_rejected...): a failed recording.
    partial = source.finish(spec, failed=True, cli_version=CLI_VERSION)
    assert partial == tmp_path / "cassettes" / "greet" / "greet.partial.yaml"
    assert not partial.with_name("greet.yaml").exists()
    shown = CliRunner().invoke(cassette, ["show", str(partial)])
    assert shown.exit_code == 0, shown.output
    assert "Working on it." in shown.output
    assert "the stream broke here (sent a stream the CLI stopped reading mid-way" in shown.output


def test_the_clis_words_on_a_stream_it_rejected_make_a_recording_an_upstream_error(
    tmp_path: Path,
) -> None:
    """Claude Code 2.1.331's last words on the malformed stream above (`API Error: …`): the
    outcome is an upstream error saying the CLI rejected the stream, not the agent's
    failure. The CLI's rejection itself is shown end to end on a real stream it rejects
    (tests/replay/test_real_streams.py, a paused turn)."""
    record = IterationRecord(1, output=f"API Error: {REJECTED}", is_error=True)
    assert record.rejected_stream == REJECTED
    attempt = Attempt(1, tmp_path, RunOutcome(False, 1, reason="error"), [record])
    spec = Spec(name="greet", path=tmp_path / "greet.atom.yaml", line=1, prompt="p")
    result = SpecResult(spec, tmp_path, [attempt], 1.0, 0.8, source="record")
    outcome = result.outcome
    assert (outcome.status, outcome.error, outcome.label) == ("error", "upstream", "upstream error")
    assert outcome.exit_status == 2  # the machinery, not the agent
    assert f"Claude Code rejected the API's stream: {REJECTED}" in outcome.why
