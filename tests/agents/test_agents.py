"""The agent seam: one factory builds every agent, and the harness marks each request's role.

Real CLI against the scripted gateway: the roles are read from the requests as Claude Code
sent them, never guessed from the tools a request offers.
"""

from __future__ import annotations

import json
import sys
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_atom.agents.claude_code.runner import ClaudeRunner
from pytest_atom.agents.protocol import Agent
from pytest_atom.run.spec_run import run_spec
from pytest_atom.spec_loader.load import load_spec
from pytest_atom.wire.roles import ROLE_HEADER, STRUCTURED_OUTPUT
from tests.helpers import bash, once_per_session

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
#: Below the threshold (0.8), with an unmet criterion: the run fails on the verdict alone.
VERDICT = {
    "score": 0.75,
    "decision": "refine",
    "criteria": [
        {"criterion": "done.txt exists and says done.", "met": False, "evidence": "it says DONE"}
    ],
    "feedback": "Write it in lower case.",
    "flaky": ["the clock"],
}


def write_spec(folder: Path, turns: list[Any], spec: str = SPEC) -> Path:
    (folder / "script.yaml").write_text(
        yaml.safe_dump({"turns": turns, "reflector": [{"verdict": VERDICT}]})
    )
    path = folder / "task.atom.yaml"
    path.write_text(spec)
    return path


#: The executor answers in a JSON schema of its own: it offers StructuredOutput, as the
#: reflector does.
SCHEMA = json.dumps({"type": "object", "properties": {"ok": {"type": "boolean"}}})
TURNS = [
    bash("echo done > done.txt", "Writing done.txt."),
    {
        "text": "Done. EXIT_LOOP_NOW",
        "tool_use": [{"name": STRUCTURED_OUTPUT, "input": {"ok": True}}],
    },
    {"text": "Done. EXIT_LOOP_NOW"},
]


def judged_run(folder: Path, claude_bin: Path) -> None:
    """Run a judged spec with a `setup:` and an executor in a JSON schema, noting who built
    each ClaudeRunner and with which role header, and what each model request offered."""
    built: list[tuple[str, str | None]] = []
    original = ClaudeRunner.__init__

    def spy(self: ClaudeRunner, **kwargs: Any) -> None:
        frame = sys._getframe(1)
        caller = frame.f_globals["__name__"]
        while frame is not None and frame.f_globals["__name__"] != "pytest_atom.run.factory":
            frame = frame.f_back  # type: ignore[assignment]
        if frame is None:  # built outside the factory's call: no role header of its own
            caller = f"{caller} (not through pytest_atom.run.factory)"
        session = kwargs.get("session")
        env = (session.env if session is not None else kwargs.get("env")) or {}
        built.append((caller, env.get("ANTHROPIC_CUSTOM_HEADERS")))
        original(self, **kwargs)

    spec = load_spec(
        write_spec(folder, TURNS, SPEC + f"claude: {{args: [--json-schema, '{SCHEMA}']}}\n")
    )
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ClaudeRunner, "__init__", spy)
        result = run_spec(spec, runs_dir=folder / "runs", claude_bin=claude_bin)
    verdict = result.attempts[0].verdict
    facts_report = result.report()
    turns = [e.request for e in result.exchanges if e.request.json and e.request.json.get("tools")]
    facts = {
        "passed": result.passed,
        "error": result.harness_error,
        "report": facts_report,
        "score": verdict.score if verdict is not None else None,
        "built": built,
        "requests": [
            {
                "offers_structured_output": STRUCTURED_OUTPUT in str(r.json.get("tools")),
                "role": r.headers.get(ROLE_HEADER),
                "kind": r.kind,
            }
            for r in turns
        ],
    }
    (folder / "facts.json").write_text(json.dumps(facts), encoding="utf-8")


@pytest.fixture
def judged(tmp_path_factory: pytest.TempPathFactory, claude_bin: Path) -> dict[str, Any]:
    """What `judged_run` saw, run once per session."""
    folder = once_per_session(
        tmp_path_factory, "agents-judged", partial(judged_run, claude_bin=claude_bin)
    )
    facts: dict[str, Any] = json.loads((folder / "facts.json").read_text())
    assert facts["error"] is None, facts["report"]
    return facts


@pytest.mark.slow
def test_every_runner_of_a_run_comes_from_the_factory(judged: dict[str, Any]) -> None:
    """A judged spec with a `setup:` builds two runners (executor, reflector), each through
    run.factory: the reflector's there, the executor's by its agent kind (Claude Code's),
    which the factory asks; no module constructs one of its own, and the set-up, which runs
    in the sandbox runtime (srt), builds none."""
    assert sorted(caller for caller, _ in judged["built"]) == [
        "pytest_atom.agents.claude_code.runner",
        "pytest_atom.run.factory",
    ]
    headers = sorted(h or "" for _, h in judged["built"])
    assert headers == [f"{ROLE_HEADER}: executor", f"{ROLE_HEADER}: reflector"]


@pytest.mark.slow
def test_the_role_is_the_harness_marker_not_the_tools_offered(judged: dict[str, Any]) -> None:
    """An executor that itself answers in a JSON schema offers StructuredOutput, as the
    reflector does. The old gateway took its requests for the reflector's (and gave them
    the reflector's verdict); the marker sends them to the agent's turns."""
    assert judged["score"] == 0.75  # the reflector's verdict went to the reflector
    requests = judged["requests"]
    assert all(r["offers_structured_output"] for r in requests)  # it cannot tell them apart
    assert {r["role"] for r in requests} == {"executor", "reflector"}
    assert {r["kind"] for r in requests} == {"turn", "reflector"}


@pytest.mark.slow
def test_a_verdict_below_the_threshold_fails_the_run_saying_why(judged: dict[str, Any]) -> None:
    """The checks pass; the verdict (0.75, under 0.8) asks to refine, and no attempt is left."""
    assert not judged["passed"]
    report = judged["report"].splitlines()
    assert (
        "  verdict: refine, score 0.75 (passes above 0.8) after 1 attempt (attempts used up)"
        in report
    )
    at = report.index("  unmet: done.txt exists and says done.")
    assert report[at + 1 :][:4] == [
        "      | it says DONE",
        "  feedback:",
        "      | Write it in lower case.",
        "  flaky: the clock",
    ]


def test_a_claude_code_agent_meets_the_protocol(claude_bin: Path, tmp_path: Path) -> None:
    from pytest_atom.agents.claude_code.session import AgentSession
    from pytest_atom.run.factory import claude_code_agent

    agent: Agent = claude_code_agent("planner", AgentSession(claude_bin, env={"PATH": "/usr/bin"}))
    assert agent.role == "planner" and agent.loops
    assert agent.env is not None and agent.env["ANTHROPIC_CUSTOM_HEADERS"] == "x-atom-role: planner"
