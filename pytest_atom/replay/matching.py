"""What the match modes (`replay.matchers`) compare of a request, and the drift between.

Matching follows ownership. What the user owns (the task, the atom and reflector prompts,
refine feedback, the workspace as seen through tool results: the *conversation*) decides
a match. What Claude Code owns (system prompt, tool schemas, model and sampling settings,
``cache_control``, its own ``<system-reminder>`` blocks and ``role: system`` entries,
string vs ``[text]`` content, preflights and side requests) changes with every CLI
release, so it is recorded and reported as drift, never a reason to fail.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from pytest_atom.events import flatten_tool_result
from pytest_atom.gateway.messages import read_reply
from pytest_atom.results.drift import ABSENT as DRIFT_ABSENT
from pytest_atom.results.drift import Drift

TOOL_RESULT = "<TOOL_RESULT>"  # a tool result's text, as structural matching sees it
_REMINDER = re.compile(r"<system-reminder>.*?</system-reminder>", re.DOTALL)
#: Texts Claude Code writes into a tool result itself, which differ between releases for
#: the same command ("(Bash completed with no output)" became a note about read files).
_CLI_NOTE = r"\[This command modified \d+ files? you've previously read: [^\]]*\]"
_NO_OUTPUT = re.compile(rf"\(Bash completed with no output\)|{_CLI_NOTE}")
_CLI_SUFFIX = re.compile(rf"\s*{_CLI_NOTE}\s*$")
NO_OUTPUT = "<NO_OUTPUT>"
#: Claude Code's words around the answers to an AskUserQuestion, which differ between
#: releases (and, in 2.1.332, label and free text): only the answers are the user's.
_ANSWERED = re.compile(
    r"(?:Your questions have been answered|The user answered): (?P<answers>.*?)\. "
    r"(?:You can now continue with these answers in mind|Read the answers carefully\b.*)\.",
    re.DOTALL,
)
ANSWERED = "<ANSWERED> "


#: How Claude Code names the tools it defers (MCP tools, rarely used built-ins): one a line
#: in a system message, loaded through ToolSearch (2.1.331 writes the first form).
_DEFERRED = re.compile(
    r"The following deferred tools are now available via ToolSearch\b[^\n]*\n"
    r"((?:[\w.:-]+\n?)+)"
)
_DEFERRED_TAG = re.compile(r"<available-deferred-tools>(.*?)</available-deferred-tools>", re.DOTALL)
_TOOL_NAME = re.compile(r"^[\w.:-]+$")


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def offered_tools(body: Any) -> set[str]:
    """Every tool a request lets the model call: its `tools` array and those it defers."""
    offered = set(tools_by_name(body))
    if not isinstance(body, dict):
        return offered
    for text in _strings([body.get("system"), body.get("messages")]):
        if "deferred" not in text:
            continue
        for listed in [*_DEFERRED.findall(text), *_DEFERRED_TAG.findall(text)]:
            offered.update(
                line.strip() for line in listed.splitlines() if _TOOL_NAME.match(line.strip())
            )
    return offered


def _text(text: str) -> str:
    return _REMINDER.sub("", text).strip()


def _result(content: Any) -> str:
    """A tool result as one text, Claude Code's own notes folded."""
    text = _text(flatten_tool_result(content))
    if _NO_OUTPUT.fullmatch(text):
        return NO_OUTPUT
    if answered := _ANSWERED.fullmatch(text):
        return ANSWERED + answered["answers"]
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


def compared_turns(body: Any, *, blank_results: bool = False) -> list[dict[str, Any]]:
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


#: How Claude Code's billing block starts (system[0]): its version and entry point, not the app's.
_BILLING = "x-anthropic-billing-header:"


def owned_system(body: Any) -> str:
    """The system prompt as an SDK app owns it: every block but Claude Code's billing block."""
    system = body.get("system") if isinstance(body, dict) else None
    if isinstance(system, list):
        texts = [str(b.get("text", "")) for b in system if isinstance(b, dict)]
        return "\n".join(t for t in texts if not t.startswith(_BILLING))
    return str(system or "")


def called_tools(response: str) -> list[str]:
    """The tools a recorded answer calls (SSE or a JSON message)."""
    blocks = read_reply(response, 200).blocks
    return [str(b.get("name")) for b in blocks if b.get("type") == "tool_use"]


def tools_by_name(body: Any) -> dict[str, Any]:
    """The tools in a request's `tools` array by name, in order."""
    tools = body.get("tools") if isinstance(body, dict) else None
    return {str(t.get("name")): t for t in tools or [] if isinstance(t, dict)}


def _properties(tool: Any) -> set[str]:
    schema = tool.get("input_schema") if isinstance(tool, dict) else None
    props = schema.get("properties") if isinstance(schema, dict) else None
    return set(props) if isinstance(props, dict) else set()


def _system_text(body: Any) -> str:
    system = body.get("system") if isinstance(body, dict) else None
    if isinstance(system, list):
        system = "\n".join(str(b.get("text", "")) for b in system if isinstance(b, dict))
    return str(system or "")


def _messages(body: Any, *, system: bool) -> list[Any]:
    """The `role: system` entries (Claude Code's own), or every other message."""
    messages = body.get("messages") if isinstance(body, dict) else None
    if not isinstance(messages, list):
        return []
    return [m for m in messages if isinstance(m, dict) and (m.get("role") == "system") == system]


#: Body fields that are neither the conversation nor a part named on its own: settings.
_NAMED_FIELDS = frozenset({"messages", "system", "tools", "model", "metadata", "stream"})


def _leaves(value: Any, path: str) -> dict[str, Any]:
    """`{"output_config.effort": "medium"}` for `{"output_config": {"effort": "medium"}}`."""
    if isinstance(value, dict) and value:
        out: dict[str, Any] = {}
        for key, item in value.items():
            out |= _leaves(item, f"{path}.{key}")
        return out
    return {path: value}


def note_served(
    drift: Drift, live: Any, recorded: Any, *, exact: bool, results_differ: bool
) -> None:
    """Count one replayed request in `drift`, and name what Claude Code changed in it."""
    with drift.lock:
        drift.replayed += 1
        if exact:
            return
        drift.loose += 1
        drift.results_differ += results_differ
        if not (isinstance(live, dict) and isinstance(recorded, dict)):
            return
        if live.get("model") != recorded.get("model"):
            drift.models[str(recorded.get("model"))] = str(live.get("model"))
        _note_tools(drift, tools_by_name(recorded), tools_by_name(live))
        drift.system_changed |= _system_text(live) != _system_text(recorded)
        drift.role_system_changed |= _messages(live, system=True) != _messages(
            recorded, system=True
        )
        if not results_differ:  # else the messages differ by the user's tool results
            drift.messages_changed |= _messages(live, system=False) != _messages(
                recorded, system=False
            )
        _note_settings(drift, recorded, live)


def _note_tools(drift: Drift, recorded: Mapping[str, Any], live: Mapping[str, Any]) -> None:
    drift.tools_added |= set(live) - set(recorded)
    drift.tools_removed |= set(recorded) - set(live)
    for name in set(live) & set(recorded):
        if live[name] == recorded[name]:
            continue
        added = _properties(live[name]) - _properties(recorded[name])
        removed = _properties(recorded[name]) - _properties(live[name])
        drift.tools_added |= {f"{name}.{p}" for p in added}
        drift.tools_removed |= {f"{name}.{p}" for p in removed}
        if not (added or removed):
            drift.tools_reworded.add(name)


def _note_settings(drift: Drift, recorded: Mapping[str, Any], live: Mapping[str, Any]) -> None:
    old: dict[str, Any] = {}
    new: dict[str, Any] = {}
    for key in (set(recorded) | set(live)) - _NAMED_FIELDS:
        if key in recorded and key in live:
            old |= _leaves(recorded[key], key)
            new |= _leaves(live[key], key)
        else:  # a whole setting added or dropped: said as one
            old[key], new[key] = recorded.get(key, DRIFT_ABSENT), live.get(key, DRIFT_ABSENT)
    for path in set(old) | set(new):
        before, after = old.get(path, DRIFT_ABSENT), new.get(path, DRIFT_ABSENT)
        if before != after:
            drift.settings.setdefault(path, (before, after))
