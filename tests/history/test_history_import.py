"""`atom history import`: results files (CI shards, artifacts) as runs, through the `atom`
command: shards joined into one run, --each, files without a history part, bad files."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from atom_cli.main import main
from pytest_atom.history.records import item_to_dict, run_to_dict
from pytest_atom.history.store import open_store
from pytest_atom.suite.shards import write_shard
from tests.helpers import summary_row
from tests.history_helpers import item, run


def _shard(folder: Path, n: int, specs: list[str], *, history: bool = True) -> Path:
    """A shard's results.json: `specs` passed, with their history (run `n`) or without."""
    rows = [
        summary_row(
            f"specs/{s}.atom.yaml::{s}",
            "passed",
            {"atom_executor_tokens": 7, "atom_executor_cost_usd": 0.5, "atom_duration_s": 1.5},
        )
        for s in specs
    ]
    document = {
        "run": run_to_dict(run(n)),
        "items": {f"specs/{s}.atom.yaml::{s}": item_to_dict(item(s)) for s in specs},
    }
    return write_shard(
        folder / "results.json",
        rows,
        {},
        failures={},
        other_failures=0,
        history=document if history else None,
    )


def _import(store: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["history", "import", *args, "--history", str(store)])
    return result.exit_code, result.output


def test_shards_of_one_ci_run_come_in_as_one_run_once(tmp_path: Path) -> None:
    one, two = _shard(tmp_path / "s1", 1, ["a", "b"]), _shard(tmp_path / "s2", 2, ["c"])
    store = tmp_path / "h.db"
    status, out = _import(store, str(one.parent), str(two))
    assert status == 0 and "(3 items)" in out, out
    assert "already in" in _import(store, str(one.parent), str(two))[1]
    opened = open_store(str(store))
    (joined,) = opened.runs()
    assert joined.started == run(1).started and joined.kind == "import"
    assert joined.settings["files"] == [str(one), str(two)]
    assert [i.spec for i in opened.items(joined.id)] == ["a", "b", "c"]
    assert opened.items(joined.id)[0].tool_calls == ("Read", "Edit", "Bash")  # the whole record
    opened.close()


def test_a_spec_in_two_shards_is_an_error_naming_both_files(tmp_path: Path) -> None:
    one, two = _shard(tmp_path / "s1", 1, ["a"]), _shard(tmp_path / "s2", 2, ["a"])
    status, out = _import(tmp_path / "h.db", str(one), str(two))
    assert status == 1 and str(one) in out and str(two) in out and "--each" in out


def test_each_file_is_its_own_run_with_each(tmp_path: Path) -> None:
    one, two = _shard(tmp_path / "s1", 1, ["a"]), _shard(tmp_path / "s2", 2, ["a"])
    status, out = _import(tmp_path / "h.db", "--each", str(one), str(two))
    assert status == 0 and out.count("recorded run") == 2
    opened = open_store(str(tmp_path / "h.db"))
    assert [r.started for r in opened.runs()] == [run(2).started, run(1).started]
    opened.close()


def test_a_file_without_history_brings_what_its_rows_say(tmp_path: Path) -> None:
    plain = _shard(tmp_path / "s1", 1, ["a"], history=False)
    status, out = _import(tmp_path / "h.db", str(plain))
    assert status == 0, out
    opened = open_store(str(tmp_path / "h.db"))
    (only,) = opened.items(opened.runs()[0].id)
    assert (only.spec, only.outcome, only.tokens, only.cost_usd, only.wall_seconds) == (
        "a",
        "passed",
        {"executor": 7},
        {"executor": 0.5},
        1.5,
    )
    assert only.checks == () and only.tool_calls == ()
    opened.close()


def test_a_file_that_is_no_results_file_is_an_error_naming_it(tmp_path: Path) -> None:
    bad = tmp_path / "results.json"
    bad.write_text(json.dumps({"format": "something else"}))
    status, out = _import(tmp_path / "h.db", str(bad))
    assert status == 1 and f"cannot import {bad}" in out and "not a pytest-atom results file" in out
