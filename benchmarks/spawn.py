"""Spawn cost: what the supervisor (`pytest_atom.processes.spawn`) adds to each process the
harness starts, and how fast it ends a tree whose harness was killed.

Run by hand; nothing is written to the repo:

    python benchmarks/spawn.py [--runs 50] [--kills 5] [--wait 15]

(a) `/bin/true` started and waited for, `--runs` times each, interleaved: with
    `subprocess.Popen` (the baseline) and with `spawn` (one more Python process, run with
    ``-I -S``, between them). Median wall milliseconds per start, and CPU milliseconds
    (user + system of the children: the supervisor and what it waited for).
(b) A harness (a Python process) spawns a shell that leaves its session and is orphaned at
    once, as a sandbox bridge can be; the harness is killed with SIGKILL. Seconds until no
    process of the tree is left, `--kills` times: with `spawn`, and with `Popen` (where the
    tree lives on: shown as "alive after" `--wait` seconds).
Each CLI start pays (a) once; for scale, a replayed `claude -p` call takes seconds.
"""

from __future__ import annotations

import argparse
import os
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import psutil

from pytest_atom.processes import spawn

HARNESS = """
import subprocess, sys
sys.path.insert(0, sys.argv[2])
from pytest_atom.processes import spawn
start = spawn if sys.argv[1] == "spawn" else subprocess.Popen
proc = start(["sh", "-c", "(setsid sleep 300 &); sleep 300"], start_new_session=True)
print(proc.pid, flush=True)
proc.wait()
"""


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def one_start(start: Callable[..., Any]) -> tuple[float, float]:
    """Wall and CPU seconds of one start of /bin/true, waited for."""
    cpu, wall = children_cpu(), time.perf_counter()
    start(["/bin/true"]).wait()
    return time.perf_counter() - wall, children_cpu() - cpu


def starts(runs: int) -> dict[str, tuple[float, float]]:
    """(a): median wall and CPU milliseconds per start, for Popen and spawn."""
    kinds: dict[str, Callable[..., Any]] = {"Popen": subprocess.Popen, "spawn": spawn}
    figures: dict[str, list[tuple[float, float]]] = {name: [] for name in kinds}
    for start in kinds.values():
        one_start(start)  # warm-up: page cache, imports
    for _ in range(runs):
        for name, start in kinds.items():
            figures[name].append(one_start(start))
    return {
        name: (
            1000 * statistics.median(w for w, _ in rows),
            1000 * statistics.median(c for _, c in rows),
        )
        for name, rows in figures.items()
    }


def in_folder(folder: Path) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter():
        try:
            if proc.cwd() == str(folder) and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc)
        except psutil.Error:
            continue
    return found


def one_kill(kind: str, wait: float) -> float:
    """(b): seconds from the harness's SIGKILL until its tree is gone (over `wait` if never)."""
    with tempfile.TemporaryDirectory(prefix="atom-spawn-") as folder:
        here = Path(folder)
        repo = str(Path(__file__).resolve().parents[1])
        harness = subprocess.Popen(
            [sys.executable, "-c", HARNESS, kind, repo], cwd=here, stdout=subprocess.PIPE
        )
        assert harness.stdout is not None
        with harness.stdout:
            harness.stdout.readline()
        deadline = time.monotonic() + 30
        while len([p for p in in_folder(here) if p.name() == "sleep"]) < 2:
            assert time.monotonic() < deadline, "the tree never started"
            time.sleep(0.01)
        tree = [p for p in in_folder(here) if p.pid != harness.pid]
        os.kill(harness.pid, signal.SIGKILL)
        harness.wait()
        killed = time.monotonic()
        while any(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in tree):
            if time.monotonic() - killed > wait:
                break
            time.sleep(0.01)
        took = time.monotonic() - killed
        for proc in in_folder(here):
            proc.kill()
        return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--kills", type=int, default=5)
    parser.add_argument("--wait", type=float, default=15.0, help="seconds (b) waits for a tree")
    args = parser.parse_args()
    figures = starts(args.runs)
    base_wall, base_cpu = figures["Popen"]
    print(f"(a) one start of /bin/true, median of {args.runs}:")
    for name, (wall, cpu) in figures.items():
        print(f"  {name:6} {wall:7.1f} ms wall {cpu:7.1f} ms CPU")
    wall, cpu = figures["spawn"]
    print(f"  the supervisor adds {wall - base_wall:.1f} ms wall, {cpu - base_cpu:.1f} ms CPU")
    print(f"(b) a kill -9 of the harness, until its double-forked tree is gone ({args.kills}x):")
    for kind in ("spawn", "Popen"):
        times = [one_kill(kind, args.wait) for _ in range(args.kills)]
        shown = ", ".join(
            f"{t:.2f}" if t <= args.wait else f"alive after {args.wait:g}" for t in times
        )
        print(f"  {kind:6} {shown} s")


if __name__ == "__main__":
    main()
