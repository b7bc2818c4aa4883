"""`atom history` through the real `atom` command: the listing, SPEC, --flaky, --json,
the store a project's settings name (stores filled through the store's own API)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from atom_cli.main import main
from tests.history_helpers import fill, project


def atom(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["history", *args])
    return result.exit_code, result.output


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project in the current folder; its default store's path."""
    monkeypatch.chdir(tmp_path)
    return project(tmp_path)


def test_the_listing_gives_each_spec_its_pass_rate_interval_and_figures(here: Path) -> None:
    fill(
        str(here),
        {
            "calc": ["passed", "failed", "passed", "passed"],
            "sum": ["", "passed", "passed", "error"],
        },
    )
    status, out = atom()
    assert status == 0, out
    lines = {line.split()[0]: line for line in out.splitlines()[3:]}
    assert "3/4 0.75 [0.30, 0.95]" in lines["calc"] and lines["calc"].split()[1:3] == ["trial", "4"]
    assert "2/2 1.00 [0.34, 1.00]" in lines["sum"]  # an error counts in neither
    assert " 112 " in lines["calc"] and "$0.0110" in lines["calc"] and "2.0s" in lines["calc"]
    assert lines["sum"].split()[-1] == "error"  # its last outcome
    status, out = atom("--last", "2")
    assert "calc" in out.splitlines()[3] and " 2/2 " in out.splitlines()[3]


def test_the_listing_ends_with_the_newest_run_ids_the_commands_take(here: Path) -> None:
    fill(str(here), {"calc": ["passed", "failed"]})
    status, out = atom()
    assert status == 0, out
    lines = out.splitlines()
    start = lines.index(
        "newest runs (atom diff and atom rescore take their ids; `atom rescore last` the newest):"
    )
    listed = [line.split() for line in lines[start + 1 :]]
    assert len(listed) == 2 and all(kind == "pytest" for *_, kind in listed)
    newest = listed[0][0]
    status, out = atom("calc")
    assert newest in out  # the id `atom history SPEC` shows too
    assert CliRunner().invoke(main, ["diff", listed[1][0], newest]).exit_code == 0


def test_a_drop_beyond_noise_is_marked_and_noise_is_not(here: Path) -> None:
    fill(
        str(here),
        {
            "drops": ["passed"] * 10 + ["failed"] * 10,
            "noisy": ["passed", "failed"] * 10,
            "rises": ["failed"] * 8 + ["passed"] * 8,
        },
    )
    status, out = atom()
    assert status == 0, out
    lines = {line.split()[0]: line for line in out.splitlines()[3:]}
    assert lines["drops"].endswith("↓ worse")
    assert lines["rises"].endswith("↑ better")
    assert "worse" not in lines["noisy"] and "better" not in lines["noisy"]
    data = json.loads(atom("--json")[1])
    trend = {s["spec"]: s["trend"] for s in data["series"]}
    assert trend["noisy"] is None and trend["drops"]["before"] == [10, 10]
    assert trend["drops"]["after"] == [0, 10] and trend["drops"]["adjusted_p_value"] < 0.05


def test_atom_history_spec_shows_one_specs_runs_newest_first(here: Path) -> None:
    runs = fill(str(here), {"calc": ["passed", "failed"], "sum": ["passed", "passed"]})
    status, out = atom("calc")
    assert status == 0, out
    rows = out.splitlines()[2:]
    assert [r.split()[0] for r in rows] == [runs[1].id, runs[0].id]
    assert "failed" in rows[0] and "abc123*" in rows[0] and "calc" in rows[0]
    assert atom("spec", "calc") == (status, out)
    data = json.loads(atom("calc", "--json")[1])
    assert [r["run"]["id"] for r in data["runs"]] == [runs[1].id, runs[0].id]
    assert data["runs"][0]["items"][0]["tool_calls"] == ["Read", "Edit", "Bash"]
    status, out = atom("nothing")
    assert status == 1 and "no spec 'nothing' in the history store" in out and "atom history" in out


def test_flaky_names_the_items_whose_outcome_changed_under_one_digest(here: Path) -> None:
    fill(
        str(here),
        {
            "flips": ["passed", "failed", "passed"],
            "steady": ["passed"] * 3,
            "unknown": ["passed", "failed", "passed"],
        },
        digests={"flips": "d" * 64, "steady": "e" * 64, "unknown": None},
    )
    status, out = atom("--flaky")
    assert status == 0, out
    assert "flips: digest dddddddddddd: 2 passed, 1 failed over 3 runs" in out
    assert "steady" not in out and "unknown:" not in out
    assert "3 of 9 items carry no input digest: unknown across runs" in out
    data = json.loads(atom("--flaky", "--json")[1])
    assert [f["spec"] for f in data["flaky"]] == ["flips"] and data["items_without_digest"] == 3
    assert json.loads(atom("steady", "--flaky", "--json")[1])["flaky"] == []


def test_a_changed_digest_explains_a_changed_outcome(here: Path) -> None:
    from pytest_atom.history.store import open_store
    from tests.history_helpers import item, run

    store = open_store(str(here))
    store.add_run(run(0), [item("calc", "passed", digest="a")])
    store.add_run(run(1), [item("calc", "failed", digest="b")])
    store.close()
    assert json.loads(atom("--flaky", "--json")[1])["flaky"] == []


def test_the_store_is_the_one_the_project_settings_name(here: Path) -> None:
    root = here.parent.parent
    other = root / "elsewhere.db"
    fill(str(other), {"calc": ["passed"]})
    (root / ".atom").mkdir()
    (root / ".atom" / "config.yaml").write_text("history: elsewhere.db\n")
    status, out = atom()
    assert status == 0 and str(other) in out and "calc" in out
    status, out = atom("--history", "none")
    assert status == 0 and "off (--atom-history none)" in out
    status, out = atom("--history", "mysql://x/y")
    assert status == 1 and "mysql:// is not a history store" in out and "postgresql://" in out


def test_a_project_with_no_store_yet_says_so_and_makes_none(here: Path) -> None:
    status, out = atom()
    assert status == 0 and "no " + str(here) + " yet" in out
    assert not here.exists()
    assert json.loads(atom("--json")[1])["runs"] == 0


def test_atom_history_runs_as_its_own_process(here: Path) -> None:
    fill(str(here), {"calc": ["passed", "failed"]})
    done = subprocess.run(
        [str(Path(sys.executable).parent / "atom"), "history", "--json"],
        cwd=here.parent.parent, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    (series,) = json.loads(done.stdout)["series"]
    assert (series["spec"], series["passed"], series["counted"]) == ("calc", 1, 2)
