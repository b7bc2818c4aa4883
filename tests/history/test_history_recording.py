"""Every session records one run, through the real Claude Code CLI: `pytest --atom -n 4`
(workers' items reach the controller, which writes once), two sessions at once on one
store, `atom run`, a store that cannot be written (a loud line; the run's results and exit
status stand), and `atom history import` of the xdist session's results.json."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

import pytest
from click.testing import CliRunner

from atom_cli.main import main
from pytest_atom.history.store import open_store
from tests.helpers import once_per_session
from tests.history_helpers import build_sessions


@pytest.fixture
def sessions(
    tmp_path_factory: pytest.TempPathFactory, pytester: pytest.Pytester, claude_bin: Path
) -> Path:
    """tests/history_helpers.py's sessions over one project, run once per test session."""
    build = partial(build_sessions, pytester=pytester, claude_bin=claude_bin)
    return once_per_session(tmp_path_factory, "history-sessions", build)


def _status(folder: Path) -> dict[str, int]:
    return dict(json.loads((folder / "status.json").read_text()))


@pytest.mark.slow
def test_every_session_records_one_run_with_every_item(sessions: Path) -> None:
    store = open_store(str(sessions / "project" / ".atom" / "history.db"))
    runs = list(reversed(store.runs(limit=None)))  # oldest first
    assert [r.kind for r in runs] == ["pytest", "pytest", "pytest", "atom run"]
    xdist, first, second, atom = runs
    assert sorted(i.spec for i in store.items(xdist.id)) == ["a-one", "a-two", "b-one", "b-two"]
    assert {frozenset(i.spec for i in store.items(r.id)) for r in (first, second)} == {
        frozenset({"a-one", "a-two"}), frozenset({"b-one", "b-two"}),
    }  # fmt: skip
    assert [i.spec for i in store.items(atom.id)] == ["a-one", "a-two"]
    store.close()


@pytest.mark.slow
def test_a_run_records_its_commit_versions_and_settings(sessions: Path) -> None:
    store = open_store(str(sessions / "project" / ".atom" / "history.db"))
    runs = list(reversed(store.runs(limit=None)))
    assert len({r.commit for r in runs}) == 1 and runs[0].commit and len(runs[0].commit) == 40
    assert [r.dirty for r in runs] == [False, False, False, True]  # atom run: a spec edited
    assert runs[0].claude_version and runs[0].claude_version[0].isdigit()
    assert runs[0].settings["record_mode"] == "none" and runs[0].settings["repeat"] == 1
    assert "history" not in runs[0].settings and "report" not in runs[0].settings
    store.close()


@pytest.mark.slow
def test_an_item_records_its_outcome_checks_figures_and_tool_calls(sessions: Path) -> None:
    store = open_store(str(sessions / "project" / ".atom" / "history.db"))
    xdist = store.runs(limit=None)[-1]
    items = {i.spec: i for i in store.items(xdist.id)}
    one, two = items["a-one"], items["a-two"]
    assert (one.outcome, two.outcome) == ("passed", "failed")
    assert one.checks[0].name.startswith("file_exists") or "out.txt" in one.checks[0].name
    assert one.checks[0].passed and not two.checks[0].passed
    assert one.tool_calls == ("Bash",)
    assert one.tokens["executor"] > 0 and one.wall_seconds > 0
    assert one.run_folder and "a-one" in one.run_folder
    assert one.key == ("a-one", None, None, None)
    # The outcome cache's digest of its inputs, part by part (outcome_cache.input_digest), kept with it.
    assert one.digest is not None and len(one.digest) == 64
    assert set(one.digest_parts) >= {"spec", "workspace", "cassette", "claude_code"}
    store.close()


@pytest.mark.slow
def test_the_exit_status_is_the_runs_own_whatever_the_store(sessions: Path) -> None:
    status = _status(sessions)
    assert status == {"xdist": 1, "first": 1, "second": 0, "atom": 1, "unwritable": 0}


@pytest.mark.slow
def test_a_store_that_cannot_be_written_is_a_loud_line_naming_it_and_the_fix(
    sessions: Path,
) -> None:
    out = (sessions / "unwritable.txt").read_text()
    assert "2 passed" in out
    (line,) = [each for each in out.splitlines() if each.startswith("history: run ")]
    assert "was not recorded" in line and "blocked/history.db" in line
    assert "--atom-history" in line  # the fix: another store, or none
    assert not (sessions / "project" / "blocked").is_dir()


@pytest.mark.slow
def test_the_xdist_sessions_results_import_into_another_store_whole(
    sessions: Path, tmp_path: Path
) -> None:
    report = sessions / "project" / "report"
    target = tmp_path / "team.db"
    args = ["history", "import", str(report), "--history", str(target)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert result.output.startswith("recorded run ") and "(4 items)" in result.output
    again = CliRunner().invoke(main, args)
    assert "already in" in again.output  # importing the same file again changes nothing
    local = open_store(str(sessions / "project" / ".atom" / "history.db"))
    team = open_store(str(target))
    (imported,) = team.runs()
    original = local.runs(limit=None)[-1]
    assert imported.id == original.id and imported.kind == "import"
    assert imported.settings["imported_from"] == "pytest"
    assert sorted(team.items(imported.id), key=lambda i: i.spec) == sorted(
        local.items(original.id), key=lambda i: i.spec
    )
    local.close()
    team.close()
