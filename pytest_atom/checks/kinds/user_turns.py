"""``user_turns: {max: N, min: M}``: a conversation (a spec's ``user:``) took at most N (at
least M) messages from the user, the prompt included: the turns it took to succeed."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pytest_atom.checks.kind import BuiltinKind, Entry, Scene
from pytest_atom.checks.params import from_value, object_schema, param, to_params
from pytest_atom.results.check_result import CheckResult
from pytest_atom.spec.types import Check


@dataclass(frozen=True)
class Params:
    max: int | None = param(
        default=None, nullable=True, minimum=1, description="Most messages from the user."
    )
    min: int = param(default=1, minimum=1, description="Fewest messages from the user.")


class UserTurns(BuiltinKind):
    name = "user_turns"
    schema: Mapping[str, Any] = {
        **object_schema(Params),
        "description": "The conversation took at most max (at least min) messages from the user, the prompt included.",
    }
    reads_run = True

    def build(self, entry: Entry, value: dict[str, Any]) -> dict[str, Any]:
        p = from_value(Params, value)
        if p.max is not None and p.min > p.max:
            raise entry.error(
                f"{entry.label()!r} asks for min {p.min} > max {p.max} turns: lower min or "
                "raise max",
                "min",
            )
        return to_params(p)

    def describe(self, params: Mapping[str, Any]) -> str:
        high = "" if params["max"] is None else f" <= {params['max']}"
        low = "" if params["min"] == 1 else f" >= {params['min']}"
        return f"user_turns{low}{high}"

    def run(self, check: Check, scene: Scene) -> CheckResult:
        run = scene.agent_run
        turns, high, low = run.turns, check.params["max"], check.params["min"]
        passed = turns >= low and (high is None or turns <= high)
        said = f"the user sent {turns} message{'s' if turns != 1 else ''}"
        wanted = " and ".join(
            filter(None, [f"at least {low}" if low > 1 else "", f"at most {high}" if high else ""])
        )
        return CheckResult(check, passed, said if passed else f"{said}, expected {wanted}", said)


KIND = UserTurns()
