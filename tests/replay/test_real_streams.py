"""Real Messages API streams, recorded by another public project, through pytest-atom.

Each stream in `tests/data/real_api/` (byte for byte, sources in its README) goes through
the real gateway with an HTTP client, as the answer to Claude Code's own first turn (a
shipped cassette's request: what the gateway records in use): relayed whole, kept
losslessly (every block and delta), billed as the API billed it (`cost.billing`'s fold,
held to the stream's own usage) and replayed in `--atom-match=strict`.

Through Claude Code, once, for the richest stream: served by a loopback upstream as the
answer to the agent's first turn, whatever the CLI asked (the next turn ends the session,
`EXIT_LOOP_NOW`), recorded and replayed strictly, the tokens pytest-atom reports (JUnit's
`atom_tokens`) held to what the API billed; and the stream Claude Code rejects (a paused
turn), kept as evidence. The three-replay sweep of every stream through the CLI is
`benchmarks/real_streams.py`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from atom_cli.cassette_cmd import cassette as cassette_group
from pytest_atom.gateway import Gateway
from pytest_atom.gateway.messages import fold_sse
from pytest_atom.gateway.server import Meter
from pytest_atom.replay.cassette import Cassette
from pytest_atom.reports.properties import result_properties
from tests.real_streams import (
    PAUSED,
    STREAMS,
    RecordedStream,
    billed_tokens,
    record,
    recording_billed,
    replay,
    spec_in,
)
from tests.stream_helpers import (
    CLI_VERSION,
    Answering,
    claude_requests,
    recording,
    replaying,
    send,
)


def blocks(text: str) -> list[dict[str, Any]]:
    return list(fold_sse(text)["content"])


#: The stream Claude Code records and replays end to end: the richest (a server tool's
#: use and result, citations, thinking with its signature).
RICHEST = "web-search-citations"


@pytest.mark.parametrize("name", [*STREAMS, "paused-turn"])
def test_a_real_stream_is_relayed_kept_billed_and_replayed_strictly_by_the_gateway(
    name: str, tmp_path: Path
) -> None:
    stream = RecordedStream.load(STREAMS.get(name, PAUSED))
    [turn, *_] = claude_requests()
    spec, meter = spec_in(tmp_path), Meter()
    with Gateway(Answering(stream)) as api, recording(spec, api.url, meter=meter) as (source, gw):
        relayed = send(gw.url, turn)
    written = source.finish(spec, failed=False, cli_version=CLI_VERSION)
    assert relayed.status_code == 200 and blocks(relayed.text) == blocks(stream.body)
    # Billed by the one fold as the API billed it (`usage.iterations` included).
    assert meter.bills.by_role["executor"].tokens == stream.billed_tokens()
    # Lossless: the answer the cassette keeps is the API's, block for block, delta for delta.
    assert written == tmp_path / "cassettes" / "real" / "real.yaml"
    [kept] = Cassette.load(written).interactions
    assert stream_id(stream) in kept.response and blocks(kept.response) == blocks(stream.body)
    assert billed_tokens(kept.response) == stream.billed_tokens()
    # The paths the model wrote (a code-execution container's /tmp/hello.txt) are the
    # conversation: the pre-commit check passes the recording.
    check = CliRunner().invoke(cassette_group, ["check", str(written)])
    assert check.exit_code == 0, check.output
    before = written.read_bytes()
    tape = replaying(written, "strict")
    with Gateway(tape) as gateway:
        again = send(gateway.url, turn)
    assert again.status_code == 200 and blocks(again.text) == blocks(stream.body)
    assert not tape.divergences and written.read_bytes() == before


@pytest.mark.slow
def test_a_real_stream_records_and_replays_strictly_through_claude_code(
    tmp_path: Path, claude_bin: Path
) -> None:
    stream = RecordedStream.load(STREAMS[RICHEST])
    recorded = record(tmp_path, stream, claude_bin)
    assert recorded.passed, recorded.report()
    assert recorded.cassette is not None and recorded.cassette.name == "real.yaml"
    # Claude Code read the whole stream: the cassette keeps the API's answer, losslessly.
    kept = [
        i for i in Cassette.load(recorded.cassette).interactions if stream_id(stream) in i.response
    ]
    assert len(kept) == 1
    assert blocks(kept[0].response) == blocks(stream.body)
    assert billed_tokens(kept[0].response) == stream.billed_tokens()
    check = CliRunner().invoke(cassette_group, ["check", str(recorded.cassette)])
    assert check.exit_code == 0, check.output
    before = recorded.cassette.read_bytes()
    replayed = replay(tmp_path, claude_bin)
    assert replayed.passed and not replayed.divergences, replayed.report()
    assert replayed.source == "replay" and recorded.cassette.read_bytes() == before
    # The tokens reported equal the tokens billed, recording and replaying alike.
    billed = recording_billed(recorded.cassette)
    assert result_properties(recorded)["atom_tokens"] == billed
    assert result_properties(replayed)["atom_tokens"] == billed


def stream_id(stream: RecordedStream) -> str:
    """The API's message id of the stream: what finds it in a cassette."""
    start = next(data for name, data in stream.events() if name == "message_start")
    return str(start["message"]["id"])


@pytest.mark.slow
def test_a_real_stream_the_cli_rejects_is_kept_and_an_upstream_error(
    tmp_path: Path, claude_bin: Path
) -> None:
    """A web search turn the API paused (`stop_reason: pause_turn`, 10 searches in): `claude
    -p` does not resume it and stops with an error. The stream is the evidence."""
    stream = RecordedStream.load(PAUSED)
    result = record(tmp_path, stream, claude_bin, turns=99)
    outcome = result.outcome
    assert (outcome.label, outcome.exit_status) == ("upstream error", 2)
    assert "Claude Code rejected the API's stream: the API paused the turn" in outcome.why
    partial = tmp_path / "cassettes" / "real" / "real.partial.yaml"
    assert (
        result.cassette == partial and not (tmp_path / "cassettes" / "real" / "real.yaml").exists()
    )
    [kept, *_] = [i for i in Cassette.load(partial).interactions if stream_id(stream) in i.response]
    assert blocks(kept.response) == blocks(stream.body)
    shown = CliRunner().invoke(cassette_group, ["show", str(partial)])
    assert shown.exit_code == 0, shown.output
    assert "web_search" in shown.output
