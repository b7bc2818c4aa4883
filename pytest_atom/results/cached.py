"""A run that did not happen: the stored passing outcome `--atom-cache` reported instead
(`SpecResult.cached_from`, with no attempts): its outcome and the figures of the agent's
work are the stored ones, and nothing was spent. Plain values: the history layer makes
them, and reports read them without knowing the store.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CachedCheck:
    name: str
    passed: bool
    detail: str = ""


@dataclass(frozen=True)
class CachedCriterion:
    text: str
    score: float
    passed: bool
    reasons: str = ""


@dataclass(frozen=True)
class CachedFrom:
    """The stored item that stands in for this run: its run, outcome and what its agent did."""

    run_id: str
    started: str  # the stored run's start, ISO 8601 (UTC)
    #: passed, xpassed or xfailed: the cache reports only an outcome that passes a session
    outcome: str
    why: str
    score: float | None = None
    wall_seconds: float = 0.0  # what the stored run took: the time this one saved
    tool_calls: tuple[str, ...] = ()
    checks: tuple[CachedCheck, ...] = ()
    criteria: tuple[CachedCriterion, ...] = ()

    @property
    def passed(self) -> bool:
        """Whether the stored agent succeeded (xfailed: it failed, as expected)."""
        return self.outcome in ("passed", "xpassed")

    @property
    def line(self) -> str:
        """``cached: passed in run 20261129T061502-3f9a1c2b (score 0.90 > 0.80)``."""
        why = f" ({self.why})" if self.why else ""
        return f"cached: {self.outcome} in run {self.run_id}{why}"
