"""The Claude Code CLI as an `Agent` (`ClaudeRunner`), and `KIND`, the executor of a spec
without ``agent:``.

One `run()` is one iteration of an atom: ``claude -p`` with the prompt on stdin, a pinned
session id so later iterations continue the conversation, and ``--output-format stream-json
--verbose`` so every message, tool call and the final cost arrive as JSON lines.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_atom.agents.claude_code.cli import find_claude
from pytest_atom.agents.claude_code.sandbox import Confinement
from pytest_atom.agents.claude_code.session import AgentSession
from pytest_atom.cost.limits import Budget
from pytest_atom.environment import build_env, placeholder_credentials
from pytest_atom.errors import StructuredSessionError
from pytest_atom.processes import kill_process_tree, spawn
from pytest_atom.results.harness_events import OnEvent
from pytest_atom.results.record import IterationRecord
from pytest_atom.spec.types import ClaudeOptions
from pytest_atom.wire.roles import Role
from pytest_atom.words import last_words

#: What each structured session answers with, for its error messages.
_ANSWER = {"reflector": "verdict", "planner": "plan", "executor": "answer", "user": "reply"}

#: Quiet, reproducible CLI: no auto-update, telemetry or other background traffic.
_QUIET_ENV = {
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    # No git status of an enclosing repository in the system prompt: it differs on every
    # machine and commit, so recorded requests would never match again.
    "CLAUDE_CODE_DISABLE_GIT_INSTRUCTIONS": "1",
    # A stream cut off mid-way is retried as the same streaming request (by the CLI or the
    # runtime), never as a non-streaming one, which a replay would never send.
    "CLAUDE_CODE_DISABLE_NONSTREAMING_FALLBACK": "1",
}


def claude_env(
    base_url: str,
    config_dir: Path,
    auth: Mapping[str, str] | None = None,
    base: Mapping[str, str] | None = None,
    pass_env: Iterable[str] = (),
) -> dict[str, str]:
    """The environment for a CLI that talks only to `base_url` and keeps state in `config_dir`.

    `auth` names the credentials a recording uses (``ANTHROPIC_API_KEY`` and the like): the
    CLI, and all it starts, gets a placeholder under each name, never the value; the
    recording gateway puts it back on the requests it forwards upstream.

    The rest is built from parts (pytest_atom.environment, with `base`, default ours, as the
    caller's), with HOME an empty ``home/`` beside `config_dir` and TMPDIR ``tmp/`` beside
    it: the CLI writes its logs and caches there, and names the same paths in its requests
    on every machine."""
    env = build_env(config_dir.parent / "home", pass_env, caller=base)
    env.update(_QUIET_ENV)
    env["ANTHROPIC_BASE_URL"] = base_url
    env["CLAUDE_CONFIG_DIR"] = str(config_dir)
    # The agent's git must not find the user's repository above the run folder.
    env["GIT_CEILING_DIRECTORIES"] = str(config_dir.parent)
    env.update(placeholder_credentials(auth or ()))
    return env


class ClaudeRunner:
    """Claude Code as an `Agent`: runs `claude -p` in a conversation folder, for one role;
    built by `pytest_atom.run.factory`. It never passes ``--dangerously-skip-permissions``,
    which the CLI refuses as root (CI): tools are granted by permission mode and allow-list."""

    loops = True

    def __init__(
        self,
        *,
        env: Mapping[str, str] | None = None,
        options: ClaudeOptions | None = None,
        model: str | None = None,
        claude_bin: Path | None = None,
        on_event: OnEvent | None = None,
        confinement: Confinement | None = None,
        budget: Budget | None = None,
        session: AgentSession | None = None,
    ) -> None:
        """`session`: the agent's parts as `run.factory` built them; without it, they are
        built from the other arguments (the legacy API, see `AgentSession`)."""
        self.session = session or AgentSession(
            binary=claude_bin or find_claude(),
            env=dict(env) if env is not None else None,
            options=options or ClaudeOptions(),
            model=model,
            on_event=on_event,
            confinement=confinement,
            budget=budget,
        )
        self.role: Role = self.session.role

    @property
    def env(self) -> Mapping[str, str] | None:
        return self.session.env

    def command(self, session_args: list[str], cwd: Path | None = None) -> list[str]:
        options = self.session.options
        cmd = [str(self.session.binary), "-p", "--output-format", "stream-json", "--verbose"]
        if options.bare:
            cmd.append("--bare")
        cmd += ["--permission-mode", options.permission_mode]
        allowed = list(options.allowed_tools)
        if cwd is not None:
            allowed, args = self.session.tools(cwd.resolve())
            cmd += args
        if allowed:
            cmd += ["--allowedTools", ",".join(allowed)]
        if self.session.model:
            cmd += ["--model", self.session.model]
        if self.session.answer is not None:  # a conversation: the harness answers questions
            cmd += ["--input-format", "stream-json", "--permission-prompt-tool", "stdio"]
        return cmd + session_args + list(options.args)

    def continue_session(self, session_id: str, conversation_dir: Path) -> None:
        self.session.move_session(session_id, conversation_dir)

    def run(
        self,
        prompt: str,
        conversation_dir: Path,
        *,
        session_id: str | None = None,
        use_context: bool = True,
        timeout: float | None = None,
    ) -> IterationRecord:
        cmd = self.command(self.session.session_args(session_id, use_context), conversation_dir)
        started = time.perf_counter()
        with spawn(
            cmd,
            cwd=conversation_dir,
            env=self.env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            errors="replace",
            start_new_session=True,  # its own process group, so a timeout kills every child
        ) as proc:
            assert proc.stdin and proc.stdout and proc.stderr
            stdin = proc.stdin
            talk = _Conversation(self.session.answer, proc) if self.session.answer else None

            def send() -> None:
                with contextlib.suppress(BrokenPipeError):
                    if talk:
                        talk.send({"type": "user", "message": {"role": "user", "content": prompt}})
                    else:
                        stdin.write(prompt)
                        stdin.close()

            record = self.session.follow(
                proc,
                proc.stdout,
                proc.stderr,
                timeout,
                noun="claude",
                send=send,
                hear=talk.hear if talk else None,
            )
        record.duration = time.perf_counter() - started
        return record

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


class _Conversation:
    """One call's stream-json exchange with the CLI (``--input-format stream-json
    --permission-prompt-tool stdio``): the user's message in, then the CLI's permission
    requests answered. ``AskUserQuestion`` is answered by the conversation's user (one
    nobody answers is denied and stops the call); any other tool is denied, as ``-p``
    denies it. Stdin closes when the turn's ``result`` arrives, which ends the call."""

    def __init__(self, answer: Any, proc: subprocess.Popen[str]) -> None:
        self.answer = answer
        self.proc = proc

    def send(self, message: Mapping[str, Any]) -> None:
        assert self.proc.stdin
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()

    def hear(self, line: str, record: IterationRecord) -> bool:
        """Act on `line`; True when it was a permission request (not the agent's output)."""
        if '"control_request"' not in line and '"result"' not in line:
            return False
        try:
            event = json.loads(line)
        except ValueError:
            return False
        if event.get("type") == "result":
            self._close()
            return False
        if event.get("type") != "control_request":
            return False
        request = event.get("request") or {}
        if request.get("subtype") == "can_use_tool":
            self._decide(str(event.get("request_id")), request, record)
        return True

    def _decide(self, request_id: str, request: Mapping[str, Any], record: IterationRecord) -> None:
        tool, given = request.get("tool_name"), request.get("input") or {}
        answers = self.answer(given) if tool == "AskUserQuestion" else None
        if answers is not None:
            reply: dict[str, Any] = {
                "behavior": "allow",
                "updatedInput": {**given, "answers": answers},
            }
        else:
            reply = {"behavior": "deny", "message": f"{tool} is not allowed in this session"}
            if tool == "AskUserQuestion":
                reply["message"] = "Nobody answers questions in this session."
        try:
            self.send(
                {
                    "type": "control_response",
                    "response": {"subtype": "success", "request_id": request_id, "response": reply},
                }
            )
        except BrokenPipeError:
            return
        if tool == "AskUserQuestion" and answers is None:
            asked = "; ".join(str(q.get("question")) for q in given.get("questions") or [])
            record.is_error = True
            record.unanswered = asked or "(no question)"
            kill_process_tree(self.proc)

    def _close(self) -> None:
        assert self.proc.stdin
        with contextlib.suppress(OSError):  # BrokenPipeError among them
            self.proc.stdin.close()


class ClaudeCode:
    """The agent kind ``claude-code``: the default executor (`protocol.DEFAULT_KIND`)."""

    name = "claude-code"
    noun = "the Claude Code CLI"

    def executor(
        self, value: Any, session: AgentSession, import_paths: Sequence[Path]
    ) -> ClaudeRunner:
        return ClaudeRunner(session=session)

    def source(self, value: Any, import_paths: Sequence[Path]) -> Path | None:
        return None  # the pinned CLI: the digest holds its version


#: The Claude Code agent kind, as the ``pytest_atom.agents`` entry point names it.
KIND = ClaudeCode()
