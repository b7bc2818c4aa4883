"""A Claude Agent SDK app as an `Agent`: ``agent: {sdk: "package.module:function"}``.

The app's function builds its own agent with ``claude-agent-sdk`` and runs it on the
prompt, in a child process (`sdk_host`), so the SDK's event loop and imports stay out of
pytest, with the environment a Claude Code agent gets.

Every ``ClaudeAgentOptions`` the app makes is given the harness's parts (`sdk_host`), the
pinned CLI through a shim that copies its stream-json to a log, read as it grows
(`AgentSession.follow`): budgets stop the app as they stop the CLI, and reports read the
same records.

The app loops on its own, so `loops` is False and the harness runs it once per attempt; a
refine attempt runs it again with the reviewer's feedback, continuing the same session.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_atom.agents.claude_code.sandbox import FILE_EDIT_TOOLS
from pytest_atom.agents.claude_code.session import AgentSession
from pytest_atom.agents.sdk_host import app_source
from pytest_atom.environment import importable
from pytest_atom.errors import StructuredSessionError
from pytest_atom.processes import spawn
from pytest_atom.results.record import IterationRecord
from pytest_atom.wire.roles import Role

#: The module the child runs (`python -m`).
HOST_MODULE = "pytest_atom.agents.sdk_host"
_POLL = 0.05  # seconds between looks at the growing log


class SdkAgent:
    """The executor of a spec whose `agent:` is an SDK app; built by `run.factory` with the
    CLI agent's `session`, so an SDK spec is configured like any other."""

    role: Role = "executor"
    loops = False

    def __init__(self, target: str, session: AgentSession, import_paths: Sequence[Path]) -> None:
        self.target = target
        self.session = session
        self.import_paths = [str(p) for p in import_paths]

    @property
    def env(self) -> Mapping[str, str] | None:
        return self.session.env

    def continue_session(self, session_id: str, conversation_dir: Path) -> None:
        self.session.move_session(session_id, conversation_dir)

    def structured(
        self, prompt: str, conversation_dir: Path, *, session_id: str, timeout: float | None
    ) -> tuple[Any, IterationRecord]:
        raise StructuredSessionError(
            "an SDK app is an executor; the reflector and planner are Claude Code sessions"
        )

    def run(
        self,
        prompt: str,
        conversation_dir: Path,
        *,
        session_id: str | None = None,
        use_context: bool = True,
        timeout: float | None = None,
    ) -> IterationRecord:
        cwd = conversation_dir.resolve()
        work = self._work_dir()
        log = work / f"{uuid.uuid4().hex}.jsonl"
        request = work / f"{log.stem}.json"
        request.write_text(json.dumps(self.request(prompt, cwd, session_id, use_context, log)))
        started = time.perf_counter()
        with spawn(
            [sys.executable, "-m", HOST_MODULE, str(request)],
            cwd=cwd,
            # The run's environment (built from parts), able to import this pytest-atom.
            env=None if self.session.env is None else importable(self.session.env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            encoding="utf-8",
            errors="replace",
            start_new_session=True,  # its own process group: a timeout kills the app and CLI
        ) as proc:
            assert proc.stdout is not None
            lines = _grown_lines(log, proc)
            record = self.session.follow(proc, lines, proc.stdout, timeout, noun="the SDK app")
        record.duration = time.perf_counter() - started
        for leftover in (log, request, log.with_suffix(".sh")):
            leftover.unlink(missing_ok=True)  # the log's text is the record's stdout now
        with contextlib.suppress(OSError):
            work.rmdir()  # unless another call is under way
        return record

    def request(
        self, prompt: str, cwd: Path, session_id: str | None, use_context: bool, log: Path
    ) -> dict[str, Any]:
        """What the child needs: the app, the prompt and the harness's options."""
        options = self.session.options
        session = self.session.session_args(session_id, use_context)
        confinement = self.session.confinement
        allowed, args = self.session.tools(cwd)
        scopes: dict[str, list[str]] = {}
        if confinement is not None:
            scopes = {t: confinement.allowed_tools([t], cwd) for t in sorted(FILE_EDIT_TOOLS)}
        return {
            "target": self.target,
            "import_paths": self.import_paths,
            "prompt": prompt,
            "cli_path": str(self._shim(log)),
            "options": {
                "cwd": str(cwd),
                "permission_mode": options.permission_mode,
                "allowed_tools": allowed,
                "model": self.session.model,
                **_session_options(session),
            },
            "cli_args": [*args, *options.args],
            "file_tool_scopes": scopes,
        }

    def _shim(self, log: Path) -> Path:
        """The CLI the app is pointed at: the pinned one, its stdout copied to `log`."""
        shim = log.with_suffix(".sh")
        shim.write_text(
            f'#!/bin/bash\nset -o pipefail\n"{self.session.binary}" "$@" | tee -a "{log}"\n',
            encoding="utf-8",
        )
        shim.chmod(0o700)
        return shim

    def _work_dir(self) -> Path:
        """Scratch files of a call, in the run's CLI config folder (scrubbed after a run)."""
        env = self.session.env or {}
        base = Path(env["CLAUDE_CONFIG_DIR"]) if "CLAUDE_CONFIG_DIR" in env else None
        folder = base / "atom-sdk" if base else Path(tempfile.mkdtemp(prefix="atom-sdk-"))
        folder.mkdir(parents=True, exist_ok=True)
        return folder


def _grown_lines(log: Path, proc: subprocess.Popen[str]) -> Iterator[str]:
    """The lines of `log` as they are written, until `proc` ends."""
    partial, offset = "", 0
    while True:
        done = proc.poll() is not None
        if log.exists():
            with log.open(encoding="utf-8", errors="replace") as handle:
                handle.seek(offset)
                chunk = handle.read()
                offset = handle.tell()
            *complete, partial = (partial + chunk).split("\n")
            yield from (line + "\n" for line in complete)
        if done:
            return
        time.sleep(_POLL)


def _session_options(args: Sequence[str]) -> dict[str, Any]:
    """The session's arguments (AgentSession.session_args) as ClaudeAgentOptions fields."""
    if len(args) == 2 and args[0] == "--resume":
        return {"resume": args[1]}
    if len(args) == 2 and args[0] == "--session-id":
        return {"session_id": args[1]}
    return {"continue_conversation": True} if args == ["-c"] else {}


class SdkKind:
    """The agent kind ``sdk``: ``agent: {sdk: "package.module:function"}``."""

    name = "sdk"
    noun = "the SDK app"

    def executor(self, value: Any, session: AgentSession, import_paths: Sequence[Path]) -> SdkAgent:
        return SdkAgent(value, session, import_paths)

    def source(self, value: Any, import_paths: Sequence[Path]) -> Path | None:
        """The app's module, found where the child process imports it from."""
        return app_source(value, [str(p) for p in import_paths])


#: The SDK app agent kind, as the ``pytest_atom.agents`` entry point names it.
KIND = SdkKind()
