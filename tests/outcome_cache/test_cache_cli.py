"""--atom-cache through the real Claude Code CLI: a session records the item and its digest,
a second session with nothing changed reports it from the store and starts no CLI (pytest
and `atom run` alike, marked cached in the summary, JUnit, the JSON trace and HTML), a
changed workspace runs it again, and `atom history why` names what changed."""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

from atom_cli.main import main
from tests.cache_helpers import write_project
from tests.helpers import VALIDATOR, Scenario, pytester_once

ARGS = ("--atom", "specs", "-p", "no:cacheprovider", "--atom-cache")


def _sessions(log: Path) -> int:
    return len(log.read_text().splitlines()) if log.is_file() else 0


def play(pytester: pytest.Pytester) -> dict[str, pytest.RunResult]:
    """First run, cached run (with every report), `atom run --cache`, then a changed
    workspace; the CLI sessions each started go to sessions.json, `atom history why`'s
    answers to why.json."""
    log = Path(os.environ["ATOM_CLAUDE_BIN"]).parent.parent / "sessions.log"
    project = write_project(pytester.path, cassette=False)
    counts: dict[str, int] = {}
    runs: dict[str, pytest.RunResult] = {}

    def step(name: str, *extra: str) -> None:
        before = _sessions(log)
        runs[name] = pytester.runpytest(*ARGS, *extra)
        counts[name] = _sessions(log) - before

    step("first")
    step("cached", "--junitxml=out.xml", "--atom-report=report", "--atom-html=report.html")
    before = _sessions(log)
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(pytester.path)
        done = CliRunner().invoke(main, ["run", "specs", "--cache"])
        (pytester.path / "atom_run.txt").write_text(done.output)
        counts["atom run"] = _sessions(log) - before
        (project.workspace / "notes.txt").write_text("changed notes\n")
        why = {"changed": CliRunner().invoke(main, ["history", "why", "greet"]).output}
    step("changed")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(pytester.path)
        why["after"] = CliRunner().invoke(main, ["history", "why", "greet", "--json"]).output
    (pytester.path / "sessions.json").write_text(json.dumps(counts))
    (pytester.path / "why.json").write_text(json.dumps(why))
    return runs


@pytest.fixture
def cached(
    pytester: pytest.Pytester, tmp_path_factory: pytest.TempPathFactory, counted: Path
) -> Scenario:
    return pytester_once(pytester, tmp_path_factory, "outcome-cache", play)


def _counts(scenario: Scenario) -> dict[str, int]:
    return dict(json.loads((scenario.project / "sessions.json").read_text()))


@pytest.mark.slow
def test_a_session_with_nothing_changed_starts_no_claude_code(cached: Scenario) -> None:
    counts = _counts(cached)
    assert counts["first"] >= 1
    assert counts["cached"] == 0 and counts["atom run"] == 0
    cached.runs["first"].assert_outcomes(passed=1)
    cached.runs["cached"].assert_outcomes(passed=1)
    lines = cached.runs["cached"].lines
    lines.fnmatch_lines(["*specs/greet.atom.yaml::greet*passed (cached)*"])
    lines.fnmatch_lines(["cached: 1 of 1 spec run reported from the history store (--atom-cache)*"])
    assert "passed (cached)" in (cached.project / "atom_run.txt").read_text()


@pytest.mark.slow
def test_the_cached_session_marks_junit_the_trace_and_html(cached: Scenario) -> None:
    props = {
        p.get("name"): p.get("value") for p in ET.parse(cached.project / "out.xml").iter("property")
    }
    assert props["atom_source"] == "cached" and props["atom_cached"]
    [trace_file] = (cached.project / "report" / "greet").glob("*.json")
    trace = json.loads(trace_file.read_text())
    VALIDATOR.validate(trace)
    assert trace["atom"]["cached"]["run_id"] == props["atom_cached"]
    assert trace["atom"]["cached"]["tool_calls"] == ["Bash"]
    page = (cached.project / "report.html").read_text()
    assert 'class="badge cached"' in page and "with the same inputs (--atom-cache)" in page


@pytest.mark.slow
def test_a_changed_workspace_runs_the_item_again_and_why_names_it(cached: Scenario) -> None:
    assert _counts(cached)["changed"] >= 1
    cached.runs["changed"].assert_outcomes(passed=1)
    assert "(cached)" not in cached.runs["changed"].lines.str()
    why = json.loads((cached.project / "why.json").read_text())
    assert why["changed"].startswith("greet: changed since run ")
    assert "workspace (the workspace tree the copy takes)" in why["changed"]
    [after] = json.loads(why["after"])["items"]
    assert after["changed"] == [] and after["cached_now"] is True
