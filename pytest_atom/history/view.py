"""The HTML report's history: the comparison with the previous run and each spec's trend.

Filled from the session's store and this session's own run, which need not be stored yet
(the report may be written first): the run compared with is the one `atom diff` takes
(`history.query.like_run`), and each trend (trials only) ends with this run. A store that
is off or cannot be read gives a view with a note, never an error: the run's report stands.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

from pytest_atom.errors import HistoryError
from pytest_atom.history.query import PASSES, compare_with_like
from pytest_atom.history.records import ItemRecord, RunRecord, series_label
from pytest_atom.history.store import Store, open_store
from pytest_atom.history.urls import OFF, store_url
from pytest_atom.reports.history_view import ComparisonRow, HistoryView, SpecTrend, TrendPoint

#: How many runs a trend shows.
TREND_RUNS = 20


def history_view(
    where: str, root: Path, run: RunRecord, items: Sequence[ItemRecord]
) -> HistoryView:
    """The view of `run` (this session, with its `items`) against the store `where` names."""
    url = store_url(where, root)
    if url == OFF:
        return HistoryView(
            run.id, None, (), 0, (), "the history store is off (--atom-history none)"
        )
    try:
        store = open_store(url, root)
        try:
            return _view(store, run, items)
        finally:
            store.close()
    except (HistoryError, OSError) as exc:
        return HistoryView(run.id, None, (), 0, (), f"the history store cannot be read: {exc}")


def _view(store: Store, run: RunRecord, items: Sequence[ItemRecord]) -> HistoryView:
    trends = tuple(_trend(store, run, items, key) for key in dict.fromkeys(i.series for i in items))
    compared = compare_with_like(store, run, items)  # the rule `atom diff` follows
    if compared is None:
        note = "the store holds no earlier run of these specs"
        return HistoryView(run.id, None, (), 0, trends, note)
    previous = compared.before
    rows = tuple(
        ComparisonRow(
            c.label, c.direction, c.before, c.after, tuple(line.strip() for line in c.lines()[1:])
        )
        for c in (*compared.changes, *compared.noise)
    )
    said = f"{previous.id} ({previous.kind}, {previous.started:%Y-%m-%d %H:%M})"
    settings = tuple(change.line() for change in compared.settings)
    return HistoryView(
        run.id, said, rows, compared.unchanged, trends, paired=compared.paired, settings=settings
    )


def _trend(
    store: Store,
    run: RunRecord,
    items: Sequence[ItemRecord],
    key: tuple[str, str | None, str | None],
) -> SpecTrend:
    """The line's last `TREND_RUNS` runs, oldest first, this run last."""
    by_run: dict[str, list[str]] = {}
    for figures in store.figures(*key, limit=TREND_RUNS + 1):
        if figures.run_id != run.id and figures.kind == "trial":
            by_run.setdefault(figures.run_id, []).append(figures.outcome)
    own = [i.outcome for i in items if i.series == key and i.trial]
    points = [_point(rid, by_run[rid]) for rid in reversed(by_run)]
    if own:
        points.append(_point(run.id, own, f"{run.started:%Y-%m-%d %H:%M}"))
    return SpecTrend(series_label(key), tuple(points[-TREND_RUNS:]))


def _when(run_id: str) -> str:
    """A run's start as its id spells it (``20261129T055513-…``), to the minute."""
    try:
        when = datetime.strptime(run_id[:15], "%Y%m%dT%H%M%S")
    except ValueError:
        return ""
    return f"{when:%Y-%m-%d %H:%M}"


def _point(run_id: str, outcomes: Sequence[str], started: str | None = None) -> TrendPoint:
    passed = sum(o in PASSES for o in outcomes)
    said = outcomes[0] if len(outcomes) == 1 else f"{passed}/{len(outcomes)} passed"
    return TrendPoint(
        run_id, _when(run_id) if started is None else started, passed, len(outcomes), said
    )
