"""Events: what an agent did, as one stream of typed values.

`agent` is the one place Claude Code's stream-json output is parsed: each line becomes
typed events (a tool call, its result, usage, a subagent, the final result). The harness's
own progress events are results (`pytest_atom.results.harness_events`).

Where to add: a stream event is a frozen dataclass in `agent`, added to its `Event` union and
built in its `parse_event`.
Public: the names in `__all__` (`parse` a call's stdout into events, and their types);
every module here is private.
"""

from __future__ import annotations

from pytest_atom.events.agent import (
    AgentError,
    ApiRetry,
    AssistantText,
    DeniedCall,
    Event,
    MessageUsage,
    PermissionDenied,
    Result,
    SessionStarted,
    SubagentEnded,
    SubagentStarted,
    ToolCall,
    ToolResult,
    flatten_tool_result,
    parse,
    parse_line,
)

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
    "flatten_tool_result",
    "parse",
    "parse_line",
]
