"""The harness's own progress, as typed events: an ``on_event`` callback (`run_spec`,
`atom run`'s progress) receives these and the agent's (`pytest_atom.events`) as one stream.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pytest_atom.events import Event

if TYPE_CHECKING:
    from pytest_atom.results.check_result import CheckResult
    from pytest_atom.results.outcome import Decision
    from pytest_atom.results.verdict import Verdict


@dataclass(frozen=True)
class SetupStarted:
    """The spec's `setup:` commands are about to run in the workspace."""

    commands: tuple[str, ...]


@dataclass(frozen=True)
class AttemptStarted:
    """Attempt `attempt` of `attempts` starts (its executor runs next)."""

    attempt: int
    attempts: int


@dataclass(frozen=True)
class ChecksRan:
    """An attempt's acceptance checks ran on its workspace."""

    checks: tuple[CheckResult, ...]


@dataclass(frozen=True)
class Decided:
    """An attempt's decision, and the reflector's verdict it weighed (None: no reflector)."""

    decision: Decision
    verdict: Verdict | None


@dataclass(frozen=True)
class StepStarted:
    """Step `step` (number `number` of `steps`) of a steps spec starts."""

    step: str
    number: int
    steps: int


@dataclass(frozen=True)
class PlanStarted:
    """The planner is asked for plan `number` (a re-plan after the first)."""

    number: int


@dataclass(frozen=True)
class Planned:
    """The planner's plan, summarised (``re-`` before a re-plan's)."""

    plan: str


@dataclass(frozen=True)
class StepCommitted:
    """Step `step`'s work was committed from its attempt `attempt`."""

    step: str
    attempt: int


@dataclass(frozen=True)
class RolledBack:
    """A verdict of step `step` rolled the run back to the earlier step `target`."""

    step: str
    target: str


HarnessEvent = (
    SetupStarted
    | AttemptStarted
    | ChecksRan
    | Decided
    | StepStarted
    | PlanStarted
    | Planned
    | StepCommitted
    | RolledBack
)
#: What an ``on_event`` callback receives: the agent's events and the harness's.
AnyEvent = Event | HarnessEvent
OnEvent = Callable[[AnyEvent], None]
