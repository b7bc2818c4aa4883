"""Running a command the way checks do: confined, bounded, leaving no process behind.

A check that executes something runs what the agent wrote (a ``conftest.py`` that pytest
imports, a ``package.json`` script), so it runs in the agent's confinement: the sandbox the
harness hands `run_checks`, which `confined` makes `run_shell`'s default while checks run.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import tempfile
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from pathlib import Path
from typing import IO, TYPE_CHECKING, Final, Literal

from pytest_atom.processes import kill_process_tree, spawn

if TYPE_CHECKING:
    from pytest_atom.agents.claude_code.srt import ProcessSandbox

#: The sandbox of the checks running now: a plugin's check that runs the workspace's code is
#: confined too.
_SANDBOX: ContextVar[ProcessSandbox | None] = ContextVar("atom_check_sandbox", default=None)
#: `run_shell`'s default: the sandbox of the checks running now (none outside `run_checks`).
CURRENT: Final = "current"


@contextlib.contextmanager
def confined(sandbox: ProcessSandbox | None) -> Iterator[None]:
    """While inside, `run_shell`'s default sandbox is `sandbox`."""
    token = _SANDBOX.set(sandbox)
    try:
        yield
    finally:
        _SANDBOX.reset(token)


def run_shell(
    run: str,
    cwd: Path,
    env: Mapping[str, str] | None,
    timeout: float,
    *,
    sandbox: ProcessSandbox | Literal["current"] | None = CURRENT,
) -> tuple[int | None, str]:
    """Exit code (None on timeout) and merged output. Output goes to a file, not a pipe, so a
    background child that keeps the pipe open cannot stall us; the whole process tree is
    killed afterwards. `sandbox` defaults to the sandbox of the checks running now."""
    code, output, _ = _run_shell(run, cwd, env, timeout, merge=True, sandbox=sandbox)
    return code, output


def run_shell_split(
    run: str,
    cwd: Path,
    env: Mapping[str, str] | None,
    timeout: float,
    *,
    sandbox: ProcessSandbox | Literal["current"] | None = CURRENT,
) -> tuple[int | None, str, str]:
    """Like run_shell, with stdout and stderr apart."""
    return _run_shell(run, cwd, env, timeout, merge=False, sandbox=sandbox)


def _run_shell(
    run: str,
    cwd: Path,
    env: Mapping[str, str] | None,
    timeout: float,
    *,
    merge: bool,
    sandbox: ProcessSandbox | Literal["current"] | None,
) -> tuple[int | None, str, str]:
    confined = _SANDBOX.get() if sandbox == CURRENT else sandbox
    argv = ["/bin/sh", "-c", run]
    if confined is not None and not isinstance(confined, str):
        argv = confined.wrap(argv)
    # In the run's temp folder (its env's TMPDIR), never the caller's: even Python's probe
    # of a default temp folder leaves that folder changed.
    tmp = (env or {}).get("TMPDIR") or None
    with tempfile.TemporaryFile(dir=tmp) as out, tempfile.TemporaryFile(dir=tmp) as err:
        proc = spawn(  # supervised: a kill -9 of the harness still ends the whole tree
            argv,
            cwd=cwd,
            env=None if env is None else dict(env),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT if merge else err,
            start_new_session=True,
        )
        try:
            code: int | None = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            code = None
            kill_process_tree(proc)  # every descendant, even one that started a session of its own
        with contextlib.suppress(ProcessLookupError, PermissionError):  # group already gone
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        return code, _decoded(out), _decoded(err)


def _decoded(file: IO[bytes]) -> str:
    file.seek(0)
    return file.read().decode("utf-8", errors="replace")
