"""Deterministic acceptance checks, run against a workspace after the agent has finished.

A check answers "did the agent reach the goal?", so its result must convince a person:
besides pass/fail it carries a one-line summary and the raw evidence (file excerpt, command
output, schema errors). A check that cannot be evaluated fails with the reason as evidence
instead of raising, so one broken check never hides the results of the others.

Most kinds look at the workspace; trajectory kinds (`pytest_atom.checks.trajectory`) read
what the agent did, from the attempt's records. Both sit in one registry and run together,
so a spec's `accept:` list means one thing wherever it runs.

A check that executes something (`command`, and a plugin's check that calls `run_shell`)
runs what the agent wrote: a ``conftest.py`` that ``python -m pytest`` imports, a
``package.json`` script. So it runs in the agent's confinement, through the sandbox runtime
the harness hands `run_checks` (agents.claude_code.srt); a ``command`` check that must reach
beyond it says so in the spec (``unsandboxed: true`` with a ``reason:``).
"""

from __future__ import annotations

import contextlib
import difflib
import json
import os
import re
import signal
import subprocess
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from contextvars import ContextVar
from pathlib import Path
from typing import IO, TYPE_CHECKING, Final, Literal

from jsonschema import Draft202012Validator
from jsonschema.validators import validator_for

from pytest_atom.checks.registry import CheckFn, CheckRegistry
from pytest_atom.checks.trajectory import TRAJECTORY_CHECKS, Trajectory
from pytest_atom.errors import CheckError
from pytest_atom.files import contained, read_regular, special_kind
from pytest_atom.processes import kill_process_tree, spawn
from pytest_atom.results.check_result import CheckResult
from pytest_atom.spec.types import BUILTIN_CHECK_KINDS, Check

if TYPE_CHECKING:
    from pytest_atom.agents.claude_code.srt import ProcessSandbox
    from pytest_atom.results.record import IterationRecord

#: The sandbox of the checks running now (`run_checks`): what `run_shell` runs commands in
#: unless told otherwise, so a plugin's check that runs the workspace's code is confined too.
_SANDBOX: ContextVar[ProcessSandbox | None] = ContextVar("atom_check_sandbox", default=None)
#: `run_shell`'s default: the sandbox of the checks running now (none outside `run_checks`).
CURRENT: Final = "current"

HEAD_LINES, TAIL_LINES, EXCERPT_BYTES = 40, 40, 4096
#: Lines of an expected-vs-actual stdout diff kept in evidence: reports show 20 lines of it.
DIFF_LINES = 14
_LISTING_LIMIT = 50
_SKIP_DIRS = {".git", "__pycache__", "node_modules", ".venv", ".pytest_cache"}


def default_registry() -> CheckRegistry:
    """A new registry with the built-in kinds; new each time so callers may extend it."""
    registry = CheckRegistry()
    for kind, fn in _BUILTINS.items():
        registry.register(kind, fn)
    for kind, run_fn in TRAJECTORY_CHECKS.items():
        registry.register_trajectory(kind, run_fn)
    return registry


def run_checks(
    checks: Iterable[Check],
    workspace: Path,
    env: Mapping[str, str] | None = None,
    registry: CheckRegistry | None = None,
    records: Sequence[IterationRecord] | None = None,
    sandbox: ProcessSandbox | None = None,
) -> list[CheckResult]:
    """Every check's result, in order; `records` (the attempt's iterations) are what
    trajectory checks read, folded once for all of them. `sandbox`: where the commands of
    checks run (a spec run's: the agent's confinement); None runs them as they come."""
    registry = registry or default_registry()
    checks = list(checks)
    trajectory = None
    if records is not None and any(registry.reads_run(c.kind) for c in checks):
        trajectory = Trajectory.from_records(records, workspace)
    token = _SANDBOX.set(sandbox)
    try:
        return [registry.run(check, workspace, env, trajectory) for check in checks]
    finally:
        _SANDBOX.reset(token)


def needs_sandbox(checks: Iterable[Check]) -> bool:
    """Whether any of `checks` may execute the workspace's code: a ``command`` check not
    marked ``unsandboxed``, or a plugin's kind (which may call `run_shell`)."""
    return any(
        (c.kind == "command" and not c.params.get("unsandboxed"))
        or c.kind not in BUILTIN_CHECK_KINDS
        for c in checks
    )


# --- built-in checks ------------------------------------------------------------------------


def file_exists(check: Check, workspace: Path, env: Mapping[str, str] | None) -> CheckResult:
    rel = check.params["path"]
    target = _resolve(workspace, rel)
    if not target.exists():
        return CheckResult(check, False, f"{rel} is missing", _listing(workspace))
    return CheckResult(check, True, f"{rel} exists", _describe_file(target))


def file_absent(check: Check, workspace: Path, env: Mapping[str, str] | None) -> CheckResult:
    rel = check.params["path"]
    target = _resolve(workspace, rel)
    if target.exists():
        return CheckResult(check, False, f"{rel} exists but should not", _describe_file(target))
    return CheckResult(check, True, f"{rel} is absent", _listing(workspace))


def file_contains(check: Check, workspace: Path, env: Mapping[str, str] | None) -> CheckResult:
    rel, pattern = check.params["path"], check.params["pattern"]
    target = _resolve(workspace, rel)
    if not target.is_file():
        state = "is a folder, not a file" if target.is_dir() else "is missing"
        return CheckResult(check, False, f"{rel} {state}", _listing(workspace))
    text = _read_text(target)
    match = re.search(pattern, text, re.MULTILINE)
    if match is None:
        return CheckResult(check, False, f"/{pattern}/ not found in {rel}", _head(text))
    line = text.count("\n", 0, match.start()) + 1
    return CheckResult(check, True, f"{rel} matches /{pattern}/ at line {line}", _head(text))


def command(check: Check, workspace: Path, env: Mapping[str, str] | None) -> CheckResult:
    p = check.params
    run, expected, timeout = p["run"], p["exit_code"], float(p["timeout"])
    exact = p.get("stdout")
    sandbox: ProcessSandbox | Literal["current"] | None = None if p.get("unsandboxed") else CURRENT
    if exact is None:
        code, output = run_shell(run, workspace, env, timeout, sandbox=sandbox)
        stdout = stderr = ""
    else:  # stdout compared on its own, so stderr's warnings cannot spoil it
        code, stdout, stderr = run_shell_split(run, workspace, env, timeout, sandbox=sandbox)
        output = stdout + stderr
    evidence = f"$ {run}\n{_tail(output)}"
    if code is None:
        return CheckResult(check, False, f"`{run}` timed out after {timeout:g}s", evidence)
    evidence += f"\n[exit code {code}]"
    if code != expected:
        return CheckResult(check, False, f"`{run}` exited {code}, expected {expected}", evidence)
    if p.get("output") is not None and not re.search(p["output"], output, re.MULTILINE):
        return CheckResult(
            check,
            False,
            f"`{run}` exited {code} but its output does not match /{p['output']}/",
            evidence,
        )
    if exact is not None and exact.rstrip("\n") != stdout.rstrip("\n"):
        summary, diff = stdout_diff(exact, stdout)
        more = f"\n[stderr]\n{_tail(stderr, 3)}" if stderr.strip() else ""
        return CheckResult(
            check,
            False,
            f"`{run}` exited {code} but {summary}",
            f"$ {run}\n{diff}{more}\n[exit code {code}]",
        )
    return CheckResult(check, True, f"`{run}` exited {code}", evidence)


def stdout_diff(expected: str, actual: str, limit: int = DIFF_LINES) -> tuple[str, str]:
    """A one-line summary and a unified diff of expected vs actual stdout, trailing
    newlines ignored; the diff is cut after `limit` lines, so that reports, which show an
    evidence's last lines, still show its start."""
    want, got = expected.rstrip("\n").split("\n"), actual.rstrip("\n").split("\n")
    first = next(
        (i for i, (a, b) in enumerate(zip(want, got, strict=False)) if a != b),
        min(len(want), len(got)),
    )
    summary = (
        f"its stdout differs from the expected one from line {first + 1} "
        f"({len(want)} line{'s' * (len(want) != 1)} expected, {len(got)} printed)"
    )
    lines = list(difflib.unified_diff(want, got, "expected stdout", "actual stdout", lineterm=""))
    if len(lines) > limit:
        lines = [*lines[:limit], f"… ({len(lines) - limit} more diff lines)"]
    return summary, "\n".join(lines)


def json_schema(check: Check, workspace: Path, env: Mapping[str, str] | None) -> CheckResult:
    rel, schema = check.params["path"], check.params["schema"]
    target = _resolve(workspace, rel)
    if not target.is_file():
        return CheckResult(check, False, f"{rel} is missing", _listing(workspace))
    text = _read_text(target)
    try:
        data = json.loads(text)
    except ValueError as exc:
        return CheckResult(check, False, f"{rel} is not valid JSON: {exc}", _head(text))
    validator = validator_for(schema, default=Draft202012Validator)(schema)
    errors = sorted(validator.iter_errors(data), key=lambda e: list(map(str, e.absolute_path)))
    if not errors:
        return CheckResult(check, True, f"{rel} matches the schema", _head(text))
    shown = "\n".join(f"{e.json_path}: {e.message}" for e in errors[:20])
    plural = "s" if len(errors) > 1 else ""
    return CheckResult(
        check,
        False,
        f"{rel} does not match the schema ({len(errors)} error{plural})",
        f"{shown}\n--- {rel} ---\n{_head(text)}",
    )


_BUILTINS: dict[str, CheckFn] = {
    "file_exists": file_exists,
    "file_absent": file_absent,
    "file_contains": file_contains,
    "command": command,
    "json_schema": json_schema,
}


# --- helpers --------------------------------------------------------------------------------


def _resolve(workspace: Path, rel: str) -> Path:
    """Resolve symlinks before the containment test, so a link cannot lead a check outside."""
    target = contained(workspace, rel)
    if target is None:
        root = workspace.resolve()
        raise CheckError(
            f"refused: {rel!r} resolves to {(root / rel).resolve()}, outside the workspace {root}"
        )
    return target


def run_shell(
    run: str,
    cwd: Path,
    env: Mapping[str, str] | None,
    timeout: float,
    *,
    sandbox: ProcessSandbox | Literal["current"] | None = CURRENT,
) -> tuple[int | None, str]:
    """Exit code (None on timeout) and merged output. Output goes to a file, not a pipe, so a
    background child that keeps the pipe open cannot stall us; the whole process group is
    killed afterwards so no stray process outlives the check.

    `sandbox`: where it runs; by default the sandbox of the checks running now (`run_checks`),
    so a plugin's check that calls this is confined as a ``command`` check is."""
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


def _read_text(path: Path) -> str:
    """A regular file's text; a device, FIFO or socket is never opened (a FIFO would block
    the check, a character device never end)."""
    data = read_regular(path)
    if data is None:
        raise CheckError(f"cannot read {path}: not a readable regular file")
    return data.decode("utf-8", errors="replace")


def _describe_file(path: Path) -> str:
    if path.is_dir():
        return f"{path.name}/ is a folder:\n{_listing(path)}"
    kind = special_kind(path.lstat().st_mode)
    if kind is not None:
        return f"{path.name} is {kind}, not read"
    return f"{path.stat().st_size} bytes\n{_head(_read_text(path))}"


def _head(text: str) -> str:
    lines = text.splitlines()
    shown = "\n".join(lines[:HEAD_LINES])[:EXCERPT_BYTES]
    more = len(lines) - shown.count("\n") - 1
    return shown + (f"\n… ({more} more lines)" if more > 0 else "")


def _tail(text: str, limit: int = TAIL_LINES) -> str:
    lines = text.splitlines()
    shown = "\n".join(lines[-limit:])[-EXCERPT_BYTES:]
    cut = len(lines) - shown.count("\n") - 1
    return (f"… ({cut} earlier lines)\n" if cut > 0 else "") + shown


def _listing(folder: Path) -> str:
    """What is there instead, to show e.g. a file written under the wrong name or folder."""
    entries: list[str] = []
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS)
        rel = Path(dirpath).relative_to(folder)
        entries += [f"{(rel / d).as_posix()}/" for d in dirnames]
        entries += [(rel / f).as_posix() for f in sorted(filenames)]
        if len(entries) > _LISTING_LIMIT:
            break
    if not entries:
        return f"{folder} is empty"
    more = "\n… and more" if len(entries) > _LISTING_LIMIT else ""
    return f"contents of {folder}:\n" + "\n".join(sorted(entries)[:_LISTING_LIMIT]) + more
