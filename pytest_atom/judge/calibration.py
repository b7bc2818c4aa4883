"""A criterion's stored calibration: how well its judge agreed with the humans, and who the
judge was.

`atom calibrate` writes ``calibration.json`` beside a spec's labelled samples
(``specs/calibration/<spec>/calibration.json``). This module is its format and the questions
a run's gate (`trust`) asks of it, kept with the judge so a run need not load the commands
that make it (`pytest_atom.calibration`).

A calibration made by one judge says nothing of another: a new model, an edited reflector
prompt, a reworded criterion or another Claude Code release makes it stale
(`stale_because`), and the gate then treats the criterion as advisory until it is
calibrated again.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pytest_atom.digest import short
from pytest_atom.errors import CalibrationError
from pytest_atom.files import write_atomic
from pytest_atom.prompts import PromptLoader
from pytest_atom.spec.types import Spec

#: The version of calibration.json's layout; a reader refuses a newer one.
FORMAT = 1
#: The folder beside the spec files that holds every spec's samples and calibration.
FOLDER = "calibration"
#: The confusion matrix's cells: the human's verdict first, then the judge's.
CELLS = (
    "human_pass_judge_pass",
    "human_pass_judge_fail",
    "human_fail_judge_pass",
    "human_fail_judge_fail",
)


@dataclass(frozen=True)
class JudgeIdentity:
    """Who judges a criterion: a calibration holds only for the judge it measured."""

    model: str  # the reflector's model as the spec names it ("default": Claude Code's own)
    prompt_hash: str  # the reflector prompt's template (REFLECTOR.md), `digest.short`
    criterion: str  # the criterion's words
    claude_version: str  # the Claude Code release the reflector ran in


@dataclass(frozen=True)
class Disagreement:
    """One sample the judge and the human saw differently, with both sides' reasons."""

    sample: str  # the sample's file name, relative to the spec's calibration folder
    human: bool  # the human's verdict: met
    judge: bool  # the judge's verdict: met
    judge_reasons: str  # the reflector's evidence for its verdict
    note: str  # the human's note


@dataclass(frozen=True)
class CriterionCalibration:
    """One criterion's agreement with the humans on its labelled samples: `kappa` is Cohen's
    κ, NaN when undefined (below every floor); `kappa_low`, `kappa_high` its 95 % interval."""

    identity: JudgeIdentity
    samples: int
    agreement: float
    kappa: float
    kappa_low: float
    kappa_high: float
    confusion: Mapping[str, int] = field(hash=False)
    disagreements: tuple[Disagreement, ...] = ()
    interval: str = ""
    calibrated: str = ""  # when, ISO 8601 UTC

    @property
    def criterion(self) -> str:
        return self.identity.criterion


def base_name(spec: Spec) -> str:
    """The spec's name without its case and arm, which share its samples and calibration."""
    name = spec.name
    for part in (spec.arm, spec.case):
        if part is not None:
            name = name.removesuffix(f"[{part}]")
    return name


def calibration_dir(spec: Spec) -> Path:
    """``calibration/<spec>/`` beside the spec file: its samples and calibration.json."""
    return spec.root / FOLDER / base_name(spec)


def calibration_file(spec: Spec) -> Path:
    return calibration_dir(spec) / "calibration.json"


def reflector_prompts(spec: Spec, prompt_dirs: Sequence[Path] = ()) -> PromptLoader:
    """Where a run of `spec` finds its prompts: the nearest ``.atom/prompts/`` above the
    spec (else the working folder's), then `prompt_dirs`, then the shipped ones."""
    project = next(
        (f for f in (spec.root, *spec.root.parents) if (f / ".atom" / "prompts").is_dir()), None
    )
    prompts = PromptLoader(project)
    if prompt_dirs:
        first, *rest = prompts.search_paths
        prompts = PromptLoader(search_paths=[first, *prompt_dirs, *rest])
    return prompts


def prompt_hash(prompts: PromptLoader | None = None) -> str:
    """The hash of the reflector prompt a run would load: an edited prompt is another judge."""
    return short((prompts or PromptLoader()).load("reflector").encode("utf-8"))


def judge_identity(
    spec: Spec, criterion: str, claude_version: str, prompts: PromptLoader | None = None
) -> JudgeIdentity:
    """Who would judge `criterion` of `spec` today, with Claude Code `claude_version`."""
    loader = prompts or reflector_prompts(spec)
    model = spec.reflector.model or spec.model or "default"  # as run.factory picks it
    return JudgeIdentity(model, prompt_hash(loader), criterion, claude_version)


_NAMES = {
    "model": "the judge's model",
    "prompt_hash": "the reflector prompt",
    "criterion": "the criterion's text",
    "claude_version": "the Claude Code version",
}


def stale_because(stored: JudgeIdentity, current: JudgeIdentity) -> str | None:
    """Why a calibration made by `stored` does not hold for `current` (each field changed,
    old and new), or None."""
    changed = [
        f"{_NAMES[name]} changed ({getattr(stored, name)!r} -> {getattr(current, name)!r})"
        for name in _NAMES
        if getattr(stored, name) != getattr(current, name)
    ]
    return "; ".join(changed) or None


# --- calibration.json ----------------------------------------------------------------------


def _number(value: float) -> float | None:
    return None if math.isnan(value) else round(value, 6)


def to_json(calibration: CriterionCalibration) -> dict[str, Any]:
    """One criterion's entry of calibration.json (NaN written as null)."""
    entry = asdict(calibration)
    entry["confusion"] = {cell: int(calibration.confusion.get(cell, 0)) for cell in CELLS}
    for key in ("agreement", "kappa", "kappa_low", "kappa_high"):
        entry[key] = _number(entry[key])
    return entry


def _float(value: Any) -> float:
    return math.nan if value is None else float(value)


def from_json(entry: Mapping[str, Any]) -> CriterionCalibration:
    """An entry `to_json` wrote; KeyError/TypeError/ValueError on a malformed one."""
    return CriterionCalibration(
        identity=JudgeIdentity(**entry["identity"]),
        samples=int(entry["samples"]),
        agreement=_float(entry["agreement"]),
        kappa=_float(entry["kappa"]),
        kappa_low=_float(entry["kappa_low"]),
        kappa_high=_float(entry["kappa_high"]),
        confusion={cell: int(entry["confusion"].get(cell, 0)) for cell in CELLS},
        disagreements=tuple(Disagreement(**d) for d in entry.get("disagreements", ())),
        interval=str(entry.get("interval", "")),
        calibrated=str(entry.get("calibrated", "")),
    )


def load_calibration(spec: Spec) -> Mapping[str, CriterionCalibration]:
    """The spec's stored calibration, keyed by criterion text ({} when never calibrated)."""
    path = calibration_file(spec)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    try:
        document = json.loads(text)
        if document.get("format", 0) > FORMAT:
            raise CalibrationError(
                f"calibration format {document['format']} is newer than this pytest-atom "
                f"reads ({FORMAT}): upgrade pytest-atom or run `atom calibrate` again",
                path,
            )
        entries = [from_json(entry) for entry in document["criteria"]]
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise CalibrationError(
            f"calibration.json cannot be read ({exc}): run `atom calibrate` to write it again",
            path,
        ) from None
    return {entry.criterion: entry for entry in entries}


def calibration_for(
    spec: Spec, number: int, stored: Mapping[str, CriterionCalibration] | None = None
) -> CriterionCalibration | None:
    """The stored calibration of the spec's criterion `number` (1-based): the one of its
    words as written (`Spec.criteria_keys`), else the one stored in its place (reworded
    since: `stale_because` then says so)."""
    found = load_calibration(spec) if stored is None else stored
    keys = spec.criteria_keys
    text = keys[number - 1]
    if text in found:
        return found[text]
    entries = list(found.values())
    if len(entries) == len(keys) and number <= len(entries):
        candidate = entries[number - 1]
        return None if candidate.criterion in keys else candidate
    return None


def save_calibration(
    path: Path, spec_name: str, calibrations: Mapping[str, CriterionCalibration]
) -> Path:
    """Write calibration.json in stable text, so a reviewed diff shows what changed."""
    document = {
        "format": FORMAT,
        "spec": spec_name,
        "criteria": [to_json(c) for c in calibrations.values()],
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_atomic(path, json.dumps(document, indent=2, ensure_ascii=False) + "\n")


def calibration_state(
    spec: Spec, claude_version: str, prompts: PromptLoader | None = None
) -> list[tuple[CriterionCalibration | None, JudgeIdentity]]:
    """For each criterion of `spec`, in order: its stored calibration (`calibration_for`)
    and who would judge it today."""
    stored = load_calibration(spec)
    return [
        (calibration_for(spec, number, stored), judge_identity(spec, text, claude_version, prompts))
        for number, text in enumerate(spec.criteria_keys, 1)
    ]
