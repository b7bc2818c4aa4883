"""Conversations folded into the turns a person reads: a session's events, or a cassette's
recorded requests and responses.

A session's events (pytest_atom.model.events: the agent's output, parsed there) carry one part of
a model answer each (text, thinking, a tool call; the parts of one answer share its message
id) and the tool results. This module folds them back into turns: one model answer each,
its blocks in order, every tool call with the result the agent gave it. It is pure (events
in, dataclasses out), so reports, divergence reports and the reflector can share it and it
is tested without a CLI.

A cassette holds the API side of the same conversations: every request repeats the whole
conversation so far, and every answer is an SSE stream. `cassette_lines` groups those
requests into sessions, shows each turn's new user content and the answer (folded with the
gateway's own `fold_sse`), and sums the usage; `atom cassette show` only prints its lines.

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
apart in one function, `call_marks`: the trajectory checks, the HTML report and
`atom cassette show` all ask it.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pytest_atom.cassettes.cassette import FAULT_HEADER, Cassette, Interaction
from pytest_atom.model.billing import Billed
from pytest_atom.model.events import (
    AssistantText,
    Event,
    MessageUsage,
    PermissionDenied,
    Result,
    ToolCall,
    ToolResult,
    flatten_tool_result,
)
from pytest_atom.model.messages import (
    CONVERSATION_KINDS,
    Reply,
    _requests,
    read_reply,
    request_kind,
)
from pytest_atom.model.prices import cost_usd
from pytest_atom.model.roles import STRUCTURED_OUTPUT
from pytest_atom.words import plural

#: Claude Code's tool that starts a subagent (``Task`` before 2.1.x).
AGENT_TOOL = "Agent"
#: The tools that start a subagent, this name and the one before 2.1.x.
AGENT_TOOLS = (AGENT_TOOL, "Task")
#: Claude Code's tool that runs a skill.
SKILL_TOOL = "Skill"
_REMINDER = re.compile(r"<system-reminder>.*?</system-reminder>", re.DOTALL)

__all__ = [
    "Denial",
    "Line",
    "Mark",
    "MarkKind",
    "Text",
    "ToolUse",
    "Turn",
    "call_marks",
    "cassette_lines",
    "hook_words",
    "is_messages",
    "main_field",
    "marks_summary",
    "permission_denials",
    "refusal_in_result",
    "refused_by",
    "stream_turns",
    "subagent_type",
    "tool_label",
    "trajectory_summary",
]

#: The input keys that say what a call did, first found wins: a command, a file, a search,
#: a subagent's task, a skill.
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
    ``Agent`` call holds the turns of the subagent it started.

    ``event`` is the index of the stream-json line that carried the call: concurrent
    subagents' calls interleave, and only that index tells which came first. ``denied``
    says who refused the call (see `Denial.reason`), None for a call that ran.
    """

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
    """What a call did in one value (a Bash command, a file path; see MAIN_FIELDS), or None."""
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
        first = value.strip().split("\n")[0]
        return first if len(first) <= 160 else first[:159] + "…"
    text = json.dumps(tool_input, ensure_ascii=False)
    return text if len(text) <= 160 else text[:159] + "…"


#: What a `Mark` is about: a skill run, a subagent started, an MCP server's tool called,
#: or a call refused (by a hook, a permission rule, the attempt folder's boundary).
MarkKind = Literal["skill", "subagent", "mcp", "refused"]


@dataclass(frozen=True)
class Mark:
    """What makes a call stand out when a reviewer reads a trajectory.

    `name` is the skill's name, the subagent's type, the MCP server, or who refused the
    call (a `Denial.reason`); `tool` is an MCP call's tool. `text` is the one wording every
    view uses (the HTML report, `atom cassette show`): ``skill greet``, ``subagent
    reviewer``, ``mcp tickets``, ``refused by a hook``; `tag` brackets it for plain text.
    """

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
    """What a call is, for a reviewer: a skill, a subagent or an MCP call (at most one of
    these), then who refused it when `denied` (a `Denial.reason`) says it was refused.

    This is the one place that tells those calls apart: the trajectory checks
    (`skill_invoked`, `subagent_used`, `mcp_called`), the HTML report and `atom cassette
    show` all ask it, so a check and the report never disagree about a call.
    """
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
    """Marks counted in one line: ``1 skill · 1 subagent · 2 MCP calls · 3 refused`` ("" for
    none); each call's own mark says who refused it."""
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
    """Who refused a call, in words, from its `Denial.reason`."""
    return _REFUSERS.get(reason, "Claude Code")


#: "PreToolUse:Bash hook error: [<the hook's command>]: <its stderr>", as 2.1.330 words it.
_HOOK_COMMAND = re.compile(r"^(\S+ hook error): \[.*?\]: ", re.DOTALL)


def hook_words(result: str) -> str:
    """A hook's refusal without the command the CLI quotes first: its own words. The
    command of a confined hook names the run's folders, which a shortened line would cut
    mid-path, where no normalization finds them (a judge's prompt would differ by machine)."""
    return _HOOK_COMMAND.sub(r"\1: ", result, count=1)


def stream_turns(events: Iterable[Event]) -> list[Turn]:
    """The turns of one session's events, each subagent's turns under the call that started
    it (its events name that call), each refused call marked with who refused it."""
    events = list(events)
    denied = {d.tool_use_id: d.reason for d in permission_denials(events)}
    return _turns(events, None, denied)


#: The error results Claude Code gives the model for a refused call (see the module doc),
#: by `Denial.reason`: all a cassette keeps of a refusal, and in stream-json the only sign
#: of a hook's.
_REFUSAL_TEXTS = {
    "hook": re.compile(r"^PreToolUse:\S+ hook "),
    "rule": re.compile(r"^Permission to use \S+ .*has been denied\.", re.DOTALL),
    "workingDir": re.compile(r"^Claude requested permissions to .*, but you haven't granted it"),
}


def refusal_in_result(result: str) -> str | None:
    """Who refused a call, as a `Denial.reason`, read from its error result; None: the
    result is no refusal's. Only an error result can be one: a command may print anything."""
    return next((why for why, text in _REFUSAL_TEXTS.items() if text.match(result)), None)


def permission_denials(events: Iterable[Event]) -> list[Denial]:
    """The calls one ``claude -p`` call refused, subagents' included (see the module doc)."""
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


# ------------------------------------------------------------------------------ cassettes

#: How a line (or its emphasized part) is shown on a terminal; the text never depends on it.
Style = Literal["", "bold", "dim"]


@dataclass(frozen=True)
class Line:
    """One line of a cassette transcript: ``prefix + text + suffix``, `text` in `style`.

    The style is data, not escape codes, so this module stays free of any terminal library
    and ``str(line)`` is the plain text.
    """

    text: str
    style: Style = ""
    prefix: str = ""
    suffix: str = ""

    def __str__(self) -> str:
        return self.prefix + self.text + self.suffix


def is_messages(interaction: Interaction) -> bool:
    """Whether the interaction is a Messages API call (a turn or a side request)."""
    return interaction.method == "POST" and interaction.endpoint.endswith("/v1/messages")


_METADATA_FIELDS = (
    ("Claude Code", "claude_code_version"),
    ("Model", "model"),
    ("Spec", "spec"),
    ("Spec hash", "spec_hash"),
    ("Recorded at", "recorded_at"),
    ("Upstream", "upstream"),
)


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _without_cache_control(node: Any) -> Any:
    """The CLI moves its cache breakpoints from turn to turn; they are no conversation content."""
    if isinstance(node, list):
        return [_without_cache_control(n) for n in node]
    if isinstance(node, dict):
        return {k: _without_cache_control(v) for k, v in node.items() if k != "cache_control"}
    return node


@dataclass
class _Totals:
    turns: int = 0
    tool_calls: int = 0
    server_calls: int = 0
    verdicts: int = 0
    plans: int = 0  # planner mode: the planner's structured answers
    side: int = 0
    billed: Billed = field(default_factory=Billed)
    cost_usd: float = 0.0  # at today's prices (pytest_atom.model.prices)

    def add(self, reply: Reply, body: dict[str, Any]) -> None:
        """Count an answer, priced as the model its request asked for (as Claude Code and
        `atom cassette cost` price it), else the answer's."""
        asked = body.get("model")
        self.billed += reply.billed
        self.cost_usd += cost_usd(reply.billed, asked if isinstance(asked, str) else reply.model)

    @property
    def input_tokens(self) -> int:
        return self.billed.message.input

    @property
    def output_tokens(self) -> int:
        return self.billed.message.output

    @property
    def cache_read(self) -> int:
        return self.billed.message.cache_read

    @property
    def cache_creation(self) -> int:
        return self.billed.message.cache_write


@dataclass
class _Session:
    key: str
    tools: list[str]
    first: str = ""  # the first user message's own text: a subagent's is its Agent prompt
    lines: list[Line] = field(default_factory=list)
    turns: int = 0
    last_length: int = 0
    #: Agent calls: (index in `lines` just past the call, its prompt, its description).
    agent_calls: list[tuple[int, str, str]] = field(default_factory=list)
    #: The assistant messages its requests carried back, as `_answers` writes them.
    answers: set[str] = field(default_factory=set)


def _answers(messages: list[Any]) -> dict[int, str]:
    """The assistant messages of a request by index, cache breakpoints aside: what ties a
    later request to the conversation that gave those answers."""
    return {
        n: _dumps(_without_cache_control(m.get("content")))
        for n, m in enumerate(messages)
        if isinstance(m, dict) and m.get("role") == "assistant"
    }


def cassette_lines(path: Path, data: Cassette, max_lines: int = 15) -> Iterator[Line]:
    """A cassette as a transcript: its metadata, every session's turns (the new user
    content, the answer's text and tool calls, token usage), then totals.

    `max_lines` bounds each text and tool result (0: everything, and no shortening).
    Interactions are numbered from 1 in file order, as `atom cassette check` numbers them.
    """
    return _CassetteTranscript(max_lines).lines(path, data)


class _CassetteTranscript:
    """Builds the transcript's lines; sessions are printed one after the other."""

    def __init__(self, max_lines: int) -> None:
        self.max_lines = max_lines
        self.totals = _Totals()
        self.sessions: list[_Session] = []
        self.pending: list[Line] = []  # HEAD, side and count_tokens lines before the next turn
        self.marks: list[Mark] = []  # every call's, for the totals

    # -- text helpers

    def clip(self, text: str, indent: str) -> list[Line]:
        """The text's lines, indented, at most `max_lines` of them and a note of the rest."""
        lines = text.rstrip("\n").split("\n") if text.strip() else ["(empty)"]
        hidden = 0
        if self.max_lines and len(lines) > self.max_lines:
            hidden = len(lines) - self.max_lines
            lines = lines[: self.max_lines]
        out = [Line(indent + line) for line in lines]
        if hidden:
            out.append(Line(f"... ({plural(hidden, 'more line')})", "dim", prefix=indent))
        return out

    def short(self, text: str, limit: int = 400) -> str:
        if self.max_lines and len(text) > limit:
            return text[:limit] + f"... ({plural(len(text) - limit, 'more character')})"
        return text

    # -- requests

    def user_content(self, content: Any, indent: str) -> list[Line]:
        """What the user side sent: text (system reminders only counted) and tool results."""
        if isinstance(content, str):
            return self.clip(content, indent)
        out: list[Line] = []
        for block in content if isinstance(content, list) else []:
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "text":
                text = str(block.get("text", ""))
                if text.lstrip().startswith("<system-reminder>"):
                    n = len(text.strip().split("\n"))
                    out.append(Line(f"[system reminder, {plural(n, 'line')}]", "dim", indent))
                else:
                    out += self.clip(text, indent)
            elif kind == "tool_result":
                result = flatten_tool_result(block.get("content"))
                error = " (error)" if block.get("is_error") else ""
                refused = refusal_in_result(result) if error else None
                if refused is not None:
                    mark = Mark("refused", refused)
                    self.marks.append(mark)
                    error += f" {mark.tag}"
                out.append(Line(f"{indent}tool_result {block.get('tool_use_id', '')}{error}:"))
                out += self.clip(result, indent + "  ")
            else:
                out.append(Line(f"{indent}[{kind}]"))
        return out

    def assistant(self, reply: Reply, indent: str, session: str = "turn") -> list[Line]:
        """The answer's blocks; a StructuredOutput call is the reflector's verdict, or in
        a planner's session (`session`, the request's kind), its plan."""
        if reply.error:
            return [Line(f"{indent}error: {reply.error}")]
        out: list[Line] = []
        for block in reply.blocks:
            kind = block.get("type")
            if kind == "text":
                out += self.clip(str(block.get("text", "")), indent)
            elif kind == "thinking":
                first = str(block.get("thinking", "")).strip().split("\n")[0]
                out.append(Line(f"(thinking) {self.short(first, 120)}", "dim", indent))
            elif kind == "redacted_thinking":
                out.append(Line("(redacted thinking)", "dim", indent))
            elif kind == "tool_use" and block.get("name") == STRUCTURED_OUTPUT:
                answer = block.get("input")
                plan = session == "planner"
                if plan:
                    self.totals.plans += 1
                else:
                    self.totals.verdicts += 1
                out.append(Line(f"{indent}{'plan' if plan else 'verdict'}: {_dumps(answer)}"))
            elif kind == "tool_use":
                self.totals.tool_calls += 1
                out += self.tool_use(block, indent)
            elif kind == "server_tool_use":
                self.totals.server_calls += 1
                out += self.tool_use(block, indent, "server_tool_use")
            elif kind == "compaction":
                out.append(Line("(compaction summary)", "dim", indent))
                out += self.clip(str(block.get("content") or ""), indent + "  ")
            elif isinstance(kind, str) and kind.endswith("_tool_result"):
                error = " (error)" if _result_error(block.get("content")) else ""
                out.append(Line(f"{indent}{kind} {block.get('tool_use_id', '')}{error}:"))
                out += self.clip("\n".join(_result_text(block.get("content"))), indent + "  ")
            else:
                out.append(Line(f"{indent}[{kind}]"))
            if kind == "text" and isinstance(block.get("citations"), list):
                out += [
                    Line(f"{indent}  [cites] {_citation(c)}")
                    for c in block["citations"]
                    if isinstance(c, dict)
                ]
        return out

    def tool_use(self, block: dict[str, Any], indent: str, word: str = "tool_use") -> list[Line]:
        """A tool call, tagged when it is a skill, subagent or MCP call (`call_marks`); a
        shell command is shown as typed, not JSON-escaped. A refusal shows on the result,
        the only place a cassette keeps it."""
        name, args = str(block.get("name", "?")), block.get("input")
        marks = call_marks(name, args)
        self.marks += marks
        head = f"{indent}{word} {name}" + "".join(f" {mark.tag}" for mark in marks)
        command = args.get("command") if isinstance(args, dict) else None
        if isinstance(command, str):
            rest = {k: v for k, v in args.items() if k != "command"} if args else {}
            head += f" {self.short(_dumps(rest))}" if rest else ""
            first, *more = command.split("\n")
            lines = [Line(head), Line(f"{indent}  $ {first}")]
            return lines + (self.clip("\n".join(more), indent + "    ") if more else [])
        shown = args if isinstance(args, str) else _dumps(args)
        return [Line(f"{head} {self.short(shown)}")]

    # -- interactions

    def add(self, n: int, interaction: Interaction) -> None:
        """Sort an interaction: a turn (of any role's session), a side request, a token
        count or anything else; all but turns wait in `pending` for the next turn.
        """
        body = interaction.body if isinstance(interaction.body, dict) else {}
        where = f"[{n}] {interaction.method} {interaction.endpoint}"
        kind = request_kind(interaction.method, interaction.endpoint, body, interaction.role)
        if kind == "count_tokens":
            try:
                count = json.loads(interaction.response).get("input_tokens", "?")
            except (ValueError, AttributeError):
                count = "?"
            self.pending.append(Line(f"  {where}: count_tokens, {count} input tokens"))
        elif is_messages(interaction) and isinstance(body.get("messages"), list):
            if kind in CONVERSATION_KINDS:
                self.turn(where, body, interaction, kind)
            else:
                self.side(where, body, interaction)
        else:
            self.pending.append(Line(f"  {where} -> {interaction.status}"))

    def side(self, where: str, body: dict[str, Any], interaction: Interaction) -> None:
        """A request without tools (a title, a summary): one line, what was asked and said."""
        reply = read_reply(interaction.response, interaction.status)
        self.totals.side += 1
        self.totals.add(reply, body)
        answer = reply.error or " ".join(
            str(b.get("text", "")) for b in reply.blocks if b.get("type") == "text"
        )
        answer = " ".join(answer.split())
        answer = answer[:80] + "..." if len(answer) > 80 else answer
        self.pending.append(Line(f"  {where}: side request: {_side_topic(body)} -> {answer}"))

    def session_for(self, body: dict[str, Any]) -> _Session:
        """The conversation a turn continues: the latest one with the same first message and
        system prompt (cache breakpoints aside) and fewer messages; else the latest one whose
        answers the request carries back (a later ``claude -p`` call of the same session:
        Claude Code then merges its ``role: system`` entries into the first user message,
        so that message differs); else a new one.
        """
        messages = body["messages"]
        key = _dumps(_without_cache_control([messages[:1], body.get("system")]))
        if len(messages) > 1:
            for session in reversed(self.sessions):
                if session.key == key and session.last_length < len(messages):
                    return session
            answers = set(_answers(messages).values())
            for session in reversed(self.sessions):
                if answers & session.answers:
                    session.key = key
                    return session
        tools = [str(t.get("name")) for t in body.get("tools") or [] if isinstance(t, dict)]
        first = messages[0].get("content") if messages and isinstance(messages[0], dict) else ""
        session = _Session(key, tools, _own_text(first))
        self.sessions.append(session)
        return session

    def turn(self, where: str, body: dict[str, Any], interaction: Interaction, kind: str) -> None:
        """A turn of its session: only the user content new since its previous turn (what
        follows the last answer the request carries back)."""
        messages: list[Any] = body["messages"]
        session = self.session_for(body)
        session.lines += self.pending
        self.pending = []
        answers = _answers(messages)
        after = max(answers) + 1 if answers else session.last_length
        new = messages[after:] if after < len(messages) else []
        new = [m for m in new if isinstance(m, dict) and m.get("role") == "user"] or messages[-1:]
        session.answers.update(answers.values())
        session.last_length = len(messages)
        session.turns += 1
        self.totals.turns += 1
        reply = read_reply(interaction.response, interaction.status)
        self.totals.add(reply, body)
        session.lines.append(Line(f"  Turn {session.turns}", "bold", suffix=f"  {where}"))
        session.lines.append(Line("    user:"))
        for message in new:
            session.lines += self.user_content(message.get("content"), "      ")
        session.lines.append(Line(f"    assistant ({reply.usage_text()}):"))
        start = len(session.lines)
        session.lines += self.assistant(reply, "      ", kind)
        fault = interaction.response_headers.get(FAULT_HEADER)
        if fault:
            session.lines.append(
                Line(f"the stream broke here ({fault}), kept as the CLI saw it", "dim", "      ")
            )
        calls = [b.get("input") for b in reply.blocks if b.get("name") in AGENT_TOOLS]
        heads = tuple(f"      tool_use {name} " for name in AGENT_TOOLS)
        ends = [
            n + 1
            for n in range(start, len(session.lines))
            if session.lines[n].text.startswith(heads)
        ]
        for end, call in zip(ends, calls, strict=False):
            if isinstance(call, dict):
                prompt, about = str(call.get("prompt", "")), str(call.get("description", ""))
                session.agent_calls.append((end, prompt.strip(), about))

    def lines(self, path: Path, data: Cassette) -> Iterator[Line]:
        """Metadata, then the sessions (or the lone requests, if no turn came), then totals."""
        width = 14
        yield Line(f"{'Cassette':<{width}}{path}")
        for label, key in _METADATA_FIELDS:
            yield Line(f"{label:<{width}}{data.metadata.get(key, '?')}")
        yield Line(f"{'Interactions':<{width}}{len(data.interactions)}")
        for n, interaction in enumerate(data.interactions, 1):
            self.add(n, interaction)
        if self.pending and self.sessions:
            self.sessions[-1].lines += self.pending
        elif self.pending:
            yield Line("")
            yield Line("No conversation", "bold")
            yield from self.pending
        nested = self.nest()
        children = {id(child) for kids in nested.values() for _, _, child in kids}
        top = [s for s in self.sessions if id(s) not in children]
        for number, session in enumerate(top, 1):
            yield Line("")
            title = f"Session {number}: {plural(session.turns, 'turn')}"
            yield Line(title, "bold", suffix=f" (tools: {', '.join(session.tools)})")
            yield from self.session_lines(session, nested, "")
        yield Line("")
        yield Line(self.totals_line())

    def nest(self) -> dict[int, list[tuple[int, str, _Session]]]:
        """Which sessions are subagents, and under which Agent call: id(parent) ->
        [(line index past the call, its description, the subagent's session)].

        A subagent's conversation starts from the prompt its Agent call gave it; each call
        takes the first session so started that no other call took.
        """
        nested: dict[int, list[tuple[int, str, _Session]]] = {}
        taken: set[int] = set()
        for parent in self.sessions:
            for end, prompt, about in parent.agent_calls:
                child = next(
                    (
                        s
                        for s in self.sessions
                        if s is not parent and id(s) not in taken and prompt and prompt in s.first
                    ),
                    None,
                )
                if child is not None:
                    taken.add(id(child))
                    nested.setdefault(id(parent), []).append((end, about, child))
        return nested

    def session_lines(
        self, session: _Session, nested: dict[int, list[tuple[int, str, _Session]]], pad: str
    ) -> Iterator[Line]:
        """A session's lines, each subagent's session under the Agent call that started it."""
        kids = sorted(nested.get(id(session), []), key=lambda kid: kid[0])
        done = 0
        for end, about, child in kids:
            yield from (_indented(line, pad) for line in session.lines[done:end])
            done = end
            inner = pad + "        "
            title = f"subagent: {about or 'Agent'} ({plural(child.turns, 'turn')})"
            yield Line(title, "bold", prefix=inner)
            yield from self.session_lines(child, nested, inner)
        yield from (_indented(line, pad) for line in session.lines[done:])

    def totals_line(self) -> str:
        t = self.totals
        tokens = f"{t.input_tokens} input / {t.output_tokens} output tokens"
        if t.cache_read or t.cache_creation:
            tokens += f" ({t.cache_read} cache read, {t.cache_creation} cache write)"
        counts = (
            plural(len(self.sessions), "session"),
            plural(t.turns, "turn"),
            plural(t.tool_calls, "tool call"),
            plural(t.verdicts, "verdict"),
            *([plural(t.plans, "plan")] if t.plans else []),
            *([plural(t.server_calls, "server tool call")] if t.server_calls else []),
            plural(t.side, "side request"),
        )
        kinds = t.billed.by_kind()
        spent = f"billed {t.billed.tokens} tokens"
        if len(kinds) > 1:
            spent += " (" + ", ".join(f"{k} {n}" for k, n in kinds.items()) + ")"
        for key, count in t.billed.server_tool_use.items():
            spent += f", {_requests(key, count)}"
        spent += f", ${t.cost_usd:.4f} at today's prices"
        marks = marks_summary(self.marks)
        return f"Totals: {', '.join(counts)}; {tokens}; {spent}" + (f"; {marks}" if marks else "")


def _result_error(content: Any) -> bool:
    """Whether a server tool's result is its error (``web_search_tool_result_error``, …)."""
    return isinstance(content, dict) and str(content.get("type", "")).endswith("_error")


#: The fields of a server tool's result shown as they are, in this order.
_RESULT_FIELDS = ("error_code", "return_code", "stdout", "stderr", "text", "file_type")


def _result_text(content: Any) -> list[str]:
    """A server tool's result as lines: each search hit's title and address, a fetched
    page's address, title and text, code's exit status and output, an advisor's advice;
    encrypted parts are named, not shown."""
    if isinstance(content, str):
        return [content]
    if isinstance(content, list):
        return [line for item in content for line in _result_text(item)]
    if not isinstance(content, dict):
        return []
    kind = str(content.get("type", ""))
    lines: list[str] = []
    if content.get("url") or content.get("title"):
        title, url = content.get("title"), content.get("url")
        lines.append(
            " ".join(str(x) for x in (f"- {title}" if title else "-", url and f"<{url}>") if x)
        )
        if content.get("page_age"):
            lines[-1] += f" ({content['page_age']})"
    for key in _RESULT_FIELDS:
        value = content.get(key)
        if value not in (None, ""):
            lines.append(str(value) if key == "text" else f"{key}: {value}")
    source = content.get("source")
    if isinstance(source, dict) and isinstance(source.get("data"), str):
        if source.get("type") == "base64":
            lines.append(
                f"({source.get('media_type', 'binary')}, {len(source['data'])} base64 characters)"
            )
        else:
            lines.append(source["data"])
    for key in ("content", "document"):
        if content.get(key) is not None:
            lines += _result_text(content[key])
    if content.get("encrypted_content") or content.get("encrypted_index"):
        lines.append(f"({kind or 'result'}: encrypted)")
    return lines


def _citation(citation: dict[str, Any]) -> str:
    """A citation in one line: what it cites (page, document) and the words it quotes."""
    where = citation.get("title") or citation.get("document_title") or citation.get("url") or ""
    if citation.get("url") and citation.get("url") != where:
        where = f"{where} <{citation['url']}>"
    quoted = " ".join(str(citation.get("cited_text") or "").split())
    quoted = quoted[:160] + "…" if len(quoted) > 160 else quoted
    return f'{where}: "{quoted}"' if quoted else str(where or citation.get("type", "citation"))


def _indented(line: Line, pad: str) -> Line:
    return Line(line.text, line.style, pad + line.prefix, line.suffix) if pad else line


def _own_text(content: Any) -> str:
    """A user message's text without Claude Code's system reminders."""
    if isinstance(content, list):
        content = "\n".join(
            str(b.get("text", ""))
            for b in content
            if isinstance(b, dict) and b.get("type") == "text"
        )
    return _REMINDER.sub("", str(content or "")).strip()


def _side_topic(body: dict[str, Any]) -> str:
    """What a side request is for: title generation, else the start of its last message."""
    if "title" in _dumps(body.get("system")).lower():
        return "title generation"
    schema = _dumps((body.get("output_config") or {}).get("format"))
    if '"title"' in schema:
        return "title generation"
    last = body["messages"][-1] if body["messages"] else {}
    content = last.get("content") if isinstance(last, dict) else ""
    if isinstance(content, list):
        content = " ".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return " ".join(str(content).split())[:60] or "(no text)"
