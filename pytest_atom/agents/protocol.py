"""The seam between the harness and an agent: what any agent kind must offer.

In the spirit of pytest-xdist's scheduling protocol (``xdist/scheduler/protocol.py``): a
small `typing.Protocol` that the harness codes against, one module per implementation
(`claude_code`: the Claude Code CLI; `sdk`: a Claude Agent SDK app), and one factory
(`factory`) that builds them. Every agent answers with the same `IterationRecord`, parsed
from Claude Code's stream-json by the agent's own `parse`, so checks, budgets, traces and
reports never learn which kind ran.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from pytest_atom.events import Event
    from pytest_atom.gateway.roles import Role
    from pytest_atom.results.record import IterationRecord


class SessionRunner(Protocol):
    """What the atom loop (`AtomRuntime`) needs: one call of a session in a folder.

    `ClaudeRunner` (the seed API) and every `Agent` have it.
    """

    def run(
        self,
        prompt: str,
        conversation_dir: Path,
        *,
        session_id: str | None = None,
        use_context: bool = True,
        timeout: float | None = None,
    ) -> IterationRecord: ...


class Agent(SessionRunner, Protocol):
    """An agent the harness can run, continue, ask for structured answers, and read.

    `run` sends `prompt` in `conversation_dir`: a pinned `session_id` starts the session,
    or continues it once it exists (with `use_context`).
    """

    #: Whose session this is; every model request it sends is marked so (gateway.roles).
    role: Role
    #: Does the harness's atom loop iterate it until the exit signal? Claude Code does; an
    #: SDK app runs its own loop, once per attempt, and finishing is its answer.
    loops: bool

    @property
    def env(self) -> Mapping[str, str] | None:
        """Its environment toward the gateway (None: the caller's own, as `atom loop`)."""
        ...

    def continue_session(self, session_id: str, conversation_dir: Path) -> None:
        """Make `session_id` continue in `conversation_dir` (a refine attempt's copy)."""
        ...

    def structured(
        self, prompt: str, conversation_dir: Path, *, session_id: str, timeout: float | None
    ) -> tuple[Any, IterationRecord]:
        """A fresh session that answers in its JSON schema: the answer and the record;
        raises StructuredSessionError (naming the role) when no answer came."""
        ...

    def version(self) -> str:
        """The Claude Code version it drives (what its requests, and cassettes, depend on)."""
        ...

    def parse(self, raw: Mapping[str, Any]) -> list[Event]:
        """One decoded object of the agent's output as agent-neutral events
        (`pytest_atom.events`): the agent's one event parser."""
        ...
