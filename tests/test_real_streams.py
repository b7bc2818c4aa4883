"""Real Messages API streams, recorded by another public project, through pytest-atom (issue 27
item 10).

Each stream in `tests/data/real_api/` (byte for byte, sources in its README) is served by a
loopback upstream as the answer to the agent's first turn, whatever Claude Code asked; the
next turn ends the session (`EXIT_LOOP_NOW`). Each is recorded through pytest-atom with the
real CLI and replayed in `--atom-match=strict`: every block and delta the API sent is kept,
and the replay matches. The tokens pytest-atom reports (JUnit's `atom_tokens`) are held to
what the API billed, folded from the recorded streams themselves. The three-replay sweep is
`benchmarks/real_streams.py`; the suite keeps one record and one strict replay per stream.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from atom_cli.cassette_cmd import cassette as cassette_group
from pytest_atom.cassettes.cassette import Cassette
from pytest_atom.model.messages import fold_sse
from pytest_atom.model.result import SpecResult
from pytest_atom.model.settings import RunSettings
from pytest_atom.model.spec import load_specs
from pytest_atom.model.spec_types import Spec
from pytest_atom.reports.properties import result_properties
from pytest_atom.reports.transcript import is_messages
from pytest_atom.run.spec_run import run_spec
from tests.real_streams import RecordedStream, RecordedUpstream, billed_tokens

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
#: Streams whose `usage.iterations` bill tokens that Claude Code 2.1.331's own totals (and so
#: pytest-atom's, until the one usage fold lands) leave out: a compaction step's own input
#: and output. (It does count the advisor's iterations.)
ITERATIONS: set[str] = set()


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
        settings=RunSettings(match=match),  # type: ignore[arg-type]
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


def blocks(text: str) -> list[dict[str, Any]]:
    return list(fold_sse(text)["content"])


@pytest.mark.slow
@pytest.mark.parametrize("name", list(STREAMS))
def test_a_real_stream_records_and_replays_strictly(
    name: str, tmp_path: Path, claude_bin: Path, request: pytest.FixtureRequest
) -> None:
    stream = RecordedStream.load(STREAMS[name])
    recorded = record(tmp_path, stream, claude_bin)
    assert recorded.passed, recorded.report()
    assert recorded.cassette is not None and recorded.cassette.name == "real.yaml"
    # Lossless: the answer the cassette keeps is the API's, block for block, delta for delta.
    kept = [
        i for i in Cassette.load(recorded.cassette).interactions if stream_id(stream) in i.response
    ]
    assert len(kept) == 1
    assert blocks(kept[0].response) == blocks(stream.body)
    assert billed_tokens(kept[0].response) == stream.billed_tokens()
    # The paths the model wrote (a code-execution container's /tmp/hello.txt) are the
    # conversation: the pre-commit check passes the recording.
    check = CliRunner().invoke(cassette_group, ["check", str(recorded.cassette)])
    assert check.exit_code == 0, check.output
    before = recorded.cassette.read_bytes()
    replayed = replay(tmp_path, claude_bin)
    assert replayed.passed and not replayed.divergences, replayed.report()
    assert replayed.source == "replay" and recorded.cassette.read_bytes() == before
    # The tokens reported equal the tokens billed, recording and replaying alike.
    billed = recording_billed(recorded.cassette)
    if name in ITERATIONS:
        request.applymarker(
            pytest.mark.xfail(
                strict=True,
                reason="issue 27 item 1: a compaction step's own tokens (usage.iterations) are "
                "billed, but Claude Code's totals, which pytest-atom reports, leave them out",
            )
        )
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
    stream = RecordedStream.load("test_pause_turn_web_search_streaming_vcr")
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
