"""``tool_order: [NAME, NAME, ...]``: the first call of each tool came in this order (main
agent and subagents, as the calls happened)."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any

from pytest_atom.checks.kind import BuiltinKind, Entry, Scene
from pytest_atom.checks.trajectory import listing
from pytest_atom.results.check_result import CheckResult
from pytest_atom.spec.types import Check


class ToolOrder(BuiltinKind):
    name = "tool_order"
    schema: Mapping[str, Any] = {
        "type": "array",
        "title": "a list of at least two tool names",
        "minItems": 2,
        "items": {
            "$ref": "#/$defs/toolName",
        },
        "description": "The first call of each tool came in this order (main agent and subagents, as the calls happened).",
    }
    reads_run = True

    def build(self, entry: Entry, value: list[str]) -> dict[str, Any]:
        seen: dict[str, int] = {}
        for i, name in enumerate(value):
            if name in seen:
                raise entry.error(
                    f"{entry.label(i)!r} names {name} again (first at position "
                    f"{seen[name] + 1}): tool_order compares each tool's first call, so "
                    "name each tool once",
                    i,
                )
            seen[name] = i
        return {"names": list(value)}

    def describe(self, params: Mapping[str, Any]) -> str:
        return "tool_order " + " → ".join(params["names"])

    def run(self, check: Check, scene: Scene) -> CheckResult:
        run = scene.agent_run
        names: list[str] = check.params["names"]
        firsts = {n: next((c for c in run.calls if c.name == n), None) for n in names}
        missing = [n for n, c in firsts.items() if c is None]
        shown = listing([c for c in firsts.values() if c is not None], "none of them was called")
        if missing:
            return CheckResult(
                check,
                False,
                f"{', '.join(missing)} never called (calls made: {run.tools()})",
                f"first calls:\n{shown}",
            )
        made = sorted((c for c in firsts.values() if c is not None), key=lambda c: c.order)
        for before, after in itertools.pairwise(names):
            first, second = firsts[before], firsts[after]
            assert first is not None and second is not None
            if second.order < first.order:
                return CheckResult(
                    check,
                    False,
                    f"{after} was first called before {before} "
                    f"({second.where}, then {first.where})",
                    f"first calls, in the order made:\n{listing(made)}",
                )
        summary = f"first calls came in order: {' → '.join(names)}"
        return CheckResult(check, True, summary, listing(made))


KIND = ToolOrder()
