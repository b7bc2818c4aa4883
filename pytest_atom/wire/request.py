"""A model request as the gateway sees it (`GatewayRequest`), its kind (`request_kind`, the
one classification of a request, live or recorded) and an `Exchange` (how it was answered).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import urlsplit

from pytest_atom.wire.roles import Role, header_role

#: What a request is for. Turns (the executor's), reflector, planner and simulated user turns
#: carry a conversation; the others are Claude Code's own business and match by kind alone.
Kind = Literal["head", "count_tokens", "turn", "reflector", "planner", "user", "side"]


CONVERSATION_KINDS = ("turn", "reflector", "planner", "user")


def request_kind(method: str, endpoint: str, body: Any, role: Role | None) -> Kind:
    """The one classification of a request, live or recorded. A request that offers tools
    is a session's turn, its `role`'s (no marker: the executor's ``turn``); side requests
    (session titles) carry none, and so consume no scripted turn."""
    if method == "HEAD":
        return "head"
    if endpoint.endswith("/count_tokens"):
        return "count_tokens"
    tools = body.get("tools") if isinstance(body, dict) else None
    if tools and endpoint.endswith("/messages"):
        if role is None or role == "executor":
            return "turn"
        return role
    return "side"


@dataclass(frozen=True)
class GatewayRequest:
    """One HTTP request as the CLI sent it; header names are lower-case. Its endpoint, JSON
    body and role are worked out once: a responder reads them many times."""

    method: str
    path: str
    headers: Mapping[str, str]
    body: bytes
    #: The path without its query (``/v1/messages``), what routing keys on.
    endpoint: str = field(init=False, compare=False, repr=False)
    #: The body as JSON, None when it is none.
    json: Any = field(init=False, compare=False, repr=False)
    #: The role the harness marked the request with (see `roles`).
    role: Role | None = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        try:
            parsed = json.loads(self.body) if self.body else None
        except ValueError:
            parsed = None
        object.__setattr__(self, "endpoint", urlsplit(self.path).path)
        object.__setattr__(self, "json", parsed)
        object.__setattr__(self, "role", header_role(self.headers))

    @property
    def session_id(self) -> str | None:
        return self.headers.get("x-claude-code-session-id")

    @property
    def kind(self) -> Kind:
        return request_kind(self.method, self.endpoint, self.json, self.role)


@dataclass
class Exchange:
    """What the gateway saw, for failure reports and timing."""

    request: GatewayRequest
    status: int
    seconds: float
