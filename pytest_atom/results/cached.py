"""A run that did not happen: the stored passing outcome `--atom-cache` reported instead.

When an item's input digest (`pytest_atom.outcome_cache.input_digest`) equals that of a passing item
the history store holds, the outcome cache reports that item and starts no CLI. Its result
(`SpecResult` with `cached_from` set and no attempts) says so in every report: the outcome
is the stored one, the figures are the stored ones where a figure describes the agent's
work (its checks, criteria, tool calls, score), and nothing was spent.

A leaf of the results: plain values, so the history layer, which knows the store, makes
them, and every report reads them without knowing the store.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CachedCheck", "CachedCriterion", "CachedFrom"]


@dataclass(frozen=True)
class CachedCheck:
    """One deterministic check as the stored run saw it: its label, result and detail."""

    name: str
    passed: bool
    detail: str = ""


@dataclass(frozen=True)
class CachedCriterion:
    """One criterion as the stored run's reflector judged it."""

    text: str
    score: float
    passed: bool
    reasons: str = ""


@dataclass(frozen=True)
class CachedFrom:
    """The stored item that stands in for this run: which run it was in and when, its
    outcome word and line, and what its agent did (for reports and the new record)."""

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
        """Whether the stored agent succeeded (xfailed: it failed, as its spec expects)."""
        return self.outcome in ("passed", "xpassed")

    @property
    def line(self) -> str:
        """``cached: passed in run 20261129T061502-3f9a1c2b (score 0.90 > 0.80)``."""
        why = f" ({self.why})" if self.why else ""
        return f"cached: {self.outcome} in run {self.run_id}{why}"
