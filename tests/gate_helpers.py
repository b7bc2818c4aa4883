"""Calibrations for the gate's tests, written by judge.calibration's own writer (never
hand-written JSON): what `atom calibrate` would have stored for a spec's criteria."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path

from pytest_atom.judge.calibration import (
    CriterionCalibration,
    calibration_file,
    judge_identity,
    save_calibration,
)
from pytest_atom.spec.types import Spec


def calibration(
    spec: Spec,
    criterion: str,
    claude_version: str,
    *,
    kappa: float = 0.8,
    samples: int = 20,
    model: str | None = None,
) -> CriterionCalibration:
    """A calibration of `criterion` by the judge that would judge it today (another
    `model` makes it stale), agreeing with the humans at `kappa` on `samples` samples."""
    identity = judge_identity(spec, criterion, claude_version)
    if model is not None:
        identity = dataclasses.replace(identity, model=model)
    agreeing = samples * 9 // 10
    return CriterionCalibration(
        identity=identity,
        samples=samples,
        agreement=agreeing / samples,
        kappa=kappa,
        kappa_low=max(-1.0, kappa - 0.2),
        kappa_high=min(1.0, kappa + 0.2),
        confusion={
            "human_pass_judge_pass": agreeing // 2,
            "human_pass_judge_fail": samples - agreeing,
            "human_fail_judge_pass": 0,
            "human_fail_judge_fail": agreeing - agreeing // 2,
        },
        interval="bootstrap",
    )


def store(spec: Spec, calibrations: Mapping[str, CriterionCalibration]) -> Path:
    """The spec's calibration.json, holding `calibrations` in the order given."""
    return save_calibration(calibration_file(spec), spec.name, calibrations)
