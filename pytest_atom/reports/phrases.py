"""What every report format says the same way about the same part of a run.

The words for a replay's drift, for one step of a multi-step spec, and what in a failure
points at the run's environment: several formats show them, and no format imports another.

Where to add: a phrase a second format needs, moved here from the format that had it.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from pytest_atom.environment import EnvironmentClue, environment_clue, left_out

if TYPE_CHECKING:
    from pytest_atom.results.drift import Drift
    from pytest_atom.results.spec_result import SpecResult, StepResult


def drift_line(drift: Drift | None) -> str | None:
    """A replay's drift as the one line the terminal, JUnit and the trace show."""
    return drift.line() if drift is not None else None


def drift_summary(drift: Drift) -> str:
    """A replay's drift for a table cell: ``2.1.197 → 2.1.330; system prompt changed``."""
    versions = [f"{drift.recorded_version} → {drift.live_version}"] if drift.versions_differ else []
    parts = versions + drift.changes(brief=True)
    return "; ".join(parts) or f"{drift.loose}/{drift.replayed} matched on the conversation"


def step_line(step: StepResult) -> str:
    """``implement: committed after a01, a02 (2 runs)``: how one step of a spec went."""
    if not step.runs:
        return f"{step.id}: not run (an earlier step failed)"
    tried = ", ".join(f"a{a.number:02d}" for a in step.attempts) or "no attempt"
    runs = f" ({step.runs} runs)" if step.runs > 1 else ""
    if step.passed:
        return f"{step.id}: committed after {tried}{runs}"
    last = step.attempts[-1] if step.attempts else None
    score = f", score {last.verdict.score:g}" if last and last.verdict else ""
    return f"{step.id}: {step.decision} after {tried}{runs}{score}"


def environment_clue_of(result: SpecResult) -> EnvironmentClue | None:
    """What in a failed check's or set-up's output points at the run's environment, if any."""
    texts = [f"{c.summary}\n{c.evidence}" for c in result.checks if not c.passed]
    if result.harness_error and result.harness_error.startswith("set-up"):
        texts.append(result.harness_error)  # it quotes the set-up's last lines
    if not texts:
        return None
    dropped = left_out(result.spec.pass_env)
    # What the run did get: the caller's passed variables and the spec's own `env:`.
    given = {*os.environ, *result.spec.env}
    return environment_clue("\n".join(texts), dropped, given)
