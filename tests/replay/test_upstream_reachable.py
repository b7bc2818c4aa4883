"""Recording fails fast: an upstream that cannot be reached stops the session in seconds,
once, with one line naming it (it is connected to before the first spec records, never
again that session); and Claude Code's own retries of a failing upstream are bounded while
recording, so an upstream that answers errors costs seconds a call, not minutes."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from click.testing import CliRunner

from atom_cli.main import main
from pytest_atom.errors import UpstreamUnreachable
from pytest_atom.replay.reachable import UpstreamCheck, unreachable
from pytest_atom.run.execution import API_RETRIES
from pytest_atom.run.spec_run import run_spec
from pytest_atom.settings.options import RunSettings
from pytest_atom.spec_loader.load import load_specs
from tests.fault_helpers import GREET, PROMPT, TURNS
from tests.faults import FaultyUpstream, refused_url

#: The greet spec, as two cases: a session that records both.
TWO_CASES = GREET.format(prompt=PROMPT, timeout=60) + "cases:\n  - {id: one}\n  - {id: two}\n"


@pytest.fixture
def upstream() -> Iterator[FaultyUpstream]:
    """An upstream that answers every agent turn 529 and asks for a minute's wait."""
    started = FaultyUpstream(TURNS, "529", retry_after=60).start()
    yield started
    started.stop()


def test_a_closed_port_stops_a_pytest_session_in_seconds_with_one_line(
    pytester: pytest.Pytester,
) -> None:
    pytester.makefile(".atom.yaml", greet=TWO_CASES)
    url = refused_url()
    started = time.monotonic()
    result = pytester.runpytest(
        "--atom", "--atom-record-mode=all", f"--atom-upstream={url}", "-p", "no:cacheprovider"
    )
    assert time.monotonic() - started < 20  # no Claude Code started, no retry waited
    said = f"recording stopped: upstream {url} refused the connection"
    result.stdout.fnmatch_lines(
        [
            f"pytest-atom could not run spec 'greet[[]one[]]': {said} (checked before spec "
            "'greet[[]one[]]' recorded; no spec of this session can record from it): start "
            "it, or set --atom-upstream *",
            f"*Interrupted: pytest-atom: {said} *",
            "*1 failed in *",
        ]
    )
    assert "greet[two]" not in result.stdout.str()  # the session stopped: never tried
    assert "Traceback" not in result.stdout.str()


def test_a_closed_port_stops_atom_run_with_the_machinery_s_status(
    pytester: pytest.Pytester,
) -> None:
    pytester.makefile(".atom.yaml", greet=TWO_CASES)
    url = refused_url()
    result = CliRunner().invoke(
        main, ["run", "greet.atom.yaml", "--record-mode=all", f"--upstream={url}"]
    )
    assert result.exit_code == 2, result.output
    line = f"Error: recording stopped: upstream {url} refused the connection (checked"
    assert result.output.count(line) == 1, result.output
    assert "greet[two]" not in result.output


def test_the_upstream_is_connected_to_once_a_session() -> None:
    """A later spec gets the first answer, without waiting again: even once the port
    opened, the session keeps what it found (it stopped on it)."""
    url = refused_url()
    check = UpstreamCheck()
    with pytest.raises(UpstreamUnreachable, match="checked before spec 'a' recorded"):
        check.require(url, "a")
    with pytest.raises(UpstreamUnreachable, match="checked before spec 'a' recorded"):
        check.require(url, "b")
    assert unreachable(url) == "refused the connection"


def test_an_answering_upstream_passes_the_check_and_sees_no_request(
    upstream: FaultyUpstream,
) -> None:
    UpstreamCheck().require(upstream.url, "a")  # connected to, nothing sent
    assert upstream.log == []


@pytest.mark.slow
def test_claude_code_retries_a_recording_s_failed_request_a_bounded_number_of_times(
    pytester: pytest.Pytester, upstream: FaultyUpstream
) -> None:
    """Claude Code's api_retry event says how many retries it allows: the recording's
    bound, not its default of ten. (The spec's timeout ends the minute's wait asked for.)"""
    pytester.makefile(".atom.yaml", greet=GREET.format(prompt=PROMPT, timeout=10))
    [spec] = load_specs(pytester.path / "greet.atom.yaml")
    settings = RunSettings(record_mode="all", upstream=upstream.url)
    result = run_spec(spec, runs_dir=pytester.path / "runs", settings=settings)
    retries = [r for a in result.attempts for rec in a.all_records for r in rec.api_retries]
    assert retries, result.outcome
    assert {r["max_retries"] for r in retries} == {API_RETRIES}
