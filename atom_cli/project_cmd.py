"""`atom init` scaffolds a project that `pytest --atom` runs at once; `atom doctor` checks a machine.

`init` never overwrites a file that exists (unless `--force`, and then only its own
scaffold files). Its settings (`paths: [specs]`) go into `.atom/config.yaml`, which only
pytest-atom reads, never into pytest's own ini: a key there makes every pytest without
pytest-atom (a contributor's, tox's, a CI job's) warn "Unknown config option", which
``filterwarnings = error`` turns into an abort.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from pytest_atom.agents.claude_code.cli import (
    CLAUDE_CODE_VERSION,
    NODE_MAJOR_NEEDED,
    claude_version,
    find_claude,
)
from pytest_atom.agents.claude_code.runner import claude_env
from pytest_atom.agents.claude_code.sandbox import LINUX_TOOLS, Confinement, require_tools
from pytest_atom.agents.session import AgentSession
from pytest_atom.environment import left_out_variables_line, passed
from pytest_atom.errors import ClaudeNotFoundError, ConfigError, SandboxUnavailableError
from pytest_atom.gateway import Gateway, scripted
from pytest_atom.paths import display_path
from pytest_atom.replay.recording import AUTH_VARIABLES
from pytest_atom.run.factory import claude_code_agent
from pytest_atom.settings.config import load_config
from pytest_atom.settings.project import find_ini, project_root
from pytest_atom.settings.resolved import ini_note
from pytest_atom.spec.types import SandboxOptions
from pytest_atom.words import plural

# --------------------------------------------------------------------------- atom init

SPEC_DIR = "specs"
CRITERION = 'greeting.txt holds exactly the line "hello from pytest-atom".'

HELLO_SPEC = f"""\
# An example atom: the agent writes one file. `pytest --atom` runs it from its script
# (scripts/hello.yaml): no network, no API key. Every key: the spec schema page of the
# pytest-atom documentation (docs/ in its repository; `mkdocs serve` there).
name: hello
description: The agent creates greeting.txt with a one-line greeting.
prompt: |
  Create a file named greeting.txt in the current folder containing exactly one line:
  hello from pytest-atom
workspace: workspaces/hello      # copied afresh for every run; never modified
script: scripts/hello.yaml       # scripted model turns; delete this line to record a real session
max_iterations: 3
timeout: 120
criteria:                        # judged by the reflector
  - {CRITERION}
accept:                          # deterministic checks, run in the run's copy of the workspace
  - file_exists: greeting.txt
  - file_contains: {{path: greeting.txt, pattern: "^hello from pytest-atom$"}}
"""

HELLO_SCRIPT = f"""\
# Scripted model turns for hello.atom.yaml: the Claude Code CLI runs these tool calls
# for real, so the checks judge a real file.
turns:
  - text: I'll create greeting.txt with the greeting.
    tool_use:
      - name: Bash
        input: {{command: "printf 'hello from pytest-atom\\\\n' > greeting.txt", description: Create greeting.txt}}
  - text: |
      greeting.txt contains "hello from pytest-atom".

      EXIT_LOOP_NOW
reflector:                       # the judge's answer, one verdict per attempt
  - verdict:
      score: 0.9
      decision: proceed
      criteria:
        - criterion: {CRITERION}
          met: true
          evidence: The file_contains check matched the greeting line.
      feedback: ""
      flaky: []
"""

HELLO_README = """\
# hello

The workspace of `specs/hello.atom.yaml`. Every run of the spec works in a fresh copy
of this folder, so the agent never changes it: put the files your task starts from here.
"""

ATOM_CONFIG = """\
# pytest-atom project settings. The values shown are the defaults.
version: "1"
# Where `atom tool` looks for tools, first wins (relative to this folder's parent).
tools_dirs: [.atom/tools, tools]
# Extra prompt folders, searched after .atom/prompts.
# prompt_paths: [prompts/extra]
# Seconds a tool may run before it is killed.
timeout: 120
# Default model for specs; empty means the Claude Code CLI's own. ${VAR:-default} reads
# the environment.
# model: ${ATOM_MODEL:-}
# none (replay only: nothing leaves the machine), once, new_episodes or all.
record_mode: none
# The specs `pytest --atom` and `atom validate` take when no path is named. pytest-atom's
# settings live here, not in pytest's ini, which a pytest without pytest-atom rejects.
paths: [specs]
"""

#: Scaffold files, relative to the project folder; the ones `--force` may overwrite.
SCAFFOLD: dict[str, str] = {
    f"{SPEC_DIR}/hello.atom.yaml": HELLO_SPEC,
    f"{SPEC_DIR}/scripts/hello.yaml": HELLO_SCRIPT,
    f"{SPEC_DIR}/workspaces/hello/README.md": HELLO_README,
    ".atom/config.yaml": ATOM_CONFIG,
}

RUNS_IGNORE = ".atom/runs/"
#: .gitignore lines that already keep the run folders out of git.
_IGNORES_RUNS = {
    prefix + path + suffix
    for prefix in ("", "/")
    for path in (".atom", ".atom/runs")
    for suffix in ("", "/", "/*", "/**")
}
#: The history store's embedded default (with SQLite's -wal and -shm files): every session
#: records into it, and it is the project's own, never committed (a team shares a
#: PostgreSQL store instead, `--atom-history postgresql://…`).
HISTORY_IGNORE = ".atom/history.db*"
_IGNORES_HISTORY = {
    prefix + path + suffix
    for prefix in ("", "/")
    for path, suffixes in ((".atom", ("", "/", "/*", "/**")), (".atom/history.db", ("*",)))
    for suffix in suffixes
}
#: What a failed recording keeps beside the cassette it did not replace: never committed.
PARTIALS_IGNORE = "*.partial.yaml"
_IGNORES_PARTIALS = {PARTIALS_IGNORE, "**/" + PARTIALS_IGNORE, "/**/" + PARTIALS_IGNORE}
#: The last session's results (`atom baseline save` reads them, the baseline is committed)
#: are `.atom/runs/last-run.json`, in the runs folder: `RUNS_IGNORE` keeps them out too.


@click.command()
@click.argument(
    "directory",
    default=".",
    type=click.Path(file_okay=False, path_type=Path),
)
@click.option("--force", is_flag=True, help="Overwrite the example spec and config files.")
def init(directory: Path, force: bool) -> None:
    """Scaffold a pytest-atom project in DIRECTORY (default: the current folder).

    Creates an example spec that `pytest --atom` runs offline from a script, a project
    config (.atom/config.yaml, which names specs/ as the spec folder) and .gitignore
    entries for run folders. pytest's own settings are left alone. Existing files are
    kept; `--force` overwrites the example spec and config only.
    """
    directory.mkdir(parents=True, exist_ok=True)
    notes: list[str] = []
    for relative, content in SCAFFOLD.items():
        click.echo(_write_scaffold(directory, relative, content, force))
    ini = find_ini(directory)
    note = ini and ini_note(ini.values, display_path(ini.path))
    if note:
        notes.append(note.removeprefix("pytest-atom: "))
    # The specs only: a bare `pytest --atom` would run the project's whole suite too.
    run = f"pytest --atom {SPEC_DIR}"
    click.echo(_ignore_runs(directory))
    for note in notes:
        click.echo(f"note: {note}")
    click.echo("")
    click.echo("Next steps:")
    if directory.resolve() != Path.cwd().resolve():
        click.echo(f"  cd {shlex.quote(str(directory))}")
    click.echo(f"  {run:<42} # runs specs/hello.atom.yaml from its script: no network, no API key")
    click.echo("To record a real session of the agent and replay it from then on:")
    click.echo("  export ANTHROPIC_API_KEY=...               # needed for recording only")
    click.echo("  (delete the `script:` line from specs/hello.atom.yaml)")
    click.echo(
        f"  {run + ' --atom-record-mode=once':<42} # writes specs/cassettes/hello/hello.yaml; "
        "later runs replay it offline"
    )


def _write_scaffold(directory: Path, relative: str, content: str, force: bool) -> str:
    path = directory / relative
    existed = path.exists() or path.is_symlink()
    if existed and not force:
        return f"kept existing {relative}"
    if existed and (path.is_symlink() or not path.is_file()):
        # Never write through a link or over a folder: that could reach outside the project.
        return f"kept existing {relative} (not a regular file, even with --force)"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content, encoding="utf-8")
    return f"{'overwrote' if existed else 'created'} {relative}"


def _ignore_runs(directory: Path) -> str:
    """Keep run folders (the last results among them), the history store and failed
    recordings' partial cassettes out of git."""
    path = directory / ".gitignore"
    text = path.read_text(encoding="utf-8") if path.is_file() else ""
    lines = {line.strip() for line in text.splitlines()}
    missing = [
        (comment, pattern)
        for comment, pattern, known in (
            ("pytest-atom run folders and last-run.json", RUNS_IGNORE, _IGNORES_RUNS),
            ("pytest-atom's run history store", HISTORY_IGNORE, _IGNORES_HISTORY),
            ("pytest-atom: what failed recordings kept", PARTIALS_IGNORE, _IGNORES_PARTIALS),
        )
        if not lines & known
    ]
    if not missing:
        return f".gitignore already ignores {RUNS_IGNORE}, {HISTORY_IGNORE} and {PARTIALS_IGNORE}"
    prefix = "" if not text or text.endswith("\n") else "\n"
    with path.open("a", encoding="utf-8") as out:
        out.write(prefix + "".join(f"# {comment}\n{pattern}\n" for comment, pattern in missing))
    added = ", ".join(pattern for _, pattern in missing)
    return f"{'updated' if text else 'created'} .gitignore: {added}"


# ------------------------------------------------------------------------- atom doctor

SELF_TEST_TEXT = "pytest-atom self-test EXIT_LOOP_NOW"

_MARKS = {
    True: {"ok": "✓", "warn": "!", "fail": "✗", "skip": "-", "info": "·"},
    False: {"ok": "ok", "warn": "WARN", "fail": "FAIL", "skip": "SKIP", "info": "info"},
}


@click.command()
def doctor() -> None:
    """Check this machine: the Claude Code CLI, credentials, Node.js and a real CLI run.

    Exits 1 when a check fails; warnings (another CLI version, say) do not.
    """
    tty = sys.stdout.isatty()
    width = max(len(m) for m in _MARKS[tty].values())
    counts = {"ok": 0, "warn": 0, "fail": 0, "skip": 0, "info": 0}

    def report(status: str, name: str, detail: str) -> None:
        counts[status] += 1
        mark = _MARKS[tty][status].ljust(width)
        color = {"ok": "green", "warn": "yellow", "fail": "red"}.get(status)
        click.echo(f"{click.style(mark, fg=color) if tty and color else mark} {name}: {detail}")

    binary = _check_claude(report)
    _check_credentials(report)
    _check_environment(report)
    _check_node(report)
    _check_editable_installs(report, project_root())
    _check_self_test(report, binary)
    _check_sandbox(report, binary)

    failed, warned = counts["fail"], counts["warn"]
    if failed:
        click.echo(f"\n{plural(failed, 'check')} failed.")
        click.get_current_context().exit(1)
    extra = f" ({plural(warned, 'warning')})" if warned else ""
    click.echo(f"\nAll checks passed{extra}.")


Report = Callable[[str, str, str], None]


def _check_claude(report: Report) -> Path | None:
    source = " (from ATOM_CLAUDE_BIN)" if os.environ.get("ATOM_CLAUDE_BIN") else ""
    try:
        binary = find_claude()
    except ClaudeNotFoundError as exc:
        report("fail", "claude", str(exc))
        return None
    try:
        version = claude_version(binary)
    except (OSError, subprocess.SubprocessError) as exc:
        report("fail", "claude", f"{binary}{source} does not run: {exc}")
        return None
    if version == CLAUDE_CODE_VERSION:
        report("ok", "claude", f"{version} at {binary}{source}, the pinned version")
    else:
        report(
            "warn",
            "claude",
            f"{version} at {binary}{source}, but pytest-atom pins {CLAUDE_CODE_VERSION}: "
            "cassettes recorded with the pinned version warn on replay; "
            "run `atom setup` to install it",
        )
    return binary


def _check_credentials(report: Report) -> None:
    # Names only: a value must never reach a terminal or a CI log.
    present = [name for name in AUTH_VARIABLES if os.environ.get(name)]
    if present:
        report(
            "ok",
            "credentials",
            f"{', '.join(present)} set, for recording live sessions (replay needs none)",
        )
    else:
        report(
            "info",
            "credentials",
            f"none of {', '.join(AUTH_VARIABLES)} is set: recording a live session needs one; "
            "replaying cassettes and running scripts need none",
        )


def _check_environment(report: Report) -> None:
    """Which of the caller's variables a run leaves out (names only, never values): a run's
    processes get an environment built from parts (pytest_atom.environment)."""
    try:
        pass_env = load_config().pass_env
    except ConfigError as exc:
        report("fail", "environment", str(exc))
        return
    line = left_out_variables_line(pass_env)
    kept = len(passed(pass_env))
    if line is None:
        report("ok", "environment", f"runs get {kept} of your variables; none is left out")
    else:
        report("info", "environment", f"runs get {kept} of your variables; {line}")


def _check_node(report: Report) -> None:
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
        report(
            "warn",
            "node.js",
            f"{', '.join(found)}: Claude Code {CLAUDE_CODE_VERSION} asks for Node.js >= "
            f"{NODE_MAJOR_NEEDED} (npm warns EBADENGINE when installing it); it runs on older "
            f"ones, but install Node.js {NODE_MAJOR_NEEDED} or newer when you can",
        )
    elif len(found) == 2:
        report("ok", "node.js", ", ".join(found))
    else:
        missing = "Node.js with npm" if not found else f"npm (found {found[0]})"
        report(
            "info", "node.js", f"{missing} not found: `atom setup` needs npm to install Claude Code"
        )


def editable_sources(root: Path) -> list[tuple[str, Path]]:
    """(distribution, source folder) of each installed distribution that is an editable
    install (`pip install -e`: PEP 610's ``direct_url.json`` with ``dir_info.editable``)
    from `root` or a folder inside it."""
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


def _check_editable_installs(report: Report, root: Path) -> None:
    """The editable-install trap: a package of the project installed with `pip install -e`
    from the project itself imports the project's checkout, not the attempt folder the
    agent edits, so the agent's tests pass or fail on code it never changed."""
    found = editable_sources(root.resolve())
    if not found:
        return
    names = ", ".join(f"{name} (from {display_path(source)})" for name, source in found)
    report(
        "warn",
        "editable install",
        f"{names} is installed in editable mode from this project: the agent's tests "
        "would import this checkout, not the attempt folder it edits. Give the agent its "
        "own environment through `setup:` (a virtualenv per attempt, installing the "
        "attempt folder); see the how-to 'A Python project's environment'",
    )


def _check_self_test(report: Report, binary: Path | None) -> None:
    if binary is None:
        # Not a failure of its own: the `claude` check above already failed for this.
        report("skip", "self-test", "skipped: no `claude` binary to run")
        return
    started = time.perf_counter()
    gateway = Gateway(scripted([{"text": SELF_TEST_TEXT}])).start()
    try:
        with tempfile.TemporaryDirectory(prefix="atom-doctor-") as tmp:
            work = Path(tmp) / "work"
            work.mkdir()
            runner = claude_code_agent(
                "executor", AgentSession(binary, env=claude_env(gateway.url, Path(tmp) / "config"))
            )
            record = runner.run("self-test", work, timeout=60)
    except OSError as exc:
        report("fail", "self-test", f"could not run {binary}: {exc}")
        return
    finally:
        gateway.stop()
    elapsed = time.perf_counter() - started
    if record.returncode == 0 and SELF_TEST_TEXT in record.output:
        report(
            "ok",
            "self-test",
            f"claude answered through a local scripted gateway in {elapsed:.1f}s "
            f"({plural(len(gateway.exchanges), 'request')})",
        )
        return
    if record.timed_out:
        why = "timed out after 60s"
    elif record.returncode != 0:
        why = f"claude exited with {record.returncode}"
    else:
        why = "claude's answer did not contain the scripted text"
    detail = (record.output.strip() or record.stderr.strip()).splitlines()[-5:]
    report(
        "fail",
        "self-test",
        f"{why} after {elapsed:.1f}s" + "".join(f"\n      | {line}" for line in detail),
    )


def _check_sandbox(report: Report, binary: Path | None) -> None:
    """Claude Code's own sandbox, which spec runs use by default: its tools, then a real try."""
    try:
        require_tools()
    except SandboxUnavailableError as exc:
        report("fail", "sandbox", str(exc).replace("in the spec", "in each spec"))
        return
    found = (
        ", ".join(f"{tool} at {shutil.which(tool)}" for tool in LINUX_TOOLS)
        if sys.platform.startswith("linux")
        else "Seatbelt"
    )
    if binary is None:
        report("ok", "sandbox", f"{found} (not tried: no `claude` binary)")
        return
    with tempfile.TemporaryDirectory(prefix="atom-doctor-") as tmp:
        run_dir, outside = Path(tmp) / "run", Path(tmp) / "outside"
        work = run_dir / "work"
        work.mkdir(parents=True)
        outside.mkdir()
        turns: list[dict[str, Any]] = [
            {
                "tool_use": [
                    {"name": "Bash", "input": {"command": f"touch inside; touch {outside}/x"}}
                ]
            },
            {"text": SELF_TEST_TEXT},
        ]
        gateway = Gateway(scripted(turns)).start()
        try:
            runner = claude_code_agent(
                "executor",
                AgentSession(
                    binary,
                    env=claude_env(gateway.url, run_dir / "config"),
                    confinement=Confinement(run_dir, SandboxOptions()),
                ),
            )
            record = runner.run("sandbox self-test", work, timeout=60)
        except OSError as exc:
            report("fail", "sandbox", f"could not run {binary}: {exc}")
            return
        finally:
            gateway.stop()
        escaped, wrote = (outside / "x").exists(), (work / "inside").exists()
    if record.returncode == 0 and wrote and not escaped:
        report("ok", "sandbox", f"a command's write outside its folder was refused ({found})")
        return
    if record.returncode != 0:
        why = (record.output.strip() or record.stderr.strip()).splitlines()[-3:]
        detail = "claude failed" + "".join(f"\n      | {line}" for line in why)
    elif escaped:
        detail = "a command wrote outside its folder: the sandbox does not confine it"
    else:
        detail = "a command could not write inside its own folder"
    report("fail", "sandbox", f"{detail}; set `sandbox: false` in each spec to run unsandboxed")
