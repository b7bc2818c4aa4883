"""A finished Claude Code session as `atom import` reads it, from either of the CLI's two records.

A session is the CLI's own transcript (`pytest_atom.importing.cli_transcript`) or the
``--output-format stream-json`` log of one or more ``claude -p`` calls, read here through
`pytest_atom.events`. Both become one `Session`: the first prompt, the main agent's turns
with their tool calls and the results the session saw, and where it ran.

What a scripted replay cannot play is refused here, with the file and line that shows it:

- subagents (an ``Agent``/``Task`` call, a sidechain line, a subagent's event): the scripted
  gateway plays one lane of turns, and a subagent's requests, which run beside the main
  agent's, would take the main agent's turns;
- server tools (web search, web fetch, code execution): the API runs them, and a script has no
  block for their results.

Thinking is read and left out (a script has no thinking blocks); the session says how many.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pytest_atom import events
from pytest_atom.errors import SessionError

#: The tools that start a subagent (``Task`` before Claude Code 2.1.200-ish, ``Agent`` after).
SUBAGENT_TOOLS = frozenset({"Agent", "Task"})

Format = Literal["transcript", "stream-json"]


@dataclass
class SessionCall:
    """A tool call of the main agent, with what the session's tools answered."""

    id: str
    name: str
    input: dict[str, Any]
    line: int
    result: str | None = None
    is_error: bool = False


@dataclass
class SessionTurn:
    """One model answer of the main agent: its prose and its tool calls (thinking left out)."""

    message_id: str
    line: int
    text: str = ""
    calls: list[SessionCall] = field(default_factory=list)
    thinking: int = 0  # thinking blocks left out


@dataclass
class Session:
    """What `atom import` needs of a finished session."""

    path: Path
    format: Format
    prompt: str | None
    turns: list[SessionTurn]
    cwd: str | None = None
    git_branch: str | None = None
    started: str | None = None  # ISO timestamp of the first prompt (or event)
    agent_version: str | None = None
    session_id: str | None = None
    #: The user's messages after the first (line, text): later prompts, hook feedback.
    later_messages: list[tuple[int, str]] = field(default_factory=list)
    #: The system prompt pytest-atom's harness wrapped the first prompt in (a transcript of
    #: one of its own runs: `pytest_atom.prompts.split_first_message`); `prompt` is
    #: the task alone then, as the spec gave it.
    wrapper: str | None = None
    calls_started: int = 0  # `claude -p` calls in a stream-json log (its system/init events)
    notes: list[str] = field(default_factory=list)  # what the reader left out, and why

    @property
    def calls(self) -> list[SessionCall]:
        return [c for t in self.turns for c in t.calls]

    @property
    def thinking(self) -> int:
        return sum(t.thinking for t in self.turns)


def decode_lines(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """Every non-blank line of `path` as a JSON object, with its line number."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SessionError(f"cannot read {path}: {exc}") from None
    out = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        raw = events.decode(line)
        if raw is None:
            raise SessionError(
                f"{path}:{number}: not a JSON object, so {path.name} is neither a Claude Code "
                "transcript (~/.claude/projects/<project>/<session>.jsonl) nor a stream-json "
                "log (claude -p --output-format stream-json --verbose): "
                f"{line.strip()[:80]!r}"
            )
        out.append((number, raw))
    if not out:
        raise SessionError(f"{path}: the file is empty: no session to import")
    return out


def sniff(path: Path, lines: Iterable[tuple[int, Mapping[str, Any]]]) -> Format:
    """Which record `lines` are: a transcript's lines carry ``sessionId``, stream-json's not."""
    first = None
    for number, raw in lines:
        first = first or number
        if "parentUuid" in raw or "sessionId" in raw:
            return "transcript"
        if "session_id" in raw and raw.get("type") in ("system", "assistant", "user", "result"):
            return "stream-json"
    raise SessionError(
        f"{path}:{first or 1}: neither a Claude Code transcript (user and assistant lines with "
        "parentUuid and sessionId) nor a stream-json log (system/init, assistant, user and result "
        "events with session_id): give the session's .jsonl from ~/.claude/projects/ or the "
        "stdout of claude -p --output-format stream-json --verbose"
    )


def refuse_subagent(path: Path, line: int, what: str) -> SessionError:
    return SessionError(
        f"{path}:{line}: {what}: atom import does not handle subagents (the scripted gateway "
        "plays one lane of turns, and a subagent's requests, which run beside the main agent's, "
        "would take its turns). Import a session without subagents, or write the subagent's "
        "part into the script by hand."
    )


def fold_assistant(
    path: Path,
    session: Session,
    turns: dict[str, SessionTurn],
    calls: dict[str, SessionCall],
    number: int,
    event: events.MessageUsage | events.AssistantText | events.ToolCall,
) -> None:
    """One event of an assistant message into its turn (made on the message's first event),
    for both readers: its text, a thinking block counted, a tool call (a server tool's refused)."""
    turn = turns.get(event.message_id)
    if turn is None:
        turn = turns[event.message_id] = SessionTurn(event.message_id, number)
        session.turns.append(turn)
    if isinstance(event, events.AssistantText):
        if event.thinking:
            turn.thinking += 1
        else:
            turn.text = f"{turn.text}\n\n{event.text}" if turn.text else event.text
    elif isinstance(event, events.ToolCall):
        if event.server:
            raise SessionError(
                f"{path}:{number}: the model called the server tool {event.name} (the API runs "
                "it, not Claude Code): atom import does not handle server tools, since a script "
                "has no block for their results. Record the spec against the real API instead."
            )
        if event.name in SUBAGENT_TOOLS:
            what = f"the {event.name} call {event.id} starts a subagent"
            raise refuse_subagent(path, number, what)
        tool_input = event.input if isinstance(event.input, dict) else {}
        call = SessionCall(event.id, event.name, dict(tool_input), number)
        turn.calls.append(call)
        calls[call.id] = call


def read_stream_json(path: Path, lines: list[tuple[int, dict[str, Any]]]) -> Session:
    """A stream-json log: one ``claude -p`` call per ``system/init``; it carries no prompt."""
    session = Session(path, "stream-json", None, [])
    turns: dict[str, SessionTurn] = {}
    calls: dict[str, SessionCall] = {}
    for number, raw in lines:
        if session.started is None and isinstance(raw.get("timestamp"), str):
            session.started = raw["timestamp"]
        for event in events.parse_event(raw):
            _fold(path, session, turns, calls, number, raw, event)
    return session


def _fold(
    path: Path,
    session: Session,
    turns: dict[str, SessionTurn],
    calls: dict[str, SessionCall],
    number: int,
    raw: Mapping[str, Any],
    event: events.Event,
) -> None:
    if isinstance(event, events.SessionStarted):
        session.calls_started += 1
        session.session_id = session.session_id or event.session_id
        session.agent_version = session.agent_version or event.agent_version
        cwd = raw.get("cwd")
        session.cwd = session.cwd or (cwd if isinstance(cwd, str) else None)
        return
    # A `system/task_started` event is no proof of a subagent: Claude Code also starts a task
    # for a Bash command that runs long. The Agent call itself, and its events, are refused.
    subagent = getattr(event, "subagent", None)
    if subagent:
        raise refuse_subagent(path, number, f"this event is a subagent's (of call {subagent})")
    if isinstance(event, (events.MessageUsage, events.AssistantText, events.ToolCall)):
        fold_assistant(path, session, turns, calls, number, event)
    elif isinstance(event, events.ToolResult):
        answer(calls, event)


def answer(calls: Mapping[str, SessionCall], result: events.ToolResult) -> None:
    """The result a tool call got, onto its call (a result of no known call is passed over)."""
    if (call := calls.get(result.tool_use_id)) is not None:
        call.result, call.is_error = result.text, result.is_error
