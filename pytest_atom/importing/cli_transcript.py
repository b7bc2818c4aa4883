"""Claude Code's own transcript of a session (``projects/<cwd slug>/<session>.jsonl``), read.

The CLI appends one JSON object a line as the session goes. The lines `atom import` reads:

- ``user`` lines: the prompt (``message.content`` a string or text blocks), tool results
  (``tool_result`` blocks, with the CLI's ``toolUseResult`` beside them), and messages the CLI
  itself wrote in the user's place (``isMeta``: hook feedback, command caveats;
  ``isCompactSummary``: the summary that continues a compacted conversation);
- ``assistant`` lines: one content block of a model answer each (text, thinking, tool_use); the
  lines of one answer share ``message.id``;
- every user and assistant line carries ``cwd``, ``gitBranch``, ``version``, ``timestamp`` and
  ``isSidechain`` (true: a subagent's line, in transcripts of releases that kept subagents in
  the session's file).

Other lines (``summary``, ``file-history-snapshot``, ``system``, ...) are passed over. An
answer's blocks are the same as in stream-json, so `pytest_atom.events` parses each message.

Lines form a tree by ``parentUuid``: a prompt the user edited or rewound to starts a branch,
and the abandoned one stays in the file. The conversation is the chain from the last line back
to the first, plus the results of parallel tool calls (each result hangs off its own call's
line, beside the chain); lines off it are left out. When the chain does not lead back to the
first line (a compaction or a resume broke it), every line is read in file order.

A transcript of one of pytest-atom's own runs starts with the harness's system prompt and
the spec's task under ``# USER_PROMPT.md`` (`pytest_atom.prompts.first_message`): the
prompt read is the task alone, and the wrapper is kept apart (`Session.wrapper`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pytest_atom import events
from pytest_atom.importing.stream_json import (
    Session,
    SessionCall,
    SessionTurn,
    answer,
    fold_assistant,
    refuse_subagent,
)
from pytest_atom.prompts import split_first_message

#: Text the CLI writes as a user message that no person typed.
_CLI_WRAPPERS = ("<command-name>", "<command-message>", "<local-command-", "[Request interrupted")


def read_transcript(path: Path, lines: list[tuple[int, dict[str, Any]]]) -> Session:
    """The session of a transcript's decoded `lines` (as `session.decode_lines` gives them)."""
    session = Session(path, "transcript", None, [])
    turns: dict[str, SessionTurn] = {}
    calls: dict[str, SessionCall] = {}
    seen: set[str] = set()
    kept = _conversation(lines)
    left_out = 0
    for number, raw in lines:
        kind = raw.get("type")
        if kind not in ("user", "assistant"):
            continue
        if kept is not None and raw.get("uuid") not in kept:
            left_out += 1
            continue
        uuid = raw.get("uuid")
        if isinstance(uuid, str):
            if uuid in seen:  # a line written twice (a resumed session copies its history)
                continue
            seen.add(uuid)
        if raw.get("isSidechain") is True:
            raise refuse_subagent(path, number, "this line is a subagent's turn (isSidechain)")
        _where(session, raw)
        if kind == "assistant":
            _assistant(path, session, turns, calls, number, raw)
        else:
            _user(session, calls, number, raw)
    if left_out:
        session.notes.append(
            f"{left_out} lines of an abandoned branch (a prompt edited or rewound to) left out"
        )
    return session


def _conversation(lines: list[tuple[int, dict[str, Any]]]) -> set[str] | None:
    """The uuids of the conversation's lines: the chain from the last user or assistant line
    back to the first, and the tool results beside it. None when the chain does not reach the
    first line (read everything in file order then)."""
    parent: dict[str, str | None] = {}
    messages: list[dict[str, Any]] = []
    for _, raw in lines:
        uuid = raw.get("uuid")
        if not isinstance(uuid, str):
            continue
        up = raw.get("parentUuid") or raw.get("logicalParentUuid")
        parent.setdefault(uuid, up if isinstance(up, str) else None)
        if raw.get("type") in ("user", "assistant") and raw.get("isSidechain") is not True:
            messages.append(raw)
    if not messages:
        return None
    chain: set[str] = set()
    at: str | None = messages[-1]["uuid"]
    while at is not None and at not in chain:
        chain.add(at)
        at = parent.get(at)
    if messages[0]["uuid"] not in chain:
        return None
    beside = {
        str(m["uuid"])
        for m in messages
        if m.get("type") == "user" and parent.get(m["uuid"]) in chain and _is_results(m)
    }
    return chain | beside


def _is_results(raw: Mapping[str, Any]) -> bool:
    message = raw.get("message")
    content = message.get("content") if isinstance(message, Mapping) else None
    return isinstance(content, list) and any(
        isinstance(b, Mapping) and b.get("type") == "tool_result" for b in content
    )


def _where(session: Session, raw: Mapping[str, Any]) -> None:
    for key, attr in (
        ("cwd", "cwd"),
        ("gitBranch", "git_branch"),
        ("version", "agent_version"),
        ("sessionId", "session_id"),
        ("timestamp", "started"),
    ):
        value = raw.get(key)
        if getattr(session, attr) is None and isinstance(value, str) and value:
            setattr(session, attr, value)


def _assistant(
    path: Path,
    session: Session,
    turns: dict[str, SessionTurn],
    calls: dict[str, SessionCall],
    number: int,
    raw: Mapping[str, Any],
) -> None:
    # An assistant line is a stream-json assistant event with other keys beside: parse it so.
    for event in events.parse_event({"type": "assistant", "message": raw.get("message")}):
        if isinstance(event, (events.MessageUsage, events.AssistantText, events.ToolCall)):
            fold_assistant(path, session, turns, calls, number, event)


def _user(
    session: Session, calls: dict[str, SessionCall], number: int, raw: Mapping[str, Any]
) -> None:
    message = raw.get("message")
    content = message.get("content") if isinstance(message, Mapping) else None
    results = [
        e
        for e in events.parse_event({"type": "user", "message": message})
        if isinstance(e, events.ToolResult)
    ]
    for result in results:
        answer(calls, result)
    if results:
        return
    given = events.flatten_tool_result(content)
    text = given.strip()
    if not text:
        return
    typed = not raw.get("isMeta") and not raw.get("isCompactSummary")
    if typed and not text.startswith(_CLI_WRAPPERS) and session.prompt is None:
        harness = split_first_message(given)  # a pytest-atom run's: its task, exactly
        session.wrapper, session.prompt = harness if harness else (None, text)
        session.started = raw.get("timestamp") if isinstance(raw.get("timestamp"), str) else None
    else:
        session.later_messages.append((number, text))
