"""Recording under upstream faults: the real CLI, a fault-injecting upstream (tests/faults.py).

A failed recording must change nothing (the cassette stays byte-identical, what was
recorded goes to `<name>.partial.yaml`), only whole exchanges may be stored, and every
fault must be reported in words, never as a traceback. Each run is bounded by the spec's
`timeout:`, so an upstream that never answers costs seconds, not the CLI's 10 minutes.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner

from atom_cli.main import main
from pytest_atom.cassettes.cassette import FAULT_HEADER, Cassette
from pytest_atom.cassettes.replay import CassetteResponder
from pytest_atom.cassettes.scrub import Scrubber
from pytest_atom.gateway import Gateway
from pytest_atom.gateway.normalize import Normalizer
from pytest_atom.model.messages import parse_sse
from tests.fault_helpers import (
    CASSETTE,
    PARTIAL,
    PROMPT,
    TURNS,
    output,
    project,
    record,
    record_good,
)
from tests.faults import FaultyUpstream, refused_url

pytestmark = pytest.mark.usefixtures("claude_for_pytester")

#: Failing runs stop here at the latest: long enough for the CLI to reach the upstream.
FAIL_TIMEOUT = 5

#: Each fault no retry gets past, the record mode it is recorded in over an existing
#: cassette, and what the failure report says about it.
FAILING = {
    "400": ("new_episodes", "the CLI gave up on an API error 400"),  # never retried
    "500": ("all", "answered 500 (api_error: Internal server error)"),
    "529": ("all", "answered 529 (overloaded_error: Overloaded)"),
    "reset_mid_stream": ("all", "reset the connection mid-stream"),
    "truncated": ("all", "ended the stream without message_stop"),
    "hang": ("all", "had not answered after"),
    "refused": ("all", "refused the connection"),
}


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory, claude_bin: Path) -> bytes:
    """A good cassette, recorded once for the module from a scripted upstream."""
    return record_good(tmp_path_factory.mktemp("recorded"), claude_bin)


@pytest.fixture
def upstreams() -> Iterator[list[FaultyUpstream]]:
    started: list[FaultyUpstream] = []
    yield started
    for upstream in started:
        upstream.stop()


def faulty(upstreams: list[FaultyUpstream], faults: str | list[str]) -> str:
    """The URL of a started fault-injecting upstream (or of a port that refuses)."""
    if faults == "refused":
        return refused_url()
    upstream = FaultyUpstream(TURNS, faults).start()
    upstreams.append(upstream)
    return upstream.url


def assert_whole_exchanges(cassette: Path) -> None:
    """No retried answer (429, 529, 5xx), and no stream without its message_stop but one
    kept, marked, as the CLI saw it break."""
    for interaction in Cassette.load(cassette).interactions:
        assert interaction.status not in (408, 409, 429) and interaction.status < 500
        if "event-stream" in interaction.response_headers.get("content-type", ""):
            names = [name for name, _ in parse_sse(interaction.response)]
            if FAULT_HEADER in interaction.response_headers:
                assert names[-1] == "error" and "message_stop" not in names, names
            else:
                assert names[-1] == "message_stop" and "error" not in names, names


@pytest.mark.slow
@pytest.mark.parametrize("fault", list(FAILING))
def test_a_failed_recording_changes_nothing_and_says_why(
    pytester: pytest.Pytester, recorded: bytes, upstreams: list[FaultyUpstream], fault: str
) -> None:
    mode, report = FAILING[fault]
    # new_episodes forwards only what does not match: a new prompt
    prompt = PROMPT if mode == "all" else "Create greeting.txt, please."
    cassette = project(pytester, recorded, FAIL_TIMEOUT, prompt)
    result = record(pytester, faulty(upstreams, fault), mode)
    result.assert_outcomes(failed=1)
    text = output(result)
    assert "Traceback" not in text, text
    assert cassette.read_bytes() == recorded
    assert report in text, text
    result.stdout.fnmatch_lines(["*greet.atom.yaml::greet  upstream error *"])
    partial = pytester.path / PARTIAL
    if fault == "refused":
        assert not partial.exists()  # nothing got through to keep
        return
    # Whatever whole exchanges got through (Claude Code 2.1.197's HEAD preflight, say; the
    # pinned CLI may get none through) are kept beside the cassette, never in it.
    if partial.exists():
        assert_whole_exchanges(partial)
        assert (
            f"recording: failed, so {CASSETTE} was left as it was; what was recorded is in "
            f"{PARTIAL}" in text
        )


@pytest.mark.slow
def test_an_agent_that_got_past_a_fault_the_recording_did_not_is_an_error_not_a_pass(
    pytester: pytest.Pytester,
    recorded: bytes,
    upstreams: list[FaultyUpstream],
    old_claude_bin: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ATOM_CLAUDE_BIN", str(old_claude_bin))  # it still sends `HEAD /`
    cassette = project(pytester, recorded, 30)
    # The CLI never retries its HEAD preflight: the agent passes, the recording has a hole.
    upstream = FaultyUpstream(TURNS, "500", methods=("HEAD",)).start()
    upstreams.append(upstream)
    result = record(pytester, upstream.url, "all")
    result.assert_outcomes(failed=1)
    assert "Traceback" not in output(result)
    assert cassette.read_bytes() == recorded
    assert_whole_exchanges(pytester.path / PARTIAL)
    result.stdout.fnmatch_lines(
        [
            "*pytest-atom harness error in spec 'greet': recording failed: HEAD /: upstream "
            f"{upstream.url} answered 500, and no retry got past it, so {CASSETTE} was left as "
            f"it was; what was recorded is in {PARTIAL}. Record it again with: "
            "pytest --atom 'greet.atom.yaml::greet' --atom-record-mode=all",
        ]
    )


@pytest.mark.slow
def test_a_failed_first_recording_writes_no_cassette(
    pytester: pytest.Pytester, upstreams: list[FaultyUpstream]
) -> None:
    cassette = project(pytester, None, FAIL_TIMEOUT)
    result = record(pytester, faulty(upstreams, "400"), "once")
    result.assert_outcomes(failed=1)
    assert "Traceback" not in output(result)
    assert not cassette.exists()
    assert Cassette.load(pytester.path / PARTIAL).interactions


@pytest.mark.slow
def test_retried_faults_leave_only_whole_exchanges_that_replay_offline(
    pytester: pytest.Pytester, upstreams: list[FaultyUpstream]
) -> None:
    cassette = project(pytester, None, 60)
    stale = pytester.path / PARTIAL
    stale.parent.mkdir(parents=True)
    stale.write_text("interactions: []\n")
    # The CLI retries each of these itself, with the very same request.
    result = record(pytester, faulty(upstreams, ["429", "529", "reset"]), "once")
    result.assert_outcomes(passed=1)
    assert "Traceback" not in output(result)
    [upstream] = upstreams
    turns = [(t, what) for t, what in upstream.timed_log if what.startswith("turn")]
    assert [what for _, what in turns] == [
        "turn 429",
        "turn 529",
        "turn reset",
        "turn ok",
        "turn ok",
    ]
    # retry-after: 1 reached the CLI, whose own first backoff is 0.5 to 0.625 s
    assert turns[1][0] - turns[0][0] >= 0.95
    assert_whole_exchanges(cassette)
    stored = Cassette.load(cassette).interactions
    assert [i.status for i in stored if i.method == "POST"] == [200, 200]  # the two turns
    assert not stale.exists()  # a successful recording removes a stale partial
    upstream.stop()
    pytester.runpytest("--atom").assert_outcomes(passed=1)  # mode none: offline replay


@pytest.mark.slow
def test_atom_run_exits_2_for_an_upstream_error(
    pytester: pytest.Pytester, recorded: bytes, upstreams: list[FaultyUpstream]
) -> None:
    cassette = project(pytester, recorded, FAIL_TIMEOUT)
    url = faulty(upstreams, "400")
    result = CliRunner().invoke(
        main, ["run", "greet.atom.yaml", "--record-mode=all", f"--upstream={url}"]
    )
    assert result.exit_code == 2, result.output
    assert "upstream: the CLI gave up on an API error 400" in result.output
    assert "greet.atom.yaml::greet  upstream error" in result.output
    assert "Traceback" not in result.output
    assert cassette.read_bytes() == recorded


# ---------------------------------------------------------------- the gateway on its own
# The same faults, sent to a recording gateway by hand: what the CLI receives, byte by byte.

TURN = {"model": "m", "max_tokens": 10, "tools": [{"name": "Bash"}], "messages": []}


@pytest.fixture
def recording(tmp_path: Path) -> Iterator[Any]:
    """Start a recording gateway in front of a fault-injecting upstream."""
    gateways: list[Gateway] = []
    upstreams: list[FaultyUpstream] = []

    def start(faults: str | list[str]) -> tuple[Gateway, CassetteResponder]:
        upstream = FaultyUpstream(TURNS, faults).start()
        upstreams.append(upstream)
        tape = CassetteResponder(
            Cassette(tmp_path / "c.yaml"),
            Normalizer({}),
            Scrubber(env={}),
            replay=False,
            upstream=upstream.url,
        )
        gateways.append(Gateway(tape).start())
        return gateways[-1], tape

    yield start
    for gateway in gateways:
        gateway.stop()
    for upstream in upstreams:
        upstream.stop()


def test_a_transient_answer_reaches_the_cli_with_its_retry_headers_and_is_not_kept(
    recording: Any,
) -> None:
    gateway, tape = recording(["429"])
    turn = {**TURN, "stream": True}
    first = httpx.post(f"{gateway.url}/v1/messages", json=turn)
    assert first.status_code == 429 and first.headers["retry-after"] == "1"
    assert first.json()["error"]["type"] == "rate_limit_error"
    second = httpx.post(f"{gateway.url}/v1/messages", json=turn)
    assert second.status_code == 200 and "event: message_stop" in second.text
    assert [i.status for i in tape.finished_interactions()] == [200]
    assert len(tape.faults) == 1 and tape.unrecovered_faults() == []


def test_a_cut_off_stream_ends_in_an_error_event_naming_the_upstream(
    recording: Any, capfd: pytest.CaptureFixture[str]
) -> None:
    gateway, tape = recording("reset_mid_stream")
    reply = httpx.post(f"{gateway.url}/v1/messages", json={**TURN, "stream": True})
    events = parse_sse(reply.text)
    assert [name for name, _ in events][:3] == [
        "message_start",
        "content_block_start",
        "content_block_delta",
    ]
    name, data = events[-1]
    assert name == "error" and "message_stop" not in [n for n, _ in events]
    assert f"pytest-atom gateway: upstream {tape.upstream} reset the connection mid-stream" in data
    # Kept as the CLI saw it, marked: Claude Code continues such a conversation (it does
    # not resend), and a replay must break the same way for the continuation to match.
    [kept] = tape.finished_interactions()
    assert kept.response_headers[FAULT_HEADER].startswith("reset the connection mid-stream")
    assert [n for n, _ in parse_sse(kept.response)] == [n for n, _ in events]
    assert tape.unrecovered_faults() == []
    assert "Traceback" not in "".join(capfd.readouterr())


def test_a_cut_off_json_body_is_cut_off_for_the_cli_too(
    recording: Any, capfd: pytest.CaptureFixture[str]
) -> None:
    gateway, tape = recording("reset_mid_stream")
    with pytest.raises(httpx.RemoteProtocolError):  # a broken body, not a forged JSON one
        httpx.post(f"{gateway.url}/v1/messages", json=TURN)
    assert tape.finished_interactions() == [] and len(tape.unrecovered_faults()) == 1
    assert "Traceback" not in "".join(capfd.readouterr())


def test_a_refused_upstream_is_a_502_naming_it(tmp_path: Path) -> None:
    url = refused_url()
    tape = CassetteResponder(
        Cassette(tmp_path / "c.yaml"), Normalizer({}), Scrubber(env={}), replay=False, upstream=url
    )
    with Gateway(tape) as gateway:
        reply = httpx.post(f"{gateway.url}/v1/messages", json=TURN)
    assert reply.status_code == 502
    assert reply.json()["error"]["message"] == (
        f"pytest-atom gateway: upstream {url} refused the connection"
    )
