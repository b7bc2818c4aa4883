"""What the HTML report shows of the history store: values the store fills
(`pytest_atom.history.view`), so the report never reads the store, nor the store knows
how a page looks."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ComparisonRow", "HistoryView", "SpecTrend", "TrendPoint"]


@dataclass(frozen=True)
class TrendPoint:
    """One run of a spec's line: how many of its trials (repeats) passed; cached outcomes
    and rescores are no trials, and a run of nothing else is no point."""

    run_id: str
    started: str  # "2026-11-29 05:59", as the page shows it
    passed: int
    runs: int
    outcome: str  # the outcome of a single item, or "3/5 passed"

    @property
    def rate(self) -> float:
        return self.passed / self.runs if self.runs else 0.0


@dataclass(frozen=True)
class SpecTrend:
    """A spec's line (spec, case, arm) over its last runs, oldest first."""

    label: str
    points: tuple[TrendPoint, ...]

    @property
    def passed(self) -> int:
        return sum(p.passed for p in self.points)

    @property
    def runs(self) -> int:
        return sum(p.runs for p in self.points)


@dataclass(frozen=True)
class ComparisonRow:
    """One line that changed since the previous run (`history.diff.ItemChange`)."""

    label: str
    direction: str  # regressed, improved, changed, added, removed, within noise
    before: str
    after: str
    findings: tuple[str, ...]  # the checks, criteria, tool calls and deltas, one line each


@dataclass(frozen=True)
class HistoryView:
    run_id: str
    #: "<id> (<kind>, <when>)": the earlier run compared with, None: there is none.
    previous: str | None
    rows: tuple[ComparisonRow, ...]
    unchanged: int
    trends: tuple[SpecTrend, ...]
    #: Why there is no comparison (the store is off, could not be read), when there is none.
    note: str = ""
    #: How the earlier run was chosen (`history.query.like_run`), and the settings (and
    #: Claude Code version) that differ between it and this run, a line each.
    paired: str = ""
    settings: tuple[str, ...] = ()
