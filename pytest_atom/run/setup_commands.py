"""A spec's `setup:` commands, run in the attempt folder in the agent's confinement.

Set-up (install dependencies, build, seed a database) must obey the rules the agent obeys:
write only in the attempt folder, the spec's `sandbox.write` paths and the run's temp folder,
reach only the spec's `sandbox.network` domains, read only the run folder, the system and the
toolchains. The commands run under Anthropic's sandbox runtime (`srt`, the library Claude
Code's own sandbox is built on) with the settings the agent's sandbox gets
(agents.claude_code.srt): one `srt` process, no Claude Code session. With `sandbox: false`
they run unconfined, as the agent then does.

The set-up has its own HOME and temp folder under ``setup/``, so nothing of it reaches the
agent's conversation or the spec's cassette; replays run it just the same.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pytest_atom.agents.claude_code.sandbox import Confinement
from pytest_atom.agents.claude_code.srt import process_sandbox
from pytest_atom.cassettes.scrub import Scrubber
from pytest_atom.judge.checks import run_shell
from pytest_atom.model.environment import build_env
from pytest_atom.model.environment_clues import network_hint

_STARTED = "$ "


@dataclass(frozen=True)
class SetupOutcome:
    """What the set-up printed (each command after a ``$ `` line) and how it ended."""

    ok: bool
    output: str
    exit_code: int | None = None  # the failing command's, when the shell said
    failed: str | None = None  # the command that failed
    confined: bool = False  # it ran in the sandbox, whose proxy is its only network

    def problem(self) -> str:
        """The harness error a failed set-up becomes: the command, its code, what the
        sandbox refused it (and the spec key that allows it), its last lines."""
        tail = "\n".join(self.output.strip().splitlines()[-30:])
        code = f" exited {self.exit_code}" if self.exit_code is not None else " failed"
        which = f"`{self.failed}`" if self.failed else "a command"
        hint = network_hint(self.failed_output(), self.failed or "") if self.confined else None
        lines = [f"set-up command {which}{code} (the agent did not start):", hint, tail]
        return "\n".join(line for line in lines if line)

    def failed_output(self) -> str:
        """The failed command's own lines: from its ``$ `` line on."""
        if self.failed is None:
            return self.output
        start = self.output.rfind(_STARTED + (self.failed.splitlines() or [""])[0])
        return self.output[max(start, 0) :]


def setup_script(commands: Sequence[str]) -> str:
    """One shell script: each command echoed, then run; the first that fails stops it."""
    lines = []
    for command in commands:
        lines.append(f"printf '%s\\n' {shlex.quote(_STARTED + command)}")
        lines.append(f"bash -c {shlex.quote(command)} 2>&1 || exit $?")
    return "\n".join(lines)


def setup_env(
    run_dir: Path, env: Mapping[str, str], pass_env: Sequence[str] = ()
) -> dict[str, str]:
    """The set-up's environment, built from parts as the agent's: its own HOME, XDG folders
    and TMPDIR under ``setup/``, git kept from the repository above the run folder, then the
    spec's `env:`."""
    built = build_env(run_dir / "setup" / "home", pass_env)
    built["GIT_CEILING_DIRECTORIES"] = str(run_dir)
    built.update(env)
    return built


def run_setup(
    commands: Sequence[str],
    cwd: Path,
    *,
    run_dir: Path,
    confinement: Confinement,
    env: Mapping[str, str],
    pass_env: Sequence[str] = (),
    timeout: float,
) -> SetupOutcome:
    """Run `commands` in `cwd` inside the agent's confinement; `env` is the spec's `env:`,
    and `pass_env` the caller variables it passes (pytest_atom.model.environment).

    Raises SandboxUnavailableError (saying how to install it) when the sandbox runtime
    cannot run here."""
    built = setup_env(run_dir, env, pass_env)
    sandbox = process_sandbox(confinement, cwd, built)
    code, output = run_shell(setup_script(commands), cwd, built, timeout, sandbox=sandbox)
    # A secret (a token in `env:`) printed by a command, or left in the set-up's temp folder.
    scrubber = Scrubber()
    scrubber.scrub_tree(run_dir / "setup")
    output = scrubber.scrub(output)
    return _outcome(code, output, commands, timeout, confined=sandbox is not None)


def _outcome(
    code: int | None, output: str, commands: Sequence[str], timeout: float, *, confined: bool
) -> SetupOutcome:
    """Which command failed, with which exit code; or why none could run."""
    if code == 0:
        return SetupOutcome(True, output)
    started = [line[len(_STARTED) :] for line in output.splitlines() if line.startswith(_STARTED)]
    failed = next((c for c in reversed(commands) if (c.splitlines() or [""])[0] in started), None)
    if code is None:
        note = f"\n[timed out after {timeout:g}s]"
        return SetupOutcome(False, output + note, None, failed, confined)
    if failed is None and confined:
        return SetupOutcome(
            False,
            f"the sandbox runtime (srt) exited {code} before running the set-up:\n{output}",
            code,
        )
    return SetupOutcome(False, output, code, failed, confined)
