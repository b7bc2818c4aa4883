"""The baseline gate's three answers, on constructed baselines and runs."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from pytest_atom.baseline.compare import build_baseline, counts, gate_run
from pytest_atom.baseline.gate import gate
from tests.frontends_helpers import FAILS, FrontEnds
from tests.helpers import summary_row


def rows(spec: str, passed: int, runs: int, source: str = "record") -> list[Any]:
    return [
        summary_row(
            f"{spec}[r{n + 1}]", "passed" if n < passed else "failed", {"atom_source": source}
        )
        for n in range(runs)
    ]


def baseline(*specs: tuple[str, int, int]) -> dict[str, Any]:
    every = [row for spec, passed, runs in specs for row in rows(spec, passed, runs)]
    specs_: dict[str, Any] = build_baseline(every)["specs"]
    return specs_


def test_a_clear_drop_is_a_regression_named_with_its_test_and_interval() -> None:
    comparisons, result = gate_run(baseline(("a", 18, 20)), rows("a", 10, 20))
    assert result is not None and result.answer == "REGRESSION"
    [spec] = result.specs
    assert spec.p_value == pytest.approx(0.0069, abs=1e-4)
    assert spec.line() == (
        "a: REGRESSION: pass rate 18/20 -> 10/20, change -0.40 [-0.61, -0.12] (Newcombe 95 %); "
        "Fisher's exact test, one-sided: p = 0.00691 (adjusted 0.00691)"
    )
    assert comparisons[0].status == "regression" and comparisons[0].messages == (spec.line(),)


def test_a_small_drop_is_inconclusive_and_says_how_many_repeats_settle_it() -> None:
    comparisons, result = gate_run(baseline(("a", 9, 10)), rows("a", 8, 10))
    assert result is not None and result.answer == "INCONCLUSIVE"
    assert comparisons[0].status == "inconclusive"  # never fails the run
    assert result.specs[0].repeats == 173
    assert (
        result.specs[0]
        .line()
        .endswith(
            "about 173 repeats on each side would tell a drop from 0.90 to 0.80 from noise "
            "(alpha 0.05, power 0.8): atom trials --p 0.90 --q 0.80"
        )
    )


def test_no_drop_passes() -> None:
    comparisons, result = gate_run(baseline(("a", 7, 10)), rows("a", 8, 10))
    assert result is not None and result.answer == "PASS"
    assert comparisons[0].status in ("same", "improved")


def test_the_total_is_stratified_and_holm_adjusted() -> None:
    # Three specs each a little worse: no single one is evidence, together they are.
    specs = [("a", 10, 10), ("b", 10, 10), ("c", 9, 10)]
    run = rows("a", 7, 10) + rows("b", 7, 10) + rows("c", 6, 10)
    comparisons, result = gate_run(baseline(*specs), run)
    assert result is not None and result.total is not None
    assert [s.answer for s in result.specs] == ["INCONCLUSIVE"] * 3
    assert result.total.answer == "REGRESSION"
    assert [c.status for c in comparisons] == ["inconclusive"] * 3
    lines = [line for line, _ in result.flagged_lines()]
    assert lines[0] == (
        "baseline gate: REGRESSION for 3 sampled specs (Fisher's exact test per spec, "
        "Holm-adjusted over 3 specs, at alpha 0.025; Cochran-Mantel-Haenszel in total, at "
        "alpha 0.025)"
    )
    assert lines[-1].startswith(
        "  total over 3 specs: REGRESSION: mean pass rate 0.97 -> 0.67, change -0.30 ["
    )
    assert "(paired bootstrap (seed 0)); Cochran-Mantel-Haenszel test stratified" in lines[-1]


def test_replays_keep_the_fixed_tolerances() -> None:
    """Every run alike, then and now: a difference is a fact, judged without a test."""
    before = build_baseline(rows("a", 1, 1, source="replay"))["specs"]
    comparisons, result = gate_run(before, rows("a", 0, 1, source="replay"))
    assert result is None
    assert comparisons[0].status == "regression"
    assert comparisons[0].messages == ("a: outcome went from passed to failed",)


def test_old_baselines_without_repeats_still_count() -> None:
    old = {"outcome": "mixed", "runs": 10, "pass_rate": 0.9}
    assert counts(old) == (9, 10)
    assert gate({"a": (counts(old), (2, 10))}).answer == "REGRESSION"


@pytest.mark.slow
def test_the_session_says_the_gates_answer(front_ends: FrontEnds) -> None:
    """a-fails failed once where the baseline holds 40 passing runs of a live agent (a sample):
    pytest's session and `atom run` both print the gate's REGRESSION, with its test."""
    for name in ("xdist", "atom"):
        output = front_ends.output(name)
        assert (
            "baseline gate: REGRESSION for 1 sampled spec (Fisher's exact test, alpha 0.05)"
            in output
        )
        assert re.search(
            rf"(?m)^  {re.escape(FAILS)}: REGRESSION: pass rate 40/40 -> 0/1, .*p = 0\.0244 ",
            output,
        )
        assert front_ends.status(name) == 1


@pytest.mark.slow
def test_an_inconclusive_answer_never_fails_the_session(
    pytester: pytest.Pytester, claude_for_pytester: None
) -> None:
    """A check that passes once: the first repeat makes the folder, the second finds it,
    so the runs differ (a sample, as a live agent's would). 1 of 2 against 20 of 20 is no
    evidence of a drop; the minimum pass rate is met: the session passes. (A REGRESSION
    failing it is test_the_session_says_the_gates_answer's; a PASS is test_no_drop_passes's,
    at the gate itself: the session only prints it.)"""
    flag = pytester.path / "flag"
    pytester.makefile(
        ".atom.yaml",
        once=f"name: once\nprompt: p\nscript: s.yaml\naccept:\n  - command: {{run: 'mkdir {flag}', "
        "unsandboxed: true, reason: 'a flag kept across repeats'}\n",
    )
    (pytester.path / "s.yaml").write_text("turns:\n  - text: EXIT_LOOP_NOW\n")
    document = build_baseline(rows("once.atom.yaml::once", 20, 20))
    (pytester.path / "baseline.json").write_text(json.dumps(document))
    unsure = pytester.runpytest(
        "--atom", "--atom-repeat", "2", "--atom-min-pass-rate", "0.5",
        "--atom-baseline", "baseline.json",
    )  # fmt: skip
    assert unsure.ret == pytest.ExitCode.OK  # INCONCLUSIVE never fails the run
    unsure.stdout.fnmatch_lines(
        [
            "baseline gate: INCONCLUSIVE for 1 sampled spec (Fisher's exact test, alpha 0.05)",
            "  once.atom.yaml::once: INCONCLUSIVE: pass rate 20/20 -> 1/2, *about * repeats*",
            # (fnmatch: `?` for each bracket, which would open a character class)
            "once.atom.yaml::once: 1/2 passed, pass rate 0.50 ?0.09, 0.91?, pass@2 1.00, "
            "pass^2 0.00; * (ok the minimum 0.5)",
        ]
    )
