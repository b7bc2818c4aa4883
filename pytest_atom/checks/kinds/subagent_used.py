"""``subagent_used: TYPE``: the agent started a subagent of this type (an Agent call's
``subagent_type``; general-purpose when it names none).

A trigger suite's prompt that should not start the subagent carries it with ``negated:
true`` (set by the loader, not written in a spec): it passes when none of it started."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_atom.checks.kind import BuiltinKind, Entry, Scene
from pytest_atom.checks.trajectory import listing, times
from pytest_atom.results.check_result import CheckResult
from pytest_atom.spec.types import Check


class SubagentUsed(BuiltinKind):
    name = "subagent_used"
    schema: Mapping[str, Any] = {
        "type": "string",
        "minLength": 1,
        "description": "The agent started a subagent of this type (an Agent call's subagent_type; general-purpose when it names none).",
    }
    reads_run = True
    needs_tool: str | None = "Agent"
    #: What a trigger suite's `triggers:` names that this kind sees fire.
    triggers = ("subagent",)

    def build(self, entry: Entry, value: str) -> dict[str, Any]:
        return {"name": value}

    def describe(self, params: Mapping[str, Any]) -> str:
        return f"subagent_used {params['name']}"

    def run(self, check: Check, scene: Scene) -> CheckResult:
        run = scene.agent_run
        kind: str = check.params["name"]
        starts = [c for c in run.calls if c.marked("subagent")]
        mine = [c for c in starts if (m := c.marked("subagent")) is not None and m.name == kind]
        negated = bool(check.params.get("negated"))  # a trigger suite's should-not prompt
        if mine:
            said = f"a {kind} subagent was started {times(len(mine))}"
            return CheckResult(check, not negated, said, listing(mine))
        evidence = (
            f"subagents started:\n{listing(starts)}"
            if starts and not negated
            else f"calls made: {run.tools()}"
        )
        return CheckResult(check, negated, f"no {kind} subagent was started", evidence)


KIND = SubagentUsed()
