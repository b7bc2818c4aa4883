"""Baseline tolerances: how far each metric may move the wrong way, as the ini option and
a spec's `tolerance:` write them; a setting, so it is read where settings are."""

from __future__ import annotations

import re
from collections.abc import Mapping

#: How far each metric may move the wrong way before it is a regression; None: never.
#: score and pass_rate are absolute drops; the others relative rises (0.25 = 25 %).
DEFAULT_TOLERANCE: dict[str, float | None] = {
    "pass_rate": 0.0,
    "score": 0.05,
    "turns": 0.25,
    "tokens": 0.10,
    "cost_usd": 0.10,
    "duration_s": None,  # wall time is noisy: shown, not gated unless asked for
}


def parse_tolerance(text: str) -> dict[str, float | None]:
    """``"turns=0.5, score=0.1, duration_s=0.5, cost_usd=none"`` (the ini option's form)."""
    found: dict[str, float | None] = {}
    for part in re.split(r"[,\s]+", text.strip()):
        if not part:
            continue
        name, sep, value = part.partition("=")
        if not sep or name not in DEFAULT_TOLERANCE:
            raise ValueError(
                f"{part!r}: write metric=value with metric one of {', '.join(DEFAULT_TOLERANCE)}"
            )
        found[name] = None if value.lower() in ("none", "null", "") else _fraction(name, value)
    return found


def _fraction(name: str, value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        number = -1.0
    if not number >= 0:
        raise ValueError(f"tolerance {name}={value!r} must be a number >= 0, or none")
    return number


def format_tolerance(tolerance: Mapping[str, float | None]) -> str:
    """The inverse of parse_tolerance: how a spec's own tolerances travel as a property."""
    return ",".join(f"{k}={'none' if v is None else f'{v:g}'}" for k, v in tolerance.items())
