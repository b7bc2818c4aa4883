"""IterationRecord: what one CLI call did, as the loop's error reads it."""

from __future__ import annotations

from pytest_atom.results.record import IterationRecord


def test_a_call_that_said_nothing_fails_with_its_exit_code() -> None:
    """Neither a final text nor stderr: the exit status is all there is to say."""
    assert IterationRecord(returncode=3).failure() == "exit code 3"
    assert IterationRecord(returncode=3, stderr=" \n").failure() == "exit code 3"
    assert IterationRecord(returncode=3, stderr="boom\n").failure() == "boom"
