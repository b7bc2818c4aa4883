"""``tool_used: NAME`` or ``{name, input, min, max, in}``: the agent (main or subagents)
called a tool, at least once or as often as min and max say (max 0: never)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal

from pytest_atom.checks.kind import BuiltinKind, Entry, Scene
from pytest_atom.checks.params import from_value, object_schema, param, to_params
from pytest_atom.checks.trajectory import count_phrase, listing, matches, times
from pytest_atom.results.check_result import CheckResult
from pytest_atom.spec.types import Check


@dataclass(frozen=True)
class Params:
    name: str = param(ref="toolName")
    input: str | None = param(
        optional=True, ref="toolInput"
    )  # a regex over the call's main field or its input as JSON
    min: int | None = param(
        optional=True,
        minimum=0,
        description="Fewest matching calls; 1 by default, 0 when max is 0.",
    )
    max: int | None = param(
        default=None, nullable=True, minimum=0, description="Most matching calls; 0 means never."
    )
    scope: Literal["main", "subagents", "any"] = param(
        default="any",
        key="in",
        title="'main', 'subagents' or 'any'",
        description="Whose calls count: the main agent's, its subagents', or both.",
    )


class ToolUsed(BuiltinKind):
    name = "tool_used"
    schema: Mapping[str, Any] = {
        "oneOf": [{"$ref": "#/$defs/toolName"}, object_schema(Params)],
        "description": "The agent (main or subagents) called this tool: at least once, or as often as min and max say (max 0: never).",
    }
    reads_run = True

    def build(self, entry: Entry, value: str | dict[str, Any]) -> dict[str, Any]:
        p = from_value(Params, {"name": value} if isinstance(value, str) else value)
        high = p.max
        low = (0 if high == 0 else 1) if p.min is None else p.min
        found = None if p.input is None else entry.regex(p.input, "input")
        if high is not None and low > high:
            never = " (max 0 means never)" if high == 0 else ""
            raise entry.error(
                f"{entry.label()!r} asks for min {low} > max {high} calls, which no run can "
                f"satisfy: lower min or raise max{never}",
                "min",
            )
        return to_params(replace(p, input=found, min=low))

    def describe(self, params: Mapping[str, Any]) -> str:
        p = params
        text = (p.get("name") or "any tool") + (f" /{p['input']}/" if p.get("input") else "")
        text += " " + count_phrase(p["min"], p["max"])
        text += {"main": " by the main agent", "subagents": " by subagents"}.get(p["in"], "")
        return f"tool_used {text}"

    def run(self, check: Check, scene: Scene) -> CheckResult:
        run = scene.agent_run
        p = check.params
        scope = {"main": "by the main agent", "subagents": "by subagents"}.get(p["in"], "")
        calls = [
            c
            for c in run.named(p["name"])
            if (p["in"] == "any" or c.by_main == (p["in"] == "main"))
            and matches(p["input"], c.input)
        ]
        what = p["name"] + (f" /{p['input']}/" if p["input"] else "")
        called = f"was called {times(len(calls))}" if calls else "was never called"
        said = " ".join(filter(None, [what, called, scope]))
        passed = len(calls) >= p["min"] and (p["max"] is None or len(calls) <= p["max"])
        summary = said if passed else f"{said}, expected {count_phrase(p['min'], p['max'])}"
        others = run.named(p["name"])  # the tool's calls that did not match, or ran elsewhere
        if calls:
            evidence = listing(calls)
        elif others:
            evidence = f"its other calls:\n{listing(others)}"
        else:
            evidence = f"calls made: {run.tools()}"
        return CheckResult(check, passed, summary, evidence)


KIND = ToolUsed()
