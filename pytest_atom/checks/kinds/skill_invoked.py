"""``skill_invoked: NAME``: the agent called the Skill tool with this skill (a plugin's
``plugin:skill``, or its name alone), and the skill ran.

A trigger suite's prompt that should not fire the skill carries it with ``negated: true``
(set by the loader, not written in a spec): it passes when no call names the skill."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_atom.checks.kind import BuiltinKind, Entry, Scene
from pytest_atom.checks.trajectory import Call, listing, times
from pytest_atom.results.check_result import CheckResult
from pytest_atom.spec.types import Check


class SkillInvoked(BuiltinKind):
    name = "skill_invoked"
    schema: Mapping[str, Any] = {
        "type": "string",
        "minLength": 1,
        "description": "The agent called the Skill tool with this skill (a plugin's 'plugin:skill', or its name alone).",
    }
    reads_run = True
    needs_tool: str | None = "Skill"
    #: What a trigger suite's `triggers:` names that this kind sees fire: on the pinned
    #: Claude Code a plugin's command is invoked through the Skill tool, as a skill is.
    triggers = ("skill", "command")

    def build(self, entry: Entry, value: str) -> dict[str, Any]:
        return {"name": value}

    def describe(self, params: Mapping[str, Any]) -> str:
        return f"skill_invoked {params['name']}"

    def run(self, check: Check, scene: Scene) -> CheckResult:
        run = scene.agent_run
        name: str = check.params["name"]
        calls = [c for c in run.calls if c.marked("skill")]
        mine = [c for c in calls if _skill_named(c, name)]
        ran = [c for c in mine if not c.is_error]
        if check.params.get("negated"):
            if mine:
                return CheckResult(
                    check, False, f"skill {name} was called {times(len(mine))}", listing(mine)
                )
            return CheckResult(
                check, True, f"skill {name} was not called", f"calls made: {run.tools()}"
            )
        if ran:
            return CheckResult(check, True, f"skill {name} invoked {times(len(ran))}", listing(ran))
        if mine:
            return CheckResult(
                check, False, f"skill {name} was called but did not run", listing(mine)
            )
        evidence = f"Skill calls:\n{listing(calls)}" if calls else f"calls made: {run.tools()}"
        return CheckResult(check, False, f"skill {name} was not invoked", evidence)


KIND = SkillInvoked()


def _skill_named(call: Call, name: str) -> bool:
    """`name` is the skill's full name, or, without a ``plugin:`` or ``dir:`` prefix, its end."""
    mark = call.marked("skill")
    skill = mark.name if mark else ""
    return skill == name or (":" not in name and skill.rsplit(":", 1)[-1] == name)
