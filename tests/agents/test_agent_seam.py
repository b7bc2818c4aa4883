"""The agents' seam: one `AgentSession` both agents read, and typed events for `on_event`."""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

from atom_cli.progress import Progress
from pytest_atom.agents.claude_code.runner import ClaudeRunner
from pytest_atom.agents.claude_code.session import AgentSession
from pytest_atom.agents.sdk import SdkAgent
from pytest_atom.results.harness_events import (
    AttemptStarted,
    Decided,
    Planned,
    RolledBack,
    StepCommitted,
    StepStarted,
)
from pytest_atom.results.verdict import Verdict
from pytest_atom.spec.types import ClaudeOptions
from pytest_atom.spec_loader.load import load_spec

SESSION = "0b5d7f3e-4c8a-4d6e-9f10-2a3b4c5d6e7f"


def session_in(tmp_path: Path) -> AgentSession:
    env = {"CLAUDE_CONFIG_DIR": str(tmp_path / "config")}
    options = ClaudeOptions(allowed_tools=("Read",), args=("--foo",))
    return AgentSession(binary=Path("/opt/claude"), env=env, options=options, model="m")


def test_the_cli_runner_and_an_sdk_app_read_one_session(tmp_path: Path) -> None:
    session = session_in(tmp_path)
    runner = ClaudeRunner(session=session)
    app = SdkAgent("app:run", session, [tmp_path])
    assert runner.session is session and app.session is session
    assert (runner.env, app.env) == (session.env, session.env)
    cwd = tmp_path / "work"
    request = app.request("do it", cwd, SESSION, True, tmp_path / "log.jsonl")
    assert request["options"] == {
        "cwd": str(cwd),
        "permission_mode": "acceptEdits",
        "allowed_tools": ["Read"],
        "model": "m",
        "session_id": SESSION,  # no transcript yet: a new pinned session
    }
    assert request["cli_args"] == ["--foo"]
    command = runner.command(runner.session.session_args(SESSION, True), cwd)
    assert command[-3:] == ["--session-id", SESSION, "--foo"]


def test_a_moved_session_resumes_for_both_agents(tmp_path: Path) -> None:
    """The session's bookkeeping lives in the session: once a transcript exists under the
    first folder, moving it makes the second folder resume it."""
    session = session_in(tmp_path)
    first = session.config_dir / "projects" / "-first"
    first.mkdir(parents=True)
    (first / f"{SESSION}.jsonl").write_text("{}\n", encoding="utf-8")
    second = tmp_path / "second"
    session.move_session(SESSION, second)
    assert len(list(session.config_dir.glob(f"projects/*/{SESSION}.jsonl"))) == 2
    assert session.session_args(SESSION, True) == ["--resume", SESSION]
    app = SdkAgent("app:run", session, [])
    options = app.request("again", second, SESSION, True, tmp_path / "log.jsonl")["options"]
    assert options["resume"] == SESSION


def test_atom_runs_progress_prints_the_harness_events(tmp_path: Path) -> None:
    spec_file = tmp_path / "p.atom.yaml"
    spec_file.write_text("prompt: p\nattempts: 3\ncriteria: [it works]\n", encoding="utf-8")
    out = io.StringIO()
    progress = Progress(Console(file=out, width=200), load_spec(spec_file))
    verdict = Verdict(score=0.75, decision="refine", criteria=(), feedback="more")
    for event in (
        StepStarted("implement", 1, 2),
        Planned("plan: 2 steps"),
        AttemptStarted(2, 3),
        Decided("refine", verdict),
        StepCommitted("implement", 2),
        RolledBack("test", "implement"),
    ):
        progress(event)
    assert [line.strip() for line in out.getvalue().splitlines()] == [
        "step implement (1/2)",
        "plan: 2 steps",
        "attempt 2/3",
        "decision: refine, score 0.75",
        "committed step implement (a02)",
        "rollback from test to implement",
    ]
