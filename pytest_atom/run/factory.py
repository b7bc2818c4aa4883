"""The one place agents are built: the executor, the reflector and the planner of a run,
and the lone sessions of `atom loop`, `atom doctor` and a spec's `setup:`.

Nothing else constructs a `ClaudeRunner`. Building every agent here is what lets the
harness mark each one's requests with its role (gateway.roles) and swap the executor for an
SDK app (`agent: {sdk: ...}`) without the attempt loop, the reflector or the planner
knowing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_atom.agents.claude_code.agent import ClaudeCodeAgent
from pytest_atom.agents.claude_code.cli import find_claude
from pytest_atom.agents.claude_code.runner import ClaudeRunner
from pytest_atom.agents.claude_code.sandbox import Confinement
from pytest_atom.agents.claude_code.srt import process_sandbox
from pytest_atom.agents.protocol import Agent
from pytest_atom.agents.sdk import SdkAgent
from pytest_atom.agents.session import AgentSession
from pytest_atom.cost.limits import Budget
from pytest_atom.gateway.roles import Role, role_env
from pytest_atom.judge.reflector import read_only_options
from pytest_atom.replay.mcp_tape import McpTape
from pytest_atom.results.harness_events import OnEvent
from pytest_atom.spec.types import ClaudeOptions, Spec


def claude_code_agent(
    role: Role,
    *,
    env: Mapping[str, str] | None = None,
    options: ClaudeOptions | None = None,
    model: str | None = None,
    claude_bin: Path | None = None,
    on_event: OnEvent | None = None,
    confinement: Confinement | None = None,
    budget: Budget | None = None,
) -> ClaudeCodeAgent:
    """Claude Code in `role`. With `env` (a gateway's), each request is marked with the
    role; without, the CLI runs in the caller's own environment, toward the real API."""
    session = agent_session(
        role,
        env=env,
        options=options,
        model=model,
        claude_bin=claude_bin,
        on_event=on_event,
        confinement=confinement,
        budget=budget,
    )
    return ClaudeCodeAgent(role, ClaudeRunner(session=session))


def agent_session(
    role: Role,
    *,
    env: Mapping[str, str] | None = None,
    options: ClaudeOptions | None = None,
    model: str | None = None,
    claude_bin: Path | None = None,
    on_event: OnEvent | None = None,
    confinement: Confinement | None = None,
    budget: Budget | None = None,
) -> AgentSession:
    """The parts `role`'s sessions run with, built once and read by the agent that runs
    them (the CLI's runner or an SDK app); with `env`, each request is marked with the role."""
    return AgentSession(
        binary=claude_bin or find_claude(),
        env={**env, **role_env(role)} if env is not None else None,
        options=options or ClaudeOptions(),
        model=model,
        on_event=on_event,
        confinement=confinement,
        budget=budget,
    )


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

    def executor(self) -> Agent:
        """The agent under test: Claude Code, or the spec's SDK app, in its sandbox."""
        session = agent_session(
            "executor",
            env=self.env,
            options=self.spec.claude,
            model=self.model,
            claude_bin=self.claude_bin,
            on_event=self.on_event,
            confinement=Confinement(
                self.run_dir, self.spec.sandbox, self.mcp, servers=process_sandbox
            ),
            budget=self.budget,
        )
        if self.spec.agent is None:
            return ClaudeCodeAgent("executor", ClaudeRunner(session=session))
        paths = [self.spec.root, *([self.project_dir] if self.project_dir else [])]
        return SdkAgent(self.spec.agent.target, session, paths)

    def reflector(self, schema: dict[str, Any]) -> Agent:
        """The judge: read-only Claude Code answering in `schema`; it runs no commands."""
        return self._structured("reflector", schema, self.spec.reflector.model or self.spec.model)

    def planner(self, schema: dict[str, Any]) -> Agent:
        """The planner: read-only Claude Code answering with a plan; it runs no commands."""
        return self._structured("planner", schema, self.model)

    def _structured(self, role: Role, schema: dict[str, Any], model: str | None) -> Agent:
        return claude_code_agent(
            role,
            env=self.env,
            options=read_only_options(schema),
            model=model,
            claude_bin=self.claude_bin,
            confinement=Confinement(self.run_dir, sandbox=None, file_tools_inside=True),
        )
