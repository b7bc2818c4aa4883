"""Every fault kind, through Claude Code: a recording that got past it replays.

One shared scenario records the greet spec over its good cassette once per fault kind the
test upstream knows (tests/faults.py): a reset mid-stream, a stream cut short of
`message_stop`, an overload before the stream (529) and in it (an `overloaded_error`
event after content), a 500, and a 429 with `retry-after`. Each new cassette is then
replayed offline 3 times. A recording either replaces the cassette with one that passes
every replay, or leaves the old one byte-identical (its own proving replay failed).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from pytest_atom.replay.cassette import Cassette
from pytest_atom.run.spec_run import run_spec
from pytest_atom.settings.options import RunSettings
from tests.fault_helpers import CASSETTE, GREET, PARTIAL, PROMPT, TURNS, greet
from tests.faults import FaultyUpstream
from tests.helpers import once_per_session

#: Each fault kind, and what the gateway names it when the recording meets it.
KINDS = {
    "reset_mid_stream": "reset the connection mid-stream",
    "truncated": "ended the stream without message_stop",
    "529": "answered 529 (overloaded_error: Overloaded)",
    "overloaded_mid_stream": "sent an error event mid-stream",
    "500": "answered 500 (api_error: Internal server error)",
    "429": "answered 429 (rate_limit_error",
}
REPLAYS = 3
#: What each kind leaves in the cassette, as Claude Code 2.1.332 recovers from it (measured):
#: whether the broken try is in it (a replay serves it back, ended the same way), and how
#: many Claude Code calls failed and were run again (a replay runs them again too).
#: - a cut connection: the CLI resends the identical request; the try is left out;
#: - a clean end short of message_stop: the CLI takes the cut answer as the turn;
#: - an overload event while the first block streams: the CLI gives the call up, and the
#:   harness runs it again (`--resume`);
#: - 529, 500, 429 (retry-after: 1): the CLI waits and resends; the error is left out.
RECORDS = {
    "reset_mid_stream": (False, 0),
    "truncated": (True, 0),
    "529": (False, 0),
    "overloaded_mid_stream": (True, 1),
    "500": (False, 0),
    "429": (False, 0),
}


def record_and_replay(folder: Path, kind: str, good: bytes, claude: Path) -> dict[str, Any]:
    """Record the greet spec in `folder` over its good cassette while the upstream serves
    `kind` once, then replay whatever cassette is there offline `REPLAYS` times."""
    folder.mkdir()
    (folder / "greet.atom.yaml").write_text(GREET.format(prompt=PROMPT, timeout=120))
    cassette = folder / CASSETTE
    cassette.parent.mkdir(parents=True)
    cassette.write_bytes(good)
    upstream = FaultyUpstream(TURNS, [kind], retry_after=1).start()
    started = time.monotonic()
    try:
        recorded = run_spec(
            greet(folder),
            runs_dir=folder / "runs",
            settings=RunSettings(record_mode="all", upstream=upstream.url),
            claude_bin=claude,
        )
    finally:
        upstream.stop()
    took = time.monotonic() - started
    replays = [
        run_spec(
            greet(folder),
            runs_dir=folder / "runs",
            settings=RunSettings(record_mode="none"),
            claude_bin=claude,
        )
        for _ in range(REPLAYS)
    ]
    return {
        "log": upstream.log,
        "outcome": recorded.outcome.status,
        "why": recorded.outcome.why,
        "seconds": round(took),
        "failed_tries": recorded.failed_tries()[0],
        "kept": cassette.read_bytes() == good,
        "partial": (folder / PARTIAL).exists(),
        "notes": Cassette.load(cassette).metadata.get("upstream_faults", []),
        "replays": [r.outcome.status for r in replays],
        "replay_failed_tries": [r.failed_tries()[0] for r in replays],
        "replay_why": [r.outcome.why for r in replays if not r.passed],
    }


@pytest.fixture(scope="module")
def outcomes(
    tmp_path_factory: pytest.TempPathFactory, claude_bin: Path
) -> dict[str, dict[str, Any]]:
    """Each fault kind's recording and replays, once per test session."""

    def build(folder: Path) -> None:
        # The good cassette: the same spec recorded through Claude Code, with no fault.
        clean = folder / "clean"
        clean.mkdir()
        (clean / "greet.atom.yaml").write_text(GREET.format(prompt=PROMPT, timeout=120))
        upstream = FaultyUpstream(TURNS, []).start()
        try:
            first = run_spec(
                greet(clean),
                runs_dir=clean / "runs",
                settings=RunSettings(record_mode="all", upstream=upstream.url),
                claude_bin=claude_bin,
            )
        finally:
            upstream.stop()
        assert first.passed, first.report()
        good = (clean / CASSETTE).read_bytes()
        seen = {kind: record_and_replay(folder / kind, kind, good, claude_bin) for kind in KINDS}
        (folder / "outcomes.json").write_text(json.dumps(seen, indent=1), encoding="utf-8")

    folder = once_per_session(tmp_path_factory, "fault-kinds", build)
    data: dict[str, dict[str, Any]] = json.loads((folder / "outcomes.json").read_text())
    return data


@pytest.mark.slow
@pytest.mark.parametrize("kind", list(KINDS))
def test_a_recording_that_got_past_a_fault_replays_or_keeps_the_old_cassette(
    outcomes: dict[str, dict[str, Any]], kind: str
) -> None:
    seen = outcomes[kind]
    assert f"turn {kind}" in seen["log"] and seen["log"].count("turn ok") >= 2, seen
    if seen["kept"]:  # its proving replay failed: an error naming the fault, and why
        assert seen["outcome"] == "error" and seen["partial"], seen
        assert "could not be replayed offline" in seen["why"] and KINDS[kind] in seen["why"]
    else:  # replaced: by a recording the fault is noted in, which replays every time
        assert seen["outcome"] == "passed" and not seen["partial"], seen
        assert [n["what"] for n in seen["notes"]] == [KINDS[kind].split(" (")[0]], seen
        # A call the CLI gave up on was run again while recording: each replay runs it
        # again, so its try is in the replay's figures as in the recording's.
        assert seen["replay_failed_tries"] == [seen["failed_tries"]] * REPLAYS, seen
    assert seen["replays"] == ["passed"] * REPLAYS, seen


@pytest.mark.slow
@pytest.mark.parametrize("kind", list(KINDS))
def test_each_fault_kind_records_what_claude_code_made_of_it(
    outcomes: dict[str, dict[str, Any]], kind: str
) -> None:
    seen = outcomes[kind]
    [note] = seen["notes"]
    assert (note["in_cassette"], seen["failed_tries"]) == RECORDS[kind], seen
    # A broken stream's billed start is noted, kept or not; an error status bills nothing.
    streamed = kind in ("reset_mid_stream", "truncated", "overloaded_mid_stream")
    assert ("tokens" in note) == streamed, note
