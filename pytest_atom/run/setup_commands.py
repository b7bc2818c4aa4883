"""A spec's `setup:` commands, run in the attempt folder by Claude Code's own Bash tool.

Set-up (install dependencies, build, seed a database) must obey the rules the agent obeys:
write only in the attempt folder and the spec's `sandbox.write` paths, reach only the
spec's `sandbox.network` domains. Rather than imitate Claude Code's sandbox, the commands
run in it: a `claude -p` session whose model is a two-turn script on a private gateway (one
Bash call with the commands, then "done"), with the spec's confinement and environment.
The session has its own config folder and HOME under ``setup/``, so nothing of it reaches
the agent's conversation or the spec's cassette; replays run it just the same.

Claude Code's Bash tool runs a command for 10 minutes at most; that bounds a set-up.
"""

from __future__ import annotations

import re
import shlex
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_atom.agents.claude_code.runner import claude_env
from pytest_atom.agents.claude_code.sandbox import Confinement
from pytest_atom.cassettes.scrub import Scrubber
from pytest_atom.gateway import Gateway
from pytest_atom.gateway.scripted import scripted
from pytest_atom.model.record import IterationRecord
from pytest_atom.model.spec_types import ClaudeOptions
from pytest_atom.run.factory import claude_code_agent

#: The longest a Bash tool call may run (Claude Code's own ceiling), in milliseconds.
BASH_TIMEOUT_MS = 600_000
_EXIT = re.compile(r"^Exit code (\d+)", re.MULTILINE)
_SESSION = str(uuid.uuid5(uuid.NAMESPACE_URL, "pytest-atom:setup"))


@dataclass(frozen=True)
class SetupOutcome:
    """What the set-up printed (each command after a ``$ `` line) and how it ended."""

    ok: bool
    output: str
    exit_code: int | None = None  # the failing command's, when the shell said
    failed: str | None = None  # the command that failed

    def problem(self) -> str:
        """The harness error a failed set-up becomes: the command, its code, its last lines."""
        tail = "\n".join(self.output.strip().splitlines()[-30:])
        code = f" exited {self.exit_code}" if self.exit_code is not None else " failed"
        which = f"`{self.failed}`" if self.failed else "a command"
        return f"set-up command {which}{code} (the agent did not start):\n{tail}"


def setup_script(commands: Sequence[str]) -> str:
    """One shell script: each command echoed, then run; the first that fails stops it."""
    lines = []
    for command in commands:
        lines.append(f"printf '%s\\n' {shlex.quote('$ ' + command)}")
        lines.append(f"bash -c {shlex.quote(command)} 2>&1 || exit $?")
    return "\n".join(lines)


def run_setup(
    commands: Sequence[str],
    cwd: Path,
    *,
    run_dir: Path,
    confinement: Confinement,
    env: Mapping[str, str],
    pass_env: Sequence[str] = (),
    claude_bin: Path,
    timeout: float,
) -> SetupOutcome:
    """Run `commands` in `cwd` inside the agent's sandbox; `env` is the spec's `env:`, and
    `pass_env` the caller variables it passes (the session's environment is built as the
    agent's: pytest_atom.model.environment)."""
    with Gateway(scripted(_setup_turns(commands))) as gateway:
        session_env = claude_env(
            gateway.url, run_dir / "setup" / "claude-config", pass_env=pass_env
        )
        session_env["GIT_CEILING_DIRECTORIES"] = str(run_dir)
        session_env.update(env)
        runner = claude_code_agent(
            "executor",
            env=session_env,
            options=ClaudeOptions(allowed_tools=("Bash",)),
            claude_bin=claude_bin,
            confinement=confinement,
        )
        record = runner.run("Run the set-up.", cwd, session_id=_SESSION, timeout=timeout)
    _scrub(record, run_dir)
    return _outcome(record, commands)


def _setup_turns(commands: Sequence[str]) -> list[dict[str, Any]]:
    """The script the set-up session follows: one Bash call that runs `commands`, then done."""
    return [
        {
            "tool_use": [
                {
                    "name": "Bash",
                    "input": {
                        "command": setup_script(commands),
                        "description": "Run the spec's set-up commands",
                        "timeout": BASH_TIMEOUT_MS,
                    },
                }
            ]
        },
        {"text": "Set-up done."},
    ]


def _scrub(record: IterationRecord, run_dir: Path) -> None:
    """Set-up output may print a secret (a token in `env:`): scrubbed where it is kept, the
    session's own files in setup/ included, before any report quotes it."""
    scrubber = Scrubber()
    scrubber.scrub_tree(run_dir / "setup")
    for each in record.tool_calls:
        each.result = scrubber.scrub(each.result) if each.result is not None else None
    record.stderr, record.output = scrubber.scrub(record.stderr), scrubber.scrub(record.output)


def _outcome(record: IterationRecord, commands: Sequence[str]) -> SetupOutcome:
    """What the set-up's Bash call gave: its output, and which command failed with which
    exit code; or why Claude Code stopped before running it."""
    call = next((c for c in record.tool_calls if c.name == "Bash"), None)
    if call is None or call.result is None:
        why = "timed out" if record.timed_out else f"exited {record.returncode}"
        detail = (record.stderr or record.output).strip()[-2000:]
        return SetupOutcome(False, f"Claude Code {why} before running the set-up\n{detail}")
    output = call.result
    if not call.is_error:
        return SetupOutcome(True, output)
    code = _EXIT.search(output)
    started = {line[2:] for line in output.splitlines() if line.startswith("$ ")}
    failed = next((c for c in reversed(commands) if c.splitlines()[0] in started), None)
    return SetupOutcome(False, output, int(code.group(1)) if code else None, failed)
