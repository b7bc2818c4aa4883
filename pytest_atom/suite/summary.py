"""What a suite says when it ends, as parts each reader lays out in its own order.

`pytest --atom` writes them into pytest's terminal summary and `atom run`'s progress plugin
prints them with rich; both read the same `Summary`, built once by `SuiteRun.summary`. A new
line under the table is a field here, filled in `SuiteRun.summary`, and placed by both.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Summary"]


@dataclass(frozen=True)
class Summary:
    """The summary's parts, each already worded; its reader adds only layout and colour."""

    #: One line per spec run (`reports.summary.summary_table`), in collection order.
    table: list[str]
    #: Each run's drift, warnings, limit and billing notes, by node id.
    notes: list[str] = field(default_factory=list)
    #: Failed tries, then the environment's clues, then what the outcome cache reported.
    tries: list[str] = field(default_factory=list)
    #: The spending limit's closing line, when it stopped the run.
    spending: str | None = None
    #: Specs that ran their agent without Claude Code's sandbox.
    sandbox: list[str] = field(default_factory=list)
    #: The results file (`last-run.json`) could not be written.
    results_error: str = ""
    #: The history store could not be written: it names the store and the fix.
    history_error: str = ""
    #: The baseline's comparison, each line with whether it tells of a regression; None
    #: without a baseline.
    baseline: list[tuple[str, bool]] | None = None
    #: Pass rates over repeats, each with its threshold met or not; None when the run
    #: neither repeats nor holds a spec to a count or a minimum.
    rates: list[str] | None = None
    #: Arms compared.
    arms: list[str] = field(default_factory=list)
    #: How many criteria gated and how many were advisory, and why (judge.trust); empty
    #: when no criterion had a calibration floor.
    criteria: list[str] = field(default_factory=list)
    #: Each spec with `cases:`, its runs pooled over its cases (`baseline.measure.case_lines`),
    #: then each conversation's turns to success (`conversation_lines`).
    cases: list[str] = field(default_factory=list)
    #: Each trigger suite's precision and recall, its misfired prompts
    #: (`baseline.triggers.trigger_lines`).
    triggers: list[str] = field(default_factory=list)
