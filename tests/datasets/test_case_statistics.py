"""Statistics of a spec with cases: per case (each case is its own spec key, as a repeat's
rows are), pooled per spec and arm, and an arm's change from the reference paired by case."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from atom_cli.main import main
from pytest_atom.baseline.measure import (
    case_figures,
    case_lines,
    groupruns_of,
    junit_properties,
    measured,
)
from pytest_atom.baseline.stats import Interval
from pytest_atom.results.rows import SummaryRow
from pytest_atom.suite.shards import SHARD_RESULTS, write_shard
from tests.helpers import summary_row


def _row(case: str, arm: str | None, repeat: int, label: str) -> SummaryRow:
    props: dict[str, Any] = {"atom_case": case, "atom_score": 1.0 if label == "passed" else 0.0}
    name = f"fix[{case}]"
    if arm is not None:
        props |= {"atom_arm": arm, "atom_arm_reference": arm == "base"}
        name += f"[{arm}]"
    row: SummaryRow = summary_row(f"fix.atom.yaml::{name}[r{repeat}]", label, props)
    return row


#: Three cases, two arms, two repeats: the terse arm loses case c's runs and one of b's.
OUTCOMES = {
    ("a", "base"): ("passed", "passed"),
    ("a", "terse"): ("passed", "passed"),
    ("b", "base"): ("passed", "passed"),
    ("b", "terse"): ("passed", "failed"),
    ("c", "base"): ("passed", "failed"),
    ("c", "terse"): ("failed", "failed"),
}
ROWS = [
    _row(case, arm, n, label)
    for (case, arm), labels in OUTCOMES.items()
    for n, label in enumerate(labels, 1)
]


def test_each_case_is_measured_on_its_own() -> None:
    groups = groupruns_of(ROWS)
    assert groups["fix.atom.yaml::fix[c][base]"].passed == 1
    assert groups["fix.atom.yaml::fix[c][base]"].runs == 2
    assert len(groups) == 6


def test_a_spec_is_pooled_per_arm_over_its_cases() -> None:
    figures = {f.spec: f for f in case_figures(ROWS)}
    assert list(figures) == ["fix.atom.yaml::fix[base]", "fix.atom.yaml::fix[terse]"]
    base, terse = figures.values()
    assert (base.cases, base.runs.passed, base.runs.runs) == (3, 5, 6)
    assert (terse.cases, terse.runs.passed, terse.runs.runs) == (3, 3, 6)
    assert base.paired is None  # the reference itself
    # Paired by case: a 0, b -0.5, c -0.5; their mean, with the paired bootstrap's interval.
    assert isinstance(terse.paired, Interval)
    assert round(terse.paired.estimate, 6) == round(-1 / 3, 6)
    assert terse.paired.low <= -1 / 3 <= terse.paired.high <= 0


def test_the_pooled_figures_are_in_the_summary_junit_and_measured_json() -> None:
    lines = case_lines(ROWS)
    assert lines[0].startswith("cases (each spec's runs pooled over its cases")
    assert lines[1].startswith("fix.atom.yaml::fix[base] over 3 cases: 5/6 passed, pass rate 0.83")
    assert "vs reference by case: pass rate -0.33 [" in lines[2]
    props = dict(junit_properties(ROWS))
    assert props["atom_cases fix.atom.yaml::fix[terse]"].startswith("3/6 passed")
    cases = measured(ROWS)["cases"]
    assert [(c["spec"], c["cases"], c["passed"]) for c in cases] == [
        ("fix.atom.yaml::fix[base]", 3, 5),
        ("fix.atom.yaml::fix[terse]", 3, 3),
    ]


def test_a_spec_without_arms_is_pooled_over_its_cases_alone() -> None:
    rows = [_row(case, None, 1, label) for case, label in (("a", "passed"), ("b", "failed"))]
    [figures] = case_figures(rows)
    assert (figures.spec, figures.cases, figures.runs.passed, figures.paired) == (
        "fix.atom.yaml::fix",
        2,
        1,
        None,
    )
    assert case_figures([summary_row("x.atom.yaml::x", "passed", {})]) == []


def test_shards_of_a_datasets_cases_combine_into_the_pooled_figures(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pytest-split may place a spec's cases in different shards: `atom results combine`
    pools them as the unsharded run would."""
    rows = [_row(case, None, 1, label) for case, label in (("a", "passed"), ("b", "failed"))]
    for name, row in zip(("one", "two"), rows, strict=True):
        (tmp_path / name).mkdir()
        write_shard(tmp_path / name / SHARD_RESULTS, [row], {}, failures={}, other_failures=0)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["results", "combine", "one", "two"])
    assert result.exit_code == 1, result.output  # case b failed
    assert "fix.atom.yaml::fix over 2 cases: 1/2 passed, pass rate 0.50 [" in result.output
