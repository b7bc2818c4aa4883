"""A fault never costs a good cassette (issue 27 item 4).

Re-recording a spec over its good cassette (`--atom-record-mode=all`) while the upstream
resets the connection mid-stream once, or ends one stream without `message_stop`: Claude
Code continues the conversation ("Your response above was cut off mid-stream…"), and here
the agent then fails its check. The fault may be why, so the old cassette stays
byte-identical, the new recording is kept beside it as `<name>.partial.yaml`, and the
outcome is an upstream error naming the fault. Only a recording whose spec passes replaces
the cassette.

Each fault is shown at the real gateway, with an HTTP client sending Claude Code's own
requests (a shipped cassette's) and closing the recording as a run does; one disturbed
recording runs end to end through Claude Code.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from pytest_atom.cassettes.cassette import Cassette
from pytest_atom.model.messages import parse_sse
from pytest_atom.model.spec_types import Spec
from tests.fault_helpers import (
    CASSETTE,
    PARTIAL,
    TURNS,
    greet,
    output,
    project,
    record,
    record_good,
)
from tests.faults import FaultyUpstream
from tests.helpers import bash
from tests.stream_helpers import CLI_VERSION, claude_requests, recording, send

#: The agent writes the wrong word: the spec's check fails after the fault.
WRONG = [bash("echo goodbye > greeting.txt", "Writing it."), {"text": "Done.\nEXIT_LOOP_NOW"}]
#: What the failure report says of each fault.
SAID = {
    "reset_mid_stream": "reset the connection mid-stream",
    "truncated": "ended the stream without message_stop",
}


@pytest.fixture
def good(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Spec, bytes]:
    """The greet spec and its good cassette, in the current folder."""
    monkeypatch.chdir(tmp_path)
    recorded = record_good(tmp_path)
    return greet(tmp_path), recorded


@pytest.fixture
def upstreams() -> Iterator[list[FaultyUpstream]]:
    started: list[FaultyUpstream] = []
    yield started
    for upstream in started:
        upstream.stop()


def disturbed(
    spec: Spec, upstreams: list[FaultyUpstream], turns: Sequence[Mapping[str, Any]], fault: str
) -> Any:
    """Record `spec` at the gateway while its first streamed answer breaks off (`fault`),
    then the conversation goes on as Claude Code continues a cut-off turn: its next turns,
    answered from `turns`. The model source, to finish as the run would."""
    upstream = FaultyUpstream(turns, [fault]).start()
    upstreams.append(upstream)
    cut, *rest = [i for i in claude_requests() if i.role == "executor"]
    with recording(spec, upstream.url) as (source, gateway):
        name, data = parse_sse(send(gateway.url, cut).text)[-1]
        assert name == "error" and SAID[fault] in data
        for turn in rest[: len(turns)]:
            assert send(gateway.url, turn).status_code == 200
    assert upstream.log.count("turn ok") == len(turns) and upstream.faulted == 1
    return source


@pytest.mark.parametrize("fault", list(SAID))
def test_a_disturbed_recording_that_fails_keeps_the_good_cassette(
    good: tuple[Spec, bytes], upstreams: list[FaultyUpstream], fault: str
) -> None:
    spec, recorded = good
    source = disturbed(spec, upstreams, WRONG, fault)
    # The agent ran on past the fault, and failed its check.
    partial = source.finish(spec, failed=False, cli_version=CLI_VERSION, passed=False)
    assert Path(CASSETTE).read_bytes() == recorded
    assert partial == Path.cwd() / PARTIAL
    kept = Cassette.load(partial)
    assert any("goodbye" in i.response for i in kept.interactions)  # the new conversation
    assert [f.what for f in source.disturbed] == [SAID[fault]]  # what the report names


@pytest.mark.parametrize("fault", list(SAID))
def test_a_disturbed_recording_that_passes_replaces_the_cassette(
    good: tuple[Spec, bytes], upstreams: list[FaultyUpstream], fault: str
) -> None:
    spec, recorded = good
    source = disturbed(spec, upstreams, TURNS, fault)
    cassette = source.finish(spec, failed=False, cli_version=CLI_VERSION, passed=True)
    assert cassette == Path.cwd() / CASSETTE and cassette.read_bytes() != recorded
    assert not Path(PARTIAL).exists() and source.disturbed == []
    assert any("hello" in i.response for i in Cassette.load(cassette).interactions)


@pytest.mark.slow
@pytest.mark.usefixtures("claude_for_pytester")
def test_a_disturbed_recording_through_claude_code_keeps_the_good_cassette(
    pytester: pytest.Pytester,
    upstreams: list[FaultyUpstream],
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    recorded = record_good(tmp_path_factory.mktemp("good"))
    cassette = project(pytester, recorded, 60)
    upstream = FaultyUpstream(WRONG, ["reset_mid_stream"]).start()
    upstreams.append(upstream)
    result = record(pytester, upstream.url, "all")
    text = output(result)
    assert "Traceback" not in text, text
    # The CLI got past the fault (it continued the cut-off turn) and the agent ran on.
    assert upstream.log.count("turn ok") >= 2, upstream.log
    assert cassette.read_bytes() == recorded
    partial = pytester.path / PARTIAL
    kept = Cassette.load(partial)
    assert any("goodbye" in i.response for i in kept.interactions)  # the new conversation
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*greet.atom.yaml::greet  upstream error *"])
    assert SAID["reset_mid_stream"] in text, text
    assert (
        f"recording: failed, so {CASSETTE} was left as it was; what was recorded is in "
        f"{PARTIAL}" in text
    )
