"""What one agent's sessions are run with, shared by the CLI agent and an SDK app.

`run.factory` builds one `AgentSession` per agent; `ClaudeRunner` (the CLI agent) and
`SdkAgent` (an SDK app standing in for it) both read it, and both read the agent's output
through `follow`, so records, budgets and callbacks see the same events.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import IO, Any

from pytest_atom.agents.claude_code.cli import claude_version
from pytest_atom.agents.claude_code.sandbox import Confinement
from pytest_atom.cost.limits import Budget
from pytest_atom.events import parse_line
from pytest_atom.paths import cli_slug
from pytest_atom.processes import kill_process_tree
from pytest_atom.results.harness_events import OnEvent
from pytest_atom.results.record import IterationRecord
from pytest_atom.spec.types import ClaudeOptions
from pytest_atom.wire.roles import Role

#: Who answers the agent's ``AskUserQuestion``: its input to its ``answers``, or None.
Answerer = Callable[[Mapping[str, Any]], Mapping[str, str] | None]


@lru_cache(maxsize=8)
def _version_of(binary: Path) -> str:
    return claude_version(binary)


@dataclass(frozen=True)
class AgentSession:
    """The parts of one agent's sessions: built once, read by every agent that runs them.

    `env` None runs the CLI in the caller's own environment; `confinement` None runs it as
    it comes, with whatever settings it finds; `budget` is shared by every call of a run."""

    binary: Path
    env: Mapping[str, str] | None = None
    options: ClaudeOptions = field(default_factory=ClaudeOptions)
    model: str | None = None
    on_event: OnEvent | None = None
    confinement: Confinement | None = None
    budget: Budget | None = None
    #: A conversation's user: each call then takes its message as stream-json and the CLI
    #: asks the harness for AskUserQuestion's answers (docs/explanation/how-a-spec-runs.md).
    answer: Answerer | None = None
    #: Whose sessions these are (`run.factory.role_session` marks their requests so).
    role: Role = "executor"

    @property
    def cli_version(self) -> str:
        return _version_of(self.binary)

    @property
    def config_dir(self) -> Path:
        """The CLI's config folder: where its sessions' transcripts are filed."""
        env = self.env if self.env is not None else os.environ
        return Path(env.get("CLAUDE_CONFIG_DIR") or Path.home() / ".claude")

    def tools(self, cwd: Path) -> tuple[list[str], list[str]]:
        """The allowed tools and the CLI arguments of a session in `cwd`: confined (the
        settings file with the sandbox and the isolation) when there is a confinement."""
        allowed = list(self.options.allowed_tools)
        if self.confinement is None:
            return allowed, []
        allowed = self.confinement.allowed_tools(allowed, cwd)
        args = self.confinement.prepare(
            cwd,
            self.options.allowed_tools,
            self.options,
            env=self.env,
            cli_version=self.cli_version,
        )
        return allowed, args

    def session_args(self, session_id: str | None, use_context: bool) -> list[str]:
        """``--session-id`` to start a pinned session, ``--resume`` once its transcript
        exists (a first call that failed before the CLI wrote one is started again)."""
        if session_id is None:
            return ["-c"] if use_context else []
        exists = any(self.config_dir.glob(f"projects/*/{session_id}.jsonl"))
        return ["--resume", session_id] if exists and use_context else ["--session-id", session_id]

    def move_session(self, session_id: str, conversation_dir: Path) -> None:
        """Make a session resumable from another folder: the CLI resumes one only from the
        folder it was filed under (``projects/<cli_slug of the cwd>``)."""
        config = self.config_dir
        target = config / "projects" / cli_slug(conversation_dir.resolve())
        # Every folder the session went through holds a copy; the newest is the conversation.
        copies = sorted(
            config.glob(f"projects/*/{session_id}.jsonl"), key=lambda p: p.stat().st_mtime_ns
        )
        if copies and copies[-1].parent != target:
            target.mkdir(parents=True, exist_ok=True)
            shutil.copy2(copies[-1], target / copies[-1].name)

    def fold_line(self, record: IterationRecord, line: str, proc: subprocess.Popen[str]) -> bool:
        """Fold one line of the agent's output into `record`, tell `on_event` its events, and
        hold the budget to it; True when it crossed a limit (then `proc`'s tree is stopped)."""
        parsed = parse_line(line)
        if not parsed:
            return False
        # One call per line, not per event: the record and budget, then `on_event`.
        crossed = record.apply_all(parsed, self.budget)
        if self.on_event:
            for event in parsed:
                self.on_event(event)
        if crossed:
            record.limit_exceeded = crossed
            record.is_error = True
            kill_process_tree(proc)
            return True
        return False

    def follow(
        self,
        proc: subprocess.Popen[str],
        lines: Iterable[str],
        errors: IO[str],
        timeout: float | None,
        *,
        noun: str,
        send: Callable[[], None] | None = None,
        hear: Callable[[str, IterationRecord], bool] | None = None,
    ) -> IterationRecord:
        """The record of one call: `lines` (the agent's stream-json, as `proc` writes it)
        folded in until they end or a limit is crossed, `errors` read beside them, and
        `proc`'s tree killed at `timeout` (named as `noun`), on Ctrl-C or on a callback's
        error. `send` gives the agent its input once the clock runs; `hear` takes the lines
        of the harness's own exchange with the CLI. The CLI's stdout and an SDK app's log of
        it are read through this one place."""
        timed_out = threading.Event()

        def kill() -> None:
            timed_out.set()
            kill_process_tree(proc)

        timer = threading.Timer(timeout, kill) if timeout else None
        if timer:
            timer.daemon = True
            timer.start()
        stderr: list[str] = []
        reader = threading.Thread(target=lambda: stderr.append(errors.read()), daemon=True)
        reader.start()
        record = IterationRecord(returncode=0)
        seen: list[str] = []
        try:
            if send:
                send()
            for line in lines:
                seen.append(line)
                if hear and hear(line, record):
                    continue
                if self.fold_line(record, line, proc):
                    break
            proc.wait()
        except BaseException:
            kill_process_tree(proc)  # never leave an agent behind
            raise
        finally:
            if timer:
                timer.cancel()
            reader.join(timeout=5)
        record.returncode = proc.returncode
        record.stdout = "".join(seen)
        record.stderr = "".join(stderr)
        if record.unanswered:
            record.stderr += (
                f"\npytest-atom: the agent asked the user ({record.unanswered}) and nobody "
                "answers: give the spec's user: a model, or answers: for its questions"
            )
        if timed_out.is_set():
            record.timed_out = record.is_error = True
            record.stderr += f"\npytest-atom: {noun} timed out after {timeout:g}s and was killed"
        return record
