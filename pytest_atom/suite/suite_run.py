"""`SuiteRun`: one run of a suite of specs, from collection to its exit status.

The stages, in order:

- collect: pytest's collectors hand each file's specs to `collected`; `arms_problem` then
  checks ``--atom-arms`` against every arm seen;
- run: pytest's items, each showing its events to the `Watcher` when one watches (`atom
  run`'s live progress), and whose reports the session plugin turns into `rows`;
- summary: `finish`, `compare` (the baseline gate, once), `summary`;
- exit status: `exit_status`, the only place a suite's status is decided;
- history: `finish` records the session in the history store, once (a worker's items
  reach its controller in their reports, `history_item`).

pytest owns its collection, its run loop and ``session.exitstatus``; the session plugin
holds a `SuiteRun` and calls into it from its hooks, as pytest-xdist's `DSession` does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from pytest_atom.baseline.compare import BaselineGate, results_file, write_results
from pytest_atom.baseline.measure import (
    arm_lines,
    case_lines,
    conversation_lines,
)
from pytest_atom.baseline.triggers import trigger_lines
from pytest_atom.cost.spend import EXIT_SPENDING_LIMIT
from pytest_atom.history.query import last_failed
from pytest_atom.history.records import (
    ItemRecord,
    RunRecord,
    item_from_dict,
    item_to_dict,
    run_to_dict,
)
from pytest_atom.history.write import (
    first_version,
    run_record,
    write_run,
)
from pytest_atom.outcome_cache.cache import session_cache
from pytest_atom.paths import display_path
from pytest_atom.reports.format import SessionEnd, Written, report_formats
from pytest_atom.reports.summary import (
    cached_lines,
    criteria_trust_lines,
    environment_lines,
    failed_tries_lines,
    sandbox_warning_lines,
    summary_table,
)
from pytest_atom.results.rows import SummaryRow
from pytest_atom.results.thresholds import RepeatGates
from pytest_atom.spec.arms import select_arms, unknown_arms
from pytest_atom.suite.ending import Ending, decide
from pytest_atom.suite.shards import SHARD_RESULTS, VIEWS_OF, rate_lines, write_shard

if TYPE_CHECKING:
    from pytest_atom.reports.history_view import HistoryView
    from pytest_atom.results.harness_events import AnyEvent
    from pytest_atom.results.spec_result import SpecResult
    from pytest_atom.run.harness import Harness
    from pytest_atom.spec.types import Spec

_Item = TypeVar("_Item")


@dataclass(frozen=True)
class Summary:
    """What a suite says when it ends, each part already worded: `pytest --atom`'s terminal
    summary and `atom run` read the same one and add only layout and colour."""

    table: list[str]  # one line per spec run, in collection order
    notes: list[str] = field(default_factory=list)  # each run's drift, warnings, limits
    #: Failed tries, then the environment's clues, then what the outcome cache reported.
    tries: list[str] = field(default_factory=list)
    spending: str | None = None  # the spending limit's closing line, when it stopped the run
    sandbox: list[str] = field(default_factory=list)  # specs run without Claude Code's sandbox
    results_error: str = ""  # `last-run.json` could not be written
    history_error: str = ""  # the history store could not be written
    #: The baseline's comparison, each line with whether it tells of a regression.
    baseline: list[tuple[str, bool]] | None = None
    rates: list[str] | None = None  # `shards.rate_lines`
    arms: list[str] = field(default_factory=list)
    criteria: list[str] = field(default_factory=list)  # gated and advisory criteria (judge.trust)
    cases: list[str] = field(default_factory=list)  # pooled cases, then conversations' turns
    triggers: list[str] = field(default_factory=list)  # trigger suites' precision and recall


class Watcher(Protocol):
    """What a live view shows of each spec run as it happens (`atom run`'s progress)."""

    def started(self, spec: Spec, label: str) -> Callable[[AnyEvent], None] | None:
        """A run of `spec` starts (`label`: its name); the callback returned sees its events."""

    def not_run(self, reason: str) -> None:
        """The spending limit is reached: the run did not start."""

    def could_not_run(self, problem: str) -> None:
        """The harness could not make the run (`problem`: why, and the fix)."""

    def finished(self, result: SpecResult, repeat: int | None) -> None:
        """The run ended, passed or not (`repeat`: which of the spec's, if it repeats)."""


class SuiteRun:
    """The state of one suite run and its stages (the module's docstring)."""

    def __init__(self, harness: Harness) -> None:
        """BaselineError (the baseline file cannot be used) is the caller's to word."""
        self.harness = harness
        self.watcher: Watcher | None = None
        self.history_kind = "pytest"  # `RunRecord.kind`: ``atom run`` names its own
        self.baseline: BaselineGate | None = harness.baseline_gate()
        self.rows: list[SummaryRow] = []  # every spec run, as the summary shows it
        self.other_failures = 0  # failed reports that are not spec runs: never gated away
        self.spending_limit = False  # a spec was stopped, or not run, at the spending limit
        self.arms_seen: set[str | None] = set()  # every arm of the collected specs
        self.order: dict[str, int] = {}  # node ids in collection order, for the summary
        self.compared = self.regressed = False  # the whole run against the baseline, once
        self.results_error = ""  # last-run.json could not be written
        self.written: list[Written] = []  # the files the report formats wrote at the end
        #: Each run's history item by node id, with the Claude Code version it reported.
        self.history_items: dict[str, tuple[ItemRecord, str | None]] = {}
        self._history_run: RunRecord | None = None
        self.history_error = ""  # the history store could not be written: the warning
        self.history_recorded = False
        self.started = datetime.now(UTC)
        #: Each run's input digest, and with --atom-cache the stored outcomes that stand in.
        self.cache = session_cache(harness.settings, harness.root, harness.config, harness.runs_dir)
        harness.around_run = self.cache

    # --- collect -------------------------------------------------------------------------

    def collected(self, specs: Sequence[Spec]) -> list[Spec]:
        """A file's specs were collected: their arms are seen; those of the selected arms."""
        self.arms_seen.update(spec.arm for spec in specs if spec.arm is not None)
        return select_arms(list(specs), self.harness.settings.arms)

    def arms_problem(self) -> str | None:
        """Why the selected arms cannot be (one no collected spec has), or None."""
        return unknown_arms(self.harness.settings.arms, self.arms_seen, "--atom-arms")

    def last_failed(
        self, items: Sequence[_Item], spec_of: Callable[[_Item], Spec | None]
    ) -> tuple[list[_Item], list[_Item], str]:
        """With ``last_failed``: (kept, deselected, the line saying so) of `items`, kept
        those whose spec (`spec_of`; None: not a spec) failed in the store's last run."""
        if not self.harness.settings.last_failed:
            return list(items), [], ""
        failed = last_failed(self.harness.settings, self.harness.root)
        kept: list[_Item] = []
        dropped: list[_Item] = []
        for item in items:
            spec = spec_of(item)
            (kept if spec is None or failed.selects(spec) else dropped).append(item)
        return kept, dropped, failed.note(len(kept), len(dropped))

    def collection_order(self, nodeids: Iterable[str]) -> None:
        """The order the summary shows runs in (xdist reports them as they finish)."""
        self.order = {nodeid: n for n, nodeid in enumerate(nodeids)}

    # --- run -----------------------------------------------------------------------------

    def repeated(self, spec: Spec, repeat: int | None = None) -> Spec:
        """`spec` with its count of runs settled: its own `repeats:`, else `repeat` (an eval
        case's `runs:`), else ``--atom-repeat``."""
        return spec.with_repeats(self.harness.settings.repeat if repeat is None else repeat)

    @property
    def gates(self) -> RepeatGates:
        """The run's own thresholds over repeats, for the specs that state none."""
        settings = self.harness.settings
        return RepeatGates(settings.pass_at_least, settings.min_pass_rate)

    def history_item(self, nodeid: str, data: dict[str, Any]) -> None:
        """A run's history item as its report carried it, from whichever process ran it."""
        self.history_items[nodeid] = (item_from_dict(data["item"]), data.get("claude"))

    # --- summary -------------------------------------------------------------------------

    def finish(self) -> None:
        """After the runs: old run folders go; the session is recorded in the history."""
        self.harness.finish()
        if self.cache is not None:
            self.cache.close()
        self.record_history()

    def history_run(self) -> tuple[RunRecord, list[ItemRecord]]:
        """The session as the history store keeps it: one run (made once, so the local
        store and a shard's results file name it alike) and its items in collection order."""
        order = sorted(self.history_items, key=lambda n: self.order.get(n, len(self.order)))
        if self._history_run is None:
            harness = self.harness
            version = first_version(v for _, v in self.history_items.values())
            self._history_run = run_record(
                self.history_kind,
                harness.settings,
                harness.root,
                version,
                started=self.started,
            )
        return self._history_run, [self.history_items[n][0] for n in order]

    def history_document(self) -> dict[str, Any] | None:
        """The session's history run and items as JSON, for a shard's results; None: no items."""
        if not self.history_items:
            return None
        run, _ = self.history_run()
        items = {nodeid: item_to_dict(item) for nodeid, (item, _) in self.history_items.items()}
        return {"run": run_to_dict(run), "items": items}

    def record_history(self) -> None:
        """Record the session in the `--atom-history` store, once (else `history_error`)."""
        if not self.history_items or self.history_recorded:
            return
        self.history_recorded = True
        run, items = self.history_run()
        warning = write_run(self.harness.settings.history, self.harness.root, run, items)
        self.history_error = warning or ""

    def write_results(self) -> None:
        """Write `last-run.json` (``atom baseline save`` reads it); a failure is a line."""
        path = results_file(self.harness.runs_dir)
        try:
            write_results(self.rows, path)
        except OSError as exc:
            self.results_error = f"could not write {display_path(path)}: {exc.strerror or exc}"

    def finish_reports(
        self, views: Mapping[str, Mapping[str, Any]], failures: Mapping[str, str]
    ) -> None:
        """Every installed report format's session end (`ReportFormat.finish`); with
        ``--atom-report`` first the shard results file (`suite.shards`)."""
        harness = self.harness
        if harness.report_dir is not None:
            # The specs the harness could not run count among the session's other failures.
            write_shard(
                harness.report_dir / SHARD_RESULTS,
                self.rows,
                views.get(VIEWS_OF, {}),
                failures=failures,
                other_failures=max(0, self.other_failures - len(failures)),
                history=self.history_document(),
            )
        end = SessionEnd(
            harness.settings,
            harness.root,
            self.rows,
            views,
            failures,
            self.gates,
            deltas=self._deltas,
            history=self.history_view,
            runs_dir=harness.runs_dir,
        )
        self.written = [w for f in report_formats() for w in f.finish(end)]

    def _deltas(self) -> Mapping[str, Any]:
        if self.baseline is None:
            return {}
        self.compare()
        return self.baseline.deltas()

    def compare(self) -> bool:
        """The whole run against the baseline, once; True when something regressed."""
        if self.baseline is None or self.compared:
            return self.regressed
        self.regressed = self.baseline.finish(self.rows)
        self.compared = True
        return self.regressed

    def summary(self, width: int | None) -> Summary:
        """The table and the lines under it (`width`: `summary_width`), in collection order."""
        rows = self.rows
        rows.sort(key=lambda row: self.order.get(row.nodeid, len(self.order)))
        return Summary(
            table=summary_table(rows, width),
            notes=[f"{label}: {row.nodeid}: {text}" for row in rows for label, text in row.notes()],
            tries=failed_tries_lines(rows) + environment_lines(rows) + self._cache_lines(rows),
            spending=self._spending_line(),
            sandbox=sandbox_warning_lines(rows),
            results_error=self.results_error,
            history_error=self.history_error,
            baseline=self.baseline.flagged_lines() if self.baseline is not None else None,
            rates=rate_lines(rows, self.gates),
            arms=arm_lines(rows),
            criteria=criteria_trust_lines(rows),
            cases=case_lines(rows) + conversation_lines(rows),
            triggers=trigger_lines(rows),
        )

    def _cache_lines(self, rows: Sequence[SummaryRow]) -> list[str]:
        problem = [self.cache.problem] if self.cache is not None and self.cache.problem else []
        return cached_lines(rows) + problem

    def _spending_line(self) -> str | None:
        if not self.spending_limit:
            return None
        spend = self.harness.spend
        said = spend.summary() if spend is not None else None
        option = self.harness.spend_option
        return said or f"spending limit reached ({option}); exit status {EXIT_SPENDING_LIMIT}"

    def history_view(self) -> HistoryView | None:
        """The HTML report's history: against the store's previous run, and each trend."""
        if not self.history_items:
            return None
        from pytest_atom.history.view import history_view

        run, items = self.history_run()
        return history_view(self.harness.settings.history, self.harness.root, run, items)

    # --- exit status ---------------------------------------------------------------------

    def exit_status(self, base: int, *, compare: bool = True) -> int:
        """The suite's exit status over pytest's `base`; `compare`: gate on the baseline."""
        regressed = compare and self.compare()
        return decide(
            Ending(
                base=base,
                rows=self.rows,
                min_pass_rate=self.harness.settings.min_pass_rate,
                pass_at_least=self.harness.settings.pass_at_least,
                regressed=regressed,
                spending_limit=self.spending_limit,
                other_failures=self.other_failures,
            )
        )
