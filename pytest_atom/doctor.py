"""`atom doctor`'s probes of a machine: each checks one thing a spec run needs and returns a
`Finding`; `run_probes` yields each finding as it is made, so a slow probe never hides the
ones before it.

A probe never prints: the command renders the findings (marks, colour, the summary), so a
test or another front end reads the same facts. A finding names variables, never their
values: a value must never reach a terminal or a CI log.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pytest_atom.agents.claude_code.cli import (
    CLAUDE_CODE_VERSION,
    NODE_MAJOR_NEEDED,
    claude_version,
    find_claude,
)
from pytest_atom.agents.claude_code.runner import claude_env
from pytest_atom.agents.claude_code.sandbox import LINUX_TOOLS, Confinement, require_tools
from pytest_atom.agents.claude_code.session import AgentSession
from pytest_atom.environment import left_out_variables_line, passed
from pytest_atom.errors import ClaudeNotFoundError, ConfigError, SandboxUnavailableError
from pytest_atom.gateway import Gateway, scripted
from pytest_atom.paths import display_path
from pytest_atom.replay.recording import AUTH_VARIABLES
from pytest_atom.results.record import IterationRecord
from pytest_atom.run.factory import claude_code_agent
from pytest_atom.settings.config import load_config
from pytest_atom.spec.types import SandboxOptions
from pytest_atom.words import plural

#: The scripted answer the self-test and the sandbox probe look for in claude's output.
SELF_TEST_TEXT = "pytest-atom self-test EXIT_LOOP_NOW"

#: ok and warn pass; fail makes `atom doctor` exit 1; skip and info are neither.
Status = Literal["ok", "warn", "fail", "skip", "info"]


@dataclass(frozen=True)
class Finding:
    """What one probe saw: its status, its name (``claude``, ``sandbox``, ...) and the detail."""

    status: Status
    name: str
    detail: str


def run_probes(root: Path) -> Iterator[Finding]:
    """Every probe, in `atom doctor`'s order, for the project at `root`."""
    finding, binary = check_claude()
    yield finding
    yield check_credentials()
    yield check_environment()
    yield check_node()
    editable = check_editable_installs(root)
    if editable is not None:
        yield editable
    yield check_self_test(binary)
    yield check_sandbox(binary)


def check_claude() -> tuple[Finding, Path | None]:
    """The `claude` binary pytest-atom would run, its version, and the binary (None: none runs)."""
    source = " (from ATOM_CLAUDE_BIN)" if os.environ.get("ATOM_CLAUDE_BIN") else ""
    try:
        binary = find_claude()
    except ClaudeNotFoundError as exc:
        return Finding("fail", "claude", str(exc)), None
    try:
        version = claude_version(binary)
    except (OSError, subprocess.SubprocessError) as exc:
        return Finding("fail", "claude", f"{binary}{source} does not run: {exc}"), None
    if version == CLAUDE_CODE_VERSION:
        return Finding("ok", "claude", f"{version} at {binary}{source}, the pinned version"), binary
    finding = Finding(
        "warn",
        "claude",
        f"{version} at {binary}{source}, but pytest-atom pins {CLAUDE_CODE_VERSION}: "
        "cassettes recorded with the pinned version warn on replay; "
        "run `atom setup` to install it",
    )
    return finding, binary


def check_credentials() -> Finding:
    """Which credential variables are set (by name), for recording live sessions."""
    present = [name for name in AUTH_VARIABLES if os.environ.get(name)]
    if present:
        detail = f"{', '.join(present)} set, for recording live sessions (replay needs none)"
        return Finding("ok", "credentials", detail)
    detail = (
        f"none of {', '.join(AUTH_VARIABLES)} is set: recording a live session needs one; "
        "replaying cassettes and running scripts need none"
    )
    return Finding("info", "credentials", detail)


def check_environment() -> Finding:
    """Which of the caller's variables a run leaves out, by name, never value."""
    try:
        pass_env = load_config().pass_env
    except ConfigError as exc:
        return Finding("fail", "environment", str(exc))
    line = left_out_variables_line(pass_env)
    kept = len(passed(pass_env))
    if line is None:
        return Finding("ok", "environment", f"runs get {kept} of your variables; none is left out")
    return Finding("info", "environment", f"runs get {kept} of your variables; {line}")


def check_node() -> Finding:
    """Node.js and npm, which `atom setup` needs to install Claude Code."""
    found = []
    for tool in ("node", "npm"):
        path = shutil.which(tool)
        if not path:
            continue
        try:
            out = subprocess.run(
                [path, "--version"], capture_output=True, text=True, timeout=30, check=False
            )
        except (OSError, subprocess.SubprocessError):
            continue
        found.append(f"{tool} {out.stdout.strip() or 'unknown version'}")
    major = re.match(r"node v?(\d+)\.", found[0]) if found else None
    if len(found) == 2 and major and int(major.group(1)) < NODE_MAJOR_NEEDED:
        return Finding(
            "warn",
            "node.js",
            f"{', '.join(found)}: Claude Code {CLAUDE_CODE_VERSION} asks for Node.js >= "
            f"{NODE_MAJOR_NEEDED} (npm warns EBADENGINE when installing it); it runs on older "
            f"ones, but install Node.js {NODE_MAJOR_NEEDED} or newer when you can",
        )
    if len(found) == 2:
        return Finding("ok", "node.js", ", ".join(found))
    missing = "Node.js with npm" if not found else f"npm (found {found[0]})"
    return Finding(
        "info", "node.js", f"{missing} not found: `atom setup` needs npm to install Claude Code"
    )


def editable_sources(root: Path) -> list[tuple[str, Path]]:
    """(distribution, source folder) of each editable install from `root` or inside it."""
    found: dict[str, Path] = {}
    for dist in importlib.metadata.distributions():
        try:
            direct = json.loads(dist.read_text("direct_url.json") or "{}")
        except (OSError, ValueError):
            continue
        url = direct.get("url") if isinstance(direct, dict) else None
        info = direct.get("dir_info") if isinstance(direct, dict) else None
        if not (isinstance(info, dict) and info.get("editable") and isinstance(url, str)):
            continue
        if not url.startswith("file://"):
            continue
        source = Path(urllib.request.url2pathname(urllib.parse.urlparse(url).path)).resolve()
        if source == root or root in source.parents:
            found.setdefault(str(dist.metadata["Name"] or source.name), source)
    return sorted(found.items())


def check_editable_installs(root: Path) -> Finding | None:
    """The editable-install trap: a package of the project installed with `pip install -e`
    from the project itself imports the project's checkout, not the attempt folder the
    agent edits, so the agent's tests pass or fail on code it never changed."""
    found = editable_sources(root.resolve())
    if not found:
        return None
    names = ", ".join(f"{name} (from {display_path(source)})" for name, source in found)
    return Finding(
        "warn",
        "editable install",
        f"{names} is installed in editable mode from this project: the agent's tests "
        "would import this checkout, not the attempt folder it edits. Give the agent its "
        "own environment through `setup:` (a virtualenv per attempt, installing the "
        "attempt folder); see the how-to 'A Python project's environment'",
    )


def _scripted_run(
    binary: Path, turns: list[dict[str, Any]], run_dir: Path, confinement: Confinement | None = None
) -> tuple[IterationRecord, int]:
    """`binary` run once against a gateway scripted with `turns`: its record and requests."""
    gateway = Gateway(scripted(turns)).start()
    try:
        env = claude_env(gateway.url, run_dir / "config")
        session = AgentSession(binary, env=env, confinement=confinement)
        record = claude_code_agent("executor", session).run(
            "self-test", run_dir / "work", timeout=60
        )
        return record, len(gateway.exchanges)
    finally:
        gateway.stop()


def _tail(record: IterationRecord, lines: int) -> str:
    said = (record.output.strip() or record.stderr.strip()).splitlines()[-lines:]
    return "".join(f"\n      | {line}" for line in said)


def check_self_test(binary: Path | None) -> Finding:
    """A real `claude -p` run against a local scripted gateway: the whole path a spec takes."""
    if binary is None:
        # Not a failure of its own: the `claude` check above already failed for this.
        return Finding("skip", "self-test", "skipped: no `claude` binary to run")
    started = time.perf_counter()
    try:
        with tempfile.TemporaryDirectory(prefix="atom-doctor-") as tmp:
            (Path(tmp) / "work").mkdir()
            record, requests = _scripted_run(binary, [{"text": SELF_TEST_TEXT}], Path(tmp))
    except OSError as exc:
        return Finding("fail", "self-test", f"could not run {binary}: {exc}")
    elapsed = time.perf_counter() - started
    if record.returncode == 0 and SELF_TEST_TEXT in record.output:
        return Finding(
            "ok",
            "self-test",
            f"claude answered through a local scripted gateway in {elapsed:.1f}s "
            f"({plural(requests, 'request')})",
        )
    if record.timed_out:
        why = "timed out after 60s"
    elif record.returncode != 0:
        why = f"claude exited with {record.returncode}"
    else:
        why = "claude's answer did not contain the scripted text"
    return Finding("fail", "self-test", f"{why} after {elapsed:.1f}s{_tail(record, 5)}")


def check_sandbox(binary: Path | None) -> Finding:
    """Claude Code's own sandbox, which spec runs use by default: its tools, then a real try."""
    try:
        require_tools()
    except SandboxUnavailableError as exc:
        return Finding("fail", "sandbox", str(exc).replace("in the spec", "in each spec"))
    found = (
        ", ".join(f"{tool} at {shutil.which(tool)}" for tool in LINUX_TOOLS)
        if sys.platform.startswith("linux")
        else "Seatbelt"
    )
    if binary is None:
        return Finding("ok", "sandbox", f"{found} (not tried: no `claude` binary)")
    with tempfile.TemporaryDirectory(prefix="atom-doctor-") as tmp:
        run_dir, outside = Path(tmp) / "run", Path(tmp) / "outside"
        work = run_dir / "work"
        work.mkdir(parents=True)
        outside.mkdir()
        command = {"command": f"touch inside; touch {outside}/x"}
        turns: list[dict[str, Any]] = [
            {"tool_use": [{"name": "Bash", "input": command}]},
            {"text": SELF_TEST_TEXT},
        ]
        try:
            confinement = Confinement(run_dir, SandboxOptions())
            record, _ = _scripted_run(binary, turns, run_dir, confinement)
        except OSError as exc:
            return Finding("fail", "sandbox", f"could not run {binary}: {exc}")
        escaped, wrote = (outside / "x").exists(), (work / "inside").exists()
    if record.returncode == 0 and wrote and not escaped:
        return Finding(
            "ok", "sandbox", f"a command's write outside its folder was refused ({found})"
        )
    if record.returncode != 0:
        detail = "claude failed" + _tail(record, 3)
    elif escaped:
        detail = "a command wrote outside its folder: the sandbox does not confine it"
    else:
        detail = "a command could not write inside its own folder"
    return Finding(
        "fail", "sandbox", f"{detail}; set `sandbox: false` in each spec to run unsandboxed"
    )
