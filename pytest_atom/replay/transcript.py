"""A session's events folded into the turns a person reads.

Events (`pytest_atom.events`) carry one part of a model answer each (text, thinking, a tool
call; the parts of one answer share its message id) and the tool results. `stream_turns`
folds them back into turns: one model answer each, its blocks in order, every tool call with
the result the agent gave it. Pure (events in, dataclasses out), so reports, divergence
reports and the reflector share it.

Refused tool calls are read here too (`permission_denials`), from the events Claude Code
2.1.330 prints for each kind of refusal, so checks, traces and reports name them alike:

- a permission rule (``permissions.deny`` in settings): a ``system`` event, subtype
  ``permission_denied``, ``decision_reason_type: rule``; the call's error result is
  "Permission to use Bash with command rm -f x.txt has been denied.";
- a file tool writing outside the attempt folder (the sandbox's boundary for file tools):
  the same event with ``decision_reason_type: workingDir`` and "Claude requested
  permissions to write to /x, but you haven't granted it yet.";
- a PreToolUse hook (exit code 2, or a JSON ``permissionDecision: deny``): no such event;
  the error result is "PreToolUse:Bash hook error: …" with the hook's stderr or reason.

Each, a subagent's included, is listed in the ``result`` event's ``permission_denials``
by its ``tool_use_id``. A Bash command the sandbox confines is not refused: it runs and
fails ("Read-only file system"). A cassette keeps only the error result, so
`refusal_in_result` reads who refused a call from those texts.

The calls a reviewer looks for (a skill, a subagent, an MCP tool, a refused call) are told
apart in one function, `call_marks`.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pytest_atom.events import (
    AssistantText,
    Event,
    MessageUsage,
    PermissionDenied,
    Result,
    ToolCall,
    ToolResult,
)
from pytest_atom.replay.cassette import Interaction
from pytest_atom.replay.scrub import Scrubber
from pytest_atom.words import plural, shorten

#: Claude Code's tool that starts a subagent, and its name before 2.1.x.
AGENT_TOOL = "Agent"
AGENT_TOOLS = (AGENT_TOOL, "Task")
#: Claude Code's tool that runs a skill.
SKILL_TOOL = "Skill"


#: The input keys that say what a call did, first found wins.
MAIN_FIELDS = ("command", "file_path", "path", "pattern", "url", "description", "skill")


@dataclass
class Text:
    """Assistant prose, or its thinking (``thinking`` True)."""

    text: str
    thinking: bool = False
    kind: str = "text"


@dataclass
class ToolUse:
    """One tool call and what the CLI answered (``result`` None: no answer came); an
    ``Agent`` call holds its subagent's turns. ``event``: the stream-json line's index (only
    it orders concurrent subagents' calls); ``denied``: who refused it (`Denial.reason`)."""

    id: str
    name: str
    input: Any
    result: str | None = None
    is_error: bool = False
    kind: str = "tool_use"
    subagent: list[Turn] = field(default_factory=list)
    event: int = 0
    denied: str | None = None


@dataclass(frozen=True)
class Denial:
    """A tool call the CLI refused; `reason` is the ``decision_reason_type`` of its
    ``permission_denied`` event ("rule", "workingDir"), "hook" for a PreToolUse hook's
    refusal, else "refused"."""

    tool_use_id: str
    tool_name: str
    tool_input: Any
    reason: str


@dataclass
class Turn:
    """One model answer: its blocks in the order the model wrote them."""

    message_id: str
    blocks: list[Text | ToolUse] = field(default_factory=list)

    @property
    def tool_uses(self) -> list[ToolUse]:
        return [b for b in self.blocks if isinstance(b, ToolUse)]


def main_field(tool_input: Any) -> str | None:
    """What a call did in one value (a Bash command, a file path), or None."""
    if isinstance(tool_input, dict):
        for key in MAIN_FIELDS:
            value = tool_input.get(key)
            if isinstance(value, str) and value.strip():
                return value
    return None


def tool_label(name: str, tool_input: Any) -> str:
    """The one line that says what a tool call did: a command, a file, else its input."""
    value = main_field(tool_input)
    if value is not None:
        return shorten(Scrubber().scrub(value.strip().split("\n")[0]), 160)
    return shorten(Scrubber().scrub(json.dumps(tool_input, ensure_ascii=False)), 160)


#: What a `Mark` is about: a skill run, a subagent started, an MCP server's tool called,
#: or a call refused (by a hook, a permission rule, the attempt folder's boundary).
MarkKind = Literal["skill", "subagent", "mcp", "refused"]


@dataclass(frozen=True)
class Mark:
    """What makes a call stand out when a reviewer reads a trajectory: `name` is the skill,
    the subagent's type, the MCP server or who refused it; `tool` an MCP call's tool; `text`
    the one wording every view uses (``skill greet``), `tag` it bracketed for plain text."""

    kind: MarkKind
    name: str
    tool: str = ""

    @property
    def text(self) -> str:
        if self.kind == "refused":
            return f"refused by {refused_by(self.name)}"
        return f"{self.kind} {self.name}"

    @property
    def tag(self) -> str:
        return f"[{self.text}]"


#: Claude Code names an MCP server's tool ``mcp__<server>__<tool>`` and splits the name at
#: the first ``__`` after the server, as this pattern does.
_MCP_NAME = re.compile(r"^mcp__(.+?)__(.+)$")


def subagent_type(tool_input: Any) -> str:
    """An Agent call's subagent type; Claude Code starts ``general-purpose`` when it names none."""
    kind = tool_input.get("subagent_type") if isinstance(tool_input, dict) else None
    return str(kind) if kind else "general-purpose"


def call_marks(name: str, tool_input: Any, denied: str | None = None) -> tuple[Mark, ...]:
    """What a call is, for a reviewer: a skill, a subagent or an MCP call (at most one),
    then who refused it when `denied` (a `Denial.reason`) says so."""
    args = tool_input if isinstance(tool_input, dict) else {}
    marks: list[Mark] = []
    if name == SKILL_TOOL:
        marks.append(Mark("skill", str(args.get("skill") or "?").lstrip("/")))
    elif name in AGENT_TOOLS:
        marks.append(Mark("subagent", subagent_type(args)))
    elif found := _MCP_NAME.match(name):
        marks.append(Mark("mcp", found[1], found[2]))
    if denied is not None:
        marks.append(Mark("refused", denied))
    return tuple(marks)


def marks_summary(marks: Iterable[Mark]) -> str:
    """Marks counted in one line: ``1 skill · 1 subagent · 2 MCP calls · 3 refused``."""
    counts: Counter[str] = Counter(mark.kind for mark in marks)
    nouns = (("skill", "skill"), ("subagent", "subagent"), ("mcp", "MCP call"))
    parts = [plural(counts[kind], noun) for kind, noun in nouns if counts[kind]]
    if counts["refused"]:
        parts.append(f"{counts['refused']} refused")
    return " · ".join(parts)


def trajectory_summary(turns: list[Turn]) -> str:
    """`marks_summary` of a session's calls, its subagents' included."""
    return marks_summary(
        mark
        for call in _all_calls(turns)
        for mark in call_marks(call.name, call.input, call.denied)
    )


def _all_calls(turns: list[Turn]) -> Iterator[ToolUse]:
    for turn in turns:
        for call in turn.tool_uses:
            yield call
            yield from _all_calls(call.subagent)


#: Who a `Denial.reason` names, as reports say it ("refused by a hook").
_REFUSERS = {
    "hook": "a hook",
    "rule": "a permission rule",
    "workingDir": "the attempt folder's boundary",
}


def refused_by(reason: str) -> str:
    """Who refused a call, in words."""
    return _REFUSERS.get(reason, "Claude Code")


#: "PreToolUse:Bash hook error: [<the hook's command>]: <its stderr>", as 2.1.330 words it.
_HOOK_COMMAND = re.compile(r"^(\S+ hook error): \[.*?\]: ", re.DOTALL)


def hook_words(result: str) -> str:
    """A hook's refusal without the command the CLI quotes first: its own words. A confined
    hook's command names the run's folders, which a shortened line would cut mid-path,
    where no normalization finds them (a judge's prompt would differ by machine)."""
    return _HOOK_COMMAND.sub(r"\1: ", result, count=1)


def stream_turns(events: Iterable[Event]) -> list[Turn]:
    """The turns of one session's events, each subagent's under the call that started it."""
    events = list(events)
    denied = {d.tool_use_id: d.reason for d in permission_denials(events)}
    return _turns(events, None, denied)


#: The error results Claude Code gives the model for a refused call, by `Denial.reason`: all
#: a cassette keeps of a refusal, and in stream-json the only sign of a hook's.
_REFUSAL_TEXTS = {
    "hook": re.compile(r"^PreToolUse:\S+ hook "),
    "rule": re.compile(r"^Permission to use \S+ .*has been denied\.", re.DOTALL),
    "workingDir": re.compile(r"^Claude requested permissions to .*, but you haven't granted it"),
}


def refusal_in_result(result: str) -> str | None:
    """Who refused a call (a `Denial.reason`), read from its error result; None: no refusal.
    Only an error result can be one: a command may print anything."""
    return next((why for why, text in _REFUSAL_TEXTS.items() if text.match(result)), None)


def permission_denials(events: Iterable[Event]) -> list[Denial]:
    """The calls one ``claude -p`` call refused, subagents' included."""
    reasons: dict[str, str] = {}  # tool_use_id -> why, from the permission_denied events
    results: dict[str, str] = {}  # tool_use_id -> the error result the model was given
    found = []
    for event in events:
        if isinstance(event, PermissionDenied):
            reasons[event.tool_use_id] = event.reason
        elif isinstance(event, ToolResult):
            results[event.tool_use_id] = event.text
        elif isinstance(event, Result):
            for call in event.denied:
                # 2.1.331 gives a rule's refusal of a Bash subcommand the reason
                # "subcommandResults": a reason we cannot name defers to the result's text
                given = reasons.get(call.tool_use_id, "")
                reason = (
                    given
                    if given in _REFUSERS
                    else (
                        refusal_in_result(results.get(call.tool_use_id, "")) or given or "refused"
                    )
                )
                found.append(Denial(call.tool_use_id, call.tool_name, call.tool_input, reason))
    return found


def _turns(events: Sequence[Event], parent: str | None, denied: dict[str, str]) -> list[Turn]:
    turns: list[Turn] = []
    calls: dict[str, ToolUse] = {}
    started: set[str] = set()
    for index, event in enumerate(events):
        subagent = getattr(event, "subagent", None)
        if subagent is not None:
            started.add(subagent)
        if subagent != parent:
            continue  # another conversation's: the main agent's, or another subagent's
        if isinstance(event, MessageUsage):
            if not turns or turns[-1].message_id != event.message_id:
                turns.append(Turn(event.message_id))
        elif isinstance(event, AssistantText) and event.text.strip() and turns:
            turns[-1].blocks.append(Text(event.text, thinking=event.thinking))
        elif isinstance(event, ToolCall) and turns:
            use = ToolUse(event.id, event.name, event.input, event=index)
            use.denied = denied.get(event.id)
            turns[-1].blocks.append(use)
            calls[event.id] = use
        elif isinstance(event, ToolResult) and event.tool_use_id in calls:
            calls[event.tool_use_id].result = event.text
            calls[event.tool_use_id].is_error = event.is_error
    for call_id in started & set(calls):
        calls[call_id].subagent = _turns(events, call_id, denied)
    return turns


def is_messages(interaction: Interaction) -> bool:
    """Whether the interaction is a Messages API call (a turn or a side request)."""
    return interaction.method == "POST" and interaction.endpoint.endswith("/v1/messages")
