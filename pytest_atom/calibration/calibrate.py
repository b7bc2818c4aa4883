"""From verdicts to figures: each criterion's calibration, staleness, and the arms compared.

`calibrate_spec` is `atom calibrate` for one spec: its samples judged, each criterion's
agreement with the humans measured, and the result stored in calibration.json with the
judge's identity. Results stay typed; `report` renders them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path

from pytest_atom.calibration import agreement as stats
from pytest_atom.calibration.judging import Judged, judge_samples
from pytest_atom.calibration.samples import load_samples
from pytest_atom.calibration.variants import CURRENT, Variant, load_arms
from pytest_atom.judge.calibration import (
    CriterionCalibration,
    Disagreement,
    JudgeIdentity,
    base_name,
    calibration_file,
    calibration_for,
    judge_identity,
    load_calibration,
    reflector_prompts,
    save_calibration,
    stale_because,
    to_json,
)
from pytest_atom.prompts import PromptLoader
from pytest_atom.results.verdict import CriterionVerdict
from pytest_atom.settings.config import AtomConfig
from pytest_atom.settings.options import RunSettings
from pytest_atom.spec.types import Spec

#: The p-value below which a difference between two judges counts as beyond noise.
ALPHA = 0.05


@dataclass(frozen=True)
class ArmComparison:
    """One arm against the spec's own judge on one criterion's samples."""

    arm: str
    criterion: str  # the spec's words (the arm may have reworded them)
    samples: int
    current_agreement: float
    arm_agreement: float
    current_kappa: float
    arm_kappa: float
    test: stats.McNemar

    @property
    def better(self) -> str | None:
        """Which agrees more with the humans: the arm, `CURRENT`, or None (a tie)."""
        if self.arm_agreement == self.current_agreement:
            return None
        return self.arm if self.arm_agreement > self.current_agreement else CURRENT

    @property
    def beyond_noise(self) -> bool:
        return self.test.p < ALPHA


@dataclass
class SpecCalibration:
    """One spec's calibration: each criterion's figures, and what changed since the last."""

    spec: Spec
    criteria: dict[str, CriterionCalibration]
    was_stale: dict[str, str] = field(default_factory=dict)  # criterion -> why (before)
    unlabelled: list[str] = field(default_factory=list)  # criteria no sample labels
    #: criterion -> the samples the judge gave no verdict on (`no_verdict`): not counted
    no_verdict: dict[str, list[str]] = field(default_factory=dict)
    arms: list[ArmComparison] = field(default_factory=list)
    written: Path | None = None
    cassette: Path | None = None
    source: str = ""


def measure(
    spec: Spec, judged: Sequence[Judged], identity: Mapping[str, JudgeIdentity]
) -> dict[str, CriterionCalibration]:
    """Each labelled criterion's calibration from one judge's verdicts, by the spec's words."""
    now = datetime.now(UTC).isoformat(timespec="seconds")
    found: dict[str, CriterionCalibration] = {}
    for number, text in enumerate(spec.criteria_keys, 1):
        rows = _rows(judged, number)
        if not rows:
            continue
        figures = stats.agreement([(human, judge) for human, judge, _ in rows])
        found[text] = CriterionCalibration(
            identity[text],
            **vars(figures),
            disagreements=tuple(d for _, _, d in rows if d is not None),
            interval=stats.INTERVAL,
            calibrated=now,
        )
    return found


def _rows(judged: Sequence[Judged], number: int) -> list[tuple[bool, bool, Disagreement | None]]:
    """(human, judge, disagreement) per sample labelling criterion `number`, with a verdict."""
    rows = []
    for item in judged:
        label = item.sample.label_for(number, item.criteria[number - 1])
        said = _said(item, number)
        if label is None or said is None:
            continue
        apart = (
            Disagreement(item.sample.name, label.met, said.met, said.evidence, label.note)
            if said.met != label.met
            else None
        )
        rows.append((label.met, said.met, apart))
    return rows


def _said(item: Judged, number: int) -> CriterionVerdict | None:
    """The judge's verdict on criterion `number` of `item`; None when it gave none."""
    criteria = item.verdict.criteria
    said = criteria[number - 1] if number <= len(criteria) else None
    return None if said is None or said.missing else said


def no_verdict(spec: Spec, judged: Sequence[Judged]) -> dict[str, list[str]]:
    """The labelled samples the judge gave no verdict on, even asked again: counted neither way."""
    found: dict[str, list[str]] = {}
    for number, text in enumerate(spec.criteria_keys, 1):
        names = [
            item.sample.name
            for item in judged
            if item.sample.label_for(number, item.criteria[number - 1]) is not None
            and _said(item, number) is None
        ]
        if names:
            found[text] = names
    return found


def identities(spec: Spec, claude_version: str, prompts: PromptLoader) -> dict[str, JudgeIdentity]:
    return {
        text: judge_identity(spec, text, claude_version, prompts) for text in spec.criteria_keys
    }


def staleness(spec: Spec, claude_version: str, config: AtomConfig | None) -> dict[str, str]:
    """Why each criterion's stored calibration does not hold for today's judge."""
    stored = load_calibration(spec)
    today = identities(spec, claude_version, _prompts(spec, config))
    found = {}
    for number, (text, identity) in enumerate(today.items(), 1):
        old = calibration_for(spec, number, stored)
        why = "never calibrated" if old is None else stale_because(old.identity, identity)
        if why:
            found[text] = why
    return found


def _prompts(spec: Spec, config: AtomConfig | None) -> PromptLoader:
    return reflector_prompts(spec, config.prompt_dirs if config else ())


def calibrate_spec(
    spec: Spec,
    *,
    settings: RunSettings,
    config: AtomConfig | None,
    claude_bin: Path,
    arms: bool = False,
    cases: Mapping[str, Spec] | None = None,
) -> SpecCalibration:
    """Judge `spec`'s samples (and its arms'), measure, and store calibration.json."""
    samples = load_samples(spec)
    variants = [Variant(), *(load_arms(spec) if arms else ())]
    done = judge_samples(
        spec,
        samples,
        variants,
        settings=settings,
        config=config,
        claude_bin=claude_bin,
        cases=cases,
    )
    version = done.claude_version
    was = staleness(spec, version, config)
    today = identities(spec, version, _prompts(spec, config))
    criteria = measure(spec, done.verdicts[CURRENT], today)
    result = SpecCalibration(spec, criteria, cassette=done.cassette, source=done.source)
    result.was_stale = {t: why for t, why in was.items() if why != "never calibrated"}
    result.no_verdict = no_verdict(spec, done.verdicts[CURRENT])
    result.unlabelled = [
        t for t in spec.criteria_keys if t not in criteria and t not in result.no_verdict
    ]
    if criteria:
        stored = load_calibration(spec)
        # An unchanged result keeps its date: calibration.json changes only when a figure does.
        for text, new in criteria.items():
            old = stored.get(text)
            if old is not None and to_json(replace(old, calibrated=new.calibrated)) == to_json(new):
                criteria[text] = old
        kept = {**stored, **criteria}
        ordered = {t: kept[t] for t in spec.criteria_keys if t in kept}
        result.written = save_calibration(calibration_file(spec), base_name(spec), ordered)
    for variant in variants[1:]:
        result.arms += compare_arms(
            spec, variant, done.verdicts[CURRENT], done.verdicts[variant.name]
        )
    return result


def compare_arms(
    spec: Spec, arm: Variant, current: Sequence[Judged], other: Sequence[Judged]
) -> list[ArmComparison]:
    """`arm` against the spec's own judge, criterion by criterion, paired by sample."""
    found = []
    for number, text in enumerate(spec.criteria_keys, 1):
        mine, theirs = _rows(current, number), _rows(other, number)
        if not mine:
            continue
        a_pairs = [(h, j) for h, j, _ in mine]
        b_pairs = [(h, j) for h, j, _ in theirs]
        found.append(
            ArmComparison(
                arm=arm.name,
                criterion=text,
                samples=len(a_pairs),
                current_agreement=stats.share(a_pairs),
                arm_agreement=stats.share(b_pairs),
                current_kappa=stats.kappa(a_pairs),
                arm_kappa=stats.kappa(b_pairs),
                test=stats.mcnemar([h == j for h, j in a_pairs], [h == j for h, j in b_pairs]),
            )
        )
    return found
