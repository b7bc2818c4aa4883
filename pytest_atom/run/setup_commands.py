"""A spec's `setup:` commands, run in the attempt folder in the agent's confinement.

Set-up obeys the rules the agent obeys (agents.claude_code.srt): the commands run under the
sandbox runtime with the agent's settings; with `sandbox: false` unconfined, as the agent.

Set-up has its own HOME and temp folder under ``setup/``, so nothing of it reaches the
agent's conversation or the cassette. What it made in the attempt folder is kept in the
set-up cache (pytest_atom.setup_cache), restored offline by a run with the same key.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from pytest_atom.agents.claude_code.sandbox import Confinement
from pytest_atom.agents.claude_code.srt import process_sandbox
from pytest_atom.checks.shell import run_shell
from pytest_atom.environment import build_env, network_hint
from pytest_atom.replay.scrub import Scrubber
from pytest_atom.settings.modes import SetupCacheMode
from pytest_atom.setup_cache import entries
from pytest_atom.setup_cache.key import SetupKey, setup_key

_STARTED = "$ "


@dataclass(frozen=True)
class SetupOutcome:
    """What the set-up printed (each command after a ``$ `` line) and how it ended."""

    ok: bool
    output: str
    exit_code: int | None = None  # the failing command's, when the shell said
    failed: str | None = None  # the command that failed
    confined: bool = False  # it ran in the sandbox, whose proxy is its only network
    cache: str | None = None  # "restored <key>", "stored <key>", "not stored: <why>"

    def problem(self) -> str:
        """The harness error a failed set-up becomes: command, code, refusals, last lines."""
        tail = "\n".join(self.output.strip().splitlines()[-30:])
        code = f" exited {self.exit_code}" if self.exit_code is not None else " failed"
        which = f"`{self.failed}`" if self.failed else "a command"
        hint = network_hint(self.failed_output(), self.failed or "") if self.confined else None
        lines = [f"set-up command {which}{code} (the agent did not start):", hint, tail]
        return "\n".join(line for line in lines if line)

    def failed_output(self) -> str:
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


@dataclass(frozen=True)
class SetupCache:
    """Where set-up results are kept and how they come back: the spec's `setup: {inputs:}`
    globs (empty: the whole workspace keys it) and the workspace the attempt copies."""

    root: Path
    mode: SetupCacheMode = "copy"
    inputs: tuple[str, ...] = ()
    source: Path | None = None


def setup_env(
    run_dir: Path, env: Mapping[str, str], pass_env: Sequence[str] = ()
) -> dict[str, str]:
    """Built from parts as the agent's, git kept from the repository above the run folder,
    then the spec's `env:` (the set-up benchmark's plain arm runs with it too)."""
    return {
        **build_env(run_dir / "setup" / "home", pass_env),
        "GIT_CEILING_DIRECTORIES": str(run_dir),
        **env,
    }


def run_setup(
    commands: Sequence[str],
    cwd: Path,
    *,
    run_dir: Path,
    confinement: Confinement,
    env: Mapping[str, str],
    pass_env: Sequence[str] = (),
    timeout: float,
    cache: SetupCache | None = None,
) -> SetupOutcome:
    """Run `commands` in `cwd` inside the agent's confinement, with the spec's `env:` and
    `pass_env`. With a `cache`, an entry for the same key is restored instead, and a
    set-up that ran is kept. SandboxUnavailableError: the sandbox runtime cannot run here."""
    built = setup_env(run_dir, env, pass_env)
    if cache is None:
        return _run(commands, cwd, run_dir, confinement, built, timeout)
    key = setup_key(commands, cwd, built, run_dir=run_dir, inputs=cache.inputs)
    restored = _restore(cache, key, cwd, run_dir)
    if restored is not None:
        return restored
    before = entries.scan(cwd)
    outcome = _run(commands, cwd, run_dir, confinement, built, timeout)
    if not outcome.ok:
        return outcome
    found = entries.changes(before, entries.scan(cwd))
    if found.unkept:
        return replace(outcome, cache=f"not stored: {found.unkept}")
    try:
        entries.store(
            cache.root,
            key,
            cwd,
            found,
            run_dir=run_dir,
            source=cache.source,
            output=outcome.output,
        )
    except OSError as exc:  # a full disk: the run goes on, the next one sets up again
        return replace(outcome, cache=f"not stored: {exc}")
    return replace(outcome, cache=f"stored {key.short}")


def _restore(cache: SetupCache, key: SetupKey, cwd: Path, run_dir: Path) -> SetupOutcome | None:
    """The outcome of restoring `key`'s entry into `cwd`; None: set-up must run (no entry,
    or one that does not fit this workspace or was altered)."""
    entry = entries.load_entry(cache.root, key)
    if entry is None or entries.stale(entry, cwd) is not None:
        return None
    if not entries.intact(entry):
        entries.prune([entry])
        return None
    try:
        entries.restore(entry, cwd, run_dir=run_dir)
    except OSError as exc:
        return SetupOutcome(
            False,
            f"restoring the cached set-up {entry.path} failed: {exc}; delete it with "
            "`atom cache prune --all`, or run with --atom-setup-cache off",
            cache=f"restore failed {key.short}",
        )
    note = f"[set-up restored from the cache ({key.short}): no command ran; it printed]\n"
    return SetupOutcome(
        True, note + str(entry.manifest.get("output", "")), cache=f"restored {key.short}"
    )


def _run(
    commands: Sequence[str],
    cwd: Path,
    run_dir: Path,
    confinement: Confinement,
    built: dict[str, str],
    timeout: float,
) -> SetupOutcome:
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
