"""`SuiteRun`: one run of a suite of specs, from collection to its exit status.

The stages, in order, and who drives each:

- collect: `load` (outside pytest) or pytest's own collectors, which hand each file's
  specs to `collected`; `arms_problem` then checks ``--arms`` against every arm seen;
- run: `run_specs` (outside pytest, with a `Watcher` printing progress) or pytest's items,
  whose reports the session plugin turns into rows for `record`;
- summary: `finish`, `compare` (the baseline gate, once), `summary` (the lines under the
  table, which each front end lays out);
- exit status: `exit_status`, the only place a suite's status is decided
  (`pytest_atom.suite.ending.decide`);
- history: `finish` records the session in the history store, once (`history_run`: the
  run and its items; a worker's items reach its controller in their reports, `history_item`).

pytest owns its collection, its run loop and ``session.exitstatus``: its session plugin
(`pytest_atom.pytest.session.AtomSession`) holds a `SuiteRun` and calls into it from
its hooks, as pytest-xdist's `DSession` keeps a run's state behind its hooks. `atom run`
drives the same object from click. Neither recomputes a gate or an exit status.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from pytest_atom.baseline.compare import BaselineGate, results_file, write_results
from pytest_atom.baseline.measure import arm_lines, case_lines, measured_lines, repeat_lines
from pytest_atom.cost.spend import EXIT_SPENDING_LIMIT
from pytest_atom.errors import SpendingLimitReached
from pytest_atom.history.cache import session_cache
from pytest_atom.history.last_failed import last_failed
from pytest_atom.history.recording import (
    claude_version_of,
    first_version,
    item_record,
    run_record,
    write_run,
)
from pytest_atom.history.records import (
    ItemRecord,
    RunRecord,
    item_from_dict,
    item_to_dict,
    run_to_dict,
)
from pytest_atom.paths import display_path, node_id
from pytest_atom.reports.phrases import drift_line
from pytest_atom.reports.properties import result_properties
from pytest_atom.reports.summary import (
    cached_lines,
    criteria_trust_lines,
    environment_lines,
    failed_tries_lines,
    sandbox_warning_lines,
    summary_table,
)
from pytest_atom.results.rows import SummaryRow, spec_key
from pytest_atom.results.thresholds import RepeatGates
from pytest_atom.settings.project import pytest_rootdir
from pytest_atom.spec.arms import select_arms, unknown_arms
from pytest_atom.spec.load import load_specs
from pytest_atom.suite.ending import EXIT_MACHINERY, Ending, decide, worst
from pytest_atom.suite.summary import Summary

if TYPE_CHECKING:
    from pytest_atom.results.harness_events import AnyEvent
    from pytest_atom.results.history_view import HistoryView
    from pytest_atom.results.spec_result import SpecResult
    from pytest_atom.run.harness import Harness
    from pytest_atom.spec.types import Spec

_Item = TypeVar("_Item")

__all__ = ["ATOM_RUN", "PYTEST", "FrontEnd", "SuiteRun", "Watcher", "load_files"]


def load_files(files: Iterable[Path], kinds: Iterable[str] = ()) -> list[Spec]:
    """The specs in `files` (`kinds`: the project's own check kinds), in order, before arms
    are selected; SpecError names a malformed one."""
    known = tuple(kinds)
    return [spec for file in files for spec in load_specs(file, check_kinds=known)]


@dataclass(frozen=True)
class FrontEnd:
    """What differs between the front ends that drive a suite: the words they use."""

    #: The option that selects arms, as the unknown-arms error names it.
    arms_flag: str
    #: What the history store calls its sessions (`RunRecord.kind`).
    history_kind: str = "pytest"


PYTEST = FrontEnd(arms_flag="--atom-arms", history_kind="pytest")
ATOM_RUN = FrontEnd(arms_flag="--arms", history_kind="atom run")


class Watcher(Protocol):
    """What a front end shows of `SuiteRun.run_specs` as it happens (`atom run`'s progress)."""

    def started(self, spec: Spec, label: str) -> Callable[[AnyEvent], None] | None:
        """A run of `spec` starts (`label`: its name, ``[rN]`` for a repeat); the callback
        returned sees each of its events."""

    def not_run(self, reason: str) -> None:
        """The spending limit is reached: the run did not start."""

    def finished(self, result: SpecResult) -> None:
        """The run ended, passed or not."""


class SuiteRun:
    """The state of one suite run and its stages (the module's docstring)."""

    def __init__(self, harness: Harness, front: FrontEnd) -> None:
        """BaselineError (the baseline file cannot be used) is the front end's to word."""
        self.harness = harness
        self.front = front
        self.baseline: BaselineGate | None = harness.baseline_gate()
        self.rows: list[SummaryRow] = []  # every spec run, as the summary shows it
        self.results: list[tuple[SpecResult, int | None]] = []  # the runs `run_specs` ran
        self.views: list[dict[str, Any]] = []  # their HTML views, made while run folders exist
        self.other_failures = 0  # failed reports that are not spec runs: never gated away
        self.spending_limit = False  # a spec was stopped, or not run, at the spending limit
        self.aborted = ""  # the harness failed outside a spec's run: the run stopped
        self.arms_seen: set[str | None] = set()  # every arm of the collected specs
        self.order: dict[str, int] = {}  # node ids in collection order, for the summary
        self.compared = self.regressed = False  # the whole run against the baseline, once
        self.results_error = ""  # last-run.json could not be written
        #: Each run's history item by node id, with the Claude Code version it reported.
        self.history_items: dict[str, tuple[ItemRecord, str | None]] = {}
        self._history_run: RunRecord | None = None
        self.history_error = ""  # the history store could not be written: the warning
        self.history_recorded = False
        self.started = datetime.now(UTC)  # when the session began, as its run records it
        #: Each run's input digest, and with --atom-cache the stored outcomes that stand in.
        self.cache = session_cache(harness.settings, harness.root, harness.config, harness.runs_dir)
        harness.recall = self.cache

    # --- collect -------------------------------------------------------------------------

    def collected(self, specs: Sequence[Spec]) -> list[Spec]:
        """A file's specs were collected: their arms are seen; those of the selected arms."""
        self.arms_seen.update(spec.arm for spec in specs if spec.arm is not None)
        return select_arms(list(specs), self.harness.settings.arms)

    def arms_problem(self) -> str | None:
        """Why the selected arms cannot be (one no collected spec has), or None."""
        return unknown_arms(self.harness.settings.arms, self.arms_seen, self.front.arms_flag)

    def last_failed(
        self, items: Sequence[_Item], spec_of: Callable[[_Item], Spec | None]
    ) -> tuple[list[_Item], list[_Item], str]:
        """With ``last_failed``: (kept, deselected, the line saying so) of `items`, only
        those whose spec (`spec_of`; None: not a spec, kept) failed in the store's last
        run (`history.last_failed`); without it, all kept and no line."""
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

    def run_specs(self, specs: Sequence[Spec], watcher: Watcher) -> None:
        """Each spec, `repeat` times, through the harness (outside pytest). A harness
        error stops the run (`aborted`); Ctrl-C is the caller's."""
        from pytest_atom.run.execution import HARNESS_ERRORS  # the machinery, when it runs

        try:
            for spec in map(self.repeated, specs):
                repeat = spec.repeats or 1
                for number in range(1, repeat + 1):
                    label = spec.name if repeat == 1 else f"{spec.name}[r{number}]"
                    self._run_one(spec, number if repeat > 1 else None, label, watcher)
        except HARNESS_ERRORS as exc:
            self.aborted = str(exc)
        spend = self.harness.spend
        self.spending_limit = self.spending_limit or (spend is not None and spend.reached)

    def repeated(self, spec: Spec, repeat: int | None = None) -> Spec:
        """`spec` with its count of runs settled (`Spec.with_repeats`): its own `repeats:`,
        else `repeat` (a front end's own default), else ``--atom-repeat``."""
        return spec.with_repeats(self.harness.settings.repeat if repeat is None else repeat)

    @property
    def gates(self) -> RepeatGates:
        """The run's own thresholds over repeats, for the specs that state none."""
        settings = self.harness.settings
        return RepeatGates(settings.pass_at_least, settings.min_pass_rate)

    def _run_one(self, spec: Spec, repeat: int | None, label: str, watcher: Watcher) -> None:
        on_event = watcher.started(spec, label)
        try:
            result = self.harness.run(spec, on_event=on_event, repeat=repeat)
        except SpendingLimitReached as exc:
            self.spending_limit = True
            watcher.not_run(str(exc))
            return
        self.ran(result, repeat)
        watcher.finished(result)

    def ran(self, result: SpecResult, repeat: int | None = None) -> None:
        """A run this suite ran itself (`repeat`: which of the spec's, if it repeats); its
        HTML view is made now, while its run folder still exists."""
        self.results.append((result, repeat))
        if self.harness.html is not None:
            from pytest_atom.reports.html import spec_view  # Jinja2 only when asked for

            self.views.append(spec_view(result, repeat=repeat))

    def record(self, row: SummaryRow) -> None:
        """A spec run pytest ran (its report's figures)."""
        self.rows.append(row)

    def history_item(self, nodeid: str, data: dict[str, Any]) -> None:
        """A run's history item as its report carried it (`item_to_dict` and the Claude
        Code version): pytest's items, on whichever process ran them."""
        self.history_items[nodeid] = (item_from_dict(data["item"]), data.get("claude"))

    def record_other_failure(self) -> None:
        """A failed report that is not a spec run."""
        self.other_failures += 1

    def limit_reached(self) -> None:
        """A spec stopped, or did not start, at the spending limit."""
        self.spending_limit = True

    # --- summary -------------------------------------------------------------------------

    def finish(self) -> None:
        """After the runs: old run folders go; the runs `run_specs` ran become rows, with
        pytest's node ids (from its rootdir) and, with a baseline, each run's deltas; then
        the session is recorded in the history store."""
        self.harness.finish()
        if self.cache is not None:
            self.cache.close()
        if self.results:
            self._result_rows()
        self.record_history()

    def _result_rows(self) -> None:
        from pytest_atom.replay.scrub import Scrubber  # the machinery: loaded once runs ran

        rootdir, scrubber = pytest_rootdir(), Scrubber()
        for result, repeat in self.results:
            nodeid = node_id(result.spec.path, result.spec.name, rootdir)
            nodeid += f"[r{repeat}]" if repeat else ""
            props = result_properties(result)
            if self.baseline is not None:
                own = result.spec.baseline_tolerance
                props.update(self.baseline.item_properties(nodeid, props, own=own))
            self.rows.append(SummaryRow.of(nodeid, props, result.outcome))
            item = item_record(result, repeat, scrubber=scrubber)
            self.history_items[nodeid] = (item, claude_version_of(result))

    def history_run(self) -> tuple[RunRecord, list[ItemRecord]]:
        """The session as the history store keeps it: one run (made once, so the local
        store and a shard's results file name it alike) and its items in collection order."""
        order = sorted(self.history_items, key=lambda n: self.order.get(n, len(self.order)))
        if self._history_run is None:
            harness = self.harness
            version = first_version(v for _, v in self.history_items.values())
            self._history_run = run_record(
                self.front.history_kind,
                harness.settings,
                harness.root,
                version,
                started=self.started,
            )
        return self._history_run, [self.history_items[n][0] for n in order]

    def history_document(self) -> dict[str, Any] | None:
        """The session's history run and its items by node id, as JSON values: what a
        shard's results file carries for `atom history import` (None: no items)."""
        if not self.history_items:
            return None
        run, _ = self.history_run()
        items = {nodeid: item_to_dict(item) for nodeid, (item, _) in self.history_items.items()}
        return {"run": run_to_dict(run), "items": items}

    def record_history(self) -> None:
        """Record the session in the store `--atom-history` names, once; a store that cannot
        be written leaves `history_error`, the loud line under the summary."""
        if not self.history_items or self.history_recorded:
            return
        self.history_recorded = True
        run, items = self.history_run()
        warning = write_run(self.harness.settings.history, self.harness.root, run, items)
        self.history_error = warning or ""

    def write_results(self) -> None:
        """`last-run.json` (what ``atom baseline save`` reads); a folder that became
        unwritable or a full disk is a line under the summary, not a traceback over it."""
        path = results_file(self.harness.runs_dir)
        try:
            write_results(self.rows, path)
        except OSError as exc:
            self.results_error = f"could not write {display_path(path)}: {exc.strerror or exc}"

    def compare(self) -> bool:
        """The whole run against the baseline, once (the HTML report reads it too); True
        when something regressed."""
        if self.baseline is None or self.compared:
            return self.regressed
        self.regressed = self.baseline.finish(self.rows)
        self.compared = True
        return self.regressed

    def summary(self, width: int | None) -> Summary:
        """The lines under the table and the table (`width`: `summary_width`), in
        collection order."""
        rows = self.rows
        rows.sort(key=lambda row: self.order.get(row.nodeid, len(self.order)))
        gates = self.gates
        repeated = any(spec_key(row.nodeid) != row.nodeid for row in rows)
        held = repeated or any(row.pass_at_least is not None for row in rows)
        return Summary(
            table=summary_table(rows, width),
            notes=[f"{label}: {row.nodeid}: {text}" for row in rows for label, text in row.notes()],
            result_notes=self._result_notes(),
            tries=failed_tries_lines(rows) + environment_lines(rows) + self._cache_lines(rows),
            spending=self._spending_line(),
            sandbox=sandbox_warning_lines(rows),
            results_error=self.results_error,
            history_error=self.history_error,
            baseline=self.baseline.flagged_lines() if self.baseline is not None else None,
            rates=repeat_lines(rows, gates.min_pass_rate, gates.pass_at_least)
            if held or gates.min_pass_rate is not None
            else None,
            arms=arm_lines(rows),
            criteria=criteria_trust_lines(rows),
            cases=case_lines(rows),
        )

    def _cache_lines(self, rows: Sequence[SummaryRow]) -> list[str]:
        """What the outcome cache reported (--atom-cache), and a store it could not read."""
        problem = [self.cache.problem] if self.cache is not None and self.cache.problem else []
        return cached_lines(rows) + problem

    def _result_notes(self) -> list[str]:
        """Drift and warnings of the runs `run_specs` ran, by spec name."""
        lines = []
        for result, _ in self.results:
            drift = drift_line(result.drift)
            for label, text in (("drift", drift), *(("warning", w) for w in result.warnings)):
                if text:
                    lines.append(f"{label}: {result.spec.name}: {text}")
        return lines

    def _spending_line(self) -> str | None:
        if not self.spending_limit:
            return None
        spend = self.harness.spend
        said = spend.summary() if spend is not None else None
        option = self.harness.spend_option
        return said or f"spending limit reached ({option}); exit status {EXIT_SPENDING_LIMIT}"

    def write_html(self) -> Path | None:
        """The HTML report of the runs `run_specs` ran, where `html` asks for one."""
        page = self.harness.html
        if page is None:
            return None
        from pytest_atom.reports.html import report_row, write_html  # Jinja2 only when asked

        deltas = self.baseline.deltas() if self.baseline is not None else {}
        rows = [
            report_row(row.nodeid, row.outcome.label, view, deltas=deltas.get(spec_key(row.nodeid)))
            for row, view in zip(self.rows, self.views, strict=True)
        ]
        write_html(
            rows,
            page,
            runs_dir=self.harness.runs_dir,
            measured=measured_lines(self.rows, self.gates),
            history=self.history_view(),
        )
        return page

    def history_view(self) -> HistoryView | None:
        """The HTML report's history: this session against the store's previous run, and
        each spec's trend (None when no item ran). The session need not be stored yet."""
        if not self.history_items:
            return None
        from pytest_atom.history.view import history_view

        run, items = self.history_run()
        return history_view(self.harness.settings.history, self.harness.root, run, items)

    # --- exit status ---------------------------------------------------------------------

    def exit_status(self, base: int | None = None, *, compare: bool = True) -> int:
        """The suite's exit status: `base` is the front end's own (pytest's session
        status); None when the suite ran its specs itself, whose worst outcome it is then.
        `compare`: gate on the baseline (an xdist worker leaves it to its controller)."""
        own = base is None
        status = worst(self.rows) if base is None else base
        regressed = compare and not self.aborted and self.compare()
        return decide(
            Ending(
                base=status,
                rows=self.rows,
                min_pass_rate=self.harness.settings.min_pass_rate,
                pass_at_least=self.harness.settings.pass_at_least,
                regressed=regressed,
                spending_limit=self.spending_limit,
                machinery_failed=bool(self.aborted) or (own and status == EXIT_MACHINERY),
                other_failures=self.other_failures,
            )
        )
