"""The HTML report's history: the comparison with the previous run and each spec's trend.

Filled from the store the session records into (`--atom-history`) and this session's own
run, which need not be stored yet (the report may be written first): the previous run is
the store's newest other run that started before this one, and each trend ends with this
run. A store that is off or cannot be read gives a view with a note, never an error:
the report of the run stands.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

from pytest_atom.errors import HistoryError, StatsUnavailable
from pytest_atom.history.diff import diff_runs, series_label
from pytest_atom.history.records import ItemRecord, RunRecord
from pytest_atom.history.store import Store, open_store
from pytest_atom.history.urls import OFF, store_url
from pytest_atom.results.history_view import ComparisonRow, HistoryView, SpecTrend, TrendPoint

__all__ = ["TREND_RUNS", "history_view"]

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
    except (HistoryError, OSError) as exc:
        return HistoryView(run.id, None, (), 0, (), f"the history store cannot be read: {exc}")
    try:
        return _view(store, run, items)
    except HistoryError as exc:
        return HistoryView(run.id, None, (), 0, (), f"the history store cannot be read: {exc}")
    finally:
        store.close()


def _view(store: Store, run: RunRecord, items: Sequence[ItemRecord]) -> HistoryView:
    trends = tuple(_trend(store, run, items, key) for key in dict.fromkeys(i.series for i in items))
    earlier = [r for r in store.runs(limit=50) if r.id != run.id and r.started <= run.started]
    if not earlier:
        return HistoryView(run.id, None, (), 0, trends, "the store holds no earlier run")
    previous = earlier[0]
    try:
        compared = diff_runs(previous, store.items(previous.id), run, items)
    except StatsUnavailable as exc:
        return HistoryView(run.id, None, (), 0, trends, str(exc))
    rows = tuple(
        ComparisonRow(
            c.label, c.direction, c.before, c.after, tuple(line.strip() for line in c.lines()[1:])
        )
        for c in (*compared.changes, *compared.noise)
    )
    said = f"{previous.id} ({previous.kind}, {previous.started:%Y-%m-%d %H:%M})"
    return HistoryView(run.id, said, rows, compared.unchanged, trends)


def _trend(
    store: Store,
    run: RunRecord,
    items: Sequence[ItemRecord],
    key: tuple[str, str | None, str | None],
) -> SpecTrend:
    """The line's last `TREND_RUNS` runs, oldest first, this run last."""
    stored = store.item_history(*key, limit=TREND_RUNS)
    by_run: dict[str, list[ItemRecord]] = defaultdict(list)
    for item in stored:
        if item.run_id != run.id:
            by_run[item.run_id].append(item)
    starts = {rid: store.run(rid).started for rid in by_run}  # at most TREND_RUNS
    order = sorted(by_run, key=lambda rid: (starts.get(rid, run.started), rid))
    order = [rid for rid in order if starts.get(rid, run.started) <= run.started]
    points = [_point(rid, f"{starts[rid]:%Y-%m-%d %H:%M}", by_run[rid]) for rid in order]
    own = [i for i in items if i.series == key]
    points.append(_point(run.id, f"{run.started:%Y-%m-%d %H:%M}", own))
    return SpecTrend(series_label(key), tuple(points[-TREND_RUNS:]))


def _point(run_id: str, started: str, items: Sequence[ItemRecord]) -> TrendPoint:
    passed = sum(i.passed for i in items)
    said = items[0].outcome if len(items) == 1 else f"{passed}/{len(items)} passed"
    return TrendPoint(run_id, started, passed, len(items), said)
