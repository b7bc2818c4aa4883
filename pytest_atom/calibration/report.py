"""`atom calibrate`'s results as text and as JSON: rendered here, typed until then."""

from __future__ import annotations

import math
from typing import Any

from pytest_atom.calibration.calibrate import ALPHA, ArmComparison, SpecCalibration
from pytest_atom.calibration.variants import CURRENT
from pytest_atom.judge.calibration import CriterionCalibration, base_name, to_json
from pytest_atom.paths import display_path
from pytest_atom.results.outcome import NO_VERDICT


def _num(value: float, digits: int = 2) -> str:
    return "n/a" if math.isnan(value) else f"{value:.{digits}f}"


def criterion_lines(calibration: CriterionCalibration) -> list[str]:
    """One criterion: its figures, its confusion matrix and each disagreement."""
    c = calibration.confusion
    lines = [
        f"  criterion: {calibration.criterion}",
        f"    samples {calibration.samples}, agreement {_num(calibration.agreement * 100, 0)} %, "
        f"kappa {_num(calibration.kappa)} "
        f"(95 % CI {_num(calibration.kappa_low)} to {_num(calibration.kappa_high)})",
        "                  judge pass  judge fail",
        f"    human pass    {c['human_pass_judge_pass']:>10}  {c['human_pass_judge_fail']:>10}",
        f"    human fail    {c['human_fail_judge_pass']:>10}  {c['human_fail_judge_fail']:>10}",
    ]
    for d in calibration.disagreements:
        lines.append(
            f"    disagreement {d.sample}: human {'pass' if d.human else 'fail'}, "
            f"judge {'pass' if d.judge else 'fail'}"
        )
        lines.append(f"      judge: {d.judge_reasons or '(no reasons)'}")
        lines.append(f"      human: {d.note or '(no note)'}")
    return lines


def arm_lines(comparison: ArmComparison) -> list[str]:
    """One arm against the spec's own judge, with McNemar's exact test."""
    t = comparison.test
    better = comparison.better
    if better is None:
        verdict = "they agree with the humans equally often"
    else:
        noise = "beyond noise" if comparison.beyond_noise else "within noise"
        verdict = f"{better} agrees better, {noise} (McNemar exact p = {t.p:.3g}, alpha {ALPHA})"
    return [
        f"  arm {comparison.arm} vs {CURRENT} on: {comparison.criterion}",
        f"    agreement {_num(comparison.arm_agreement * 100, 0)} % vs "
        f"{_num(comparison.current_agreement * 100, 0)} %, kappa {_num(comparison.arm_kappa)} vs "
        f"{_num(comparison.current_kappa)}; samples only {comparison.arm} got right: {t.only_b}, "
        f"only {CURRENT}: {t.only_a}",
        f"    {verdict}",
    ]


def text_lines(result: SpecCalibration) -> list[str]:
    """A spec's calibration for a person."""
    spec = result.spec
    # A dataset spec is calibrated once for all its cases: named without a case.
    lines = [f"{display_path(spec.path)}::{base_name(spec)} (judge: {result.source})"]
    for text, why in result.was_stale.items():
        lines.append(f"  the stored calibration of {text!r} was stale: {why}")
    for calibration in result.criteria.values():
        lines += criterion_lines(calibration)
    for text in result.unlabelled:
        lines.append(f"  criterion not calibrated, no sample labels it: {text}")
    for text, names in result.no_verdict.items():
        lines.append(
            f"  {NO_VERDICT} on {len(names)} sample{'s' * (len(names) != 1)} (not counted), "
            f"even when asked again, on: {text}: {', '.join(names)}"
        )
    for comparison in result.arms:
        lines += arm_lines(comparison)
    if result.written is not None:
        lines.append(f"  written: {display_path(result.written)}")
    if result.cassette is not None:
        lines.append(f"  recorded: {display_path(result.cassette)}")
    return lines


def as_json(result: SpecCalibration) -> dict[str, Any]:
    """A spec's calibration for a script: calibration.json's entries, and the arms."""
    return {
        "spec": base_name(result.spec),
        "path": str(result.spec.path),
        "source": result.source,
        "criteria": [to_json(c) for c in result.criteria.values()],
        "was_stale": dict(result.was_stale),
        "unlabelled": list(result.unlabelled),
        "no_verdict": dict(result.no_verdict),
        "arms": [
            {
                "arm": a.arm,
                "criterion": a.criterion,
                "samples": a.samples,
                "agreement": {a.arm: a.arm_agreement, CURRENT: a.current_agreement},
                "kappa": {
                    a.arm: None if math.isnan(a.arm_kappa) else a.arm_kappa,
                    CURRENT: None if math.isnan(a.current_kappa) else a.current_kappa,
                },
                "only_arm_right": a.test.only_b,
                "only_current_right": a.test.only_a,
                "mcnemar_p": a.test.p,
                "better": a.better,
                "beyond_noise": a.beyond_noise,
            }
            for a in result.arms
        ],
        "written": str(result.written) if result.written else None,
        "cassette": str(result.cassette) if result.cassette else None,
    }
