"""Find a project's tools and run one, streaming its conversational output.

A tool is a folder under one of the config's `tools_dirs` holding an entry point:
``cli.py``, else ``main.py``, else ``tool.py``. Its name is the folder's name; when two
tools dirs hold the same name, the one listed first wins. A tool runs as
``python <entry> args...`` with the caller's working directory, prints Markdown
messages (`pytest_atom.conversation`) and is stateless: every call stands alone.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TextIO

from pytest_atom.conversation import error
from pytest_atom.environment import importable
from pytest_atom.processes import kill_process_tree, spawn
from pytest_atom.settings.config import AtomConfig

ENTRY_POINTS = ("cli.py", "main.py", "tool.py")
TIMEOUT_EXIT_CODE = 124  # as `timeout(1)` reports it
#: How long output may still arrive after the tool exited (from a pipe a child holds).
_DRAIN_SECONDS = 2.0


def discover_tools(config: AtomConfig) -> dict[str, Path]:
    """Every tool in the config's tools dirs: name -> entry file, sorted by name."""
    found: dict[str, Path] = {}
    for tools_dir in config.tools_paths:
        if not tools_dir.is_dir():
            continue
        for folder in sorted(tools_dir.iterdir()):
            if folder.name.startswith((".", "_")) or not folder.is_dir():
                continue
            entry = next((folder / n for n in ENTRY_POINTS if (folder / n).is_file()), None)
            if entry is not None and folder.name not in found:
                found[folder.name] = entry
    return dict(sorted(found.items()))


def describe(entry: Path) -> str:
    """One line about a tool: its README.md's first line of prose (else its first
    heading), else the first line of the entry file's module docstring."""
    readme = entry.parent / "README.md"
    if readme.is_file():
        lines = [
            line.strip()
            for line in readme.read_text(encoding="utf-8", errors="replace").splitlines()
        ]
        prose = [line for line in lines if line and not line.startswith("#")]
        headings = [line.lstrip("#").strip() for line in lines if line.startswith("#")]
        for line in prose[:1] or [h for h in headings if h][:1]:
            return line
    try:
        module = ast.parse(entry.read_text(encoding="utf-8", errors="replace"))
    except (OSError, SyntaxError, ValueError):
        return ""
    doc = ast.get_docstring(module) or ""
    return doc.strip().splitlines()[0].strip() if doc.strip() else ""


def tool_env(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment a tool runs with: `base`, unbuffered, able to import `conversation`."""
    env = importable(os.environ if base is None else base)
    env.setdefault("PYTHONUNBUFFERED", "1")  # plain print()s stream too, not just messages
    return env


def run_tool(
    entry: Path,
    args: Sequence[str],
    *,
    timeout: float,
    env: Mapping[str, str] | None = None,
    stdout: TextIO | None = None,
) -> int:
    """Run a tool's entry file, its merged output copied line by line to `stdout`; its exit
    code. No stdin (it asks with ``## Input Needed``); its own process group, so a timeout
    (an ``## Error`` message, 124) or a Ctrl-C kills every process it started."""
    out = sys.stdout if stdout is None else stdout
    proc = spawn(
        [sys.executable, str(entry), *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        encoding="utf-8",
        errors="replace",
        env=tool_env(env),
        start_new_session=True,
    )
    pipe, lock, stopped = proc.stdout, threading.Lock(), threading.Event()
    assert pipe is not None

    def copy() -> None:
        # A child the tool left running may hold the pipe open: once stopped, output is dropped.
        with pipe:
            for line in pipe:
                with lock:
                    if stopped.is_set():
                        return
                    out.write(line)
                    out.flush()

    copier = threading.Thread(target=copy, daemon=True)
    copier.start()
    timed_out = False
    try:
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            kill_process_tree(proc)
        copier.join(timeout=_DRAIN_SECONDS)
    except BaseException:
        kill_process_tree(proc)
        raise
    finally:
        with lock:
            stopped.set()
    if not timed_out:
        return proc.returncode
    error(
        "Timeout",
        f"Tool {entry.parent.name} timed out after {timeout:g} s and was killed, "
        "together with every process it started.",
        recovery="Run it again with a longer timeout (`--timeout SECONDS`, or "
        "`timeout:` in .atom/config.yaml), or give it less work per call.",
        file=out,
    )
    return TIMEOUT_EXIT_CODE
