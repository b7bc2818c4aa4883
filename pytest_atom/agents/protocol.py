"""The seam between the harness and an agent: what any agent kind must offer.

The harness codes against `Agent`; each kind of executor is a module holding an `AgentKind`
(`claude_code.runner`: the Claude Code CLI; `sdk`: a Claude Agent SDK app), found through
the ``pytest_atom.agents`` entry-point group (`agent_kind`), where another distribution adds
its own. A spec picks one with ``agent: {NAME: VALUE}`` (unset: `DEFAULT_KIND`). Every agent
answers with the same `IterationRecord`, folded from Claude Code's stream-json, so checks,
budgets, traces and reports never learn which kind ran.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from pytest_atom.errors import AtomError
from pytest_atom.extensions import declared, load_one

if TYPE_CHECKING:
    from pytest_atom.agents.claude_code.session import AgentSession
    from pytest_atom.results.record import IterationRecord
    from pytest_atom.wire.roles import Role

__all__ = ["DEFAULT_KIND", "GROUP", "Agent", "AgentKind", "SessionRunner", "agent_kind"]

#: The agent-kind entry-point group (`pytest_atom.extensions`).
GROUP = "pytest_atom.agents"
#: The executor of a spec without ``agent:``.
DEFAULT_KIND = "claude-code"


class SessionRunner(Protocol):
    """What the atom loop (`AtomRuntime`) needs: one call of a session in a folder."""

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
    """An agent the harness can run, continue and ask for structured answers; `run`'s pinned
    `session_id` starts the session, or continues it once it exists (`use_context`)."""

    #: Whose session this is; every model request it sends is marked so (wire.roles).
    role: Role
    #: Does the atom loop iterate it until the exit signal? (An SDK app loops on its own.)
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


@runtime_checkable  # `extensions.load_one` checks each entry point against it
class AgentKind(Protocol):
    """One kind of executor: a spec's ``agent: {NAME: VALUE}`` names it, and `executor`
    builds it from VALUE for each run."""

    @property
    def name(self) -> str:
        """What a spec's ``agent:`` key names it by: ``claude-code``, ``sdk``."""
        ...

    @property
    def noun(self) -> str:
        """What reports call it: ``the Claude Code CLI``, ``the SDK app``."""
        ...

    def executor(self, value: Any, session: AgentSession, import_paths: Sequence[Path]) -> Agent:
        """The executor for `value` (the spec's VALUE; None without ``agent:``), running
        with `session` (what the Claude Code CLI would run with); `import_paths`: where a
        spec's own code is imported from, before the installed packages."""
        ...

    def source(self, value: Any, import_paths: Sequence[Path]) -> Path | None:
        """The file of code `value` runs beside pytest-atom, which the outcome cache's input
        digest reads (None: none, or it cannot be found)."""
        ...


@cache
def agent_kind(name: str) -> AgentKind:
    """The installed agent kind `name`; AtomError naming the installed ones otherwise."""
    kind: AgentKind | None = load_one(GROUP, name, AgentKind)
    if kind is None:
        names = ", ".join(p.name for p in declared(GROUP))
        raise AtomError(f"no agent kind {name!r} is installed (installed: {names})")
    return kind
