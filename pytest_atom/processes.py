"""Process trees: what a timed-out CLI, check, oracle or tool leaves running, killed whole."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from typing import Any

__all__ = ["kill_process_tree"]


def _descendants(pid: int) -> list[int]:
    """Every process below `pid`, as psutil sees them (Linux and macOS)."""
    import psutil  # only when something is killed: keeps the plugin's import light

    try:
        return [child.pid for child in psutil.Process(pid).children(recursive=True)]
    except psutil.Error:  # `pid` is gone already: nothing below it can be found any more
        return []


def kill_process_tree(proc: subprocess.Popen[Any]) -> None:
    """Kill the CLI, its process group and every descendant.

    The CLI starts its Bash tool's shell in a session of its own, out of reach of a
    process-group kill; the tree is collected before anything dies, because orphans
    are re-parented and could no longer be found.
    """
    victims = _descendants(proc.pid)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for kill, target in [(os.killpg, proc.pid)] + [(os.kill, pid) for pid in victims]:
            try:
                kill(target, sig)
            except (ProcessLookupError, PermissionError):
                pass
        try:
            proc.wait(timeout=3.0 if sig == signal.SIGTERM else None)
        except subprocess.TimeoutExpired:
            continue
        if sig == signal.SIGTERM:
            time.sleep(0.05)  # let children act on SIGTERM before the SIGKILL sweep
