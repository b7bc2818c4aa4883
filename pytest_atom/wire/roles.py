"""Whose session a model request belongs to: the harness says so, the gateway reads it.

Every agent the harness builds runs with ``ANTHROPIC_CUSTOM_HEADERS`` naming its role, which
Claude Code sends on each of its API requests as ``x-atom-role`` (measured on 2.1.197,
2.1.330 and 2.1.331; an Agent SDK app's CLI inherits it too). The gateway routes scripted
turns and matches replays by it, and recordings keep it. Cassettes recorded before the
marker carry none: `legacy_role` is the old guess, for them alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

Role = Literal["executor", "reflector", "planner", "user"]
ROLES: tuple[Role, ...] = ("executor", "reflector", "planner", "user")
#: The request header that names a request's role (lower-case, as the gateway sees it).
ROLE_HEADER = "x-atom-role"
#: Claude Code's variable for extra request headers ("Name: Value", one a line).
CUSTOM_HEADERS_ENV = "ANTHROPIC_CUSTOM_HEADERS"
#: The tool Claude Code adds for ``--json-schema``: a structured session answers through it.
STRUCTURED_OUTPUT = "StructuredOutput"
#: The title of the planner's answer schema (kept: recorded planner requests carry it).
PLAN_TITLE = "pytest-atom plan"


def role_env(role: Role) -> dict[str, str]:
    """The environment entry that makes a CLI mark each request with `role`."""
    return {CUSTOM_HEADERS_ENV: f"{ROLE_HEADER}: {role}"}


def header_role(headers: Mapping[str, str]) -> Role | None:
    """The role a request's headers name; None without a (known) marker."""
    value = next((v for k, v in headers.items() if k.lower() == ROLE_HEADER), None)
    value = (value or "").strip()
    return next((r for r in ROLES if r == value), None)


def legacy_role(body: Any) -> Role:
    """The role of a recorded request without a marker: one offering StructuredOutput is
    the planner's when its answer schema is the plan's (titled so, or asking for ``steps``
    where a verdict has a ``score``), else the reflector's; any other is the executor's."""
    tools = body.get("tools") if isinstance(body, dict) else None
    for tool in tools or []:
        if isinstance(tool, dict) and tool.get("name") == STRUCTURED_OUTPUT:
            schema = tool.get("input_schema")
            schema = schema if isinstance(schema, dict) else {}
            props = schema.get("properties")
            props = props if isinstance(props, dict) else {}
            planner = schema.get("title") == PLAN_TITLE or (
                "steps" in props and "score" not in props
            )
            return "planner" if planner else "reflector"
    return "executor"
