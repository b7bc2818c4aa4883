"""`atom diff`, `atom rescore`, ``--atom-last-failed`` and the HTML report's history,
through the real commands and the real Claude Code CLI, on one shared project
(tests/history_scenario_helpers.py says what each step does)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from selenium.webdriver.common.by import By

from pytest_atom.history.store import open_store
from tests.helpers import once_per_session
from tests.history_scenario_helpers import build_history_project
from tests.html_helpers import chromium_driver


@pytest.fixture(scope="module")
def scenario(tmp_path_factory: pytest.TempPathFactory, claude_bin: Path) -> tuple[Path, Any]:
    folder = once_per_session(
        tmp_path_factory, "history-cli", lambda f: build_history_project(f, claude_bin)
    )
    return folder, json.loads((folder / "steps.json").read_text())


@pytest.mark.slow
def test_last_failed_runs_only_the_item_that_failed_in_the_last_run(
    scenario: tuple[Path, Any],
) -> None:
    _, steps = scenario
    first, again = steps["first"], steps["last_failed"]
    assert first["code"] == 1, first["out"]  # wrong failed
    out = again["out"]
    assert again["code"] == 0, out
    assert "1 passed, 1 deselected" in out
    assert f"atom-last-failed: rerun 1 failed item of run {steps['ids']['run1']}" in out
    assert "PASSED specs/wrong.atom.yaml::wrong" in out
    assert "greet" not in out.split("short test summary info")[-1]


@pytest.mark.slow
def test_atom_run_last_failed_runs_the_failure_of_the_last_run_a_rescore(
    scenario: tuple[Path, Any],
) -> None:
    _, steps = scenario
    ran = steps["atom_run_last_failed"]
    out = ran["out"]
    assert ran["code"] == 1, out  # greet fails today's criterion again
    assert f"atom-last-failed: rerun 1 failed item of run {steps['ids']['rescore']}" in out
    assert "(1 to run, 1 deselected)" in out
    assert "specs/greet.atom.yaml::greet" in out
    assert "specs/wrong.atom.yaml::wrong" not in out


@pytest.mark.slow
def test_atom_diff_names_what_changed_between_the_last_two_runs(
    scenario: tuple[Path, Any],
) -> None:
    _, steps = scenario
    ids, diff = steps["ids"], steps["diff"]
    assert diff["code"] == 0, diff["out"]
    assert (
        steps["diff_named"]["out"]
        .replace(ids["run2"], "RUN2")
        .startswith(f"{ids['run1']} (atom run, ")
    )
    named = steps["diff_named"]["out"]
    assert "IMPROVED wrong: failed -> passed" in named
    assert "check file_contains hello.txt /^hello, world$/: failed -> passed" in named
    assert "tool calls part at call 2: (ended) -> Bash (1 calls -> 2)" in named
    assert "REMOVED greet: passed -> (absent)" in named  # not run: deselected
    assert "tokens " in named and "cost " in named
    # by default the newest run, a rescore, against the run it judged again (not run 2,
    # which ran last before it)
    assert diff["out"].startswith(f"{ids['run1']} (atom run, ")
    assert f"-> {ids['rescore']} (rescore, " in diff["out"]
    assert f"compared with the run it judged again ({ids['run1']})" in diff["out"]


@pytest.mark.slow
def test_atom_rescore_judges_the_stored_attempt_with_todays_criterion_and_no_executor(
    scenario: tuple[Path, Any],
) -> None:
    folder, steps = scenario
    rescore, ids = steps["rescore"], steps["ids"]
    assert rescore["code"] == 1, rescore["out"]  # today's criterion is not met
    assert "greet: passed -> failed (score 0.95 -> 0.30)" in rescore["out"]
    assert f"a rescore of {ids['run1']}" in rescore["out"]
    # One Claude Code session: the reflector's. The executor never started.
    assert len(steps["rescore_sessions"]) == 1, steps["rescore_sessions"]
    store = open_store(folder / "project" / ".atom" / "history.db")
    try:
        run = store.run(ids["rescore"])
        (item,) = store.items(run.id)
    finally:
        store.close()
    assert (run.kind, run.rescore_of) == ("rescore", ids["run1"])
    assert item.outcome == "failed" and item.tool_calls == ("Bash", "Bash")
    assert item.kind == "rescore"  # a judgement, not a trial
    assert [c.text for c in item.criteria] == ["hello.txt is written in French."]
    assert set(item.tokens) == {"reflector"}
    # The reflector was asked about today's criterion, in a run folder of the rescore's own.
    assert item.run_folder is not None
    transcripts = Path(item.run_folder, "claude-config", "projects").rglob("*.jsonl")
    assert any("written in French" in p.read_text() for p in transcripts)
    compared = json.loads(steps["diff_rescore"]["out"])
    changes = {c["item"]: c for c in compared["changed"]}
    assert changes["wrong"]["direction"] == "removed"  # only greet was named
    change = changes["greet"]
    assert change["direction"] == "regressed"
    assert change["tool_calls"] is None  # the same attempt
    kinds = {c["name"]: (c["before"], c["after"]) for c in change["checks"]}
    assert kinds["hello.txt is written in French."] == (None, "unmet 0.00")


@pytest.mark.slow
def test_the_html_report_compares_with_the_previous_run_and_draws_trends(
    scenario: tuple[Path, Any],
) -> None:
    folder, steps = scenario
    page = (folder / "report.html").read_text()
    assert 'id="history"' in page
    assert f"against <code>{steps['ids']['run1']} (atom run," in page
    assert 'class="change c-improved"' in page
    assert page.count('<svg class="trend"') == 1  # wrong, the one spec of the run
    assert page.count('<circle class="run') == 2  # run 1 (failed) and run 2 (passed)
    assert 'class="run fail"' in page and 'class="run pass"' in page


@pytest.mark.slow
def test_the_real_runs_report_draws_its_trend_in_a_browser(
    scenario: tuple[Path, Any], tmp_path: Path
) -> None:
    folder, _ = scenario
    driver = chromium_driver(tmp_path / "chromium")
    try:
        driver.get((folder / "report.html").as_uri())
        (svg,) = driver.find_elements(By.CSS_SELECTOR, "#history svg.trend")
        assert svg.is_displayed() and svg.size["width"] == 240
        fail, passed = svg.find_elements(By.CSS_SELECTOR, "circle.run")
        assert fail.value_of_css_property("fill") == "rgb(207, 34, 46)"
        assert passed.value_of_css_property("fill") == "rgb(26, 127, 55)"
        assert passed.location["y"] < fail.location["y"]  # a pass sits higher
        row = driver.find_element(By.CSS_SELECTOR, "#history table.comparison tr.c-improved")
        assert "wrong" in row.text and "failed" in row.text and "passed" in row.text
    finally:
        driver.quit()
