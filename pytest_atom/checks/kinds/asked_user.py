"""``asked_user: true|false`` or ``{min, max, pattern}``: the agent asked the user questions
(``AskUserQuestion``), as often as min and max say, or never (``false``, ``max: 0``);
``pattern`` (a Python regex) counts only the questions it matches."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from pytest_atom.checks.kind import BuiltinKind, Entry, Scene
from pytest_atom.checks.params import from_value, object_schema, param, to_params
from pytest_atom.checks.trajectory import count_phrase
from pytest_atom.results.check_result import CheckResult
from pytest_atom.spec.types import Check

#: The tool a Claude Code agent asks its user with.
ASK_TOOL = "AskUserQuestion"


@dataclass(frozen=True)
class Params:
    min: int | None = param(
        optional=True, minimum=0, description="Fewest questions; 1 by default, 0 when max is 0."
    )
    max: int | None = param(
        default=None, nullable=True, minimum=0, description="Most questions; 0 means never."
    )
    pattern: str | None = param(
        optional=True, description="A Python regex: only the questions it matches count."
    )


class AskedUser(BuiltinKind):
    name = "asked_user"
    schema: Mapping[str, Any] = {
        "oneOf": [{"type": "boolean"}, object_schema(Params)],
        "description": "The agent asked the user (AskUserQuestion): true at least once, false never, or as often as min and max say; pattern counts only the questions it matches.",
    }
    reads_run = True

    def build(self, entry: Entry, value: bool | dict[str, Any]) -> dict[str, Any]:
        if isinstance(value, bool):
            value = {} if value else {"max": 0}
        p = from_value(Params, value)
        low = (0 if p.max == 0 else 1) if p.min is None else p.min
        if p.max is not None and low > p.max:
            raise entry.error(
                f"{entry.label()!r} asks for min {low} > max {p.max} questions: lower min or "
                "raise max",
                "min",
            )
        found = None if p.pattern is None else entry.regex(p.pattern, "pattern")
        return to_params(replace(p, min=low, pattern=found))

    def describe(self, params: Mapping[str, Any]) -> str:
        what = f" /{params['pattern']}/" if params.get("pattern") else ""
        return f"asked_user{what} {count_phrase(params['min'], params['max'])}"

    def run(self, check: Check, scene: Scene) -> CheckResult:
        run = scene.agent_run
        p = check.params
        questions = [
            str(q.get("question", ""))
            for call in run.named(ASK_TOOL)
            for q in (call.input or {}).get("questions") or []
            if isinstance(q, dict)
        ]
        counted = [q for q in questions if not p["pattern"] or re.search(p["pattern"], q)]
        passed = len(counted) >= p["min"] and (p["max"] is None or len(counted) <= p["max"])
        what = "question" + ("s" if len(counted) != 1 else "")
        matching = f" matching /{p['pattern']}/" if p["pattern"] else ""
        said = f"the agent asked {len(counted)} {what}{matching}"
        summary = said if passed else f"{said}, expected {count_phrase(p['min'], p['max'])}"
        evidence = "\n".join(f"- {q}" for q in questions) or "no AskUserQuestion call"
        return CheckResult(check, passed, summary, evidence)


KIND = AskedUser()
