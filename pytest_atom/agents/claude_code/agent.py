"""The Claude Code CLI as an `Agent`: `claude -p` through the existing `ClaudeRunner`; `KIND`,
the executor of a spec without ``agent:``."""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_atom.agents.claude_code.cli import claude_version
from pytest_atom.agents.claude_code.runner import ClaudeRunner
from pytest_atom.agents.claude_code.session import AgentSession
from pytest_atom.errors import StructuredSessionError
from pytest_atom.events import Event
from pytest_atom.results.record import IterationRecord
from pytest_atom.wire.roles import Role
from pytest_atom.words import last_words

#: What each structured session answers with, for its error messages.
_ANSWER = {"reflector": "verdict", "planner": "plan", "executor": "answer", "user": "reply"}


class ClaudeCodeAgent:
    """One role's Claude Code sessions; built by `run.factory`, never directly."""

    loops = True

    def __init__(self, role: Role, runner: ClaudeRunner) -> None:
        self.role = role
        self.runner = runner

    @property
    def env(self) -> Mapping[str, str] | None:
        return self.runner.session.env

    def run(
        self,
        prompt: str,
        conversation_dir: Path,
        *,
        session_id: str | None = None,
        use_context: bool = True,
        timeout: float | None = None,
    ) -> IterationRecord:
        return self.runner.run(
            prompt,
            conversation_dir,
            session_id=session_id,
            use_context=use_context,
            timeout=timeout,
        )

    def continue_session(self, session_id: str, conversation_dir: Path) -> None:
        self.runner.move_session(session_id, conversation_dir)

    def structured(
        self, prompt: str, conversation_dir: Path, *, session_id: str, timeout: float | None
    ) -> tuple[Any, IterationRecord]:
        """The one check of a structured session's answer (the reflector's, the planner's):
        a failed session and a missing answer are both the harness's error."""
        record = self.run(
            prompt, conversation_dir, session_id=session_id, use_context=False, timeout=timeout
        )
        if record.returncode != 0 or record.timed_out:
            raise StructuredSessionError(f"the {self.role} session failed: {record.failure(1000)}")
        if record.structured_output is None:
            raise StructuredSessionError(
                f"the {self.role} gave no {_ANSWER[self.role]} (no structured output); its "
                f"last message: {last_words(record.output.strip(), 500) or '(none)'}"
            )
        return record.structured_output, record

    def version(self) -> str:
        return _version(self.runner.session.binary)

    def parse(self, raw: Mapping[str, Any]) -> list[Event]:
        return self.runner.parse(raw)


@functools.cache
def _version(binary: Path) -> str:
    return claude_version(binary)


class ClaudeCode:
    """The agent kind ``claude-code``: the default executor (`protocol.DEFAULT_KIND`)."""

    name = "claude-code"
    noun = "the Claude Code CLI"

    def executor(
        self, value: Any, session: AgentSession, import_paths: Sequence[Path]
    ) -> ClaudeCodeAgent:
        return ClaudeCodeAgent("executor", ClaudeRunner(session=session))

    def source(self, value: Any, import_paths: Sequence[Path]) -> Path | None:
        return None  # the pinned CLI: the digest holds its version


#: The Claude Code agent kind, as the ``pytest_atom.agents`` entry point names it.
KIND = ClaudeCode()
