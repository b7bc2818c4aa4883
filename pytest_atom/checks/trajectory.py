"""Trajectory checks: what the agent did on the way, read from its calls' events.

A file check asks "is the work right?"; these ask "did the agent go about it as configured?":
did it call a tool (or never), in which order, did it invoke a skill, start a subagent, call
an MCP server, was a call refused, what did it say last. They read the attempt's records'
events (one ``claude -p`` call per iteration) through `transcript.stream_turns`, which
already nests a subagent's turns under its ``Agent`` call and marks refused calls; this
module only flattens those turns into calls that know where they were made.

Every result lists the calls it is about, each with its place (``iteration 1 turn 2``, and
under a subagent ``… > subagent general-purpose "helper" turn 1``), so a failure shows what
the agent did instead.
"""

from __future__ import annotations

import itertools
import json
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_atom.checks.registry import TrajectoryCheckFn
from pytest_atom.checks.tool_results import tool_results
from pytest_atom.replay.transcript import (
    Mark,
    MarkKind,
    Text,
    ToolUse,
    Turn,
    call_marks,
    hook_words,
    main_field,
    stream_turns,
    subagent_type,
    tool_label,
)
from pytest_atom.results.check_result import CheckResult
from pytest_atom.results.record import IterationRecord
from pytest_atom.spec.types import Check, count_phrase

__all__ = ["TRAJECTORY_CHECKS", "Call", "Trajectory"]

#: Calls listed in one result; a run with more says how many were left out.
_LISTED = 20
_MESSAGE_CHARS = 2000


@dataclass(frozen=True)
class Call:
    """One tool call of an attempt, with where it was made.

    ``subagents`` names the subagents it ran under, outermost first (empty: the main
    agent); ``turn`` is the model answer within its session's part of the iteration.
    """

    name: str
    input: Any
    iteration: int
    turn: int
    subagents: tuple[str, ...] = ()
    is_error: bool = False
    result: str | None = None
    denied: str | None = None  # who refused it (transcript.Denial.reason), None: it ran
    order: tuple[int, int] = (0, 0)  # (iteration, stream-json event): when it was made

    @property
    def by_main(self) -> bool:
        return not self.subagents

    def marked(self, kind: MarkKind) -> Mark | None:
        """The call's mark of that kind (`transcript.call_marks`): is it a skill call, a
        subagent's start, an MCP call; None: it is not."""
        return next((m for m in call_marks(self.name, self.input) if m.kind == kind), None)

    def line(self) -> str:
        """``iteration 1 turn 2: Bash rm -f x.txt (refused: rule)``."""
        subagent = self.marked("subagent")
        label = tool_label(self.name, self.input)
        label = f'{subagent.name} "{label}"' if subagent else label
        text = f"{self.where}: {self.name} {label}"
        if self.denied is not None:
            result = hook_words(self.result or "") if self.denied == "hook" else self.result
            return f"{text} (refused: {self.denied}){_first_line(result)}"
        return text + (f" (error){_first_line(self.result)}" if self.is_error else "")

    @property
    def where(self) -> str:
        return f"iteration {self.iteration} " + " > ".join((*self.subagents, f"turn {self.turn}"))


@dataclass(frozen=True)
class Trajectory:
    """An attempt's tool calls in the order they were made, and its last message."""

    calls: tuple[Call, ...]
    final_message: str | None
    #: The folder the agent worked in, where known: a result that names it reads as relative.
    workspace: Path | None = None

    @classmethod
    def from_records(
        cls, records: Iterable[IterationRecord], workspace: Path | None = None
    ) -> Trajectory:
        calls: list[Call] = []
        final: str | None = None
        for iteration, record in enumerate(records, start=1):
            turns = stream_turns(record.events)
            calls += _calls(turns, iteration, ())
            texts = [_texts(turn) for turn in turns]
            final = next((t for t in reversed(texts) if t), final)
        return cls(tuple(sorted(calls, key=lambda c: c.order)), final, workspace)

    def named(self, name: str) -> list[Call]:
        return [c for c in self.calls if c.name == name]

    def tools(self) -> str:
        """``Bash x3, Read``: what was called, for a result whose own calls are missing."""
        counts = Counter(c.name for c in self.calls)
        return ", ".join(f"{n} x{k}" if k > 1 else n for n, k in counts.items()) or "no tools"


def _calls(turns: Sequence[Turn], iteration: int, above: tuple[str, ...]) -> list[Call]:
    calls = []
    for number, turn in enumerate(turns, start=1):
        for use in turn.tool_uses:
            calls.append(
                Call(
                    use.name,
                    use.input,
                    iteration,
                    number,
                    above,
                    use.is_error,
                    use.result,
                    use.denied,
                    (iteration, use.event),
                )
            )
            if use.subagent:
                label = f'turn {number} > subagent {subagent_type(use.input)} "{_about(use)}"'
                calls += _calls(use.subagent, iteration, (*above, label))
    return calls


def _texts(turn: Turn) -> str:
    return "\n".join(b.text for b in turn.blocks if isinstance(b, Text) and not b.thinking)


def _about(use: ToolUse) -> str:
    about = use.input.get("description") if isinstance(use.input, dict) else None
    return str(about or use.id)


def _first_line(text: str | None) -> str:
    line = (text or "").strip().split("\n")[0]
    return f": {line[:157]}…" if len(line) > 160 else (f": {line}" if line else "")


def _matches(pattern: str | None, tool_input: Any) -> bool:
    """The regex finds the call's main field (a command, a path) or its input as JSON."""
    if pattern is None:
        return True
    field = main_field(tool_input)
    if field is not None and re.search(pattern, field, re.MULTILINE):
        return True
    return re.search(pattern, json.dumps(tool_input, ensure_ascii=False), re.MULTILINE) is not None


def _listing(calls: Sequence[Call], empty: str = "no calls") -> str:
    if not calls:
        return empty
    lines = [c.line() for c in calls[:_LISTED]]
    if len(calls) > _LISTED:
        lines.append(f"… and {len(calls) - _LISTED} more")
    return "\n".join(lines)


def _times(n: int) -> str:
    return "once" if n == 1 else f"{n} times"


# --- the checks ------------------------------------------------------------------------------


def tool_used(check: Check, run: Trajectory) -> CheckResult:
    p = check.params
    scope = {"main": "by the main agent", "subagents": "by subagents"}.get(p["in"], "")
    calls = [
        c
        for c in run.named(p["name"])
        if (p["in"] == "any" or c.by_main == (p["in"] == "main")) and _matches(p["input"], c.input)
    ]
    what = p["name"] + (f" /{p['input']}/" if p["input"] else "")
    said = " ".join(filter(None, [what, "was called", _times(len(calls)), scope]))
    wanted = count_phrase(p["min"], p["max"])
    passed = len(calls) >= p["min"] and (p["max"] is None or len(calls) <= p["max"])
    if not calls:
        said = " ".join(filter(None, [what, "was never called", scope]))
    summary = said if passed else f"{said}, expected {wanted}"
    if calls:
        return CheckResult(check, passed, summary, _listing(calls))
    others = run.named(p["name"])  # the same tool's calls that did not match, or ran elsewhere
    if others:
        evidence = f"its other calls:\n{_listing(others)}"
    else:
        evidence = f"calls made: {run.tools()}"
    return CheckResult(check, passed, summary, evidence)


def tool_order(check: Check, run: Trajectory) -> CheckResult:
    names: list[str] = check.params["names"]
    firsts = {n: next((c for c in run.calls if c.name == n), None) for n in names}
    missing = [n for n, c in firsts.items() if c is None]
    shown = _listing([c for c in firsts.values() if c is not None], "none of them was called")
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
                f"{after} was first called before {before} ({second.where}, then {first.where})",
                f"first calls, in the order made:\n{_listing(made)}",
            )
    summary = f"first calls came in order: {' → '.join(names)}"
    return CheckResult(check, True, summary, _listing(made))


def skill_invoked(check: Check, run: Trajectory) -> CheckResult:
    name: str = check.params["name"]
    calls = [c for c in run.calls if c.marked("skill")]
    mine = [c for c in calls if _skill_named(c, name)]
    ran = [c for c in mine if not c.is_error]
    if ran:
        return CheckResult(check, True, f"skill {name} invoked {_times(len(ran))}", _listing(ran))
    if mine:
        return CheckResult(check, False, f"skill {name} was called but did not run", _listing(mine))
    evidence = f"Skill calls:\n{_listing(calls)}" if calls else f"calls made: {run.tools()}"
    return CheckResult(check, False, f"skill {name} was not invoked", evidence)


def _skill_named(call: Call, name: str) -> bool:
    """`name` is the skill's full name, or, without a ``plugin:`` or ``dir:`` prefix, its end."""
    mark = call.marked("skill")
    skill = mark.name if mark else ""
    return skill == name or (":" not in name and skill.rsplit(":", 1)[-1] == name)


def subagent_used(check: Check, run: Trajectory) -> CheckResult:
    kind: str = check.params["name"]
    starts = [c for c in run.calls if c.marked("subagent")]
    mine = [c for c in starts if _subagent_of(c) == kind]
    if mine:
        return CheckResult(
            check, True, f"a {kind} subagent was started {_times(len(mine))}", _listing(mine)
        )
    evidence = f"subagents started:\n{_listing(starts)}" if starts else f"calls made: {run.tools()}"
    return CheckResult(check, False, f"no {kind} subagent was started", evidence)


def _subagent_of(call: Call) -> str | None:
    mark = call.marked("subagent")
    return mark.name if mark else None


def mcp_called(check: Check, run: Trajectory) -> CheckResult:
    server, tool = _mcp_name(check.params["server"]), check.params.get("tool")
    # By the whole name, not the mark's split: a server's own name may hold ``__``.
    prefix = f"mcp__{server}__"
    mcp = [c for c in run.calls if c.marked("mcp")]
    served = [c for c in mcp if c.name.startswith(prefix)]
    mine = [c for c in served if tool is None or c.name == prefix + _mcp_name(tool)]
    what = f"tool {tool} of MCP server {server}" if tool else f"MCP server {server}"
    if mine:
        return CheckResult(check, True, f"{what} was called {_times(len(mine))}", _listing(mine))
    evidence = f"MCP calls:\n{_listing(mcp)}" if mcp else f"calls made: {run.tools()}"
    return CheckResult(check, False, f"{what} was never called", evidence)


def _mcp_name(name: str) -> str:
    """A server or tool name as Claude Code writes it into ``mcp__<server>__<tool>``."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", name)


def final_message(check: Check, run: Trajectory) -> CheckResult:
    pattern: str = check.params["pattern"]
    message = run.final_message
    if message is None:
        return CheckResult(check, False, "the agent wrote no message", f"calls made: {run.tools()}")
    shown = message if len(message) <= _MESSAGE_CHARS else message[: _MESSAGE_CHARS - 1] + "…"
    if re.search(pattern, message, re.MULTILINE):
        return CheckResult(check, True, f"the last message matches /{pattern}/", shown)
    return CheckResult(check, False, f"the last message does not match /{pattern}/", shown)


def permission_denied(check: Check, run: Trajectory) -> CheckResult:
    name, pattern = check.params.get("name"), check.params.get("input")
    refused = [c for c in run.calls if c.denied is not None]
    mine = [c for c in refused if name in (None, c.name) and _matches(pattern, c.input)]
    what = " ".join(filter(None, [name or "a tool call", f"/{pattern}/" if pattern else ""]))
    if mine:
        return CheckResult(check, True, f"{what} was refused {_times(len(mine))}", _listing(mine))
    allowed = [c for c in run.calls if name in (None, c.name) and _matches(pattern, c.input)]
    evidence = (f"refused calls:\n{_listing(refused)}" if refused else "no call was refused") + (
        f"\ncalls that ran:\n{_listing(allowed)}" if allowed else ""
    )
    summary = f"{what} was not refused" if name or pattern else "no tool call was refused"
    return CheckResult(check, False, summary, evidence)


TRAJECTORY_CHECKS: dict[str, TrajectoryCheckFn] = {
    "tool_used": tool_used,
    "tool_order": tool_order,
    "skill_invoked": skill_invoked,
    "subagent_used": subagent_used,
    "mcp_called": mcp_called,
    "final_message": final_message,
    "permission_denied": permission_denied,
    "tool_results": tool_results,
}
