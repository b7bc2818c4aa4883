"""``permission_denied: NAME`` or ``{name, input}``: a tool call was refused, by a
permission rule, a hook, or as a write outside the attempt folder."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from pytest_atom.checks.kind import BuiltinKind, Entry, Scene
from pytest_atom.checks.params import from_value, object_schema, param, to_params
from pytest_atom.checks.trajectory import listing, matches, times
from pytest_atom.results.check_result import CheckResult
from pytest_atom.spec.types import Check


@dataclass(frozen=True)
class Params:
    name: str | None = param(optional=True, ref="toolName")  # None: any tool
    input: str | None = param(optional=True, ref="toolInput")  # a regex over a call


class PermissionDenied(BuiltinKind):
    name = "permission_denied"
    schema: Mapping[str, Any] = {
        "oneOf": [{"$ref": "#/$defs/toolName"}, object_schema(Params)],
        "description": "A tool call was refused: by a permission rule, a hook, or as a write outside the attempt folder.",
    }
    reads_run = True

    def build(self, entry: Entry, value: str | dict[str, Any]) -> dict[str, Any]:
        p = from_value(Params, {"name": value} if isinstance(value, str) else value)
        found = None if p.input is None else entry.regex(p.input, "input")
        return to_params(replace(p, input=found))

    def describe(self, params: Mapping[str, Any]) -> str:
        p = params
        text = (p.get("name") or "any tool") + (f" /{p['input']}/" if p.get("input") else "")
        return f"permission_denied {text}"

    def run(self, check: Check, scene: Scene) -> CheckResult:
        run = scene.agent_run
        name, pattern = check.params.get("name"), check.params.get("input")
        refused = [c for c in run.calls if c.denied is not None]
        mine = [c for c in refused if name in (None, c.name) and matches(pattern, c.input)]
        what = " ".join(filter(None, [name or "a tool call", f"/{pattern}/" if pattern else ""]))
        if mine:
            return CheckResult(check, True, f"{what} was refused {times(len(mine))}", listing(mine))
        allowed = [c for c in run.calls if name in (None, c.name) and matches(pattern, c.input)]
        evidence = (f"refused calls:\n{listing(refused)}" if refused else "no call was refused") + (
            f"\ncalls that ran:\n{listing(allowed)}" if allowed else ""
        )
        summary = f"{what} was not refused" if name or pattern else "no tool call was refused"
        return CheckResult(check, False, summary, evidence)


KIND = PermissionDenied()
