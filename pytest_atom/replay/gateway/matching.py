"""How a live request finds its recorded counterpart: the match modes, and the drift between.

Matching follows ownership. What the user owns (the task, the atom and reflector prompts,
refine feedback, the workspace as seen through tool results: the *conversation*) decides
a match. What Claude Code owns (system prompt, tool schemas, model and sampling settings,
``cache_control``, its own ``<system-reminder>`` blocks and ``role: system`` entries,
string vs ``[text]`` content, preflights and side requests) changes with every CLI
release, so it is recorded and reported as drift, never a reason to fail.

=============  ==========================================================
mode           a recorded request matches a live one when
=============  ==========================================================
conversation   (default) their kinds and conversations are equal
structural     their kinds and conversations are equal, tool results aside
strict         their normalized bodies are equal, byte for byte
=============  ==========================================================
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pytest_atom.modes import DEFAULT_MATCH, MATCH_MODES, MatchMode
from pytest_atom.replay.gateway.messages import parse_sse
from pytest_atom.replay.gateway.scripted import structured_role

__all__ = ["DEFAULT_MATCH", "MATCH_MODES", "Drift", "MatchMode", "match_key", "request_kind"]

#: What a request is for. Turns and reflector turns carry a conversation; the others are
#: Claude Code's own business and match by kind alone.
Kind = Literal["head", "count_tokens", "turn", "reflector", "planner", "side"]
CONVERSATION_KINDS = ("turn", "reflector", "planner")

TOOL_RESULT = "<TOOL_RESULT>"  # a tool result's text, as structural matching sees it
_REMINDER = re.compile(r"<system-reminder>.*?</system-reminder>", re.DOTALL)
#: Texts Claude Code writes into a tool result itself, which differ between releases for
#: the same command ("(Bash completed with no output)" became a note about read files).
_CLI_NOTE = r"\[This command modified \d+ files? you've previously read: [^\]]*\]"
_NO_OUTPUT = re.compile(rf"\(Bash completed with no output\)|{_CLI_NOTE}")
_CLI_SUFFIX = re.compile(rf"\s*{_CLI_NOTE}\s*$")
NO_OUTPUT = "<NO_OUTPUT>"


def tool_names(body: Any) -> list[str]:
    """The tools a request offers, in order."""
    tools = body.get("tools") if isinstance(body, dict) else None
    return [str(t.get("name")) for t in tools or [] if isinstance(t, dict)]


def request_kind(method: str, endpoint: str, body: Any) -> Kind:
    """``turn`` offers tools (an agent step); ``reflector`` also offers StructuredOutput,
    and ``planner`` offers it with the plan's answer schema (planner mode)."""
    if method == "HEAD":
        return "head"
    if endpoint.endswith("/count_tokens"):
        return "count_tokens"
    names = tool_names(body)
    if names and endpoint.endswith("/messages"):
        role = structured_role(body)
        return "turn" if role is None else "planner" if role == "planner" else "reflector"
    return "side"


def _text(text: str) -> str:
    return _REMINDER.sub("", text).strip()


def _result(content: Any) -> str:
    """A tool result as one text: list or string form, Claude Code's own notes folded."""
    if isinstance(content, list):
        parts = [str(c.get("text", "")) for c in content if isinstance(c, dict)]
        content = "\n".join(p for p in parts if p)
    text = _text(str(content or ""))
    if _NO_OUTPUT.fullmatch(text):
        return NO_OUTPUT
    return _CLI_SUFFIX.sub("", text)


def _blocks(content: Any, blank_results: bool) -> list[dict[str, Any]]:
    if isinstance(content, str):
        content = [{"type": "text", "text": content}]
    out: list[dict[str, Any]] = []
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            text = _text(str(block.get("text", "")))
            if text and out and out[-1]["type"] == "text":
                out[-1]["text"] += "\n\n" + text  # one text, however the CLI splits it
            elif text:
                out.append({"type": "text", "text": text})
        elif kind == "tool_use":
            out.append({"type": "tool_use", "name": block.get("name"), "input": block.get("input")})
        elif kind == "tool_result":
            result = TOOL_RESULT if blank_results else _result(block.get("content"))
            out.append(
                {"type": "tool_result", "content": result, "is_error": bool(block.get("is_error"))}
            )
        elif kind in ("image", "document"):
            out.append({"type": kind, "source": block.get("source")})
        # thinking blocks and the like echo the model's own output: not the user's input
    return out


def conversation(body: Any, *, blank_results: bool = False) -> list[dict[str, Any]]:
    """The user and assistant turns of a request, without what Claude Code wraps them in."""
    turns: list[dict[str, Any]] = []
    messages = body.get("messages") if isinstance(body, dict) else None
    for message in messages if isinstance(messages, list) else []:
        if not isinstance(message, dict) or message.get("role") not in ("user", "assistant"):
            continue
        blocks = _blocks(message.get("content"), blank_results)
        if blocks:
            turns.append({"role": message["role"], "content": blocks})
    return turns


def match_key(kind: Kind, body: Any, mode: MatchMode) -> str:
    """The string two requests must share to match in `mode` (compared, never parsed)."""
    if mode == "strict":
        return kind + ":" + (body if isinstance(body, str) else json.dumps(body, sort_keys=True))
    if kind not in CONVERSATION_KINDS:
        return kind
    turns = conversation(body, blank_results=mode == "structural")
    return kind + ":" + json.dumps(turns, sort_keys=True, ensure_ascii=False)


def called_tools(response: str) -> list[str]:
    """The tools a recorded answer calls (SSE or a JSON message)."""
    names: list[str] = []
    try:
        data = json.loads(response)
    except ValueError:
        for _, raw in parse_sse(response):
            if '"tool_use"' not in raw:
                continue
            try:
                event = json.loads(raw)
            except ValueError:
                continue
            block = event.get("content_block") if isinstance(event, dict) else None
            if isinstance(block, dict) and block.get("type") == "tool_use":
                names.append(str(block.get("name")))
        return names
    content = data.get("content") if isinstance(data, dict) else None
    for block in content if isinstance(content, list) else []:
        if isinstance(block, dict) and block.get("type") == "tool_use":
            names.append(str(block.get("name")))
    return names


def _tool_shapes(body: Any) -> dict[str, set[str]]:
    shapes: dict[str, set[str]] = {}
    for tool in body.get("tools") or [] if isinstance(body, dict) else []:
        if isinstance(tool, dict):
            schema = tool.get("input_schema") or {}
            shapes[str(tool.get("name"))] = set(schema.get("properties") or {})
    return shapes


def _system_text(body: Any) -> str:
    system = body.get("system") if isinstance(body, dict) else None
    if isinstance(system, list):
        system = "\n".join(str(b.get("text", "")) for b in system if isinstance(b, dict))
    return str(system or "")


@dataclass
class Drift:
    """What Claude Code changed around a conversation that still matched, summed per run."""

    recorded_version: str | None = None
    live_version: str | None = None
    models: dict[str, str] = field(default_factory=dict)  # recorded -> live
    tools_added: set[str] = field(default_factory=set)
    tools_removed: set[str] = field(default_factory=set)
    system_changed: bool = False
    replayed: int = 0  # requests served from the cassette
    loose: int = 0  # of which matched on the conversation, not byte for byte
    results_differ: int = 0  # of which matched although tool results differ (structural)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def served(self, live: Any, recorded: Any, *, exact: bool, results_differ: bool) -> None:
        with self._lock:
            self.replayed += 1
            if exact:
                return
            self.loose += 1
            self.results_differ += results_differ
            if not (isinstance(live, dict) and isinstance(recorded, dict)):
                return
            if live.get("model") != recorded.get("model"):
                self.models[str(recorded.get("model"))] = str(live.get("model"))
            if live.get("tools") or recorded.get("tools"):
                self._tools(_tool_shapes(recorded), _tool_shapes(live))
                self.system_changed |= _system_text(live) != _system_text(recorded)

    def _tools(self, recorded: Mapping[str, set[str]], live: Mapping[str, set[str]]) -> None:
        self.tools_added |= set(live) - set(recorded)
        self.tools_removed |= set(recorded) - set(live)
        for name in set(live) & set(recorded):
            self.tools_added |= {f"{name}.{p}" for p in live[name] - recorded[name]}
            self.tools_removed |= {f"{name}.{p}" for p in recorded[name] - live[name]}

    def _versions(self) -> str:
        if self.recorded_version and self.recorded_version != self.live_version:
            return (
                f"recorded with Claude Code {self.recorded_version}, "
                f"replayed with {self.live_version or 'an unknown version'}"
            )
        return f"recorded and replayed with Claude Code {self.live_version or '(unknown)'}"

    def line(self) -> str | None:
        """One line per spec, or None when the replay was byte for byte what was recorded."""
        version_changed = bool(self.recorded_version and self.recorded_version != self.live_version)
        if not self.loose and not version_changed:
            return None
        parts = [f"model {a} → {b}" for a, b in sorted(self.models.items())]
        tools = [f"+{t}" for t in sorted(self.tools_added)]
        tools += [f"−{t}" for t in sorted(self.tools_removed)]  # noqa: RUF001 - a minus sign
        if tools:
            parts.append("tools " + " ".join(_clip(tools)))
        parts.append(f"system prompt {'changed' if self.system_changed else 'unchanged'}")
        if self.results_differ:
            parts.append(f"tool results differ in {self.results_differ} (structural match)")
        matched = f"{self.loose}/{self.replayed} requests matched on the conversation"
        return f"{self._versions()}: {', '.join(parts)}; {matched}"


def _clip(items: list[str], limit: int = 12) -> list[str]:
    return items if len(items) <= limit else [*items[:limit], f"(+{len(items) - limit} more)"]
