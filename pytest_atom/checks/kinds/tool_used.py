"""``tool_used: NAME`` or ``{name, input, min, max, in}``: the agent (main or subagents)
called a tool, at least once or as often as min and max say (max 0: never)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypedDict

from pytest_atom.checks.kind import Entry, Scene
from pytest_atom.checks.trajectory import listing, matches, times
from pytest_atom.results.check_result import CheckResult
from pytest_atom.spec.types import Check

#: ``input``: a regex over the call's main field or its input as JSON; ``in``: whose calls
#: count, "main", "subagents" or "any" (a keyword, hence the functional form).
Params = TypedDict(
    "Params", {"name": str, "input": str | None, "min": int, "max": int | None, "in": str}
)


class ToolUsed:
    name = "tool_used"
    schema: Mapping[str, Any] = {
        "oneOf": [
            {
                "$ref": "#/$defs/toolName",
            },
            {
                "type": "object",
                "properties": {
                    "name": {
                        "$ref": "#/$defs/toolName",
                    },
                    "input": {
                        "$ref": "#/$defs/toolInput",
                    },
                    "min": {
                        "type": "integer",
                        "minimum": 0,
                        "description": "Fewest matching calls; 1 by default, 0 when max is 0.",
                    },
                    "max": {
                        "type": ["integer", "null"],
                        "minimum": 0,
                        "default": None,
                        "description": "Most matching calls; 0 means never.",
                    },
                    "in": {
                        "enum": ["main", "subagents", "any"],
                        "title": "'main', 'subagents' or 'any'",
                        "default": "any",
                        "description": "Whose calls count: the main agent's, its subagents', or both.",
                    },
                },
                "required": ["name"],
                "additionalProperties": False,
            },
        ],
        "description": "The agent (main or subagents) called this tool: at least once, or as often as min and max say (max 0: never).",
    }
    reads_run = True
    needs_tool: str | None = None

    def build(self, entry: Entry, value: str | dict[str, Any]) -> Params:
        value = {"name": value} if isinstance(value, str) else value
        pattern = value.get("input")
        high = value.get("max")
        low = value.get("min", 0 if high == 0 else 1)
        found = None if pattern is None else entry.regex(pattern, "input")
        if high is not None and low > high:
            never = " (max 0 means never)" if high == 0 else ""
            raise entry.error(
                f"{entry.label()!r} asks for min {low} > max {high} calls, which no run can "
                f"satisfy: lower min or raise max{never}",
                "min",
            )
        return {
            "name": value["name"],
            "input": found,
            "min": low,
            "max": high,
            "in": value.get("in", "any"),
        }

    def describe(self, params: Mapping[str, Any]) -> str:
        p = params
        text = (p.get("name") or "any tool") + (f" /{p['input']}/" if p.get("input") else "")
        text += " " + count_phrase(p["min"], p["max"])
        text += {"main": " by the main agent", "subagents": " by subagents"}.get(p["in"], "")
        return f"tool_used {text}"

    def confined(self, params: Mapping[str, Any]) -> bool:
        return False

    def run(self, check: Check, scene: Scene) -> CheckResult:
        run = scene.trajectory
        assert run is not None
        p = check.params
        scope = {"main": "by the main agent", "subagents": "by subagents"}.get(p["in"], "")
        calls = [
            c
            for c in run.named(p["name"])
            if (p["in"] == "any" or c.by_main == (p["in"] == "main"))
            and matches(p["input"], c.input)
        ]
        what = p["name"] + (f" /{p['input']}/" if p["input"] else "")
        said = " ".join(filter(None, [what, "was called", times(len(calls)), scope]))
        wanted = count_phrase(p["min"], p["max"])
        passed = len(calls) >= p["min"] and (p["max"] is None or len(calls) <= p["max"])
        if not calls:
            said = " ".join(filter(None, [what, "was never called", scope]))
        summary = said if passed else f"{said}, expected {wanted}"
        if calls:
            return CheckResult(check, passed, summary, listing(calls))
        others = run.named(p["name"])  # the tool's calls that did not match, or ran elsewhere
        if others:
            evidence = f"its other calls:\n{listing(others)}"
        else:
            evidence = f"calls made: {run.tools()}"
        return CheckResult(check, passed, summary, evidence)


KIND = ToolUsed()


def count_phrase(low: int, high: int | None) -> str:
    """How often a `tool_used` check wants its calls: ``never``, ``at least once``…"""
    if high == 0:
        return "never"
    if high is None:
        return "at least once" if low == 1 else f"at least {low} times"
    if low == high:
        return "exactly once" if low == 1 else f"exactly {low} times"
    return f"at most {high} times" if low == 0 else f"{low} to {high} times"
