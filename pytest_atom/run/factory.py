"""The one place agents are built: the executor, the reflector, the planner and the
simulated user of a run, and the lone sessions of `atom loop` and `atom doctor` (only
`AtomRuntime` given no runner builds its own).

Building every agent here lets the harness mark each one's requests with its role
(wire.roles) and take the executor from the spec's agent kind without the attempt loop,
the reflector or the planner knowing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pytest_atom.agents.claude_code.cli import find_claude
from pytest_atom.agents.claude_code.runner import ClaudeRunner
from pytest_atom.agents.claude_code.sandbox import Confinement
from pytest_atom.agents.claude_code.session import AgentSession, Answerer
from pytest_atom.agents.claude_code.srt import process_sandbox
from pytest_atom.agents.protocol import DEFAULT_KIND, Agent, agent_kind
from pytest_atom.cost.limits import Budget
from pytest_atom.judge.reflector import read_only_options
from pytest_atom.replay.mcp_tape import McpTape
from pytest_atom.results.harness_events import OnEvent
from pytest_atom.spec.types import Spec
from pytest_atom.wire.roles import Role, role_env


def claude_code_agent(role: Role, session: AgentSession | None = None) -> ClaudeRunner:
    """Claude Code in `role`, running `session` (default: the pinned CLI in the caller's
    own environment, toward the real API)."""
    return ClaudeRunner(session=role_session(role, session))


def role_session(role: Role, session: AgentSession | None = None) -> AgentSession:
    """`session` as `role`'s, with the role's marker in its environment (wire.roles)."""
    session = session or AgentSession(find_claude())
    env = None if session.env is None else {**session.env, **role_env(role)}
    return replace(session, env=env, role=role)


@dataclass
class AgentFactory:
    """A spec run's agents, all toward one gateway (`env`) and one run folder."""

    spec: Spec
    run_dir: Path
    env: Mapping[str, str]
    claude_bin: Path
    model: str | None = None
    on_event: OnEvent | None = None
    budget: Budget | None = None
    project_dir: Path | None = None  # where an SDK app is imported from, after the spec's folder
    mcp: McpTape | None = None  # the spec's MCP servers' recording or stand-in (record, replay)

    def executor(self, answer: Answerer | None = None) -> Agent:
        """The agent under test, of the spec's kind, in its sandbox; `answer`: its user."""
        session = role_session(
            "executor",
            AgentSession(
                self.claude_bin,
                env=self.env,
                options=self.spec.claude,
                model=self.model,
                on_event=self.on_event,
                confinement=Confinement(
                    self.run_dir, self.spec.sandbox, self.mcp, servers=process_sandbox
                ),
                budget=self.budget,
                answer=answer,
            ),
        )
        choice = self.spec.agent
        kind = agent_kind(DEFAULT_KIND if choice is None else choice.kind)
        value = None if choice is None else choice.value
        return kind.executor(value, session, agent_import_paths(self.spec, self.project_dir))

    def reflector(self, schema: dict[str, Any]) -> Agent:
        return self._structured("reflector", schema, self.spec.reflector.model or self.spec.model)

    def planner(self, schema: dict[str, Any]) -> Agent:
        return self._structured("planner", schema, self.model)

    def user(self, schema: dict[str, Any], model: str) -> Agent:
        return self._structured("user", schema, model)

    def _structured(self, role: Role, schema: dict[str, Any], model: str | None) -> Agent:
        """Read-only Claude Code answering in `schema`; it runs no commands."""
        return claude_code_agent(
            role,
            AgentSession(
                self.claude_bin,
                env=self.env,
                options=read_only_options(schema),
                model=model,
                confinement=Confinement(self.run_dir, sandbox=None, file_tools_inside=True),
            ),
        )


def agent_import_paths(spec: Spec, project_dir: Path | None) -> list[Path]:
    """Where a spec's agent code is imported from, before the installed packages (the run
    and the outcome cache's digest both ask here)."""
    return [spec.root, *([project_dir] if project_dir else [])]
