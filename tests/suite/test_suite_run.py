"""The suite run (`pytest_atom.suite.SuiteRun`) decides a suite's exit status: driven here
directly, with the rows of real results (finished runs of a small spec,
`tests/html_helpers.py`) and with summary rows, as `pytest --atom`'s session plugin does."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from pytest_atom.baseline.compare import build_baseline, dump_baseline
from pytest_atom.cost.spend import SPEND_WORDS
from pytest_atom.errors import SpendingLimitReached
from pytest_atom.results.spec_result import SpecResult
from pytest_atom.run.harness import host_harness
from pytest_atom.spec.types import Spec
from pytest_atom.spec_loader.load import load_spec
from pytest_atom.suite.ending import Ending, decide, worst
from pytest_atom.suite.suite_run import SuiteRun
from tests.helpers import summary_row
from tests.html_helpers import result_for, row_of


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project of its own (its pytest.ini is the rootdir node ids are relative to)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    return tmp_path


def suite_of(**options: Any) -> SuiteRun:
    """A suite run as `pytest --atom` starts one (its harness names pytest's option)."""
    return SuiteRun(host_harness(options, spend_option="--atom-max-cost-usd"))


def finished(folder: Path, *, passed: bool = True, spec: Spec | None = None) -> SpecResult:
    """A finished run of the demo spec in `folder` (or of `spec`, as a repeat of it)."""
    result = result_for(folder, check_passed=passed)
    return result if spec is None else replace(result, spec=spec)


def ended(suite: SuiteRun) -> int:
    """The suite's exit status once its runs ended, over pytest's own (1 when a run failed)."""
    suite.finish()
    return suite.exit_status(min(worst(suite.rows), 1))


def ran(suite: SuiteRun, result: SpecResult, repeat: int | None = None) -> None:
    """A finished run, reported to the suite as pytest's item reports it."""
    suite.rows.append(row_of(result, repeat))


def test_a_suite_whose_runs_all_passed_exits_0_and_one_with_a_failed_run_exits_1(
    project: Path,
) -> None:
    passing = suite_of()
    ran(passing, finished(project / "a"))
    assert ended(passing) == 0
    failing = suite_of()
    ran(failing, finished(project / "b"))
    ran(failing, finished(project / "c", passed=False))
    assert ended(failing) == 1
    assert [row.outcome.label for row in failing.rows] == ["passed", "failed"]
    assert failing.rows[0].nodeid == "b/demo.atom.yaml::demo"  # pytest's node id


def test_the_minimum_pass_rate_decides_over_a_failed_repeat(project: Path) -> None:
    first = finished(project / "a")
    for rate, status in (("0.5", 0), ("0.9", 1)):
        suite = suite_of(min_pass_rate=rate, repeat="2")
        ran(suite, first, 1)
        ran(suite, finished(project / f"b{rate}", passed=False, spec=first.spec), 2)
        assert ended(suite) == status
        said = suite.summary(None)
        assert said.rates is not None
        verdict = "ok" if status == 0 else "BELOW"
        assert any(f"({verdict} the minimum {rate})" in line for line in said.rates)
        assert [row.nodeid for row in suite.rows] == [
            "a/demo.atom.yaml::demo[r1]",
            "a/demo.atom.yaml::demo[r2]",
        ]


def test_without_repeats_or_a_minimum_the_summary_has_no_pass_rates(project: Path) -> None:
    suite = suite_of()
    ran(suite, finished(project / "a"))
    suite.finish()
    assert suite.summary(None).rates is None


def test_a_failure_outside_the_spec_runs_is_never_gated_away_in_pytest(project: Path) -> None:
    """pytest's own status (a failed repeat: 1) becomes 0 when the rates clear the
    minimum, unless a test that is not a spec run failed too."""
    rows = [
        summary_row("x.atom.yaml::x[r1]", "passed", {}),
        summary_row("x.atom.yaml::x[r2]", "failed", {}),
    ]
    for others, status in ((0, 0), (1, 1)):
        suite = suite_of(min_pass_rate="0.5")
        for row in rows:
            suite.rows.append(row)
        for _ in range(others):
            suite.other_failures += 1
        assert suite.exit_status(1) == status


def test_pytest_keeps_its_own_status_where_no_gate_applies(project: Path) -> None:
    suite = suite_of(min_pass_rate="0.5")
    assert suite.exit_status(5) == 5  # no tests collected: no runs to gate
    suite.rows.append(summary_row("x.atom.yaml::x", "passed", {}))
    assert suite.exit_status(3) == 3  # pytest's internal error: rates never hide it


def test_a_regression_against_the_baseline_fails_a_run_whose_rates_pass(project: Path) -> None:
    before = suite_of()
    first = finished(project / "a")
    first_spec = first.spec
    ran(before, first)
    assert ended(before) == 0
    dump_baseline(build_baseline(before.rows), project / "baseline.json")
    now = suite_of(baseline=str(project / "baseline.json"), min_pass_rate="0")
    ran(now, finished(project / "b", passed=False, spec=first_spec))
    assert ended(now) == 1
    said = now.summary(None)
    assert said.baseline is not None
    assert (
        "baseline regression: a/demo.atom.yaml::demo: outcome went from passed to failed",
        True,
    ) in said.baseline
    again = suite_of(baseline=str(project / "baseline.json"))
    ran(again, finished(project / "c", spec=first_spec))
    assert ended(again) == 0  # the same as its baseline


def test_the_spending_limit_exits_2_and_says_what_did_not_run(project: Path) -> None:
    """A spec refused at the limit (no Claude Code process starts) ends the suite with 2
    whatever its other runs did, and the summary's closing line says so."""
    suite = suite_of(max_cost_usd="0.01")
    ran(suite, finished(project / "a"))
    spend = suite.harness.spend
    assert spend is not None
    spend.add(0.02)  # what the run before spent
    spec = load_spec(project / "a" / "demo.atom.yaml")
    with pytest.raises(SpendingLimitReached) as refused:  # the item skips, and says so
        suite.harness.run(spec)
    assert str(refused.value) == (
        f"not run: {SPEND_WORDS} is reached: $0.0200 spent of the $0.0100 limit "
        "(--atom-max-cost-usd)"
    )
    suite.spending_limit = True
    assert ended(suite) == 2
    assert suite.summary(None).spending == (
        "spending limit reached: $0.0200 spent of the $0.0100 limit (--atom-max-cost-usd); "
        "1 spec not run; exit status 2"
    )


def test_pytest_s_spending_limit_from_a_report_exits_2_over_its_own_status(
    project: Path,
) -> None:
    suite = suite_of()
    suite.rows.append(summary_row("x.atom.yaml::x", "passed", {}))
    suite.spending_limit = True
    assert suite.exit_status(0) == 2
    assert suite.summary(None).spending == (
        "spending limit reached (--atom-max-cost-usd); exit status 2"
    )


def test_an_arm_no_spec_has_is_named_with_its_option(project: Path) -> None:
    folder = project / "arms"
    folder.mkdir()
    (folder / "x.atom.yaml").write_text(
        "name: x\nprompt: Do it.\naccept: [{file_exists: out.txt}]\n"
        "arms:\n  plain: {}\n  skilled: {}\n"
    )
    from pytest_atom.spec_loader.load import load_specs

    specs = load_specs(folder / "x.atom.yaml")
    suite = suite_of(arms="skilled,typo")
    selected = suite.collected(specs)
    assert [spec.arm for spec in selected] == ["skilled"]
    assert suite.arms_problem() == (
        "--atom-arms names typo, which no spec has (arms here: plain, skilled)"
    )
    plain = suite_of(arms="plain")
    plain.collected(specs)
    assert plain.arms_problem() is None


@pytest.mark.parametrize(
    ("ending", "status"),
    [
        # the spending limit over a failure of the machinery and a regression
        (Ending(base=1, spending_limit=True, machinery_failed=True, regressed=True), 2),
        (Ending(base=0, machinery_failed=True, regressed=True), 2),
        (Ending(base=0, regressed=True, min_pass_rate=0.0), 1),
        (Ending(base=1), 1),
        (Ending(base=0), 0),
    ],
)
def test_the_gates_apply_in_one_order(ending: Ending, status: int) -> None:
    assert decide(ending) == status
