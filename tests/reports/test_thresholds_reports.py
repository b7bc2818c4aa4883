"""Every report shows a spec's k of n with its threshold: the run's JUnit properties carry
the counts (what crosses xdist's border and a shard's results file), the JSON trace says
which run of how many and the count needed, the text report says why one failed run need
not fail the spec, and the session's JUnit properties, ``measured.json`` and HTML page
say how many passed of how many, against what, met or not."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from pytest_atom.baseline.measure import junit_properties, measured, measured_lines
from pytest_atom.reports.html import page_rows, spec_view, write_html
from pytest_atom.reports.junit import JUNIT_PROPERTIES
from pytest_atom.reports.properties import result_properties
from pytest_atom.reports.text import TEXT
from pytest_atom.reports.trace import build_trace
from pytest_atom.results.spec_result import SpecResult
from pytest_atom.results.thresholds import RepeatGates
from pytest_atom.run.harness import host_harness
from pytest_atom.spec_loader.load import load_spec
from pytest_atom.suite.suite_run import SuiteRun
from tests.helpers import VALIDATOR, summary_row
from tests.html_helpers import result_for, row_of


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    return tmp_path


def repeated_runs(project: Path, outcomes: str, counts: str) -> list[SpecResult]:
    """Finished runs of the demo spec with `counts` appended to its file: ``"pfp"``."""
    path = result_for(project / "spec").spec.path
    path.write_text(path.read_text() + counts)
    spec = load_spec(path)
    return [
        replace(result_for(project / f"run{n}", check_passed=o == "p"), spec=spec.with_repeats(1))
        for n, o in enumerate(outcomes, 1)
    ]


def test_a_run_s_properties_carry_its_spec_s_counts(project: Path) -> None:
    [counted] = repeated_runs(project, "p", "repeats: 3\npass_at_least: 2\n")
    props = dict(JUNIT_PROPERTIES.render(counted))
    assert (props["atom_repeats"], props["atom_pass_at_least"]) == (3, 2)
    plain = result_for(project / "plain")
    assert "atom_repeats" not in result_properties(plain)
    assert "atom_pass_at_least" not in result_properties(plain)
    runs_only = replace(plain, spec=plain.spec.with_repeats(4))
    assert result_properties(runs_only)["atom_repeats"] == 4
    assert "atom_pass_at_least" not in result_properties(runs_only)


def test_the_trace_says_how_many_runs_and_passes_the_spec_has(project: Path) -> None:
    [counted] = repeated_runs(project, "f", "repeats: 3\npass_at_least: 2\n")
    trace = build_trace(counted, repeat=2)
    VALIDATOR.validate(trace)
    atom: dict[str, Any] = trace["atom"]
    assert (atom["repeat"], atom["spec"]["repeats"], atom["spec"]["pass_at_least"]) == (2, 3, 2)
    plain = build_trace(result_for(project / "plain"))
    VALIDATOR.validate(plain)
    assert "repeats" not in plain["atom"]["spec"]


def test_a_failed_run_s_report_says_the_spec_passes_on_enough_repeats(project: Path) -> None:
    [failed] = repeated_runs(project, "f", "repeats: 3\npass_at_least: 2\n")
    text = TEXT.render(failed, repeat=1)
    assert (
        "  threshold: the spec passes when at least 2 of its 3 repeats pass; the session's "
        "summary counts them"
    ) in text.splitlines()
    assert "threshold:" not in TEXT.render(result_for(project / "plain", check_passed=False))


def rows_of(outcomes: str, **props: Any) -> list[Any]:
    labels = {"p": "passed", "f": "failed"}
    return [
        summary_row(f"x.atom.yaml::x[r{n}]", labels[o], {f"atom_{k}": v for k, v in props.items()})
        for n, o in enumerate(outcomes, 1)
    ]


def test_the_session_s_junit_properties_and_measured_json_give_k_of_n_and_the_verdict() -> None:
    below = rows_of("pff", repeats=3, pass_at_least=2)
    [(name, value)] = junit_properties(below)
    assert name == "atom_repeats x.atom.yaml::x"
    assert value.startswith("1/3 passed, pass rate 0.33")
    assert value.endswith("(BELOW, at least 2 of 3 must pass)")
    [figures] = measured(below)["repeats"]
    assert (figures["passed"], figures["runs"]) == (1, 3)
    assert figures["threshold"] == {
        "repeats": 3,
        "pass_at_least": 2,
        "min_pass_rate": None,
        "met": False,
    }
    # the run's own gates, for a spec that states none
    plain = rows_of("ppf", repeats=3)
    [figures] = measured(plain, RepeatGates(pass_at_least=2, min_pass_rate=0.5))["repeats"]
    assert figures["threshold"] == {
        "repeats": 3,
        "pass_at_least": 2,
        "min_pass_rate": 0.5,
        "met": True,
    }
    assert measured(plain)["repeats"][0]["threshold"] is None  # every repeat: pytest decides


def test_a_shard_s_lines_say_how_many_repeats_ran_elsewhere() -> None:
    [_, line] = measured_lines(rows_of("pp", repeats=5, pass_at_least=4))
    assert "2/2 passed" in line
    assert " (ok, at least 4 of 5 must pass; 3 of them did not run here)" in line


def test_the_html_report_shows_k_of_n_with_the_threshold(project: Path) -> None:
    """``--atom-html``: the page's repeat lines are the summary's, verdict and all."""
    suite = SuiteRun(host_harness({}))
    runs = repeated_runs(project, "pfp", "repeats: 3\npass_at_least: 2\n")
    for n, result in enumerate(runs, 1):
        suite.rows.append(row_of(result, n))
    views = {
        row.nodeid: spec_view(r, repeat=n)
        for n, (row, r) in enumerate(zip(suite.rows, runs, strict=True), 1)
    }
    page = write_html(
        page_rows(suite.rows, views, {}, {}),
        project / "report.html",
        measured=measured_lines(suite.rows, suite.gates),
    )
    html = page.read_text()
    assert "spec/demo.atom.yaml::demo: 2/3 passed, pass rate 0.67" in html
    assert "(ok, at least 2 of 3 must pass)" in html
