"""The gate that trusts only a calibrated judge, below the CLI: each criterion's trust from
its floor and stored calibration (judge.trust), the decision it makes (results.outcome),
the outcome's why and the refine message. The real CLI runs it in test_calibrated_gate.py."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from pytest_atom.errors import CalibrationError
from pytest_atom.judge.trust import criteria_floors, criteria_trust, criterion_trust
from pytest_atom.prompts import PromptLoader
from pytest_atom.reports.html import render_html, report_row, spec_view
from pytest_atom.reports.properties import result_properties
from pytest_atom.reports.summary import criteria_trust_lines
from pytest_atom.reports.text import failure_report
from pytest_atom.results.outcome import RunFacts, decide, judge
from pytest_atom.results.record import IterationRecord, RunOutcome
from pytest_atom.results.spec_result import Attempt, SpecResult, StepResult
from pytest_atom.results.verdict import UNFLOORED, CriterionVerdict, Trust, Verdict
from pytest_atom.run.execution import AttemptLoop, refine_message
from pytest_atom.run.steps import StepsRun
from pytest_atom.spec.types import CalibrationFloor, Spec
from pytest_atom.spec_loader.load import load_spec
from tests.gate_helpers import calibration, store
from tests.helpers import summary_row, write

VERSION = "2.1.332"
SPEC = """\
name: greet
prompt: Greet.
criteria:
  - {text: The greeting is polite., min_kappa: 0.6, min_samples: 10}
  - {text: The greeting names the user., min_samples: 5}
  - The greeting is short.
"""
POLITE, NAMES, SHORT = (
    "The greeting is polite.",
    "The greeting names the user.",
    "The greeting is short.",
)


def _spec(tmp_path: Path, text: str = SPEC) -> Spec:
    return load_spec(write(tmp_path / "specs" / "greet.atom.yaml", text))


def test_a_criterions_own_kappa_wins_and_the_setting_covers_the_rest(tmp_path: Path) -> None:
    spec = _spec(tmp_path)
    assert criteria_floors(spec, None) == (
        CalibrationFloor(0.6, 10, 4),
        CalibrationFloor(None, 5, 5),
        None,  # a plain string: no requirement
    )
    assert criteria_floors(spec, 0.4) == (
        CalibrationFloor(0.6, 10, 4),  # its own 0.6, not the setting's 0.4
        CalibrationFloor(0.4, 5, 5),  # its own samples, the setting's kappa
        CalibrationFloor(0.4),
    )


def test_without_any_floor_the_calibration_file_is_never_read(tmp_path: Path) -> None:
    """Each criterion still has its label, gated for want of a floor."""
    spec = _spec(tmp_path, "name: greet\nprompt: Greet.\ncriteria: [The greeting is short.]\n")
    write(tmp_path / "specs" / "calibration" / "greet" / "calibration.json", "{not json")
    (plain,) = criteria_trust(spec, None, VERSION)
    assert plain == UNFLOORED and plain.gates and plain.line == "gated (no calibration floor)"
    with pytest.raises(CalibrationError, match=r"calibration\.json cannot be read"):
        criteria_trust(spec, 0.5, VERSION)


def test_each_criterion_is_gated_or_advisory_and_says_why(tmp_path: Path) -> None:
    spec = _spec(tmp_path)
    store(
        spec,
        {
            POLITE: calibration(spec, POLITE, VERSION, kappa=0.72, samples=24),
            NAMES: calibration(spec, NAMES, VERSION, samples=3),
        },
    )
    polite, names, short = criteria_trust(spec, 0.5, VERSION)
    assert polite == Trust("calibrated", "kappa 0.72 >= 0.6 on 24 samples")
    assert names is not None and names.reason == "samples"
    assert names.detail.startswith("on 3 samples, fewer than 5")
    assert short is not None and short.reason == "uncalibrated"
    assert "calibration/greet/calibration.json" in short.detail and "atom calibrate" in short.detail
    assert [t.gates for t in (polite, names, short)] == [True, False, False]


def test_a_kappa_below_the_floor_or_undefined_is_advisory(tmp_path: Path) -> None:
    spec = _spec(tmp_path)
    floor = CalibrationFloor(0.6, 10)
    low = calibration(spec, POLITE, VERSION, kappa=0.41)
    current = low.identity
    assert criterion_trust(floor, low, current) == Trust("kappa", "kappa 0.41 < 0.6 on 20 samples")
    undefined = calibration(spec, POLITE, VERSION, kappa=math.nan)
    trust = criterion_trust(floor, undefined, current)
    assert (trust.reason, trust.detail) == ("kappa", "kappa undefined < 0.6 on 20 samples")
    # without a kappa floor, enough fresh samples are enough
    assert criterion_trust(CalibrationFloor(None, 5), low, current).gates


def test_another_model_or_claude_code_release_makes_a_calibration_stale(tmp_path: Path) -> None:
    spec = _spec(tmp_path)
    store(spec, {POLITE: calibration(spec, POLITE, VERSION, model="claude-opus-4-0")})
    trust = criteria_trust(spec, None, VERSION)[0]
    assert trust is not None and trust.reason == "stale" and not trust.gates
    assert "the judge's model changed ('claude-opus-4-0' -> 'default')" in trust.detail
    store(spec, {POLITE: calibration(spec, POLITE, "2.1.331")})
    trust = criteria_trust(spec, None, VERSION)[0]
    assert trust is not None and "the Claude Code version changed" in trust.detail


def test_a_reworded_criterion_is_stale_not_missing(tmp_path: Path) -> None:
    """calibration.json's entry at the criterion's place, for words the spec no longer has,
    is its old calibration: the report names the text that changed."""
    old = "The greeting is courteous."
    spec = _spec(tmp_path)
    store(
        spec,
        {text: calibration(spec, text, VERSION) for text in (old, NAMES, SHORT)},
    )
    trust = criteria_trust(spec, None, VERSION)[0]
    assert trust is not None and trust.reason == "stale"
    assert f"the criterion's text changed ('{old}' -> '{POLITE}')" in trust.detail
    # a calibration.json of other criteria altogether: the criterion was never calibrated
    store(spec, {old: calibration(spec, old, VERSION)})
    trust = criteria_trust(spec, None, VERSION)[0]
    assert trust is not None and trust.reason == "uncalibrated"


# --- the decision: an advisory verdict fails nothing, and asks for no refine ---------------


class _Check:
    passed = True


def _verdict(score: float, *met_and_trust: tuple[bool, Trust | None]) -> Verdict:
    criteria = tuple(
        CriterionVerdict(f"criterion {n}", met, f"evidence {n}", trust=trust)
        for n, (met, trust) in enumerate(met_and_trust, 1)
    )
    return Verdict(score, "refine", criteria, "Try again.")


ADVISORY = Trust("uncalibrated", "no calibration")
GATED = Trust("calibrated", "kappa 0.80 >= 0.6 on 20 samples")


def test_an_unmet_advisory_criterion_neither_fails_nor_refines_an_attempt() -> None:
    # 0.3 alone would fail outright; 0.6 would ask for another attempt
    for score in (0.3, 0.6):
        advisory_only = _verdict(score, (False, ADVISORY))
        assert judge(True, [_Check()], advisory_only, 0.8) == "proceed"
        mixed = _verdict(score, (True, GATED), (False, ADVISORY), (True, None))
        assert judge(True, [_Check()], mixed, 0.8) == "proceed"
    # a gated criterion unmet still asks for another attempt, whatever the score
    assert (
        judge(True, [_Check()], _verdict(0.95, (False, GATED), (True, ADVISORY)), 0.8) == "refine"
    )
    assert judge(True, [_Check()], _verdict(0.95, (False, None), (True, ADVISORY)), 0.8) == "refine"
    # a failed check still fails it
    failing = type("Failing", (), {"passed": False})()
    assert judge(True, [failing], _verdict(0.9, (True, ADVISORY)), 0.8) == "fail"


def test_with_every_criterion_gating_the_score_decides_as_it_always_did() -> None:
    calibrated = _verdict(0.6, (False, GATED))
    assert judge(True, [_Check()], calibrated, 0.8) == "refine"
    assert judge(True, [_Check()], _verdict(0.3, (False, GATED)), 0.8) == "fail"
    assert "trust" not in _verdict(0.9, (True, None)).to_dict()["criteria"][0]  # a judge's extra
    assert _verdict(0.9, (True, UNFLOORED)).to_dict()["criteria"][0]["trust"] == {
        "trust": "gated",
        "reason": "unfloored",
        "detail": "",
    }
    assert calibrated.to_dict()["criteria"][0]["trust"] == {
        "trust": "gated",
        "reason": "calibrated",
        "detail": "kappa 0.80 >= 0.6 on 20 samples",
    }


def test_the_outcome_names_the_advisory_criteria_apart() -> None:
    figures: dict[str, Any] = dict(
        attempts=1, score=0.4, threshold=0.8, completed=True, reason=None, checks=0
    )
    passed = decide(
        RunFacts(
            decision="proceed", checks_failed=0, gate="criteria", advisory_unmet=["x"], **figures
        )
    )
    assert (passed.status, passed.why) == (
        "passed",
        "every gated criterion met; advisory, not gating: x",
    )
    failed = decide(
        RunFacts(
            decision="refine",
            checks_failed=0,
            gate="criteria",
            unmet=["y"],
            advisory_unmet=["x"],
            **figures,
        )
    )
    assert (failed.status, failed.why) == ("failed", "unmet: y; advisory, not gating: x")


def test_a_result_reads_its_gate_from_the_verdicts_trust(tmp_path: Path) -> None:
    spec = Spec(name="t", path=tmp_path / "t.atom.yaml", line=1, prompt="p", criteria=("a", "b"))
    verdict = _verdict(0.3, (True, GATED), (False, ADVISORY))
    attempt = Attempt(1, tmp_path, RunOutcome(True, 1), [], [], verdict, decision="proceed")
    result = SpecResult(spec, tmp_path, [attempt], 1.0, 0.8)
    assert (
        result.gate == "criteria" and result.unmet == [] and result.unmet_of(advisory=True) == ["b"]
    )
    assert result.outcome.why == "every gated criterion met; advisory, not gating: b"


def test_a_refine_asks_only_for_the_gated_criteria(tmp_path: Path) -> None:
    verdict = _verdict(0.6, (False, GATED), (False, ADVISORY))
    attempt = Attempt(1, tmp_path, RunOutcome(True, 1), [], [], verdict)
    message = refine_message(attempt, 2, 0.8)
    assert "- criterion 1: evidence 1" in message and "criterion 2" not in message
    assert "passing needs every criterion below met" in message
    plain = Attempt(1, tmp_path, RunOutcome(True, 1), [], [], _verdict(0.6, (False, None)))
    assert "Score 0.6; passing needs more than 0.8.\n\nUnmet criteria:\n- criterion 1" in (
        refine_message(plain, 2, 0.8)
    )


UNFLOORED_KEY = "atom_criteria_unfloored"


def test_the_summary_counts_gated_and_advisory_criteria_and_why() -> None:
    def row(name: str, gated: int, advisory: int, reasons: str) -> Any:
        props = {
            "atom_criteria_gated": gated,
            "atom_criteria_advisory": advisory,
            "atom_criteria_advisory_reasons": reasons,
        }
        return summary_row(name, "passed", props)

    rows = [row("a", 2, 1, "stale"), row("b", 0, 2, "uncalibrated, stale"), row("c", 1, 0, "")]
    assert criteria_trust_lines(rows) == [
        "criteria: 3 gated, 3 advisory (2 calibration stale, 1 not calibrated): an advisory "
        "verdict fails nothing until `atom calibrate` calibrates its judge",
        "  advisory in: a, b",  # which runs: never another spec's criterion unnamed
    ]
    assert criteria_trust_lines([row("c", 1, 0, "")]) == ["criteria: 1 gated, 0 advisory"]
    assert criteria_trust_lines([summary_row("d", "passed", {})]) == []  # not judged
    plain = summary_row("e", "passed", {**row("e", 2, 0, "").properties, UNFLOORED_KEY: 2})
    assert criteria_trust_lines([plain]) == []  # no floor anywhere: each gated, as always
    assert criteria_trust_lines([plain, row("b", 0, 2, "uncalibrated, stale")]) == [
        "criteria: 2 gated (2 without a calibration floor), 2 advisory (1 calibration stale, "
        "1 not calibrated): an advisory verdict fails nothing until `atom calibrate` "
        "calibrates its judge",
        "  advisory in: b",
    ]


def test_a_steps_criteria_carry_their_floors_and_the_setting_into_its_attempt_loop(
    tmp_path: Path,
) -> None:
    spec = _spec(
        tmp_path,
        "name: s\nsteps:\n  - id: one\n    prompt: p\n"
        "    criteria: [{text: polite, min_kappa: 0.7}]\n",
    )
    run = StepsRun(spec, tmp_path, PromptLoader(), 0.8, None, Path("claude"), None)
    run.require_calibration = 0.5
    step = spec.steps[0]
    loop = run._step_run(step, 0, StepResult(step.id), None)
    assert loop.require_calibration == 0.5
    assert loop.spec.criteria == ("polite",)
    assert criteria_floors(loop.spec, 0.5) == (CalibrationFloor(0.7, None, 5),)


def test_an_unreadable_calibration_is_the_harness_error_naming_its_file(tmp_path: Path) -> None:
    spec = _spec(tmp_path)
    write(tmp_path / "specs" / "calibration" / "greet" / "calibration.json", "[broken")
    loop = AttemptLoop(spec, tmp_path, PromptLoader(), 0.8, None, Path("claude"), None)
    attempt = Attempt(1, tmp_path, RunOutcome(True, 1), [], [])
    assert not loop.trust(attempt, _verdict(0.9, (True, None), (True, None), (True, None)))
    assert (
        loop.harness_error is not None and "calibration.json cannot be read" in loop.harness_error
    )
    assert "calibration/greet/calibration.json" in loop.harness_error
    assert attempt.verdict is None


def test_every_report_shows_each_criterions_trust(tmp_path: Path) -> None:
    spec = Spec(name="t", path=tmp_path / "t.atom.yaml", line=1, prompt="p", criteria=("a", "b"))
    verdict = _verdict(0.9, (False, GATED), (False, ADVISORY))
    record = IterationRecord(returncode=0, output="Done.", texts=["Done."])
    attempt = Attempt(1, tmp_path, RunOutcome(True, 1, output="Done."), [record], [], verdict)
    attempt.decision = judge(True, [], verdict, 0.8)
    result = SpecResult(spec, tmp_path, [attempt], 1.0, 0.8)
    assert result.outcome.why == "unmet: a; advisory, not gating: b"
    pytest.LineMatcher(failure_report(result).splitlines()).fnmatch_lines(
        [
            "*refine, score 0.9; 0/1 gated criteria met, each must be; 1 advisory, not gating "
            "(not calibrated) after 1 attempt*",
            "*unmet, gated (calibrated: kappa 0.80 >= 0.6 on 20 samples): criterion 1",
            "*unmet, advisory (not calibrated: no calibration): criterion 2",
        ]
    )
    props = result_properties(result)
    assert props["atom_criteria_trust"] == (
        "1 gated (calibrated: kappa 0.80 >= 0.6 on 20 samples) · "
        "2 advisory (not calibrated: no calibration)"
    )
    assert props["atom_criteria_advisory_reasons"] == "uncalibrated"
    page = render_html([report_row("t.atom.yaml::t", "failed", spec_view(result))])
    assert '<li class="criterion unmet advisory">' in page
    assert '<span class="trust gated"' in page and '<span class="trust advisory"' in page
