"""Questions about the past, answered from a store: what `atom history` shows.

Trials and observations are kept apart. A series' figures count its trials only (items the
agent ran and a judge judged: `ItemRecord.kind` ``trial``). A cached outcome repeats a
stored trial: it is counted apart (`SeriesSummary.cached`) and enters no pass rate,
interval, mean or trend. A rescore's verdicts judge stored attempts again: a series of
judgements of its own (`SeriesSummary.kind` ``rescore``), never mixed into the trials'.

- `summarize`: per (spec, case, arm), its last N runs: the trials' pass rate with its
  Wilson 95 % interval, means per trial, the last outcome, and a trend where the change is
  beyond noise: the window's older half of runs against its newer half, by the gate's
  Fisher test one-sided each way, Holm-adjusted over the series, at the gate's alpha.
- `flaky`: the trials whose outcome changed while their inputs did not: over runs with one
  input digest, and among the repeats of one session. An item without a digest is unknown
  across runs, never "unchanged"; it is flaky only by disagreeing with its session's repeats.
- `last_failed`: ``--atom-last-failed``, as `pytest --lf`. Every repeat of a failed line
  runs again: re-running only the draws that failed would make a pass rate of nothing.

A pass is ``passed`` or ``xpassed``; a fail is ``failed`` or ``xfailed``; ``error`` and
``skipped`` count in neither.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_atom.baseline import stats
from pytest_atom.baseline.gate import ALPHA
from pytest_atom.errors import HistoryError
from pytest_atom.history.records import item_to_dict, run_to_dict, series_dict, series_label
from pytest_atom.history.store import session_store
from pytest_atom.history.write import identity
from pytest_atom.reports.table import table_lines

if TYPE_CHECKING:
    from pytest_atom.history.diff import RunDiff
    from pytest_atom.history.records import ItemFigures, ItemRecord, RunRecord, SeriesKey
    from pytest_atom.history.store import Store
    from pytest_atom.settings.options import RunSettings
    from pytest_atom.spec.types import Spec

PASSES = frozenset({"passed", "xpassed"})
FAILS = frozenset({"failed", "xfailed"})
Counts = tuple[int, int]  # (passed, counted)


def _counts(items: Sequence[ItemRecord] | Sequence[ItemFigures]) -> Counts:
    counted = [i for i in items if i.outcome in PASSES or i.outcome in FAILS]
    return sum(1 for i in counted if i.outcome in PASSES), len(counted)


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


@dataclass(frozen=True)
class Trend:
    """A change of pass rate beyond noise: the window's older runs against its newer."""

    direction: str  # "better" or "worse"
    before: Counts
    after: Counts
    p_value: float
    adjusted: float

    @property
    def marker(self) -> str:
        return "↑ better" if self.direction == "better" else "↓ worse"

    def to_dict(self) -> dict[str, Any]:
        return {
            "direction": self.direction,
            "before": list(self.before),
            "after": list(self.after),
            "test": "Fisher's exact test, one-sided, Holm-adjusted over the series",
            "p_value": self.p_value,
            "adjusted_p_value": self.adjusted,
        }


@dataclass(frozen=True)
class SeriesSummary:
    """One (spec, case, arm) over its last runs: its trials (with how many cached outcomes
    were left out) or its rescores' judgements (`kind`). `runs` counts the runs that hold a
    counted item; the means are per item, `cost_usd` at Claude Code's list price and
    `spent_usd` what was paid (None where no item recorded it)."""

    series: SeriesKey
    runs: int
    counts: Counts
    rate: stats.Interval | None
    tokens: float | None
    cost_usd: float | None
    wall_seconds: float | None
    last_outcome: str
    last_run: str
    halves: tuple[Counts, Counts] | None
    trend: Trend | None = None
    kind: str = "trial"
    cached: int = 0
    spent_usd: float | None = None
    last_kind: str = "trial"

    @property
    def name(self) -> str:
        return series_label(self.series)

    def to_dict(self) -> dict[str, Any]:
        return {
            **series_dict(self.series),
            "kind": self.kind,
            "runs": self.runs,
            "passed": self.counts[0],
            "counted": self.counts[1],
            "cached_left_out": self.cached,
            "pass_rate": self.rate.to_dict() if self.rate else None,
            "tokens_mean": self.tokens,
            "cost_usd_mean": self.cost_usd,
            "spent_usd_mean": self.spent_usd,
            "wall_seconds_mean": self.wall_seconds,
            "last_outcome": self.last_outcome,
            "last_kind": self.last_kind,
            "last_run": self.last_run,
            "trend": self.trend.to_dict() if self.trend else None,
        }


@dataclass(frozen=True)
class Summary:
    """`summarize`'s answer: every series over its last `last` runs."""

    series: list[SeriesSummary]
    last: int

    def to_dict(self) -> dict[str, Any]:
        return {"last": self.last, "alpha": ALPHA, "series": [s.to_dict() for s in self.series]}

    def lines(self, url: str) -> list[str]:
        """`atom history`'s table of the store at `url`."""
        rows = []
        for s in self.series:
            passed, counted = s.counts
            last = s.last_outcome + (f" ({s.last_kind})" if s.last_kind == "cached" else "")
            rows.append(
                [
                    s.name,
                    s.kind,
                    str(s.runs),
                    f"{passed}/{counted} {s.rate.show(2)}" if s.rate else "-",
                ]
                + [str(s.cached), "-" if s.tokens is None else f"{s.tokens:.0f}"]
                + [_money(s.spent_usd), _money(s.cost_usd)]
                + ["-" if s.wall_seconds is None else f"{s.wall_seconds:.1f}s", last]
                + [s.trend.marker if s.trend else ""]
            )
        header = ["SPEC", "KIND", "RUNS", "PASS RATE (95 %)", "CACHED", "TOKENS", "SPENT"]
        header += ["LIST $", "WALL", "LAST", "TREND"]
        return [
            f"history: {url}, the last {self.last} runs of each spec x case x arm",
            "trials only: cached outcomes (CACHED) hold no new trial, and a rescore's judgements "
            "are a line of their own (KIND rescore); means are per item",
            *table_lines(header, rows, right=(2, 4, 5, 6, 7, 8)),
        ]


def _money(value: float | None) -> str:
    return "-" if value is None else f"${value:.4f}"


def _halves(items: Sequence[ItemFigures]) -> tuple[Counts, Counts] | None:
    """The window's older half of runs and its newer half, as counts (None: one run)."""
    order = list(dict.fromkeys(i.run_id for i in items))  # newest run first
    if len(order) < 2:
        return None
    newer = set(order[: len(order) // 2])
    return (
        _counts([i for i in items if i.run_id not in newer]),
        _counts([i for i in items if i.run_id in newer]),
    )


def _summary(series: SeriesKey, items: Sequence[ItemFigures], kind: str) -> SeriesSummary:
    """The series' figures over its `items` of `kind` (newest first); the last outcome is
    the newest of `items`, whatever its kind, so a cached pass still has the last word."""
    counted = [i for i in items if i.kind == kind]
    counts = _counts(counted)
    spent = [i.spent_usd for i in counted if i.spent_usd is not None]
    return SeriesSummary(
        series=series,
        runs=len({i.run_id for i in counted}),
        counts=counts,
        rate=stats.wilson(*counts) if counts[1] else None,
        tokens=_mean([i.total_tokens for i in counted]),
        cost_usd=_mean([i.total_cost for i in counted]),
        wall_seconds=_mean([i.wall_seconds for i in counted]),
        last_outcome=items[0].outcome,
        last_run=items[0].run_id,
        halves=_halves(counted) if kind == "trial" else None,
        kind=kind,
        cached=sum(1 for i in items if i.kind == "cached"),
        spent_usd=_mean(spent),
        last_kind=items[0].kind,
    )


def _with_trends(found: list[SeriesSummary]) -> list[SeriesSummary]:
    tested = [
        (s, h) for s in found if s.kind == "trial" and (h := s.halves) and h[0][1] and h[1][1]
    ]
    trends: dict[SeriesKey, Trend] = {}
    for direction in ("worse", "better"):
        p_values = [
            stats.fisher_drop(b, a) if direction == "worse" else stats.fisher_drop(a, b)
            for _, (b, a) in tested
        ]
        for (each, halves), p, adjusted in zip(tested, p_values, stats.holm(p_values), strict=True):
            if adjusted < ALPHA:
                trends[each.series] = Trend(direction, *halves, p, adjusted)
    return [replace(s, trend=trends.get(s.series) if s.kind == "trial" else None) for s in found]


def summarize(store: Store, last: int = 20, spec: str | None = None) -> Summary:
    """Every series' last `last` runs (of `spec` only): its trials, then its rescores'."""
    found = []
    for series in store.series(spec):
        items = store.figures(*series, limit=last)
        observed = [i for i in items if i.kind != "rescore"]
        judged = [i for i in items if i.kind == "rescore"]
        found += [
            _summary(series, some, kind)
            for some, kind in ((observed, "trial"), (judged, "rescore"))
            if some
        ]
    return Summary(_with_trends(found), last)


@dataclass(frozen=True)
class SpecRun:
    """One run of a spec, for one (case, arm): its repeats' outcomes and figures."""

    run: RunRecord
    series: SeriesKey
    items: tuple[ItemRecord, ...]

    @property
    def outcome(self) -> str:
        """``passed``, or ``2/3 passed`` over repeats."""
        outcomes = [i.outcome for i in self.items]
        if len(outcomes) == 1:
            return outcomes[0]
        passed, counted = _counts(self.items)
        return f"{passed}/{counted} passed" if counted else ", ".join(sorted(set(outcomes)))

    @property
    def kind(self) -> str:
        """Its items' kind, or each kind's count when they differ (``2 cached, 1 trial``)."""
        kinds = [i.kind for i in self.items]
        if len(set(kinds)) == 1:
            return kinds[0]
        return ", ".join(f"{kinds.count(k)} {k}" for k in sorted(set(kinds)))

    @property
    def turns_to_success(self) -> str:
        """A conversation's user messages in each repeat that passed (``3,4``); ``-``: none did."""
        took = sorted(i.user_turns for i in self.items if i.passed and i.user_turns is not None)
        return ",".join(map(str, took)) or "-"

    def to_dict(self) -> dict[str, Any]:
        return {
            "run": run_to_dict(self.run),
            **series_dict(self.series),
            "kind": self.kind,
            "outcome": self.outcome,
            "items": [item_to_dict(i) for i in self.items],
        }


def spec_runs_lines(runs: Sequence[SpecRun], url: str, spec: str) -> list[str]:
    """`atom history SPEC`'s table: the spec's runs in the store at `url`, newest first."""
    rows = []
    for r in runs:
        known = [i.spent_usd for i in r.items if i.spent_usd is not None]
        rows.append(
            [r.run.id, f"{r.run.started:%Y-%m-%d %H:%M}", r.run.kind]
            + [(r.run.commit or "-")[:8] + ("*" if r.run.dirty else "")]
            + [series_label(r.series), r.kind, r.outcome]
            + [str(sum(i.total_tokens for i in r.items)), _money(sum(known) if known else None)]
            + [_money(sum(i.total_cost for i in r.items))]
            + [f"{sum(i.wall_seconds for i in r.items):.1f}s"]
        )
    header = ["RUN", "STARTED (UTC)", "RUN KIND", "COMMIT", "ITEM", "KIND", "OUTCOME"]
    header += ["TOKENS", "SPENT", "LIST $", "WALL"]
    if any(i.user_turns is not None for r in runs for i in r.items):  # a conversation's
        header.append("USER TURNS")
        rows = [row + [r.turns_to_success] for row, r in zip(rows, runs, strict=True)]
    return [
        f"history: {url}: {spec}, newest first",
        *table_lines(header, rows, right=(7, 8, 9, 10, 11)),
    ]


def spec_runs(store: Store, spec: str, last: int = 20) -> list[SpecRun]:
    """`spec`'s last `last` runs, newest first: an entry per run and (case, arm)."""
    found = []
    for run in store.runs(limit=last, spec=spec):
        mine = store.items(run.id, spec)
        for series in sorted({i.series for i in mine}, key=series_label):
            found.append(SpecRun(run, series, tuple(i for i in mine if i.series == series)))
    return found


@dataclass(frozen=True)
class FlakyItem:
    """A series whose trials' outcome changed while their inputs did not: over `runs` with one
    input `digest` (`basis` ``digest``), or among one session's repeats (`basis` ``repeats``)."""

    series: SeriesKey
    digest: str | None
    counts: Counts
    runs: tuple[str, ...]
    basis: str = "digest"

    def to_dict(self) -> dict[str, Any]:
        return {
            **series_dict(self.series),
            "basis": self.basis,
            "digest": self.digest,
            "passed": self.counts[0],
            "failed": self.counts[1] - self.counts[0],
            "runs": list(self.runs),
        }


@dataclass(frozen=True)
class FlakyReport:
    """`flaky`'s answer, and how many items had no digest (unknown: never counted)."""

    items: list[FlakyItem]
    last: int
    unknown: int = 0
    checked: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "last": self.last,
            "flaky": [f.to_dict() for f in self.items],
            "items_checked": self.checked,
            "items_without_digest": self.unknown,
        }

    def lines(self, url: str) -> list[str]:
        """`atom history --flaky`'s answer for the store at `url`."""
        lines = [
            f"history: {url}: flaky items in the last {self.last} runs (same inputs, outcome "
            "changed: one input digest over runs, or one session's repeats)"
        ]
        for f in self.items:
            passed, counted = f.counts
            said = f"{passed} passed, {counted - passed} failed"
            where = (
                f"digest {f.digest[:12]}: {said} over {len(f.runs)} runs"
                if f.digest is not None
                else f"repeats in run {f.runs[0]}: {said} in one session"
            )
            lines.append(f"{series_label(f.series)}: {where}")
        if not self.items:
            lines.append("none")
        if self.unknown:
            lines.append(
                f"{self.unknown} of {self.checked} items carry no input digest: unknown "
                "across runs, compared only with their own session's repeats (the outcome "
                "cache, --atom-cache, records digests)"
            )
        return lines


def flaky(store: Store, last: int = 20, spec: str | None = None) -> FlakyReport:
    """The series whose trials' outcome changed in their last `last` runs, inputs the same."""
    found: list[FlakyItem] = []
    unknown = checked = 0
    for series in store.series(spec):
        by_digest: dict[str, list[ItemFigures]] = {}
        by_run: dict[str, list[ItemFigures]] = {}
        for item in store.figures(*series, limit=last):
            if item.kind != "trial" or item.outcome not in PASSES | FAILS:
                continue
            checked += 1
            if item.repeat is not None:
                by_run.setdefault(item.run_id, []).append(item)
            if item.digest is None:
                unknown += 1
                continue
            by_digest.setdefault(item.digest, []).append(item)
        groups: list[tuple[str | None, list[ItemFigures], str]]
        groups = [(d, items, "digest") for d, items in by_digest.items()]
        groups += [(None, items, "repeats") for items in by_run.values()]
        for digest, items, basis in groups:
            passed, counted = _counts(items)
            if 0 < passed < counted:
                runs = tuple(dict.fromkeys(i.run_id for i in items))
                found.append(FlakyItem(series, digest, (passed, counted), runs, basis))
    return FlakyReport(found, last, unknown, checked)


#: How many earlier runs `like_run` looks through for one that covered the selection.
LIKE_RUNS = 100


def like_run(
    store: Store, run: RunRecord, selection: Collection[SeriesKey]
) -> tuple[RunRecord, str] | None:
    """The run to compare `run` with, and how it was chosen; None when no earlier run
    shares a line with it. A rescore is compared with the run it judged again; any other
    run with the newest earlier run (no rescore) that covered every line of `selection`,
    else the newest that covered the most of it, so unselected specs do not read as removed."""
    if run.kind == "rescore" and run.rescore_of:
        return store.run(
            run.rescore_of
        ), f"compared with the run it judged again ({run.rescore_of})"
    wanted = set(selection)
    best: tuple[int, RunRecord] | None = None
    for each in store.runs(limit=LIKE_RUNS):
        if each.id == run.id or each.kind == "rescore" or each.started > run.started:
            continue
        covered = len(wanted & set(store.selection(each.id)))
        if covered == len(wanted):
            return each, f"compared with the newest run that covered the same {_lines(wanted)}"
        if covered and (best is None or covered > best[0]):
            best = (covered, each)
    if best is None:
        return None
    return best[1], (
        f"no earlier run covered all {_lines(wanted)}: compared with the newest that covered "
        f"the most ({best[0]} of them)"
    )


def _lines(wanted: Collection[SeriesKey]) -> str:
    return f"{len(wanted)} spec x case x arm line{'s' * (len(wanted) != 1)}"


def compare_with_like(store: Store, run: RunRecord, items: Sequence[ItemRecord]) -> RunDiff | None:
    """`run` (stored or not yet) against its `like_run`, over the lines `run` covered."""
    from pytest_atom.history.diff import diff_runs

    selection = {i.series for i in items}
    found = like_run(store, run, selection)
    if found is None:
        return None
    before, how = found
    earlier = [i for i in store.items(before.id) if i.series in selection]
    return replace(diff_runs(before, earlier, run, items), paired=how)


#: The outcomes `--atom-last-failed` runs again (pytest's --lf: failed, and errors).
FAILED_OUTCOMES = frozenset({"failed", "error"})


@dataclass(frozen=True)
class LastFailed:
    """The store's last run and the lines that failed in it (empty: select everything)."""

    run: RunRecord | None
    failed: frozenset[SeriesKey]
    problem: str = ""  # the store could not be read

    def selects(self, spec: Spec) -> bool:
        """Whether `spec` runs: it failed last time, or nothing did."""
        return not self.failed or identity(spec) in self.failed

    def note(self, selected: int, deselected: int) -> str:
        """The line the front end prints, as pytest's run-last-failure line."""
        if self.problem:
            return f"atom-last-failed: {self.problem}; not deselecting items"
        if self.run is None:
            return "atom-last-failed: the history store holds no run; not deselecting items"
        if not self.failed:
            return f"atom-last-failed: no failed items in run {self.run.id}; not deselecting items"
        lines = len(self.failed)
        return (
            f"atom-last-failed: rerun {lines} failed item{'s' * (lines != 1)} of run "
            f"{self.run.id} ({selected} to run, {deselected} deselected)"
        )


def last_failed(settings: RunSettings, root: Path) -> LastFailed:
    """The failed lines of the last run in the session's store (`settings.history`)."""
    try:
        store = session_store(settings, root)
        try:
            runs = store.runs(limit=1)
            items = store.items(runs[0].id) if runs else []
        finally:
            store.close()
    except HistoryError as exc:
        return LastFailed(None, frozenset(), f"the history store cannot be read: {exc}")
    if not runs:
        return LastFailed(None, frozenset())
    return LastFailed(runs[0], frozenset(i.series for i in items if i.outcome in FAILED_OUTCOMES))
