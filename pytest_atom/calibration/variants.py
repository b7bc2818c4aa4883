"""Judge variants: the spec's own judge, and the arms `atom calibrate --arms` compares with it.

The arms are written beside the samples, in ``calibration/<spec>/arms.yaml``::

    arms:
      - name: opus
        model: claude-opus-4-5          # the judge's model
      - name: strict
        prompt: STRICT_REFLECTOR.md     # a reflector prompt (relative to arms.yaml)
      - name: plain-words
        criteria: {1: "REVIEW.md names the SQL injection"}   # a criterion reworded

A variant changes only what it names; the rest is the spec's judge. Every variant judges
the same samples, so the comparison is paired (`agreement.mcnemar`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pytest_atom import yamldoc
from pytest_atom.errors import CalibrationError, YamlDocError
from pytest_atom.judge.calibration import calibration_dir
from pytest_atom.spec.types import Spec

#: The spec's own judge, as the arms call it.
CURRENT = "current"
ARMS_FILE = "arms.yaml"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


@dataclass(frozen=True)
class Variant:
    """A judge: the spec's own (`CURRENT`, nothing overridden) or an arm."""

    name: str = CURRENT
    model: str | None = None
    prompt: Path | None = None  # a reflector prompt file in place of REFLECTOR.md
    criteria: Mapping[int, str] = field(default_factory=dict, hash=False)  # number -> words

    def spec_for(self, spec: Spec) -> Spec:
        """`spec` as this variant judges it: its model and criteria's words replaced."""
        criteria = tuple(self.criteria.get(n, text) for n, text in enumerate(spec.criteria, 1))
        reflector = replace(spec.reflector, model=self.model or spec.reflector.model)
        return replace(spec, criteria=criteria, reflector=reflector)


def load_arms(spec: Spec) -> list[Variant]:
    """The arms of `spec`'s arms.yaml ([] without one); CalibrationError names the line."""
    path = calibration_dir(spec) / ARMS_FILE
    if not path.is_file():
        return []
    try:
        _, data = yamldoc.load(path.read_text(encoding="utf-8"))
    except YamlDocError as exc:
        raise CalibrationError(f"arms.yaml must be YAML: {exc.message}", path, exc.line) from None
    entries = data.get("arms") if isinstance(data, dict) else None
    if not isinstance(entries, list) or not entries:
        raise CalibrationError(
            "arms.yaml needs a non-empty 'arms:' list, e.g. '- {name: opus, model: opus}'", path
        )
    arms = [_arm(entry, path, len(spec.criteria)) for entry in entries]
    names = [arm.name for arm in arms]
    duplicate = next((n for n in names if names.count(n) > 1 or n == CURRENT), None)
    if duplicate is not None:
        raise CalibrationError(
            f"arm name {duplicate!r} is used twice (or is {CURRENT!r}, the spec's own judge): "
            "give each arm a name of its own",
            path,
        )
    return arms


def _arm(entry: Any, path: Path, criteria: int) -> Variant:
    if not isinstance(entry, dict) or set(entry) - {"name", "model", "prompt", "criteria"}:
        raise CalibrationError(
            f"an arm is a mapping of name, model, prompt and criteria, not {entry!r}", path
        )
    name = entry.get("name")
    if not isinstance(name, str) or not _NAME.match(name):
        raise CalibrationError(f"an arm needs a name of letters, digits, '-_.': {name!r}", path)
    if len(entry) == 1:
        raise CalibrationError(
            f"arm {name!r} changes nothing: give a model, prompt or criteria", path
        )
    prompt = entry.get("prompt")
    prompt_path = (path.parent / str(prompt)).resolve() if prompt is not None else None
    if prompt_path is not None and not prompt_path.is_file():
        raise CalibrationError(f"arm {name!r}: no prompt file {prompt}", path)
    words = entry.get("criteria") or {}
    if not isinstance(words, dict) or not all(
        isinstance(n, int) and 1 <= n <= criteria and isinstance(t, str) and t.strip()
        for n, t in words.items()
    ):
        raise CalibrationError(
            f"arm {name!r}: 'criteria' maps a criterion's number (1 to {criteria}) to its new "
            "words, e.g. {1: 'REVIEW.md names the bug'}",
            path,
        )
    model = entry.get("model")
    return Variant(name, str(model) if model is not None else None, prompt_path, dict(words))
