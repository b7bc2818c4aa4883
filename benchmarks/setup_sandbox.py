"""A spec's `setup:` in the sandbox: srt against plain bash, and against the old CLI session.

Run by hand; nothing is written to the repo:

    python benchmarks/setup_sandbox.py [--runs 10] [--old /path/to/an/older/checkout]

Runs the same three set-up commands N times in a fresh attempt folder of a run folder:

- ``srt``: `run_setup` as a spec run calls it, in the agent's confinement through the sandbox
  runtime (one `srt` process, no Claude Code session);
- ``bash``: the same script by ``/bin/sh -c``, unconfined: the baseline, measured in the
  same run;
- ``old`` (with ``--old``): the `run_setup` of another checkout of pytest-atom (one
  whose set-up was a scripted ``claude -p`` session on a private gateway), in a
  process of its own that times only its calls.

For each: Claude Code processes started (a counting wrapper is the CLI each arm is given;
srt's ripgrep is Claude Code's binary called as ``rg``, which is no CLI session and is not
counted), wall and CPU seconds per set-up (the process's and its children's), and the ratio
to ``bash``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_atom.agents.claude_code.cli import find_claude
from pytest_atom.agents.claude_code.sandbox import Confinement
from pytest_atom.checks.shell import run_shell
from pytest_atom.run.setup_commands import run_setup, setup_env, setup_script
from pytest_atom.spec.types import SandboxOptions

COMMANDS = ["python3 -c 'print(6 * 7)'", "echo built > build.txt", "ls > listing.txt"]


def cpu() -> float:
    """CPU seconds of this process and its waited-for children so far."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def counting(claude: Path, folder: Path) -> tuple[Path, Path]:
    """A wrapper of `claude` that logs each start, and its log."""
    log, script = folder / "starts.log", folder / "claude"
    script.write_text(f'#!/bin/sh\necho start >> {log}\nexec {claude} "$@"\n', encoding="utf-8")
    script.chmod(0o755)
    log.write_text("")
    return script, log


def attempt(root: Path, number: int) -> tuple[Path, Path]:
    run = root / f"run-{number:03d}"
    path = run / "attempts" / "a01"
    path.mkdir(parents=True)
    return run, path


def measure(runs: int, once: Callable[[int], bool]) -> tuple[list[float], list[float]]:
    walls, cpus = [], []
    for number in range(runs):
        wall, used = time.perf_counter(), cpu()
        if not once(number):
            raise SystemExit(f"set-up run {number} failed")
        walls.append(time.perf_counter() - wall)
        cpus.append(cpu() - used)
    return walls, cpus


OLD = textwrap.dedent(
    """
    import json, resource, sys, time
    from pathlib import Path
    from pytest_atom.agents.claude_code.sandbox import Confinement
    from pytest_atom.spec.types import SandboxOptions
    from pytest_atom.run.setup_commands import run_setup

    root, claude, runs, commands = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]), json.loads(sys.argv[4])

    def cpu():
        own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime

    walls, cpus = [], []
    for n in range(runs):
        run = root / f"old-{n:03d}"
        path = run / "attempts" / "a01"
        path.mkdir(parents=True)
        wall, used = time.perf_counter(), cpu()
        out = run_setup(commands, path, run_dir=run, confinement=Confinement(run, SandboxOptions()),
                        env={}, claude_bin=claude, timeout=120)
        assert out.ok, out.output
        walls.append(time.perf_counter() - wall)
        cpus.append(cpu() - used)
    print(json.dumps({"wall": walls, "cpu": cpus}))
    """
)


def old_arm(checkout: Path, root: Path, claude: Path, runs: int) -> tuple[list[float], list[float]]:
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    done = subprocess.run(
        [sys.executable, "-c", OLD, str(root), str(claude), str(runs), json.dumps(COMMANDS)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        cwd=root,
    )
    data = json.loads(done.stdout.strip().splitlines()[-1])
    return data["wall"], data["cpu"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, help="set-ups per arm")
    parser.add_argument("--old", type=Path, help="another checkout whose run_setup to time")
    args = parser.parse_args()
    rows: dict[str, tuple[int, list[float], list[float]]] = {}
    with tempfile.TemporaryDirectory(prefix="atom-setup-bench-") as tmp:
        root = Path(tmp)
        wrapper, log = counting(find_claude(), root)
        os.environ["ATOM_CLAUDE_BIN"] = str(wrapper)

        def confined(number: int) -> bool:
            run, path = attempt(root / "srt", number)
            confinement = Confinement(run, SandboxOptions())
            return run_setup(
                COMMANDS, path, run_dir=run, confinement=confinement, env={}, timeout=120
            ).ok

        def plain(number: int) -> bool:
            run, path = attempt(root / "bash", number)
            env = setup_env(run, {})
            return run_shell(setup_script(COMMANDS), path, env, 120, sandbox=None)[0] == 0

        for name, once in (("bash", plain), ("srt", confined)):
            before = len(log.read_text().splitlines())
            walls, cpus = measure(args.runs, once)
            rows[name] = (len(log.read_text().splitlines()) - before, walls, cpus)
        if args.old is not None:
            before = len(log.read_text().splitlines())
            (root / "old").mkdir()
            walls, cpus = old_arm(args.old.resolve(), root / "old", wrapper, args.runs)
            rows["old"] = (len(log.read_text().splitlines()) - before, walls, cpus)
    base_wall = statistics.median(rows["bash"][1])
    base_cpu = statistics.median(rows["bash"][2])
    print(f"{args.runs} set-ups of {len(COMMANDS)} commands each; medians per set-up")
    print(f"{'arm':<6}{'claude starts':>14}{'wall s':>10}{'x bash':>9}{'CPU s':>10}{'x bash':>9}")
    for name, (starts, walls, cpus) in rows.items():
        wall, used = statistics.median(walls), statistics.median(cpus)
        print(
            f"{name:<6}{starts:>14}{wall:>10.3f}{wall / base_wall:>9.1f}"
            f"{used:>10.3f}{used / base_cpu:>9.1f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
