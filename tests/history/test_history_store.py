"""The history store, on SQLite and on a real PostgreSQL server: the same tests on both
(`store_url` in tests/conftest.py gives each test a new store of each kind)."""

from __future__ import annotations

import multiprocessing
from dataclasses import replace
from pathlib import Path

import pytest

from pytest_atom.errors import HistoryError
from pytest_atom.history.migrations import ITEM_ROW, SCHEMA_VERSION
from pytest_atom.history.query import spec_runs, spec_runs_lines
from pytest_atom.history.records import (
    ItemRecord,
    RunRecord,
    columns,
    item_from_dict,
    item_to_dict,
    run_from_dict,
    run_to_dict,
)
from pytest_atom.history.sql import SqlStore
from pytest_atom.history.sqlite import SqliteStore
from pytest_atom.history.store import NoStore, Store, open_store
from tests.history_helpers import bare_store, item, run, write_runs


def test_a_run_and_its_items_come_back_as_they_were_recorded(store_url: str) -> None:
    store = open_store(store_url)
    first = run(0)
    items = [
        item("calc", repeat=1, digest="d1"),
        item("calc", "failed", repeat=2),
        item("sum", case="big", arm="skill"),
    ]
    assert store.add_run(first, items) == first.id
    assert store.run(first.id) == first
    back = store.items(first.id)
    assert back == [replace(i, run_id=first.id) for i in items]
    assert back[2].key == ("sum", "big", "skill", None)
    assert isinstance(store, Store)
    store.close()


def test_runs_are_listed_newest_first_and_chosen_by_spec_and_kind(store_url: str) -> None:
    store = open_store(store_url)
    runs = [run(n, kind="atom run" if n == 1 else "pytest") for n in range(4)]
    for n, each in enumerate(runs):
        store.add_run(each, [item("calc")] if n != 2 else [item("other")])
    assert [r.id for r in store.runs()] == [r.id for r in reversed(runs)]
    assert [r.id for r in store.runs(limit=2)] == [runs[3].id, runs[2].id]
    assert [r.id for r in store.runs(spec="other")] == [runs[2].id]
    assert [r.id for r in store.runs(kind="atom run")] == [runs[1].id]
    assert store.series() == [("calc", None, None), ("other", None, None)]
    store.close()


def test_a_run_is_found_by_a_prefix_and_an_unknown_one_names_the_store(store_url: str) -> None:
    store = open_store(store_url)
    one, two = run(0), run(1)
    store.add_run(one, [])
    store.add_run(two, [])
    assert store.run(one.id[:17]) == one  # the start time's part of the id names one run
    with pytest.raises(HistoryError, match="several"):
        store.run("2026")
    with pytest.raises(HistoryError, match=r"no run 'nope' in the history store .*atom history"):
        store.run("nope")
    store.close()


def test_item_history_gives_the_last_runs_of_a_series_with_their_repeats(store_url: str) -> None:
    store = open_store(store_url)
    runs = [run(n) for n in range(5)]
    for n, each in enumerate(runs):
        outcome = "passed" if n % 2 else "failed"
        store.add_run(
            each,
            [
                item("calc", outcome, repeat=1),
                item("calc", repeat=2),
                item("calc", arm="b"),
                item("sum"),
            ],
        )
    got = store.item_history("calc", None, None, limit=2)
    assert [(i.run_id, i.repeat) for i in got] == [
        (runs[4].id, 1), (runs[4].id, 2), (runs[3].id, 1), (runs[3].id, 2),
    ]  # fmt: skip
    assert [i.outcome for i in got] == ["failed", "passed", "passed", "passed"]
    assert [i.arm for i in store.item_history("calc", None, "b", limit=None)] == ["b"] * 5
    assert store.item_history("calc", "nocase", None) == []
    store.close()


def test_a_version_1_store_opens_migrated_with_its_runs_intact(store_url: str) -> None:
    old = bare_store(store_url)
    old.migrate(to=1)
    old_run = run(0)
    cursor = old.connection.cursor()
    cursor.execute(
        old._sql(
            "INSERT INTO atom_runs VALUES (?, ?, 'pytest', NULL, 'abc', 0, '0.0.9', '2.1.197', '{}')"
        ),
        (old_run.id, old_run.started.isoformat(timespec="microseconds")),
    )
    cursor.execute(
        old._sql(
            "INSERT INTO atom_items (run_id, item_no, started, spec, spec_path, spec_case, arm, "
            "repeat_no, outcome, cached, checks, criteria, tokens, cost_usd, tokens_total, "
            "cost_total, wall_seconds, tool_calls, run_folder, why, score) VALUES (?, 0, ?, "
            "'calc', 'specs/calc.atom.yaml', '', '', NULL, 'passed', 0, '[]', '[]', "
            "'{\"executor\": 5}', '{}', 5, 0, 1.5, '[\"Read\"]', NULL, 'ok', NULL)"
        ),
        (old_run.id, old_run.started.isoformat(timespec="microseconds")),
    )
    cursor.close()
    assert old.version() == 1
    old.close()

    store = open_store(store_url)
    assert isinstance(store, SqlStore) and store.version() == SCHEMA_VERSION == 4
    assert store.run(old_run.id).atom_version == "0.0.9"
    (kept,) = store.items(old_run.id)
    assert (kept.spec, kept.tokens, kept.tool_calls, kept.digest) == (
        "calc",
        {"executor": 5},
        ("Read",),
        None,
    )
    assert store.series() == [
        ("calc", None, None)
    ]  # version 2's table, filled from version 1's items
    store.add_run(run(1), [item("calc", digest="d")])  # and it takes version 2's records
    assert store.item_history("calc", None, None, limit=1)[0].digest == "d"
    store.close()


def test_a_store_newer_than_this_pytest_atom_is_refused_naming_the_upgrade(store_url: str) -> None:
    store = open_store(store_url)
    assert isinstance(store, SqlStore)
    cursor = store.connection.cursor()
    cursor.execute("UPDATE atom_schema SET version = 99")
    cursor.close()
    store.close()
    with pytest.raises(HistoryError, match=r"schema version 99, newer .* upgrade pytest-atom"):
        open_store(store_url)


def test_a_run_that_cannot_be_written_leaves_nothing_behind(store_url: str) -> None:
    store = open_store(store_url)
    first = run(0)
    store.add_run(first, [item("calc")])
    again = replace(run(1), id=first.id)  # the same id: the run's insert fails
    with pytest.raises(HistoryError, match="cannot be written"):
        store.add_run(again, [item("other")])
    assert store.series() == [("calc", None, None)] and len(store.runs()) == 1
    store.add_run(run(2), [item("sum")])  # the store still takes the next run
    assert len(store.runs()) == 2
    store.close()


def test_eight_writers_at_once_lose_nothing(store_url: str) -> None:
    open_store(store_url).close()  # made first, as the session that made it would
    context = multiprocessing.get_context("fork")
    writers = [context.Process(target=write_runs, args=(store_url, w, 15)) for w in range(8)]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join(120)
    assert [w.exitcode for w in writers] == [0] * 8
    store = open_store(store_url)
    assert len(store.runs(limit=None)) == 8 * 15
    assert len(store.item_history("calc", None, None, limit=None)) == 8 * 15
    assert len(store.series()) == 9
    store.close()


def test_sessions_opening_a_new_store_at_once_make_its_schema_once(store_url: str) -> None:
    context = multiprocessing.get_context("fork")
    writers = [context.Process(target=write_runs, args=(store_url, w, 2)) for w in range(6)]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join(120)
    assert [w.exitcode for w in writers] == [0] * 6
    store = open_store(store_url)
    assert len(store.runs(limit=None)) == 12
    store.close()


def test_records_cross_a_process_border_as_json_unchanged() -> None:
    each = run(3)
    assert run_from_dict(run_to_dict(each)) == each
    full = item("sum", case="big", arm="a", repeat=2, digest="d")
    assert item_from_dict(item_to_dict(full)) == full


def test_none_turns_the_store_off() -> None:
    store = open_store("none")
    assert isinstance(store, NoStore)
    assert store.add_run(run(0), [item()]) and store.runs() == [] and store.series() == []
    with pytest.raises(HistoryError, match="--atom-history none"):
        store.run("x")


def test_a_store_that_cannot_be_reached_is_a_warning_naming_it_and_the_fix(tmp_path: Path) -> None:
    from pytest_atom.history.write import write_run

    line = write_run("postgresql://atom:secret@127.0.0.1:1/team", tmp_path, run(0), [item()])
    assert line is not None and line.startswith(f"history: run {run(0).id[:15]}")
    assert "postgresql://atom:***@127.0.0.1:1/team" in line and "secret" not in line
    assert "--atom-history" in line
    (tmp_path / "file").write_text("")
    line = write_run("file/history.db", tmp_path, run(0), [item()])
    assert line is not None and str(tmp_path / "file" / "history.db") in line
    assert write_run("none", tmp_path, run(0), [item()]) is None


def test_a_setting_names_a_store_as_a_path_a_url_or_none(tmp_path: Path) -> None:
    from pytest_atom.history.urls import store_url
    from pytest_atom.settings.parsers import history_store

    assert store_url(None, tmp_path) == str(tmp_path / ".atom" / "history.db")
    assert store_url("sqlite:///team/h.db", tmp_path) == str(tmp_path / "team" / "h.db")
    assert store_url("sqlite:////srv/h.db", tmp_path) == "/srv/h.db"
    assert store_url("postgresql://u@h/db", tmp_path) == "postgresql://u@h/db"
    assert store_url("NONE", tmp_path) == "none" == history_store(" None ")
    with pytest.raises(ValueError, match=r"mysql:// is not a history store: .*postgresql://"):
        history_store("mysql://u@h/db")


def test_the_listings_figures_and_a_specs_runs_read_alike_on_each_backend(store_url: str) -> None:
    from pytest_atom.history.query import flaky, spec_runs, summarize

    store = open_store(store_url)
    runs = [run(n) for n in range(6)]
    for n, each in enumerate(runs):
        outcome = "passed" if n < 3 else "failed"
        store.add_run(
            each, [item("calc", outcome, digest="d", tokens=10 * n), item("sum", arm="b")]
        )
    figures = store.figures("calc", None, None, limit=4)
    assert [f.run_id for f in figures] == [r.id for r in reversed(runs[2:])]
    assert [f.total_tokens for f in figures] == [
        55,
        44,
        33,
        22,
    ]  # executor + a tenth for the reflector
    (calc, sums) = summarize(store, last=6).series
    assert calc.counts == (3, 6) and calc.trend is None  # 3 of 3 -> 0 of 3: too few runs to tell
    assert sums.series == ("sum", None, "b") and sums.counts == (6, 6)
    (flip,) = flaky(store).items
    assert flip.series == ("calc", None, None) and flip.counts == (3, 6)
    assert [r.run.id for r in spec_runs(store, "sum", last=2)] == [runs[5].id, runs[4].id]
    assert [r.id for r in store.runs(limit=2, spec="calc")] == [runs[5].id, runs[4].id]
    store.close()


def test_every_declared_field_is_a_column_of_a_new_store(tmp_path: Path) -> None:
    # The tables, their migrations and the store's statements are made from the records'
    # declarations: a new store holds exactly those columns.
    store = SqliteStore.connect(tmp_path / "history.db")
    tables = (("atom_runs", RunRecord, ()), ("atom_items", ItemRecord, ITEM_ROW))
    for table, record, extra in tables:
        have = [row[1] for row in store.connection.execute(f"PRAGMA table_info({table})")]
        assert sorted(have) == sorted(c.name for _, c in (*columns(record), *extra))
    store.close()


def test_a_version_3_store_opens_with_a_conversations_turns_to_success(store_url: str) -> None:
    old = bare_store(store_url)
    old.migrate(to=3)
    before = run(0)
    cursor = old.connection.cursor()
    cursor.execute(
        old._sql(
            "INSERT INTO atom_runs VALUES (?, ?, 'pytest', NULL, 'abc', 0, '0.0.9', NULL, '{}')"
        ),
        (before.id, before.started.isoformat(timespec="microseconds")),
    )
    cursor.execute(
        old._sql(
            "INSERT INTO atom_items (run_id, item_no, started, spec, spec_path, spec_case, arm, "
            "repeat_no, outcome, cached, checks, criteria, tokens, cost_usd, tokens_total, "
            "cost_total, wall_seconds, tool_calls, run_folder, why, score, kind, spent_usd, "
            "digest, digest_parts) VALUES (?, 0, '2026-01-01', 'talk', 't', '', '', NULL, "
            "'passed', 0, '[]', '[]', '{}', '{}', 0, 0, 1.0, '[]', NULL, '', NULL, 'trial', 0, "
            "NULL, '{}')"
        ),
        (before.id,),
    )
    cursor.close()
    old.close()

    store = open_store(store_url)
    assert isinstance(store, SqlStore) and store.version() == SCHEMA_VERSION == 4
    (kept,) = store.items(before.id)
    assert (kept.spec, kept.user_turns) == ("talk", None)
    later = run(1)
    talked = replace(item("talk", case="terse"), user_turns=3)
    store.add_run(later, [talked, item("calc")])  # and it takes version 4's records
    assert store.items(later.id) == [
        replace(talked, run_id=later.id),
        replace(item("calc"), run_id=later.id),
    ]
    assert item_from_dict(item_to_dict(talked)) == talked
    header, newest, *_ = spec_runs_lines(spec_runs(store, "talk"), store.url, "talk")[1:]
    assert header.endswith("WALL  USER TURNS") and newest.endswith("s           3")
    assert "USER TURNS" not in "\n".join(spec_runs_lines(spec_runs(store, "calc"), "", "calc"))
    store.close()
