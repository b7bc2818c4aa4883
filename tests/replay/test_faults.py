"""Recording under upstream faults: a fault-injecting upstream (tests/faults.py).

A failed recording must change nothing (the cassette stays byte-identical, what was
recorded goes to `<name>.partial.yaml`), only whole exchanges may be stored, and every
fault must be reported in words, never as a traceback. Each fault kind is shown at the real
gateway, with an HTTP client sending Claude Code's own requests (a shipped cassette's) and
closing the recording as a run does; one recording whose CLI gives up on a fault runs end
to end through Claude Code and `atom run`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner

from atom_cli.main import main
from pytest_atom.gateway import Gateway
from pytest_atom.gateway.messages import parse_sse
from pytest_atom.replay.cassette import CUT_HEADER, FAULT_HEADER, Cassette
from pytest_atom.replay.normalize import Normalizer
from pytest_atom.replay.responder import CassetteResponder
from pytest_atom.replay.scrub import Scrubber
from pytest_atom.spec.types import Spec
from tests.fault_helpers import (
    CASSETTE,
    GREET,
    PARTIAL,
    PROMPT,
    TURNS,
    executor_turns,
    greet,
    project,
    receive,
    record_good,
)
from tests.faults import FaultyUpstream, refused_url
from tests.stream_helpers import CLI_VERSION, recording, replaying, send

#: Each fault no retry gets past: the record mode it is recorded in over an existing
#: cassette, the status the CLI is answered with (None: no answer before it gives up), and
#: the fault the gateway names (None: the answer is whole, and kept; the CLI gives up on it).
FAILING: dict[str, tuple[str, int | None, str | None]] = {
    "400": ("new_episodes", 400, None),  # never retried
    "500": ("all", 500, "answered 500 (api_error: Internal server error)"),
    "529": ("all", 529, "answered 529 (overloaded_error: Overloaded)"),
    "reset_mid_stream": ("all", 200, "reset the connection mid-stream"),
    "truncated": ("all", 200, "ended the stream without message_stop"),
    "overloaded_mid_stream": ("all", 200, "sent an error event mid-stream"),
    "hang": ("all", None, "had not answered after"),
    "refused": ("all", 502, "refused the connection"),
}


@pytest.fixture
def good(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Spec, bytes]:
    """The greet spec and its good cassette, in the current folder (reports name paths
    relative to it)."""
    monkeypatch.chdir(tmp_path)
    recorded = record_good(tmp_path)
    return greet(tmp_path), recorded


@pytest.fixture
def upstreams() -> Iterator[list[FaultyUpstream]]:
    started: list[FaultyUpstream] = []
    yield started
    for upstream in started:
        upstream.stop()


def faulty(upstreams: list[FaultyUpstream], faults: str | list[str], **kw: Any) -> str:
    """The URL of a started fault-injecting upstream (or of a port that refuses)."""
    if faults == "refused":
        return refused_url()
    upstream = FaultyUpstream(TURNS, faults, **kw).start()
    upstreams.append(upstream)
    return upstream.url


def assert_whole_exchanges(cassette: Path) -> None:
    """No retried answer (429, 529, 5xx), and no stream without its message_stop but one
    kept, marked, as the CLI saw it break: nothing the gateway made up added to it."""
    for interaction in Cassette.load(cassette).interactions:
        assert interaction.status not in (408, 409, 429) and interaction.status < 500
        if "event-stream" in interaction.response_headers.get("content-type", ""):
            names = [name for name, _ in parse_sse(interaction.response)]
            if FAULT_HEADER in interaction.response_headers:
                assert "message_stop" not in names, names
                assert "pytest-atom gateway" not in interaction.response
            else:
                assert names[-1] == "message_stop" and "error" not in names, names


def answered(url: str, fault: str) -> int | None:
    """The status the gateway answers the agent's first turn with; None when the client
    gave up waiting (as the run's timeout ends the CLI)."""
    [turn, *_] = executor_turns()
    # new_episodes forwards only what does not match: a new prompt
    changes = {"messages": [{"role": "user", "content": "Create greeting.txt, please."}]}
    try:
        timeout = 1 if fault == "hang" else 60
        reply = receive(url, turn, timeout, **(changes if fault == "400" else {}))
    except httpx.ReadTimeout:
        return None
    if reply.status == 200 and FAILING[fault][2]:  # a stream the upstream broke, as it broke
        events = [name for name, _ in parse_sse(reply.text)]
        assert "message_stop" not in events and "pytest-atom gateway" not in reply.text
        assert reply.cut == (fault == "reset_mid_stream"), reply
        assert (events[-1] == "error") == (fault == "overloaded_mid_stream"), events
    return reply.status


@pytest.mark.parametrize("fault", list(FAILING))
def test_a_failed_recording_changes_nothing_and_says_why(
    good: tuple[Spec, bytes],
    upstreams: list[FaultyUpstream],
    fault: str,
    capfd: pytest.CaptureFixture[str],
) -> None:
    (spec, recorded), (mode, status, said) = good, FAILING[fault]
    with recording(spec, faulty(upstreams, fault), mode) as (source, gateway):
        assert answered(gateway.url, fault) == status
    # The CLI gave up, or the run's timeout stopped it: a failed run.
    written = source.finish(spec, failed=True, cli_version=CLI_VERSION, passed=False)
    assert source.tape is not None
    reported = [f.description for f in source.tape.faults_to_report(unfinished=True)]
    assert Path(CASSETTE).read_bytes() == recorded
    if said is None:
        assert reported == []
    else:
        assert reported and said in reported[0], reported
    # Whatever whole exchanges got through (a 400, a stream as the CLI saw it break) are
    # kept beside the cassette, never in it; a retried status is never kept.
    if fault in ("400", "reset_mid_stream", "truncated", "overloaded_mid_stream"):
        assert written == Path.cwd() / PARTIAL
        assert_whole_exchanges(written)
    else:
        assert written is None and not Path(PARTIAL).exists()
    assert "Traceback" not in "".join(capfd.readouterr())  # said in words, never a traceback


def test_an_agent_that_got_past_a_fault_the_recording_did_not_is_an_error_not_a_pass(
    good: tuple[Spec, bytes], upstreams: list[FaultyUpstream]
) -> None:
    spec, recorded = good
    url = faulty(upstreams, "500", methods=("HEAD",))
    with recording(spec, url) as (source, gateway):
        # Claude Code 2.1.197's preflight, which it never retries: the agent goes on.
        assert httpx.head(f"{gateway.url}/").status_code == 500
        for turn in executor_turns():
            assert send(gateway.url, turn).status_code == 200
    written = source.finish(spec, failed=False, cli_version=CLI_VERSION, passed=True)
    assert Path(CASSETTE).read_bytes() == recorded
    assert written is not None
    assert_whole_exchanges(written)
    assert source.failure == (
        f"recording failed: HEAD /: upstream {url} answered 500, and no retry got past it, "
        f"so {CASSETTE} was left as it was; what was recorded is in {PARTIAL}. Record it "
        "again with: pytest --atom 'greet.atom.yaml::greet' --atom-record-mode=all"
    )


def test_a_failed_first_recording_writes_no_cassette(
    tmp_path: Path, upstreams: list[FaultyUpstream]
) -> None:
    project_folder(tmp_path)
    spec = greet(tmp_path)
    with recording(spec, faulty(upstreams, "400"), "once") as (source, gateway):
        assert send(gateway.url, executor_turns()[0]).status_code == 400
    written = source.finish(spec, failed=True, cli_version=CLI_VERSION, passed=False)
    assert not (tmp_path / CASSETTE).exists()
    assert written == tmp_path / PARTIAL and Cassette.load(written).interactions


def test_retried_faults_leave_only_whole_exchanges_that_replay_offline(
    tmp_path: Path, upstreams: list[FaultyUpstream]
) -> None:
    project_folder(tmp_path)
    spec = greet(tmp_path)
    stale = tmp_path / PARTIAL
    stale.parent.mkdir(parents=True)
    stale.write_text("interactions: []\n")
    first, second = executor_turns()
    # The CLI retries each of these itself, with the very same request.
    with recording(spec, faulty(upstreams, ["429", "529", "reset"]), "once") as (source, gw):
        limited = send(gw.url, first)
        assert limited.status_code == 429 and limited.headers["retry-after"] == "1"
        assert send(gw.url, first).status_code == 529
        assert send(gw.url, first).status_code == 502  # reset before answering
        assert send(gw.url, first).status_code == send(gw.url, second).status_code == 200
    cassette = source.finish(spec, failed=False, cli_version=CLI_VERSION, passed=True)
    [upstream] = upstreams
    assert upstream.log == ["turn 429", "turn 529", "turn reset", "turn ok", "turn ok"]
    assert cassette == tmp_path / CASSETTE
    assert_whole_exchanges(cassette)
    stored = Cassette.load(cassette).interactions
    assert [i.status for i in stored if i.method == "POST"] == [200, 200]  # the two turns
    assert not stale.exists()  # a successful recording removes a stale partial
    upstream.stop()
    tape = replaying(cassette, "conversation")  # mode none: offline replay
    with Gateway(tape) as gateway:
        assert send(gateway.url, first).status_code == send(gateway.url, second).status_code
    assert not tape.divergences and tape.unplayed() == 0


def test_a_cut_stream_the_cli_resent_is_left_out_and_noted_with_what_it_billed(
    tmp_path: Path, upstreams: list[FaultyUpstream]
) -> None:
    project_folder(tmp_path)
    spec = greet(tmp_path)
    first, second = executor_turns()
    with recording(spec, faulty(upstreams, ["429", "reset_mid_stream"]), "once") as (source, gw):
        assert receive(gw.url, first).status == 429
        assert receive(gw.url, first).cut  # Claude Code resends a cut stream as it was
        assert send(gw.url, first).status_code == send(gw.url, second).status_code == 200
    cassette = source.finish(spec, failed=False, cli_version=CLI_VERSION, passed=True)
    assert cassette is not None
    loaded = Cassette.load(cassette)
    assert [FAULT_HEADER in i.response_headers for i in loaded.interactions] == [False, False]
    # Both tries are noted: neither is served again, and the cut one billed its start.
    assert loaded.metadata["upstream_faults"] == [
        {"request": "POST /v1/messages", "what": "answered 429", "in_cassette": False},
        {
            "request": "POST /v1/messages",
            "what": "reset the connection mid-stream",
            "in_cassette": False,
            "tokens": 11,  # tests/faults.py's partial stream: 10 in, 1 out so far
        },
    ]


def project_folder(folder: Path) -> None:
    """The greet spec in `folder`, with no cassette yet."""
    (folder / "greet.atom.yaml").write_text(GREET.format(prompt=PROMPT, timeout=60))


@pytest.mark.slow
@pytest.mark.usefixtures("claude_for_pytester")
def test_atom_run_exits_2_for_an_upstream_error(
    pytester: pytest.Pytester,
    upstreams: list[FaultyUpstream],
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """End to end: Claude Code waits the minute an overloaded API asks for (`retry-after`,
    its api_retry event) and the spec's timeout stops it, so an upstream that never got
    better costs seconds, and one CLI process (a call that timed out is never retried). The
    recording failed on its upstream, the good cassette is kept, and `atom run` exits 2."""
    recorded = record_good(tmp_path_factory.mktemp("good"))
    cassette = project(pytester, recorded, 15)
    url = faulty(upstreams, "529", retry_after=60)
    result = CliRunner().invoke(
        main, ["run", "greet.atom.yaml", "--record-mode=all", f"--upstream={url}"]
    )
    assert result.exit_code == 2, result.output
    assert "answered 529 (overloaded_error: Overloaded)" in result.output  # the gateway's words
    # what the CLI saw (its api_retry event), and how the run ended
    saw = "the API answered 529 (overloaded) once (api_retry events), then the run timed out"
    assert f"upstream: {saw} after 15 s" in result.output
    assert "greet.atom.yaml::greet  upstream error" in result.output
    assert "Traceback" not in result.output
    assert cassette.read_bytes() == recorded
    partial = pytester.path / PARTIAL
    if partial.exists():  # a side request (a title) may get through; a turn never did
        assert_whole_exchanges(partial)


# ---------------------------------------------------------------- the gateway on its own
# The same faults, sent to a recording gateway by hand: what the CLI receives, byte by byte.

TURN = {"model": "m", "max_tokens": 10, "tools": [{"name": "Bash"}], "messages": []}


@pytest.fixture
def forwarding(tmp_path: Path) -> Iterator[Any]:
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
    forwarding: Any,
) -> None:
    gateway, tape = forwarding(["429"])
    turn = {**TURN, "stream": True}
    first = httpx.post(f"{gateway.url}/v1/messages", json=turn)
    assert first.status_code == 429 and first.headers["retry-after"] == "1"
    assert first.json()["error"]["type"] == "rate_limit_error"
    second = httpx.post(f"{gateway.url}/v1/messages", json=turn)
    assert second.status_code == 200 and "event: message_stop" in second.text
    assert [i.status for i in tape.finished_interactions()] == [200]
    assert len(tape.faults) == 1 and tape.unrecovered_faults() == []


def test_a_cut_off_stream_is_cut_for_the_cli_and_cut_again_where_it_replays(
    forwarding: Any, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    gateway, tape = forwarding("reset_mid_stream")
    [turn, *_] = executor_turns()
    first = receive(gateway.url, turn)
    events = [name for name, _ in parse_sse(first.text)]
    # Claude Code met what the API's own cut would show it: whole events, then a cut
    # connection (it resends the identical request); no error event the gateway made up,
    # which it gave up on instead.
    assert first.cut and first.status == 200
    assert events == ["message_start", "content_block_start", "content_block_delta"]
    [kept] = tape.finished_interactions()
    assert kept.response_headers[FAULT_HEADER].startswith("reset the connection mid-stream")
    assert kept.response_headers[CUT_HEADER] == "connection"
    assert tape.unrecovered_faults() == []
    gateway.stop()
    cassette = Cassette(tmp_path / "cut.yaml", [kept])
    cassette.save()
    # A replay serves it back the same way, cut at the same point.
    with Gateway(replaying(cassette.path, "strict")) as replay:
        again = receive(replay.url, turn)
    assert again.cut and again.status == 200 and parsed(again.text) == parsed(first.text)
    assert "Traceback" not in "".join(capfd.readouterr())


@pytest.mark.parametrize("fault", ["truncated", "overloaded_mid_stream"])
def test_a_stream_that_ends_short_of_message_stop_reaches_the_cli_as_it_ended(
    forwarding: Any, fault: str
) -> None:
    gateway, tape = forwarding(fault)
    reply = receive(gateway.url, executor_turns()[0])
    # Claude Code takes a cleanly cut answer as the turn, and continues after an overload
    # ("Your response above was cut off…"): its next request holds what it read, so the
    # cassette keeps the stream as it came, for a replay to end it the same way.
    assert not reply.cut and "pytest-atom gateway" not in reply.text
    [kept] = tape.finished_interactions()
    assert parsed(kept.response) == parsed(reply.text)
    assert CUT_HEADER not in kept.response_headers and FAULT_HEADER in kept.response_headers


def test_a_cut_off_json_body_is_cut_off_for_the_cli_too(
    forwarding: Any, capfd: pytest.CaptureFixture[str]
) -> None:
    gateway, tape = forwarding("reset_mid_stream")
    with pytest.raises(httpx.RemoteProtocolError):  # a broken body, not a forged JSON one
        httpx.post(f"{gateway.url}/v1/messages", json=TURN)
    assert tape.finished_interactions() == [] and len(tape.unrecovered_faults()) == 1
    assert "Traceback" not in "".join(capfd.readouterr())


def parsed(stream: str) -> list[tuple[str, Any]]:
    """A stream's events, their data parsed: a cassette stores them re-encoded."""
    return [(name, json.loads(data)) for name, data in parse_sse(stream)]


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
