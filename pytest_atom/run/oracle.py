"""A spec's oracle (``oracle:``, a script that solves the task) run as the agent of an
ordinary attempt: the same workspace copy, set-up, confinement, check environment and
checks a real attempt gets, so `atom validate` proves the checks can pass where an agent's
work is judged.

The oracle is an `Agent` (agents.protocol) whose one session runs the script with bash in
the attempt's folder; it asks no model anything, so the attempt has no gateway behind it,
and no reflector: criteria are judged only where an agent's conversation exists.
"""

from __future__ import annotations

import dataclasses
import shlex
import shutil
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from pytest_atom.agents.claude_code.sandbox import Confinement
from pytest_atom.agents.claude_code.srt import process_sandbox
from pytest_atom.checks.builtin import default_registry
from pytest_atom.checks.registry import CheckRegistry
from pytest_atom.checks.shell import run_shell
from pytest_atom.errors import HarnessError
from pytest_atom.events.agent import Event
from pytest_atom.gateway.roles import Role
from pytest_atom.gateway.server import GatewayRequest, Reply
from pytest_atom.prompts import PromptLoader
from pytest_atom.replay.recording import ModelSource
from pytest_atom.results.record import IterationRecord
from pytest_atom.results.spec_result import Attempt
from pytest_atom.run.execution import HARNESS_ERRORS, AttemptLoop
from pytest_atom.spec.types import SandboxOptions, Spec


@dataclass
class OracleAgent:
    """The spec's oracle as the executor: `bash script` in the attempt's folder, in the
    agent's confinement (`sandbox`), with the checks' environment (`env`)."""

    script: Path
    run_dir: Path
    sandbox: SandboxOptions | None
    env: Mapping[str, str]
    role: Role = "executor"
    loops: bool = False  # one session, its finishing is its answer (as an SDK app's)

    def run(
        self,
        prompt: str,
        conversation_dir: Path,
        *,
        session_id: str | None = None,
        use_context: bool = True,
        timeout: float | None = None,
    ) -> IterationRecord:
        # The task's prompt file the attempt writes is for an agent to read: the oracle
        # starts from the workspace as set up, and its checks see only what it made.
        (conversation_dir / "USER_PROMPT.md").unlink(missing_ok=True)
        confined = process_sandbox(
            Confinement(self.run_dir, self.sandbox), conversation_dir, self.env
        )
        started = time.monotonic()
        command = f"bash {shlex.quote(str(self.script))}"
        # The attempt always bounds its session by the spec's `timeout:`.
        limit = timeout if timeout is not None else float("inf")
        code, output = run_shell(command, conversation_dir, self.env, limit, sandbox=confined)
        took = time.monotonic() - started
        return IterationRecord(
            -1 if code is None else code, output, duration=took, timed_out=code is None
        )

    def continue_session(self, session_id: str, conversation_dir: Path) -> None:
        """An oracle has no conversation to continue."""

    def structured(
        self, prompt: str, conversation_dir: Path, *, session_id: str, timeout: float | None
    ) -> NoReturn:
        raise HarnessError("an oracle answers no structured session")

    def version(self) -> str:
        return ""

    def parse(self, raw: Mapping[str, Any]) -> list[Event]:
        return []


class _NoModel:
    """The oracle's model source: nothing it runs asks a model."""

    def respond(self, request: GatewayRequest) -> Reply:
        raise HarnessError("an oracle's run asks no model")


@dataclass
class OracleRun:
    """The oracle's attempt (None when it could not start), or why the harness could not
    run it, and the checks left out: those that read an agent's tool calls."""

    attempt: Attempt | None
    harness_error: str | None = None
    skipped: int = 0

    @property
    def timed_out(self) -> bool:
        return self.attempt is not None and self.attempt.outcome.reason == "timeout"

    @property
    def record(self) -> IterationRecord | None:
        """The script's run: its exit code and output."""
        return self.attempt.records[-1] if self.attempt and self.attempt.records else None


def run_oracle(spec: Spec, run_dir: Path, registry: CheckRegistry | None = None) -> OracleRun:
    """Run the spec's oracle as one attempt in `run_dir` (its attempt folder is
    ``attempts/a01``), then its checks, as an agent's attempt is run and checked.

    An oracle makes no tool calls: checks that read them (`CheckRegistry.reads_run`) are
    left out, for the spec's script run (or `pytest --atom`) to judge."""
    oracle = spec.oracle
    assert oracle is not None
    registry = registry or default_registry()
    own = tuple(c for c in spec.accept if not registry.reads_run(c.kind))
    skipped = len(spec.accept) - len(own)
    spec = dataclasses.replace(spec, accept=own, criteria=(), attempts=1)
    try:
        run_dir.mkdir(parents=True)
        loop = AttemptLoop(spec, run_dir, PromptLoader(), 0.0, registry, Path("bash"), None)
        script = run_dir / "oracle.sh"  # in the run folder, which the sandbox reads
        shutil.copyfile(oracle, script)
        loop.executor = OracleAgent(script, run_dir, spec.sandbox, loop.check_env)
        loop.attempt_all(ModelSource("scripted", _NoModel()), gateway_url="")
    except HARNESS_ERRORS as exc:
        return OracleRun(None, str(exc), skipped)
    attempt = loop.attempts[0] if loop.attempts else None
    return OracleRun(attempt, loop.harness_error, skipped)
