"""A Claude Code session's stream-json output, folded into the turns a person reads.

``claude -p --output-format stream-json`` prints an ``assistant`` event per content block
(text, thinking, tool_use; the blocks of one model answer share its message id) and a
``user`` event per tool result. This module turns those lines back into turns: one model
answer each, its blocks in order, every tool call with the result the CLI gave it. It is
pure (a string in, dataclasses out), so reports, divergence reports and the reflector can
share it and it is tested without a CLI.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Text", "ToolUse", "Turn", "stream_turns", "tool_result_text"]


@dataclass
class Text:
    """Assistant prose, or its thinking (``thinking`` True)."""

    text: str
    thinking: bool = False
    kind: str = "text"


@dataclass
class ToolUse:
    """One tool call and what the CLI answered (``result`` None: no answer came)."""

    id: str
    name: str
    input: Any
    result: str | None = None
    is_error: bool = False
    kind: str = "tool_use"


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


def stream_turns(stdout: str) -> list[Turn]:
    """The turns of one session's stream-json output (subagent events are left out)."""
    turns: list[Turn] = []
    calls: dict[str, ToolUse] = {}
    for event in _events(stdout):
        if event.get("parent_tool_use_id"):
            continue  # a subagent's own conversation, summarised by its Task call's result
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
                        calls[block.id] = block
        elif event.get("type") == "user" and isinstance(content, list):
            for raw in content:
                if isinstance(raw, dict) and raw.get("type") == "tool_result":
                    call = calls.get(str(raw.get("tool_use_id", "")))
                    if call is not None:
                        call.result = tool_result_text(raw.get("content"))
                        call.is_error = bool(raw.get("is_error"))
    return turns
