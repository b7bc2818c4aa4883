"""What a replay tolerated and what it could not answer: the run's drift (what Claude Code
changed around a conversation that still matched, filled by `replay.matching.note_served`:
a result, not a reason to fail), and each `ReplayDivergence`.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from typing import Any

from pytest_atom.words import plural

#: A setting the recorded or the live request did not have.
ABSENT = "(absent)"


def _short(value: Any, limit: int = 40) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass
class Drift:
    """What Claude Code changed around a conversation that still matched, summed per run:
    each part the CLI owns, named when it changed."""

    recorded_version: str | None = None
    live_version: str | None = None
    #: The workspace's own configuration files changed since recording: they, not Claude
    #: Code, may have changed its requests.
    workspace_changed: tuple[str, ...] = ()
    models: dict[str, str] = field(default_factory=dict)  # recorded -> live
    tools_added: set[str] = field(default_factory=set)
    tools_removed: set[str] = field(default_factory=set)
    tools_reworded: set[str] = field(default_factory=set)  # same name and fields, new text
    system_changed: bool = False
    role_system_changed: bool = False
    settings: dict[str, tuple[Any, Any]] = field(default_factory=dict)  # field: (recorded, live)
    messages_changed: bool = False  # Claude Code's own text in the user's messages
    replayed: int = 0  # requests served from the cassette
    loose: int = 0  # of which matched on the conversation, not byte for byte
    results_differ: int = 0  # of which matched although tool results differ (structural)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def changes(self, *, brief: bool = False) -> list[str]:
        """What Claude Code changed, one phrase a part; empty when nothing did. `brief`
        counts the tools that changed instead of naming them (a table cell's width)."""
        parts = [f"model {a} → {b}" for a, b in sorted(self.models.items())]
        tools = [f"+{t}" for t in sorted(self.tools_added)]
        tools += [f"−{t}" for t in sorted(self.tools_removed)]  # noqa: RUF001 - a minus sign
        if self.tools_reworded:
            tools.append("reworded " + " ".join(_clip(sorted(self.tools_reworded), 6)))
        if tools and brief:
            count = len(self.tools_added) + len(self.tools_removed) + len(self.tools_reworded)
            parts.append(f"tools changed ({count})")
        elif tools:
            parts.append("tools " + " ".join(_clip(tools)))
        if self.system_changed:
            parts.append("system prompt changed")
        if self.role_system_changed:
            parts.append("role-system messages changed")
        settings = [
            f"{path} {_setting(before)} → {_setting(after)}"
            for path, (before, after) in sorted(self.settings.items())
        ]
        parts += _clip(settings, 8)
        if self.messages_changed:
            parts.append("Claude Code's own text in the messages changed")
        if self.results_differ:
            parts.append(
                f"tool results differ in {plural(self.results_differ, 'request')} "
                "(structural match)"
            )
        return parts

    def _versions(self) -> str:
        if self.workspace_changed:
            changed = ", ".join(_clip(list(self.workspace_changed), 3))
            same = self.recorded_version in (None, self.live_version)
            cli = (
                f"Claude Code {self.live_version or '(unknown)'} unchanged"
                if same
                else f"and Claude Code {self.recorded_version} → {self.live_version}"
            )
            return f"the workspace's own configuration changed since recording ({changed}), {cli}"
        if self.versions_differ:
            return (
                f"recorded with Claude Code {self.recorded_version}, "
                f"replayed with {self.live_version or 'an unknown version'}"
            )
        return f"recorded and replayed with Claude Code {self.live_version or '(unknown)'}"

    def counts(self) -> str:
        """``4 requests: 3 identical, 1 matched on the conversation``."""
        identical = self.replayed - self.loose
        return (
            f"{plural(self.replayed, 'request')}: {identical} identical, "
            f"{self.loose} matched on the conversation"
        )

    @property
    def versions_differ(self) -> bool:
        return bool(self.recorded_version) and self.recorded_version != self.live_version

    def line(self) -> str | None:
        """One line per spec; None when nothing Claude Code owns changed."""
        parts = self.changes()
        if not parts:
            return None
        return f"{self._versions()}: {', '.join(parts)}; {self.counts()}"


def _setting(value: Any) -> str:
    return str(value) if value is ABSENT else _short(value)


def _clip(items: list[str], limit: int = 12) -> list[str]:
    return items if len(items) <= limit else [*items[:limit], f"(+{len(items) - limit} more)"]


class ReplayDivergence(str):
    """One request a replay could not match: `detail` describes it, `kind` is the kind of
    request (``turn``, ``reflector``, ``planner``, … or ``mcp`` for an MCP request the tape
    lacks), and `cause` the likely cause, given on the first one only."""

    kind: str
    cause: str | None
    detail: str

    def __new__(cls, detail: str, kind: str = "turn", cause: str | None = None) -> ReplayDivergence:
        text = f"{cause}\n{detail}" if cause else detail
        divergence = super().__new__(cls, text)
        divergence.kind, divergence.cause, divergence.detail = kind, cause, detail
        return divergence

    @property
    def headline(self) -> str:
        """The first line: the cause where there is one, else the request that diverged."""
        return self.cause or self.detail.partition("\n")[0]

    @property
    def agents(self) -> bool:
        """Whether the agent's own session diverged (MCP too), not only the reflector's input."""
        return self.kind != "reflector"
