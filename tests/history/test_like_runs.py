"""Like with like: `atom diff` and the HTML report's comparison take the newest earlier run
that covered the same selection (one function, `history.query.like_run`), never whatever
ran last, and name the settings that changed between the two runs."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from atom_cli.main import main
from pytest_atom.history.diff import setting_changes
from pytest_atom.history.query import like_run
from pytest_atom.history.records import RunRecord
from pytest_atom.history.store import open_store
from pytest_atom.history.view import history_view
from tests.diff_helpers import add_run, make_item, make_run
from tests.history_helpers import item, run

STRICT = {"require_calibration": 0.6, "repeat": 1}
LOOSE = {"require_calibration": None, "repeat": 1}


def atom_diff(store: Path, *args: str) -> Result:
    return CliRunner().invoke(main, ["diff", "--history", str(store), *args])


def three_runs(store: Path) -> tuple[RunRecord, RunRecord, RunRecord]:
    """A full run of calc and sum; then one of an unrelated spec; then the full selection
    again, with a calibration requirement switched on, under which calc fails."""
    full, other, again = (
        replace(make_run(0), settings=LOOSE),
        replace(make_run(10), settings=LOOSE),
        replace(make_run(20), settings=STRICT),
    )
    add_run(store, full, [make_item("calc"), make_item("sum")])
    add_run(store, other, [make_item("unrelated")])
    add_run(store, again, [make_item("calc", "failed"), make_item("sum")])
    return full, other, again


def test_atom_diff_compares_with_the_newest_run_of_the_same_selection(tmp_path: Path) -> None:
    store = tmp_path / "history.db"
    full, _, again = three_runs(store)
    result = atom_diff(store)
    assert result.exit_code == 0, result.output
    out = result.output
    assert out.startswith(f"{full.id} (pytest, 2026-11-01 12:00) -> {again.id}")
    assert "1 changed, 0 within noise, 1 unchanged" in out
    assert "compared with the newest run that covered the same 2 spec x case x arm lines" in out
    assert "setting require_calibration: (unset) -> 0.6" in out
    assert "REGRESSED calc: passed -> failed" in out
    assert "unrelated" not in out and "ADDED" not in out and "REMOVED" not in out
    data = json.loads(atom_diff(store, "--json").output)
    assert data["before"]["id"] == full.id
    assert data["settings_changed"] == [
        {"setting": "require_calibration", "before": None, "after": 0.6}
    ]


def test_against_names_the_earlier_run_and_both_ids_still_work(tmp_path: Path) -> None:
    store = tmp_path / "history.db"
    _, other, again = three_runs(store)
    data = json.loads(atom_diff(store, "--against", other.id[:17], "--json").output)
    assert (data["before"]["id"], data["after"]["id"]) == (other.id, again.id)
    assert data["paired"] == f"compared with the run --against named ({other.id})"
    assert {c["item"]: c["direction"] for c in data["changed"]} == {
        "calc": "added",
        "sum": "added",
        "unrelated": "removed",
    }
    result = atom_diff(store, other.id, "--against", other.id)
    assert result.exit_code == 2 and "not both" in result.output


def test_the_html_comparison_takes_the_run_atom_diff_takes(tmp_path: Path) -> None:
    store = tmp_path / "history.db"
    full, other = replace(make_run(0), settings=LOOSE), replace(make_run(10), settings=LOOSE)
    add_run(store, full, [make_item("calc"), make_item("sum")])
    add_run(store, other, [make_item("unrelated")])
    session = replace(make_run(30), settings=STRICT)  # not stored yet: the report comes first
    items = [make_item("calc", "failed", run_id=session.id), make_item("sum", run_id=session.id)]
    view = history_view(str(store), tmp_path, session, items)
    assert view.previous is not None and view.previous.startswith(full.id)
    assert [(r.label, r.direction) for r in view.rows] == [("calc", "regressed")]
    assert view.settings == ("setting require_calibration: (unset) -> 0.6",)
    assert "covered the same 2 spec x case x arm lines" in view.paired


def test_a_subset_is_compared_over_its_own_lines(tmp_path: Path) -> None:
    store = tmp_path / "history.db"
    full, _, _ = three_runs(store)
    subset = make_run(30)
    add_run(store, subset, [make_item("sum", "failed")])
    data = json.loads(atom_diff(store, "--json").output)
    assert data["before"]["id"] != full.id  # the newest full run covered `sum` too
    assert [(c["item"], c["direction"]) for c in data["changed"]] == [("sum", "regressed")]


def test_a_rescore_is_compared_with_the_run_it_judged_again(tmp_path: Path) -> None:
    store = tmp_path / "history.db"
    full, _, _ = three_runs(store)
    judged = make_run(30, kind="rescore", rescore_of=full.id)
    add_run(store, judged, [make_item("calc", "failed", kind="rescore")])
    data = json.loads(atom_diff(store, "--json").output)
    assert data["before"]["id"] == full.id
    assert data["paired"] == f"compared with the run it judged again ({full.id})"


def test_a_run_with_no_earlier_run_of_its_specs_says_how_to_name_one(tmp_path: Path) -> None:
    store = tmp_path / "history.db"
    add_run(store, make_run(0), [make_item("calc")])
    add_run(store, make_run(10), [make_item("other")])
    result = atom_diff(store)
    assert result.exit_code == 1 and "no earlier run that covered any spec" in result.output
    assert "--against RUN" in result.output


def test_like_run_reads_each_runs_selection_from_the_store(store_url: str) -> None:
    store = open_store(store_url)
    runs = [run(n) for n in range(4)]
    store.add_run(runs[0], [item("calc"), item("sum", case="big")])
    store.add_run(runs[1], [item("calc")])
    store.add_run(runs[2], [item("sum", case="big"), item("calc", repeat=1)])
    assert store.selection(runs[2].id) == [("calc", None, None), ("sum", "big", None)]
    found = like_run(store, runs[3], {("calc", None, None), ("sum", "big", None)})
    assert found is not None and found[0] == runs[2]
    partial = like_run(store, runs[3], {("calc", None, None), ("new", None, None)})
    assert partial is not None and partial[0] == runs[2] and "covered the most (1" in partial[1]
    assert like_run(store, runs[3], {("new", None, None)}) is None
    store.close()


@pytest.mark.parametrize("kind", ["cached", "rescore"])
def test_a_runs_selection_is_its_lines_whatever_its_items_kind(tmp_path: Path, kind: str) -> None:
    store = tmp_path / "history.db"
    add_run(store, make_run(0), [make_item("calc", kind=kind)])
    opened = open_store(store)
    ((spec, _, _),) = opened.selection(opened.runs()[0].id)
    opened.close()
    assert spec == "calc"


def test_an_imports_provenance_is_no_setting_and_a_claude_code_version_is() -> None:
    ran = replace(make_run(0), settings=LOOSE)
    imported = replace(
        make_run(10, kind="import"),
        settings={**LOOSE, "imported_from": "pytest", "files": ["shard1/results.json"]},
        claude_version="2.1.400",
    )
    assert [c.line() for c in setting_changes(ran, imported)] == [
        'setting claude_version: "2.1.332" -> "2.1.400"'
    ]
