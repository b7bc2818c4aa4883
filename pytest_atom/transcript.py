"""Conversations folded into the turns a person reads: a session's stream-json output, or
a cassette's recorded requests and responses.

``claude -p --output-format stream-json`` prints an ``assistant`` event per content block
(text, thinking, tool_use; the blocks of one model answer share its message id) and a
``user`` event per tool result. This module turns those lines back into turns: one model
answer each, its blocks in order, every tool call with the result the CLI gave it. It is
pure (a string in, dataclasses out), so reports, divergence reports and the reflector can
share it and it is tested without a CLI.

A cassette holds the API side of the same conversations: every request repeats the whole
conversation so far, and every answer is an SSE stream. `cassette_lines` groups those
requests into sessions, shows each turn's new user content and the answer (folded with the
gateway's own `fold_sse`), and sums the usage; `atom cassette show` only prints its lines.

Refused tool calls are read here too (`permission_denials`), from what Claude Code 2.1.330
prints for each kind of refusal, so checks, traces and reports name them alike:

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
fails ("Read-only file system").
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pytest_atom.agents.roles import STRUCTURED_OUTPUT
from pytest_atom.replay.cassette import FAULT_HEADER, Cassette, Interaction
from pytest_atom.replay.gateway.messages import fold_sse
from pytest_atom.replay.gateway.server import CONVERSATION_KINDS, request_kind

#: Claude Code's tool that starts a subagent (``Task`` before 2.1.x).
AGENT_TOOL = "Agent"
_REMINDER = re.compile(r"<system-reminder>.*?</system-reminder>", re.DOTALL)

__all__ = [
    "Denial",
    "Line",
    "Reply",
    "Text",
    "ToolUse",
    "Turn",
    "cassette_lines",
    "is_messages",
    "main_field",
    "permission_denials",
    "plural",
    "read_reply",
    "stream_turns",
    "tool_label",
    "tool_result_text",
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


def tool_result_text(content: Any) -> str:
    """A tool_result's content as text: a string as is, a block list's texts joined."""
    if isinstance(content, list):
        return "\n".join(
            str(b.get("text", "")) if b.get("type") == "text" else f"[{b.get('type')}]"
            for b in content
            if isinstance(b, dict)
        )
    return "" if content is None else str(content)


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


def _events(stdout: str) -> list[dict[str, Any]]:
    events = []
    for line in stdout.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue  # a stray non-JSON line (a CLI warning) is no part of the conversation
        if isinstance(event, dict):
            events.append(event)
    return events


def _block(raw: dict[str, Any]) -> Text | ToolUse | None:
    kind = raw.get("type")
    if kind == "text" and str(raw.get("text", "")).strip():
        return Text(str(raw["text"]))
    if kind == "thinking" and str(raw.get("thinking", "")).strip():
        return Text(str(raw["thinking"]), thinking=True)
    if kind in ("tool_use", "server_tool_use"):
        return ToolUse(str(raw.get("id", "")), str(raw.get("name", "?")), raw.get("input"))
    return None


#: Who a `Denial.reason` names, as reports say it ("refused by a hook").
_REFUSERS = {
    "hook": "a hook",
    "rule": "a permission rule",
    "workingDir": "the attempt folder's boundary",
}


def refused_by(reason: str) -> str:
    """Who refused a call, in words, from its `Denial.reason`."""
    return _REFUSERS.get(reason, "Claude Code")


def stream_turns(stdout: str) -> list[Turn]:
    """The turns of one session's stream-json output, each subagent's turns under the
    call that started it (the CLI tags a subagent's events with that call's id), each
    refused call marked with who refused it."""
    events = _events(stdout)
    denied = {d.tool_use_id: d.reason for d in _denials(events)}
    return _turns(events, None, denied)


def permission_denials(stdout: str) -> list[Denial]:
    """The calls one ``claude -p`` call refused, subagents' included (see the module doc)."""
    return _denials(_events(stdout))


_HOOK_REFUSAL = re.compile(r"^PreToolUse:\S+ hook ")


def _denials(events: list[dict[str, Any]]) -> list[Denial]:
    reasons: dict[str, str] = {}  # tool_use_id -> why, from the permission_denied events
    results: dict[str, str] = {}  # tool_use_id -> the error result the model was given
    listed: list[dict[str, Any]] = []
    for event in events:
        kind = event.get("type")
        if kind == "system" and event.get("subtype") == "permission_denied":
            reasons[str(event.get("tool_use_id"))] = str(event.get("decision_reason_type") or "")
        elif kind == "user" and isinstance(event.get("message"), dict):
            content = event["message"].get("content")
            for raw in content if isinstance(content, list) else []:
                if isinstance(raw, dict) and raw.get("type") == "tool_result":
                    results[str(raw.get("tool_use_id"))] = tool_result_text(raw.get("content"))
        elif kind == "result":
            listed += [d for d in event.get("permission_denials") or [] if isinstance(d, dict)]
    found = []
    for denial in listed:
        call = str(denial.get("tool_use_id", ""))
        reason = reasons.get(call) or (
            "hook" if _HOOK_REFUSAL.match(results.get(call, "")) else "refused"
        )
        tool = str(denial.get("tool_name", "?"))
        found.append(Denial(call, tool, denial.get("tool_input"), reason))
    return found


def _turns(events: list[dict[str, Any]], parent: str | None, denied: dict[str, str]) -> list[Turn]:
    turns: list[Turn] = []
    calls: dict[str, ToolUse] = {}
    for index, event in enumerate(events):
        if (event.get("parent_tool_use_id") or None) != parent:
            continue  # another conversation's: the main agent's, or another subagent's
        message = event.get("message")
        if not isinstance(message, dict):
            message = {}
        content = message.get("content")
        if event.get("type") == "assistant":
            message_id = str(message.get("id") or f"turn-{len(turns) + 1}")
            if not turns or turns[-1].message_id != message_id:
                turns.append(Turn(message_id))
            for raw in content if isinstance(content, list) else []:
                block = _block(raw) if isinstance(raw, dict) else None
                if block is not None:
                    turns[-1].blocks.append(block)
                    if isinstance(block, ToolUse):
                        block.event, block.denied = index, denied.get(block.id)
                        calls[block.id] = block
        elif event.get("type") == "user" and isinstance(content, list):
            for raw in content:
                if isinstance(raw, dict) and raw.get("type") == "tool_result":
                    call = calls.get(str(raw.get("tool_use_id", "")))
                    if call is not None:
                        call.result = tool_result_text(raw.get("content"))
                        call.is_error = bool(raw.get("is_error"))
    started = {str(e.get("parent_tool_use_id")) for e in events if e.get("parent_tool_use_id")}
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


@dataclass
class Reply:
    """An assistant answer rebuilt from a recorded response (SSE stream or JSON body)."""

    blocks: list[dict[str, Any]] = field(default_factory=list)
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read: int = 0
    cache_creation: int = 0
    error: str | None = None

    def set_usage(self, usage: Any) -> None:
        """Take the counts a usage object has; the others keep their values."""
        if not isinstance(usage, dict):
            return
        for attr, key in (
            ("input_tokens", "input_tokens"),
            ("output_tokens", "output_tokens"),
            ("cache_read", "cache_read_input_tokens"),
            ("cache_creation", "cache_creation_input_tokens"),
        ):
            if isinstance(usage.get(key), int):
                setattr(self, attr, usage[key])

    def usage_text(self) -> str:
        """``12 in, 3 out, 5 cache read tokens``: cache counts only when there are any."""
        parts = [f"{self.input_tokens} in", f"{self.output_tokens} out"]
        if self.cache_read:
            parts.append(f"{self.cache_read} cache read")
        if self.cache_creation:
            parts.append(f"{self.cache_creation} cache write")
        return ", ".join(parts) + " tokens"


def _error_text(data: Any, status: int) -> str:
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict):
        return f"{error.get('type', 'error')}: {error.get('message', '')}".strip()
    return f"HTTP {status}"


def read_reply(response: str, status: int) -> Reply:
    """The answer a recorded response carries: a JSON message, an API error, or a stream.

    A stream is folded by the gateway's `fold_sse`, the same rules that coalesce it when it
    is recorded; a stream that ends without an answer but with an error status says so.
    """
    reply = Reply()
    try:
        data = json.loads(response) if response.lstrip().startswith("{") else None
    except ValueError:
        data = None
    if data is not None:  # a non-streamed message or an API error
        if status >= 400 or (isinstance(data, dict) and data.get("type") == "error"):
            reply.error = _error_text(data, status)
        elif isinstance(data, dict):
            reply.blocks = [b for b in data.get("content") or [] if isinstance(b, dict)]
            reply.set_usage(data.get("usage"))
        return reply
    folded = fold_sse(response)
    reply.blocks = folded["content"]
    reply.set_usage(folded["usage"])
    if folded["error"] is not None:
        reply.error = _error_text(folded["error"], status)
    elif status >= 400:
        reply.error = f"HTTP {status}"
    return reply


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


def plural(count: int, noun: str) -> str:
    """``1 turn``, ``2 turns``: English for counts in the transcript and its summaries."""
    return f"{count} {noun}{'s' * (count != 1)}"


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
    verdicts: int = 0
    plans: int = 0  # planner mode: the planner's structured answers
    side: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read: int = 0
    cache_creation: int = 0

    def add(self, reply: Reply) -> None:
        self.input_tokens += reply.input_tokens
        self.output_tokens += reply.output_tokens
        self.cache_read += reply.cache_read
        self.cache_creation += reply.cache_creation


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
                error = " (error)" if block.get("is_error") else ""
                out.append(Line(f"{indent}tool_result {block.get('tool_use_id', '')}{error}:"))
                result = tool_result_text(block.get("content"))
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
            elif kind in ("tool_use", "server_tool_use"):
                self.totals.tool_calls += 1
                out += self.tool_use(block, indent)
            else:
                out.append(Line(f"{indent}[{kind}]"))
        return out

    def tool_use(self, block: dict[str, Any], indent: str) -> list[Line]:
        """A tool call; a shell command is shown as typed, not JSON-escaped."""
        name, args = block.get("name", "?"), block.get("input")
        command = args.get("command") if isinstance(args, dict) else None
        if isinstance(command, str):
            rest = {k: v for k, v in args.items() if k != "command"} if args else {}
            head = f"{indent}tool_use {name}" + (f" {self.short(_dumps(rest))}" if rest else "")
            first, *more = command.split("\n")
            lines = [Line(head), Line(f"{indent}  $ {first}")]
            return lines + (self.clip("\n".join(more), indent + "    ") if more else [])
        shown = args if isinstance(args, str) else _dumps(args)
        return [Line(f"{indent}tool_use {name} {self.short(shown)}")]

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
        self.totals.add(reply)
        answer = reply.error or " ".join(
            str(b.get("text", "")) for b in reply.blocks if b.get("type") == "text"
        )
        answer = " ".join(answer.split())
        answer = answer[:80] + "..." if len(answer) > 80 else answer
        self.pending.append(Line(f"  {where}: side request: {_side_topic(body)} -> {answer}"))

    def session_for(self, body: dict[str, Any]) -> _Session:
        """The conversation a turn continues: the latest one with the same first message and
        system prompt (cache breakpoints aside) and fewer messages; else a new one.
        """
        messages = body["messages"]
        key = _dumps(_without_cache_control([messages[:1], body.get("system")]))
        if len(messages) > 1:
            for session in reversed(self.sessions):
                if session.key == key and session.last_length < len(messages):
                    return session
        tools = [str(t.get("name")) for t in body.get("tools") or [] if isinstance(t, dict)]
        first = messages[0].get("content") if messages and isinstance(messages[0], dict) else ""
        session = _Session(key, tools, _own_text(first))
        self.sessions.append(session)
        return session

    def turn(self, where: str, body: dict[str, Any], interaction: Interaction, kind: str) -> None:
        """A turn of its session: only the user content new since its previous turn."""
        messages: list[Any] = body["messages"]
        session = self.session_for(body)
        session.lines += self.pending
        self.pending = []
        new = messages[session.last_length :] if session.last_length < len(messages) else []
        new = [m for m in new if isinstance(m, dict) and m.get("role") == "user"] or messages[-1:]
        session.last_length = len(messages)
        session.turns += 1
        self.totals.turns += 1
        reply = read_reply(interaction.response, interaction.status)
        self.totals.add(reply)
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
        calls = [b.get("input") for b in reply.blocks if b.get("name") == AGENT_TOOL]
        ends = [
            n + 1
            for n in range(start, len(session.lines))
            if session.lines[n].text.startswith(f"      tool_use {AGENT_TOOL} ")
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
            plural(t.side, "side request"),
        )
        return f"Totals: {', '.join(counts)}; {tokens}"


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
