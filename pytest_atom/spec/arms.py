"""Arms: variants of one spec (`arms:`), each loaded as a Spec of its own (``name[arm]``):
which arms run (``--atom-arms``), and the properties that tell a result's arm.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from pytest_atom.spec.types import Spec


def select_arms(specs: Iterable[Spec], names: Sequence[str]) -> list[Spec]:
    """The specs that run: every spec without arms, and the arms named (all when none are)."""
    return [s for s in specs if not names or s.arm is None or s.arm in names]


def unknown_arms(names: Sequence[str], seen: Iterable[str | None], option: str) -> str | None:
    """What is wrong when `names` (`option`'s value) holds a name that is no arm of the
    specs `seen`, else None: a typo must not quietly run no arm at all."""
    known = sorted({arm for arm in seen if arm is not None})
    unknown = [name for name in names if name not in known]
    if not unknown:
        return None
    have = ", ".join(known) if known else "none: no spec has `arms:`"
    return f"{option} names {', '.join(unknown)}, which no spec has (arms here: {have})"


def arm_properties(spec: Spec) -> dict[str, Any]:
    """``atom_arm`` and ``atom_arm_reference`` of an arm's run; empty without arms."""
    if spec.arm is None:
        return {}
    return {"atom_arm": spec.arm, "atom_arm_reference": spec.arm_reference}
