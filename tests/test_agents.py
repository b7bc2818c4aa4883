"""The agent seam: one factory builds every agent, and the harness marks each request's role.

Real CLI against the scripted gateway: the roles are read from the requests as Claude Code
sent them, never guessed from the tools a request offers.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_atom.agents.claude_code.runner import ClaudeRunner
from pytest_atom.agents.protocol import Agent
from pytest_atom.model.roles import ROLE_HEADER, STRUCTURED_OUTPUT
from pytest_atom.model.spec import load_spec
from pytest_atom.run.spec_run import run_spec
from tests.helpers import bash

SPEC = """\
name: task
prompt: Create done.txt saying done.
script: script.yaml
attempts: 1
setup: [echo ready > ready.txt]
criteria:
  - done.txt exists and says done.
accept:
  - file_exists: done.txt
"""
VERDICT = {
    "score": 0.9,
    "decision": "proceed",
    "criteria": [{"criterion": "done.txt exists and says done.", "met": True, "evidence": "ok"}],
    "feedback": "",
}


def write_spec(folder: Path, turns: list[Any], spec: str = SPEC) -> Path:
    (folder / "script.yaml").write_text(
        yaml.safe_dump({"turns": turns, "reflector": [{"verdict": VERDICT}]})
    )
    path = folder / "task.atom.yaml"
    path.write_text(spec)
    return path


@pytest.mark.slow
def test_every_runner_of_a_run_comes_from_the_factory(
    claude_bin: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A judged spec with a `setup:` builds three runners (set-up, executor, reflector),
    each through run.factory: no module constructs one of its own."""
    built: list[tuple[str, str | None]] = []
    original = ClaudeRunner.__init__

    def spy(self: ClaudeRunner, **kwargs: Any) -> None:
        caller = sys._getframe(1).f_globals["__name__"]
        session = kwargs.get("session")
        env = (session.env if session is not None else kwargs.get("env")) or {}
        built.append((caller, env.get("ANTHROPIC_CUSTOM_HEADERS")))
        original(self, **kwargs)

    monkeypatch.setattr(ClaudeRunner, "__init__", spy)
    spec = load_spec(
        write_spec(tmp_path, [bash("echo done > done.txt"), {"text": "EXIT_LOOP_NOW"}])
    )
    result = run_spec(spec, runs_dir=tmp_path / "runs", claude_bin=claude_bin)
    assert result.passed, result.harness_error
    assert {caller for caller, _ in built} == {"pytest_atom.run.factory"}
    headers = sorted(h or "" for _, h in built)
    assert headers == [f"{ROLE_HEADER}: executor"] * 2 + [f"{ROLE_HEADER}: reflector"]


@pytest.mark.slow
def test_the_role_is_the_harness_marker_not_the_tools_offered(
    claude_bin: Path, tmp_path: Path
) -> None:
    """An executor that itself answers in a JSON schema offers StructuredOutput, as the
    reflector does. The old gateway took its requests for the reflector's (and gave them
    the reflector's verdict); the marker sends them to the agent's turns."""
    schema = json.dumps({"type": "object", "properties": {"ok": {"type": "boolean"}}})
    spec_text = SPEC.replace("setup: [echo ready > ready.txt]\n", "") + (
        f"claude: {{args: [--json-schema, '{schema}']}}\n"
    )
    turns = [
        bash("echo done > done.txt", "Writing done.txt."),
        {
            "text": "Done. EXIT_LOOP_NOW",
            "tool_use": [{"name": STRUCTURED_OUTPUT, "input": {"ok": True}}],
        },
        {"text": "Done. EXIT_LOOP_NOW"},
    ]
    spec = load_spec(write_spec(tmp_path, turns, spec_text))
    result = run_spec(spec, runs_dir=tmp_path / "runs", claude_bin=claude_bin)
    assert result.passed, result.harness_error or result.attempts[-1].outcome
    assert result.attempts[0].verdict is not None and result.attempts[0].verdict.score == 0.9
    turns_seen = [
        e.request for e in result.exchanges if e.request.json and e.request.json.get("tools")
    ]
    offered = [STRUCTURED_OUTPUT in str(r.json.get("tools")) for r in turns_seen]
    assert all(offered)  # executor and reflector alike offer it: it cannot tell them apart
    roles = {r.headers.get(ROLE_HEADER) for r in turns_seen}
    assert roles == {"executor", "reflector"}
    assert {r.kind for r in turns_seen} == {"turn", "reflector"}


def test_a_claude_code_agent_meets_the_protocol(claude_bin: Path, tmp_path: Path) -> None:
    from pytest_atom.agents.claude_code.cli import claude_version
    from pytest_atom.run.factory import claude_code_agent

    agent: Agent = claude_code_agent("planner", env={"PATH": "/usr/bin"}, claude_bin=claude_bin)
    assert agent.role == "planner" and agent.loops
    assert agent.env is not None and agent.env["ANTHROPIC_CUSTOM_HEADERS"] == "x-atom-role: planner"
    assert agent.version() == claude_version(claude_bin)
