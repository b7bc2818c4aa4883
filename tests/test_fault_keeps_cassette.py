"""A fault never costs a good cassette (issue 27 item 4).

Re-recording a spec over its good cassette (`--atom-record-mode=all`) while the upstream
resets the connection mid-stream once, or ends one stream without `message_stop`: Claude
Code continues the conversation ("Your response above was cut off mid-stream…"), and here
the agent then fails its check. The fault may be why, so the old cassette stays
byte-identical, the new recording is kept beside it as `<name>.partial.yaml`, and the
outcome is an upstream error naming the fault. Only a recording whose spec passes replaces
the cassette.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_atom.cassettes.cassette import Cassette
from tests.fault_helpers import (
    CASSETTE,
    PARTIAL,
    TURNS,
    output,
    project,
    record,
    record_good,
)
from tests.faults import FaultyUpstream
from tests.helpers import bash

pytestmark = [pytest.mark.usefixtures("claude_for_pytester"), pytest.mark.slow]

#: The agent writes the wrong word: the spec's check fails after the fault.
WRONG = [bash("echo goodbye > greeting.txt", "Writing it."), {"text": "Done.\nEXIT_LOOP_NOW"}]
#: What the failure report says of each fault.
SAID = {
    "reset_mid_stream": "reset the connection mid-stream",
    "truncated": "ended the stream without message_stop",
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


@pytest.mark.parametrize("fault", list(SAID))
def test_a_disturbed_recording_that_fails_keeps_the_good_cassette(
    pytester: pytest.Pytester, recorded: bytes, upstreams: list[FaultyUpstream], fault: str
) -> None:
    cassette = project(pytester, recorded, 60)
    upstream = FaultyUpstream(WRONG, [fault]).start()
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
    assert SAID[fault] in text, text
    assert (
        f"recording: failed, so {CASSETTE} was left as it was; what was recorded is in "
        f"{PARTIAL}" in text
    )


def test_a_disturbed_recording_that_passes_replaces_the_cassette(
    pytester: pytest.Pytester, recorded: bytes, upstreams: list[FaultyUpstream]
) -> None:
    cassette = project(pytester, recorded, 60)
    upstream = FaultyUpstream(TURNS, ["reset_mid_stream"]).start()
    upstreams.append(upstream)
    result = record(pytester, upstream.url, "all")
    result.assert_outcomes(passed=1)
    assert cassette.read_bytes() != recorded
    assert not (pytester.path / PARTIAL).exists()
    assert upstream.faulted == 1
    assert Cassette.load(cassette).interactions  # the new, passing conversation
