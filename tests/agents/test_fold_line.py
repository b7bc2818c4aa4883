"""`AgentSession.fold_line`: a line of an agent's output counted in one call per package
(the record, and through it the meter and the budget), with the same result as event by
event."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path

import pytest

from pytest_atom.agents.claude_code.session import AgentSession
from pytest_atom.cost.limits import Budget, Limits
from pytest_atom.events import parse_line
from pytest_atom.results.record import IterationRecord
from tests.helpers import capture


@pytest.fixture
def proc() -> Iterator[subprocess.Popen[str]]:
    """A process for `fold_line` to stop when a line crosses a limit."""
    process = subprocess.Popen(["sleep", "30"], text=True)
    yield process
    process.kill()
    process.wait()


def _figures(record: IterationRecord) -> dict[str, object]:
    return {k: v for k, v in asdict(record).items() if k != "meter"} | {
        "tokens": record.tokens,
        "main_tokens": record.main_tokens,
    }


@pytest.mark.parametrize("stream", ["events-2.1.331.jsonl", "subagents-2.1.330.jsonl"])
def test_a_line_folds_into_the_record_as_its_events_did_one_by_one(
    stream: str, proc: subprocess.Popen[str]
) -> None:
    lines = capture(stream).splitlines()
    by_event = IterationRecord(0)
    for line in lines:
        for event in parse_line(line):
            by_event.apply(event)
    heard: list[object] = []
    by_line = IterationRecord(0)
    session = AgentSession(Path("claude"), on_event=heard.append)
    assert not any(session.fold_line(by_line, line, proc) for line in lines)
    assert _figures(by_line) == _figures(by_event)
    assert heard == [event for line in lines for event in parse_line(line)]


def test_the_line_that_crosses_a_limit_stops_the_agent_and_still_reaches_on_event(
    proc: subprocess.Popen[str],
) -> None:
    heard: list[object] = []
    budget = Budget(Limits(max_turns=0))
    session = AgentSession(Path("claude"), on_event=heard.append, budget=budget)
    record = IterationRecord(0)
    lines = capture("events-2.1.331.jsonl").splitlines()
    crossed = next(n for n, line in enumerate(lines) if session.fold_line(record, line, proc))
    assert record.limit_exceeded == budget.exceeded and record.is_error
    assert heard == [event for line in lines[: crossed + 1] for event in parse_line(line)]
    assert proc.wait(timeout=10) != 0  # stopped
