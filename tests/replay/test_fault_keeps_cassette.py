"""A fault never costs a good cassette.

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

from pytest_atom.gateway.messages import parse_sse
from pytest_atom.replay.cassette import Cassette
from pytest_atom.replay.normalize import Normalizer
from pytest_atom.replay.recording import ModelSource
from pytest_atom.replay.responder import CassetteResponder
from pytest_atom.replay.scrub import Scrubber
from pytest_atom.settings.modes import SourceKind
from pytest_atom.spec.types import Spec
from tests.fault_helpers import (
    CASSETTE,
    PARTIAL,
    TURNS,
    greet,
    output,
    project,
    receive,
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
        broken = receive(gateway.url, cut)  # as it broke: cut, or ended short
        assert "message_stop" not in [name for name, _ in parse_sse(broken.text)]
        assert broken.cut == (fault == "reset_mid_stream")
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


# ------------------------------------------------- proven by a replay before it replaces


@pytest.mark.parametrize("fault", list(SAID))
def test_a_disturbed_recording_whose_replay_fails_keeps_the_good_cassette(
    good: tuple[Spec, bytes], upstreams: list[FaultyUpstream], fault: str
) -> None:
    spec, recorded = good
    source = disturbed(spec, upstreams, TURNS, fault)
    proven: list[Cassette] = []

    def prove(candidate: Path) -> str:
        proven.append(Cassette.load(candidate))
        return "the agent did not finish (error): API Error: Connection error."

    partial = source.finish(spec, failed=False, cli_version=CLI_VERSION, passed=True, prove=prove)
    # The replay was given the new recording, away from the cassette, which is untouched.
    [candidate] = proven
    assert any("hello" in i.response for i in candidate.interactions)
    assert candidate.path.parent != Path.cwd() / CASSETTE.parent
    assert not candidate.path.exists()
    assert Path(CASSETTE).read_bytes() == recorded
    assert partial == Path.cwd() / PARTIAL
    assert Cassette.load(partial).interactions == candidate.interactions
    assert [f.what for f in source.disturbed] == [SAID[fault]]  # the report names the fault
    assert source.failure is not None
    assert source.failure.startswith("recording failed: POST /v1/messages: upstream ")
    assert SAID[fault] in source.failure
    assert (
        "Claude Code got past it, but the new recording could not be replayed offline (the "
        "agent did not finish (error): API Error: Connection error.), so "
        f"{CASSETTE} was left as it was; what was recorded is in {PARTIAL}. Record it again "
        "with: pytest --atom 'greet.atom.yaml::greet' --atom-record-mode=all"
    ) in source.failure


@pytest.mark.parametrize("fault", list(SAID))
def test_a_disturbed_recording_that_replays_replaces_the_cassette_and_notes_the_fault(
    good: tuple[Spec, bytes], upstreams: list[FaultyUpstream], fault: str
) -> None:
    spec, recorded = good
    Path(PARTIAL).write_text("interactions: []\n")  # a stale one, from an earlier failure
    source = disturbed(spec, upstreams, TURNS, fault)
    proven: list[Path] = []

    def prove(candidate: Path) -> str | None:
        proven.append(candidate)
        return None  # it replayed

    cassette = source.finish(spec, failed=False, cli_version=CLI_VERSION, passed=True, prove=prove)
    assert len(proven) == 1 and cassette == Path.cwd() / CASSETTE
    assert cassette.read_bytes() != recorded and not Path(PARTIAL).exists()
    assert source.failure is None and source.disturbed == []
    # The broken stream is in it, as the CLI met it, and the fault is noted.
    [note] = Cassette.load(cassette).metadata["upstream_faults"]
    assert note == {
        "request": "POST /v1/messages",
        "what": SAID[fault],
        "in_cassette": True,
        "tokens": note["tokens"],
    }
    assert note["tokens"] > 0  # what the broken stream billed stays in the figures


def test_a_recording_that_met_no_fault_is_not_replayed_first(
    good: tuple[Spec, bytes], upstreams: list[FaultyUpstream]
) -> None:
    spec, _ = good
    upstream = FaultyUpstream(TURNS, []).start()
    upstreams.append(upstream)

    def prove(candidate: Path) -> str:
        raise AssertionError(f"proved {candidate}")

    with recording(spec, upstream.url) as (source, gateway):
        for turn in [i for i in claude_requests() if i.role == "executor"][: len(TURNS)]:
            assert send(gateway.url, turn).status_code == 200
    cassette = source.finish(spec, failed=False, cli_version=CLI_VERSION, passed=True, prove=prove)
    assert cassette == Path.cwd() / CASSETTE
    assert "upstream_faults" not in Cassette.load(cassette).metadata


@pytest.mark.parametrize(
    ("kind", "metadata", "reenacts"),
    [
        ("replay", {"upstream_faults": [{"what": "sent an error event mid-stream"}]}, True),
        ("replay", {}, False),
        ("record", {"upstream_faults": [{"what": "sent an error event mid-stream"}]}, False),
    ],
)
def test_only_a_replay_of_a_recording_that_met_a_fault_runs_a_failed_call_again(
    tmp_path: Path, kind: SourceKind, metadata: dict[str, Any], reenacts: bool
) -> None:
    """Claude Code gives up a call on an overload after content; the recording ran the call
    again (`--resume`), so its replay must too, or the resumed request is never sent."""
    cassette = Cassette(tmp_path / "c.yaml", [], metadata)
    tape = CassetteResponder(cassette, Normalizer({}), Scrubber(env={}))
    assert ModelSource(kind, tape).reenacts_retries is reenacts
