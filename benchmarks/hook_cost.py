"""What one hook call costs in the run's sandbox, against the older wrapper and no wrapper.

Run by hand; nothing is written to the repo:

    python benchmarks/hook_cost.py [--runs 20]

Claude Code runs a command hook as ``sh -c COMMAND`` with the event's JSON on stdin, once per
matching event (every Bash call, for a ``PreToolUse`` hook on Bash). Each arm runs the same
hook (a script that reads its stdin and greps it, as ``./no_curl.sh`` does) N times from an
attempt folder of a run folder, as the CLI would:

- ``sh``: the command by ``/bin/sh -c``, unconfined: the baseline, measured in the same run;
- ``bwrap (before)``: the command line the older wrapper built (bubblewrap, read-only root,
  no network, no process namespace of its own);
- ``srt (now)``: the command line the run's ``--settings`` names
  (`agents.claude_code.configuration.confined_hooks` through `Confinement.prepare`).

For each: wall and CPU seconds per hook call (the process's and its waited-for children's),
and the ratio to ``sh``.
"""

from __future__ import annotations

import argparse
import json
import resource
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_atom.agents.claude_code.sandbox import SETTINGS_FILE, Confinement
from pytest_atom.agents.claude_code.srt import process_sandbox
from pytest_atom.environment import build_env
from pytest_atom.spec.types import ClaudeOptions, SandboxOptions

HOOK = "./no_curl.sh"
SCRIPT = "#!/bin/sh\nif grep -q curl; then echo 'no curl here' >&2; exit 2; fi\nexit 0\n"
EVENT = {"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": "ls"}}


def cpu() -> float:
    """CPU seconds of this process and its waited-for children so far."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def bwrap_before(command: str, writable: Sequence[Path]) -> str:
    """The older wrapper's command line, as it was built (for the comparison only)."""
    binds = " ".join(f"--bind {shlex.quote(str(p))} {shlex.quote(str(p))}" for p in writable)
    return (
        "bwrap --die-with-parent --unshare-net --ro-bind / / --dev /dev --proc /proc "
        f"{binds} -- /bin/sh -c {shlex.quote(command)}"
    )


def srt_now(run: Path, attempt: Path, env: dict[str, str]) -> str:
    """The hook's command line as `Confinement.prepare` writes it into the run's settings."""
    hooks = {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": HOOK}]}]}
    Confinement(run, SandboxOptions(), servers=process_sandbox).prepare(
        attempt, ("Bash",), ClaudeOptions(hooks=hooks), env=env
    )
    settings = json.loads((run / SETTINGS_FILE).read_text(encoding="utf-8"))
    command: str = settings["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
    return command


def measure(command: str, cwd: Path, env: dict[str, str], runs: int) -> tuple[float, float]:
    """Median wall and mean CPU seconds of one hook call."""
    walls, cpus = [], []
    stdin = json.dumps(EVENT)
    for _ in range(runs):
        wall, used = time.perf_counter(), cpu()
        done = subprocess.run(
            command, shell=True, cwd=cwd, env=env, input=stdin, text=True, capture_output=True
        )
        if done.returncode != 0:
            raise SystemExit(f"the hook failed ({done.returncode}): {done.stderr.strip()}")
        walls.append(time.perf_counter() - wall)
        cpus.append(cpu() - used)
    return statistics.median(walls), statistics.mean(cpus)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20, help="hook calls per arm")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="atom-hook-cost-") as tmp:
        run = Path(tmp) / "run"
        attempt = run / "attempts" / "a01"
        attempt.mkdir(parents=True)
        script = attempt / "no_curl.sh"
        script.write_text(SCRIPT, encoding="utf-8")
        script.chmod(0o755)
        env = build_env(run / "home")
        arms = {
            "sh": f"/bin/sh -c {shlex.quote(HOOK)}",
            "bwrap (before)": bwrap_before(HOOK, [attempt]),
            "srt (now)": srt_now(run, attempt, env),
        }
        results = {name: measure(cmd, attempt, env, args.runs) for name, cmd in arms.items()}
    base_wall, base_cpu = results["sh"]
    print(f"one PreToolUse hook call, {args.runs} runs per arm (median wall, mean CPU):")
    print(f"{'arm':<16}{'wall s':>9}{'cpu s':>9}{'wall/sh':>9}{'cpu/sh':>9}")
    for name, (wall, used) in results.items():
        print(f"{name:<16}{wall:>9.4f}{used:>9.4f}{wall / base_wall:>9.1f}{used / base_cpu:>9.1f}")


if __name__ == "__main__":
    main()
