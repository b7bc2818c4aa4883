"""What an agent did, as one stream of typed events: the one place Claude Code's output is parsed.

``claude -p --output-format stream-json --verbose`` prints one JSON object a line; all the
product knows about a session comes from the events `parse_line` makes of them, so a change
in the CLI's output is met here once. Another kind of agent yields the same events.

What Claude Code 2.1.197 and 2.1.331 print (tests/data/stream_json holds captures of both):

- ``system/init`` starts the call (session id, model, CLI version): `SessionStarted`;
- ``assistant`` carries one content block of a model answer (text, thinking, tool_use; the
  blocks of one answer share its message id) and the answer's usage as it *started*:
  `MessageUsage`, then `AgentError` if the CLI answered with an API error, then one
  `AssistantText` or `ToolCall` a block;
- ``user`` carries tool results: one `ToolResult` each, its text flattened by
  `flatten_tool_result`;
- a subagent's assistant and user events carry the ``parent_tool_use_id`` of the ``Agent``
  call that started it (the events' ``subagent``); ``system/task_started`` and
  ``system/task_notification`` bracket it: `SubagentStarted`, `SubagentEnded`;
- ``system/api_retry``: `ApiRetry`; ``system/permission_denied`` (2.1.330 on): why a call was
  refused, `PermissionDenied`;
- ``result`` ends the call: `Result`, with this call's cost and per-model usage (on
  ``--resume`` 2.1.330 on reports the session's totals; see pytest_atom.cost.usage).

Lines that are not JSON objects (a CLI warning) and event kinds not listed yield nothing.
The harness's own progress events are results (`pytest_atom.results.harness_events`).

Where to add: a stream event is a frozen dataclass here, added to the `Event` union and built
in `parse_event`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = [
    "AgentError",
    "ApiRetry",
    "AssistantText",
    "DeniedCall",
    "Event",
    "MessageUsage",
    "PermissionDenied",
    "Result",
    "SessionStarted",
    "SubagentEnded",
    "SubagentStarted",
    "ToolCall",
    "ToolResult",
    "decode",
    "flatten_tool_result",
    "parse",
    "parse_event",
    "parse_line",
]


@dataclass(frozen=True)
class SessionStarted:
    """A call began (or resumed) the session `session_id` with the main model `model`."""

    session_id: str | None
    model: str | None
    agent_version: str | None


@dataclass(frozen=True)
class MessageUsage:
    """A part of a model answer arrived, with the answer's usage as it started. Every part
    of an answer carries the same `message_id`; `subagent` is the id of the tool call that
    started the subagent this answer belongs to (None: the main session)."""

    message_id: str
    usage: Mapping[str, Any] = field(default_factory=dict, hash=False)
    model: str | None = None
    subagent: str | None = None


@dataclass(frozen=True)
class AssistantText:
    """Prose the model wrote, or its thinking (`thinking` True)."""

    text: str
    message_id: str
    thinking: bool = False
    subagent: str | None = None


@dataclass(frozen=True)
class ToolCall:
    """A tool the model called; `server` for a tool the API runs itself (web search)."""

    id: str
    name: str
    input: Any
    message_id: str
    subagent: str | None = None
    server: bool = False


@dataclass(frozen=True)
class ToolResult:
    """What the agent answered a tool call with, as text (`flatten_tool_result`)."""

    tool_use_id: str
    text: str
    is_error: bool = False
    subagent: str | None = None


@dataclass(frozen=True)
class SubagentStarted:
    """The call `tool_use_id` started a subagent; its events carry that id as `subagent`."""

    tool_use_id: str
    description: str = ""
    subagent_type: str = ""
    prompt: str = ""


@dataclass(frozen=True)
class SubagentEnded:
    """The subagent started by `tool_use_id` ended (`status`: completed, failed, ...)."""

    tool_use_id: str
    status: str = ""
    summary: str = ""


@dataclass(frozen=True)
class PermissionDenied:
    """The agent refused the call `tool_use_id`; `reason` says who: "rule", "workingDir", ..."""

    tool_use_id: str
    tool_name: str
    reason: str


@dataclass(frozen=True)
class ApiRetry:
    """The agent retries a failed model request."""

    attempt: int | None = None
    max_retries: int | None = None
    retry_delay_ms: float | None = None
    error_status: int | None = None
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class AgentError:
    """The agent answered with an API error of kind `kind` instead of a model's reply
    ("authentication_failed": no credentials, which no retry fixes)."""

    kind: str
    subagent: str | None = None


@dataclass(frozen=True)
class DeniedCall:
    """A refused call as the result lists it (the main session's and subagents')."""

    tool_use_id: str
    tool_name: str
    tool_input: Any


@dataclass(frozen=True)
class Result:
    """The call ended. `usage` is the main session's; `model_usage` (per model) and
    `cost_usd` are this call's over every session, subagents included."""

    text: str = ""
    is_error: bool = False
    subtype: str = ""
    num_turns: int = 0
    duration_ms: float = 0.0
    cost_usd: float = 0.0
    usage: Mapping[str, Any] = field(default_factory=dict, hash=False)
    model_usage: Mapping[str, Any] = field(default_factory=dict, hash=False)
    structured_output: Any = field(default=None, hash=False)
    api_error_status: int | None = None
    denied: tuple[DeniedCall, ...] = ()
    session_id: str | None = None
    stop_reason: str | None = None  # the API's last stop reason (``pause_turn``, …)


#: Everything an agent's output tells; consumers match on the types they read.
Event = (
    SessionStarted
    | MessageUsage
    | AssistantText
    | ToolCall
    | ToolResult
    | SubagentStarted
    | SubagentEnded
    | PermissionDenied
    | ApiRetry
    | AgentError
    | Result
)


def flatten_tool_result(content: Any) -> str:
    """A tool result's content as one text: a string as is, a block list's texts joined by
    newlines, any other block as ``[its type]`` (``[image]``). The one normal form: the CLI
    sends the same result as a string or as ``[text]`` blocks from release to release."""
    if isinstance(content, list):
        parts = (
            str(b.get("text", "")) if b.get("type", "text") == "text" else f"[{b.get('type')}]"
            for b in content
            if isinstance(b, Mapping)
        )
        return "\n".join(p for p in parts if p)
    return "" if content is None else str(content)


def parse(lines: Iterable[str] | str) -> Iterator[Event]:
    """The events of a session's output: its lines, or the whole text."""
    for line in lines.splitlines() if isinstance(lines, str) else lines:
        yield from parse_line(line)


def parse_line(line: str) -> list[Event]:
    """The events one line of output carries (none for a line that is no JSON object)."""
    raw = decode(line)
    return [] if raw is None else parse_event(raw)


def decode(line: str) -> dict[str, Any] | None:
    """A line's JSON object, None for anything else (the input of `parse_event`)."""
    try:
        raw = json.loads(line)
    except ValueError:
        return None
    return raw if isinstance(raw, dict) else None


def parse_event(raw: Mapping[str, Any]) -> list[Event]:
    """The events of one decoded stream-json object."""
    kind = raw.get("type")
    if kind == "assistant":
        return _assistant(raw)
    if kind == "user":
        return _user(raw)
    if kind == "result":
        return [_result(raw)]
    if kind == "system":
        return _system(raw)
    return []


def _mapping(value: Any) -> dict[str, Any]:
    return dict(value) if isinstance(value, Mapping) else {}


def _blocks(message: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    content = message.get("content")
    return [b for b in content if isinstance(b, Mapping)] if isinstance(content, list) else []


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


#: Assistant events without a message id count as answers of their own: named by their
#: uuid, else by a counter unique in the process.
_anonymous = iter(range(1, 1 << 62))


def _assistant(raw: Mapping[str, Any]) -> list[Event]:
    message = _mapping(raw.get("message"))
    subagent = _str(raw.get("parent_tool_use_id")) or None
    message_id = str(message.get("id") or f"#{raw.get('uuid') or next(_anonymous)}")
    usage = _mapping(message.get("usage"))
    events: list[Event] = [MessageUsage(message_id, usage, _str(message.get("model")), subagent)]
    if isinstance(raw.get("error"), str):
        events.append(AgentError(raw["error"], subagent))
    for block in _blocks(message):
        kind = block.get("type")
        if kind == "text" and block.get("text"):
            events.append(AssistantText(str(block["text"]), message_id, False, subagent))
        elif kind == "thinking" and block.get("thinking"):
            events.append(AssistantText(str(block["thinking"]), message_id, True, subagent))
        elif kind in ("tool_use", "server_tool_use"):
            events.append(
                ToolCall(
                    str(block.get("id", "")),
                    str(block.get("name", "?")),
                    block.get("input"),
                    message_id,
                    subagent,
                    server=kind == "server_tool_use",
                )
            )
    return events


def _user(raw: Mapping[str, Any]) -> list[Event]:
    subagent = _str(raw.get("parent_tool_use_id")) or None
    return [
        ToolResult(
            str(block.get("tool_use_id", "")),
            flatten_tool_result(block.get("content")),
            bool(block.get("is_error")),
            subagent,
        )
        for block in _blocks(_mapping(raw.get("message")))
        if block.get("type") == "tool_result"
    ]


def _system(raw: Mapping[str, Any]) -> list[Event]:
    subtype = raw.get("subtype")
    if subtype == "init":
        return [
            SessionStarted(
                _str(raw.get("session_id")),
                _str(raw.get("model")),
                _str(raw.get("claude_code_version")),
            )
        ]
    if subtype == "api_retry":
        delay = raw.get("retry_delay_ms")
        return [
            ApiRetry(
                _int(raw.get("attempt")),
                _int(raw.get("max_retries")),
                delay if isinstance(delay, (int, float)) else None,
                _int(raw.get("error_status")),
                None if raw.get("error") is None else str(raw.get("error")),
            )
        ]
    if subtype == "permission_denied":
        return [
            PermissionDenied(
                str(raw.get("tool_use_id")),
                str(raw.get("tool_name") or "?"),
                str(raw.get("decision_reason_type") or ""),
            )
        ]
    # A long Bash command is a task too (`local_bash`): only an agent's starts a subagent.
    agent_task = str(raw.get("task_type") or "local_agent").endswith("agent")
    if subtype == "task_started" and raw.get("tool_use_id") and agent_task:
        return [
            SubagentStarted(
                str(raw["tool_use_id"]),
                str(raw.get("description") or ""),
                str(raw.get("subagent_type") or ""),
                str(raw.get("prompt") or ""),
            )
        ]
    if subtype == "task_notification" and raw.get("tool_use_id"):
        return [
            SubagentEnded(
                str(raw["tool_use_id"]), str(raw.get("status") or ""), str(raw.get("summary") or "")
            )
        ]
    return []


def _result(raw: Mapping[str, Any]) -> Result:
    usage, model_usage, cost = _call_figures(raw)
    listed = raw.get("permission_denials")
    duration = raw.get("duration_ms")
    return Result(
        text=str(raw.get("result") or ""),
        is_error=bool(raw.get("is_error")),
        subtype=str(raw.get("subtype") or ""),
        num_turns=_int(raw.get("num_turns")) or 0,
        duration_ms=float(duration) if isinstance(duration, (int, float)) else 0.0,
        cost_usd=cost,
        usage=usage,
        model_usage=model_usage,
        structured_output=raw.get("structured_output"),
        api_error_status=_int(raw.get("api_error_status")),
        denied=tuple(
            DeniedCall(
                str(d.get("tool_use_id", "")), str(d.get("tool_name", "?")), d.get("tool_input")
            )
            for d in (listed if isinstance(listed, list) else [])
            if isinstance(d, Mapping)
        ),
        session_id=_str(raw.get("session_id")),
        stop_reason=_str(raw.get("stop_reason")),
    )


def _call_figures(raw: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any], float]:
    """The main session's usage, and this call's per-model usage and cost: from 2.1.330 on,
    ``modelUsage`` and ``total_cost_usd`` are a resumed session's running totals and
    ``model_usage_since_last_result`` this call's share; 2.1.197's figures are per call."""
    main_usage = _mapping(raw.get("usage"))
    this_call = raw.get("model_usage_since_last_result")
    given = _mapping(this_call if isinstance(this_call, Mapping) else raw.get("modelUsage"))
    models = {k: v for k, v in given.items() if isinstance(v, Mapping)}
    if isinstance(this_call, Mapping):
        return (
            main_usage,
            models,
            sum((float(v.get("costUSD") or 0.0) for v in models.values()), 0.0),
        )
    cost = raw.get("total_cost_usd")
    return main_usage, models, float(cost) if isinstance(cost, (int, float)) else 0.0
