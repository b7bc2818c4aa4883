"""Trials and observations kept apart: a series' pass rate, interval, means and trend count
the items that ran; cached outcomes are counted apart and a rescore's judgements form a
line of their own. On SQLite and a real PostgreSQL server (`store_url`), through the
store's API and the real `atom history` command."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from atom_cli.main import main
from pytest_atom.history.migrations import SCHEMA_VERSION
from pytest_atom.history.query import flaky, summarize
from pytest_atom.history.records import RunRecord, item_from_dict, item_to_dict
from pytest_atom.history.sql import SqlStore
from pytest_atom.history.store import open_store
from pytest_atom.history.view import history_view
from tests.history_helpers import bare_store, item, project, run


def _calc_history(url: str) -> list[RunRecord]:
    """Three scripted runs of 147,606 tokens (two pass, one fails; nothing spent, $0.11 at
    list price), five cache hits stored with 0 tokens, and a rescore of the last scripted
    run whose judge used 4,560 tokens; the runs, oldest first."""
    store = open_store(url)
    runs = [run(n) for n in range(8)] + [run(8, kind="rescore")]
    for each, outcome in zip(runs, ["passed", "failed", "passed"], strict=False):
        store.add_run(each, [item("calc", outcome, tokens=134_188, cost=0.10, spent=0.0)])
    for each in runs[3:8]:
        store.add_run(each, [item("calc", kind="cached", tokens=0, cost=0.0, spent=0.0)])
    judged = replace(runs[8], rescore_of=runs[2].id)
    store.add_run(judged, [item("calc", "failed", kind="rescore", tokens=4_146, cost=0.002)])
    store.close()
    return runs


def test_a_series_counts_its_trials_and_leaves_cached_outcomes_and_rescores_out(
    store_url: str,
) -> None:
    _calc_history(store_url)
    store = open_store(store_url)
    trials, judgements = summarize(store).series
    store.close()
    assert (trials.kind, trials.counts, trials.runs, trials.cached) == ("trial", (2, 3), 3, 5)
    assert trials.tokens == pytest.approx(147_606)  # 134,188 + the judge's tenth
    assert trials.cost_usd == pytest.approx(0.11) and trials.spent_usd == 0.0
    assert trials.rate is not None and trials.rate.show(2) == "0.67 [0.21, 0.94]"  # 3 trials
    assert (trials.last_outcome, trials.last_kind) == ("passed", "cached")
    assert (judgements.kind, judgements.counts, judgements.runs) == ("rescore", (0, 1), 1)
    assert judgements.tokens == pytest.approx(4_560) and judgements.trend is None


def test_cached_outcomes_and_rescores_never_make_a_trend(store_url: str) -> None:
    store = open_store(store_url)
    for n in range(10):
        store.add_run(run(n), [item("calc", "failed")])
    for n in range(10, 20):  # ten cached passes: no new trial, so no rise
        store.add_run(run(n), [item("calc", kind="cached")])
    (trials,) = summarize(store).series
    store.close()
    assert trials.trend is None and trials.counts == (0, 10) and trials.cached == 10


def test_atom_history_shows_each_items_kind_in_the_listing_the_spec_and_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    runs = _calc_history(str(project(tmp_path)))

    def atom(*args: str) -> str:
        result = CliRunner().invoke(main, ["history", *args])
        assert result.exit_code == 0, result.output
        return result.output

    listing = atom().split("newest runs (atom")[0]  # the run ids the commands take follow
    rows = [line.split() for line in listing.splitlines()[3:]]
    assert [r[:3] for r in rows] == [["calc", "trial", "3"], ["calc", "rescore", "1"]]
    assert rows[0][3:5] == ["2/3", "0.67"] and rows[0][7] == "5"  # CACHED: 5, left out
    assert "147606" in rows[0] and "4560" in rows[1]
    listed = {line.split()[0]: line.split() for line in atom("calc").splitlines()[2:]}
    assert listed[runs[8].id][5:7] == ["calc", "rescore"]
    assert listed[runs[5].id][5:7] == ["calc", "cached"]
    assert listed[runs[0].id][5:7] == ["calc", "trial"]
    assert listed[runs[0].id][9:11] == ["$0.0000", "$0.1100"]  # spent, and at list price
    data = json.loads(atom("calc", "--json"))
    kinds = [(r["kind"], r["items"][0]["kind"]) for r in data["runs"]]
    assert kinds == [("rescore", "rescore")] + [("cached", "cached")] * 5 + [("trial", "trial")] * 3
    series = json.loads(atom("--json"))["series"]
    assert [(s["kind"], s["counted"], s["cached_left_out"]) for s in series] == [
        ("trial", 3, 5),
        ("rescore", 1, 0),
    ]


def test_repeats_that_disagree_in_one_session_are_flaky_without_a_digest(store_url: str) -> None:
    store = open_store(store_url)
    outcomes = ["passed"] * 5 + ["failed"]
    session = run(0)
    store.add_run(session, [item("calc", o, repeat=n + 1) for n, o in enumerate(outcomes)])
    store.add_run(run(1), [item("steady", repeat=n + 1) for n in range(6)])
    store.add_run(run(2), [item("once", "failed")])
    store.add_run(run(3), [item("once")])  # no digest: unknown across runs, never flaky
    report = flaky(store)
    store.close()
    (found,) = report.items
    assert (found.series, found.basis, found.counts) == (("calc", None, None), "repeats", (5, 6))
    assert found.runs == (session.id,) and found.to_dict()["basis"] == "repeats"


def test_cached_copies_of_a_pass_do_not_hide_or_make_flakiness(store_url: str) -> None:
    store = open_store(store_url)
    store.add_run(run(0), [item("calc", digest="d")])
    store.add_run(run(1), [item("calc", "failed", digest="d")])
    store.add_run(run(2), [item("calc", kind="cached", digest="d")])
    found = flaky(store).items
    store.close()
    assert [(f.basis, f.counts) for f in found] == [("digest", (1, 2))]


def test_a_version_2_store_opens_with_each_items_kind_from_its_cached_flag_and_run(
    store_url: str,
) -> None:
    old = bare_store(store_url)
    old.migrate(to=2)
    pytest_run, rescore = run(0), run(1, kind="rescore")
    cursor = old.connection.cursor()
    for each in (pytest_run, rescore):
        cursor.execute(
            old._sql("INSERT INTO atom_runs VALUES (?, ?, ?, NULL, 'abc', 0, '0.0.9', NULL, '{}')"),
            (each.id, each.started.isoformat(timespec="microseconds"), each.kind),
        )
    for run_id, number, cached in (
        (pytest_run.id, 0, 0),
        (pytest_run.id, 1, 1),
        (rescore.id, 0, 0),
    ):
        cursor.execute(
            old._sql(
                "INSERT INTO atom_items (run_id, item_no, started, spec, spec_path, spec_case, "
                "arm, repeat_no, outcome, cached, checks, criteria, tokens, cost_usd, "
                "tokens_total, cost_total, wall_seconds, tool_calls, run_folder, why, score) "
                "VALUES (?, ?, '2026-01-01', 'calc', 'c', '', '', ?, 'passed', ?, '[]', '[]', "
                "'{}', '{}', 0, 0, 1.0, '[]', NULL, '', NULL)"
            ),
            (run_id, number, number + 1, cached),
        )
    cursor.close()
    old.close()

    store = open_store(store_url)
    assert isinstance(store, SqlStore) and store.version() == SCHEMA_VERSION == 4
    kinds = [(i.kind, i.cached, i.spent_usd) for i in store.items(pytest_run.id)]
    assert kinds == [("trial", False, None), ("cached", True, None)]
    assert [i.kind for i in store.items(rescore.id)] == ["rescore"]
    later = run(2)
    store.add_run(later, [item("calc", kind="cached")])  # and it takes version 3's records
    (back,) = store.items(later.id)
    assert back.kind == "cached" and back.spent_usd == pytest.approx(0.011)
    store.close()


def test_an_item_written_as_json_before_items_had_a_kind_reads_as_cached() -> None:
    data = item_to_dict(item("calc", kind="cached"))
    assert data["kind"] == "cached" and item_from_dict(data).cached
    del data["kind"]
    assert item_from_dict({**data, "cached": True}).kind == "cached"
    assert item_from_dict(data).kind == "trial"


def test_the_html_trend_draws_trials_only(tmp_path: Path) -> None:
    url = str(tmp_path / "history.db")
    runs = [run(n) for n in range(4)]
    store = open_store(url)
    store.add_run(runs[0], [item("calc")])
    store.add_run(runs[1], [item("calc", kind="cached")])
    store.add_run(runs[2], [item("calc", "failed")])
    store.close()
    ran = [replace(item("calc"), run_id=runs[3].id)]
    (trend,) = history_view(url, tmp_path, runs[3], ran).trends
    assert [p.run_id for p in trend.points] == [runs[0].id, runs[2].id, runs[3].id]
    cached = [replace(item("calc", kind="cached"), run_id=runs[3].id)]
    (trend,) = history_view(url, tmp_path, runs[3], cached).trends
    assert [p.run_id for p in trend.points] == [runs[0].id, runs[2].id]
