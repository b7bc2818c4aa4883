"""The project's own test suite: Claude Code processes, wall time and CPU seconds, per file.

Run by hand (needs the pinned `claude`, see `atom setup`); nothing is written to the repo:

    python benchmarks/suite.py [--workers 2] [--top 15] [PYTEST ARGS ...]

It runs `python -m pytest -n WORKERS` in this checkout (extra arguments go to pytest: a
file, `-m "not slow"`, ...) with tests/cli_starts.py's `--cli-starts-json`: each pytest
process points ATOM_CLAUDE_BIN at a counting wrapper that logs every Claude Code process
it starts, and each test's share is what the log grew by between its setup and its
teardown. Per test file it prints the tests, the CLI processes they started (all, and
`claude -p` sessions), the summed wall seconds of their tests and their CPU seconds (the
worker's own and its waited-for children's: the CLIs, inner pytest runs, checks), then the
tests that start the most. The total line has the whole run's wall time (outside) and CPU
seconds (the pytest process and all its children, getrusage RUSAGE_CHILDREN).

Process counts do not depend on the machine's load; wall time does (on a shared machine,
compare CPU seconds and counts). A scenario shared by several tests (a session-scoped
fixture such as `shipped_run`) counts for the test that happened to run it first.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent


def run_suite(workers: int, pytest_args: list[str], out: Path) -> tuple[int, float, float, str]:
    """Run the suite; its exit code, wall seconds, CPU seconds and last output lines."""
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q"]
    command += ["-n", str(workers), "--cli-starts-json", str(out), *pytest_args]
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-3:])
    return done.returncode, wall, cpu, tail


def per_file(rows: list[dict[str, Any]]) -> list[tuple[str, int, int, int, float, float]]:
    """(file, tests, CLI processes, `claude -p`, wall s, CPU s), most processes first."""
    files: dict[str, list[Any]] = defaultdict(lambda: [0, 0, 0, 0.0, 0.0])
    for row in rows:
        entry = files[row["nodeid"].split("::")[0]]
        entry[0] += 1
        entry[1] += row["cli_starts"]
        entry[2] += row["cli_sessions"]
        entry[3] += row["wall_seconds"]
        entry[4] += row["cpu_seconds"]
    table = [(name, *values) for name, values in files.items()]
    return sorted(table, key=lambda r: (-r[2], -r[5], r[0]))


def print_table(rows: list[tuple[object, ...]]) -> None:
    widths = [max(len(str(r[i])) for r in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2, help="xdist workers (default 2)")
    parser.add_argument("--top", type=int, default=15, help="tests listed by CLI processes")
    args, pytest_args = parser.parse_known_args()
    with tempfile.TemporaryDirectory(prefix="atom-suite-") as tmp:
        out = Path(tmp) / "starts.json"
        code, wall, cpu, tail = run_suite(args.workers, pytest_args, out)
        if not out.is_file():
            sys.exit(f"pytest wrote no counts (exit {code}):\n{tail}")
        rows = json.loads(out.read_text(encoding="utf-8"))
    print(f"pytest -n {args.workers} {' '.join(pytest_args)}: exit {code}; {tail.splitlines()[-1]}")
    table: list[tuple[object, ...]] = [("file", "tests", "CLI", "claude -p", "wall s", "CPU s")]
    for name, tests, starts, sessions, wall_s, cpu_s in per_file(rows):
        table.append((name, tests, starts, sessions, f"{wall_s:.1f}", f"{cpu_s:.1f}"))
    starts = sum(r["cli_starts"] for r in rows)
    sessions = sum(r["cli_sessions"] for r in rows)
    table.append((f"all ({wall:.0f} s wall)", len(rows), starts, sessions, "", f"{cpu:.1f}"))
    print_table(table)
    slowest = sorted(rows, key=lambda r: (-r["cli_starts"], r["nodeid"]))[: args.top]
    slowest = [r for r in slowest if r["cli_starts"]]
    if slowest:
        print(f"\nthe {len(slowest)} tests that start the most CLI processes:")
        print_table([("test", "CLI", "claude -p", "CPU s")] + [
            (r["nodeid"], r["cli_starts"], r["cli_sessions"], f"{r['cpu_seconds']:.1f}")
            for r in slowest
        ])  # fmt: skip
    marked_idle = sum(1 for r in rows if r["slow"] and not r["cli_starts"])
    print(f"\n{sum(1 for r in rows if r['cli_starts'])} tests started a CLI; {marked_idle} slow "
          "tests started none (they read a shared run, or their mark is wrong)")  # fmt: skip
    sys.exit(code)


if __name__ == "__main__":
    main()
