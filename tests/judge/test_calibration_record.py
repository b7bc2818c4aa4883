"""calibration.json's format and the judge's identity: what a gate reads (no CLI)."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any

import pytest

from pytest_atom.errors import CalibrationError
from pytest_atom.judge.calibration import (
    CriterionCalibration,
    Disagreement,
    JudgeIdentity,
    base_name,
    calibration_file,
    judge_identity,
    load_calibration,
    save_calibration,
    stale_because,
)
from pytest_atom.spec.types import ReflectorOptions, Spec

IDENTITY = JudgeIdentity("sonnet", "sha256:0123456789abcdef", "The greeting is polite", "2.1.332")


def _spec(tmp_path: Path, **fields: Any) -> Spec:
    path = tmp_path / "specs" / "greet.atom.yaml"
    return Spec(name="greet", path=path, line=1, prompt="hi", **fields)


def test_a_calibration_is_read_back_as_written_with_an_undefined_kappa_as_nan(
    tmp_path: Path,
) -> None:
    spec = _spec(tmp_path)
    stored = CriterionCalibration(
        identity=IDENTITY,
        samples=3,
        agreement=2 / 3,
        kappa=math.nan,
        kappa_low=math.nan,
        kappa_high=math.nan,
        confusion={"human_pass_judge_pass": 2, "human_pass_judge_fail": 1},
        disagreements=(Disagreement("s3.json", True, False, "no greeting", "it greets"),),
        interval="bootstrap",
    )
    path = save_calibration(calibration_file(spec), "greet", {IDENTITY.criterion: stored})
    assert path == tmp_path / "specs" / "calibration" / "greet" / "calibration.json"
    assert json.loads(path.read_text())["criteria"][0]["kappa"] is None
    (loaded,) = load_calibration(spec).values()
    assert loaded.identity == IDENTITY and loaded.disagreements == stored.disagreements
    assert math.isnan(loaded.kappa) and loaded.confusion["human_fail_judge_fail"] == 0


def test_a_spec_never_calibrated_has_no_calibration(tmp_path: Path) -> None:
    assert load_calibration(_spec(tmp_path)) == {}


def test_a_broken_calibration_file_names_itself_and_the_fix(tmp_path: Path) -> None:
    spec = _spec(tmp_path)
    calibration_file(spec).parent.mkdir(parents=True)
    calibration_file(spec).write_text("{not json")
    with pytest.raises(CalibrationError, match=r"calibration\.json.*atom calibrate"):
        load_calibration(spec)


def test_staleness_names_each_field_of_the_judge_that_changed() -> None:
    assert stale_because(IDENTITY, IDENTITY) is None
    moved = JudgeIdentity("opus", IDENTITY.prompt_hash, "The greeting is kind", "2.1.332")
    reason = stale_because(IDENTITY, moved)
    assert reason is not None
    assert "the judge's model changed ('sonnet' -> 'opus')" in reason
    assert "the criterion's text changed" in reason and "prompt" not in reason


def test_the_judge_identity_follows_the_reflector_model_and_the_prompt_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    spec = _spec(tmp_path, model="sonnet", reflector=ReflectorOptions(model="haiku"))
    before = judge_identity(spec, "c", "2.1.332")
    assert before.model == "haiku" and before.prompt_hash.startswith("sha256:")
    (tmp_path / ".atom" / "prompts").mkdir(parents=True)
    (tmp_path / ".atom" / "prompts" / "REFLECTOR.md").write_text("judge harder {criteria}")
    assert "reflector prompt" in (stale_because(before, judge_identity(spec, "c", "2.1.332")) or "")


def test_every_case_and_arm_of_a_spec_shares_its_calibration(tmp_path: Path) -> None:
    spec = _spec(tmp_path, case="fr", arm="b")
    spec = dataclasses.replace(spec, name="greet[fr][b]")
    assert base_name(spec) == "greet"
