"""Whether a criterion's verdict may fail a run: only when its judge is calibrated for it.

A criterion written with a floor (``{text, min_kappa, min_samples}``), or any criterion once
``--atom-require-calibration=KAPPA`` is set, gates only when the spec's stored calibration
(`pytest_atom.judge.calibration`, written by ``atom calibrate``) for it

* exists,
* is fresh: made by the judge that judges it today (model, reflector prompt, the
  criterion's words, the Claude Code release: `stale_because`),
* rests on at least `min_samples` labelled samples (`DEFAULT_MIN_SAMPLES` when unset), and
* has Cohen's κ at least `min_kappa` (a NaN κ, undefined, is below every floor).

Otherwise the criterion is advisory: its verdict is shown and fails nothing. The
criterion's own `min_kappa` wins over the setting's; a criterion with neither is
`UNFLOORED` and gates as always. A reworded criterion is reported stale, not missing
(`calibration_for`).
"""

from __future__ import annotations

import math

from pytest_atom.judge.calibration import (
    CriterionCalibration,
    JudgeIdentity,
    calibration_file,
    calibration_state,
    stale_because,
)
from pytest_atom.paths import display_path
from pytest_atom.prompts import PromptLoader
from pytest_atom.results.verdict import UNFLOORED, Trust
from pytest_atom.spec.types import DEFAULT_MIN_SAMPLES, CalibrationFloor, Spec


def criteria_floors(spec: Spec, require: float | None) -> tuple[CalibrationFloor | None, ...]:
    """Each criterion's floor, in order: its own, else the setting's `require`, else None."""
    everyone = CalibrationFloor(require) if require is not None else None
    return tuple(
        own.over(require) if (own := spec.criteria_floors.get(text)) is not None else everyone
        for text in spec.criteria
    )


def criteria_trust(
    spec: Spec,
    require: float | None,
    claude_version: str | None,
    prompts: PromptLoader | None = None,
) -> tuple[Trust, ...]:
    """Each criterion's trust, in the spec's order (calibration.json is read only when some
    criterion has a floor); CalibrationError names a file that cannot be read."""
    floors = criteria_floors(spec, require)
    if not any(floors):
        return tuple(UNFLOORED for _ in floors)
    state = calibration_state(spec, claude_version or "unknown", prompts)
    where = display_path(calibration_file(spec))
    return tuple(
        UNFLOORED if floor is None else criterion_trust(floor, stored, today, where)
        for floor, (stored, today) in zip(floors, state, strict=True)
    )


def criterion_trust(
    floor: CalibrationFloor,
    calibration: CriterionCalibration | None,
    current: JudgeIdentity,
    where: str = "calibration.json",
) -> Trust:
    """Advisory when missing, stale, on too few samples or κ too low (the first that
    holds), else calibrated; and why, in a line."""
    if calibration is None:
        return Trust(
            "uncalibrated", f"no calibration in {where}: label samples, run `atom calibrate`"
        )
    stale = stale_because(calibration.identity, current)
    if stale is not None:
        return Trust("stale", f"{stale}: run `atom calibrate` again")
    need = floor.min_samples or DEFAULT_MIN_SAMPLES
    kappa = calibration.kappa
    on = f"on {calibration.samples} sample{'s' * (calibration.samples != 1)}"
    if calibration.samples < need:
        return Trust("samples", f"{on}, fewer than {need}: label more, run `atom calibrate`")
    if floor.min_kappa is not None and not kappa >= floor.min_kappa:  # NaN is below any
        return Trust("kappa", f"kappa {_kappa(kappa)} < {floor.min_kappa:g} {on}")
    floor_said = f" >= {floor.min_kappa:g}" if floor.min_kappa is not None else ""
    return Trust("calibrated", f"kappa {_kappa(kappa)}{floor_said} {on}")


def _kappa(kappa: float) -> str:
    return "undefined" if math.isnan(kappa) else f"{kappa:.2f}"
