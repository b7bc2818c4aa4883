"""Two concurrent subagents replay whatever order they finish in, on a busy machine.

Run by hand (needs the pinned `claude`, see `atom setup`); nothing is written to the repo:

    python benchmarks/subagents.py [--times 20] [--burners 6] [--shape foreground]

A spec whose main agent launches two `Agent` subagents in one turn (each waits a random
fraction of a second before it writes, so either may finish first) is recorded once through the tests' realistic upstream
(tests/upstream.py, streams shaped like the API's). Then `--burners` processes spin the CPU
(default: two per core) and the spec is replayed `--times` times, in the default match
mode, while they run. Claude Code returns concurrent results in the order they finished
and writes each subagent's random `agentId` into its result: on a loaded machine the
order changes from run to run, and a replay passes only if pytest-atom numbers those ids
by the calls they answer, not by arrival.

Each replay prints its outcome, the order the subagents finished in (from the CLI's
`task_notification` events) and the load average; the last line says how many passed
(exit 0 when all did). `--shape background` launches them in the background instead.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from pytest_atom.agents.claude_code.cli import find_claude  # noqa: E402
from pytest_atom.events import SubagentEnded, ToolCall  # noqa: E402
from pytest_atom.results.spec_result import SpecResult  # noqa: E402
from pytest_atom.run.spec_run import run_spec  # noqa: E402
from pytest_atom.settings.options import RunSettings  # noqa: E402
from pytest_atom.spec_loader.load import load_specs  # noqa: E402
from tests.upstream import RealisticUpstream, Turn  # noqa: E402
from tests.upstream_helpers import SIDES, agent_call  # noqa: E402

SURVEY = "Survey the project with two helper agents."
BURN = "while True: pass"


def script(background: bool) -> dict[str, list[Turn]]:
    """The main agent's turns and each subagent's, keyed by how each conversation opens."""
    calls = [agent_call(side, background) for side in SIDES]
    launch: Turn = {
        "thinking": "Two independent surveys: one agent each.",
        "text": "Launching two agents.",
        "tool_calls": calls,
    }
    final: Turn = {"text": "Both agents finished.\nEXIT_LOOP_NOW"}
    # In the background the main agent speaks again before the agents finish, and once per
    # completion notification (how many depends on timing): spare final turns.
    main = [launch, {"text": "Waiting."}, final, final, final] if background else [launch, final]
    turns: dict[str, list[Turn]] = {SURVEY: main}
    for side in SIDES:
        # A random wait (bash's $RANDOM): the same command, recorded and replayed, but which
        # subagent finishes first is up to chance and the machine's load.
        command = f"sleep 0.$((RANDOM % 10)); echo {side} > {side}.txt"
        turns[f"Write the word {side}"] = [
            {
                "thinking": f"Just write {side}.",
                "tool_calls": [
                    {"name": "Bash", "input": {"command": command, "description": side}}
                ],
            },
            {"text": f"Wrote {side}.txt."},
        ]
    return turns


def finishing_order(result: SpecResult) -> str:
    """``south,north``: the subagents in the order the CLI reported them finished."""
    events = [e for record in result.records for e in record.events]
    sides = {
        e.id: str((e.input or {}).get("description", "?")).split()[-1]
        for e in events
        if isinstance(e, ToolCall) and e.name == "Agent"
    }
    return ",".join(sides.get(e.tool_use_id, "?") for e in events if isinstance(e, SubagentEnded))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--times", type=int, default=20, help="replays (default 20)")
    parser.add_argument(
        "--burners", type=int, default=2 * (os.cpu_count() or 1), help="CPU-spinning processes"
    )
    parser.add_argument("--shape", choices=("foreground", "background"), default="foreground")
    args = parser.parse_args()
    claude = find_claude()
    folder = Path(tempfile.mkdtemp(prefix="atom-subagents-"))
    accept = "".join(
        f'  - file_contains: {{path: {side}.txt, pattern: "^{side}$"}}\n' for side in SIDES
    )
    (folder / "survey.atom.yaml").write_text(
        f"name: survey\nprompt: {SURVEY}\ntimeout: 180\naccept:\n{accept}", encoding="utf-8"
    )
    [spec] = load_specs(folder / "survey.atom.yaml")
    runs = folder / "runs"
    with RealisticUpstream(script(args.shape == "background")) as upstream:
        recorded = run_spec(
            spec,
            runs_dir=runs,
            settings=RunSettings(record_mode="all", upstream=upstream.url),
            claude_bin=claude,
        )
    if not recorded.passed:
        print(recorded.report())
        return 2
    print(f"recorded in {folder} ({args.shape}; finished {finishing_order(recorded)})")
    burners = [subprocess.Popen([sys.executable, "-c", BURN]) for _ in range(args.burners)]
    passed = 0
    orders: dict[str, int] = {}
    try:
        time.sleep(2)  # let the load build up
        for n in range(1, args.times + 1):
            started = time.monotonic()
            result = run_spec(spec, runs_dir=runs, claude_bin=claude)
            order = finishing_order(result)
            orders[order] = orders.get(order, 0) + 1
            passed += result.passed
            load = os.getloadavg()[0]
            outcome = "passed" if result.passed else "FAILED"
            print(
                f"replay {n:2d}/{args.times}: {outcome}  finished {order or '?':12s}  "
                f"{time.monotonic() - started:5.1f} s  load {load:.1f}",
                flush=True,
            )
            if not result.passed:
                print(result.report())
    finally:
        for burner in burners:
            burner.kill()
            burner.wait()
    seen = ", ".join(f"{order} {count}x" for order, count in sorted(orders.items()))
    print(f"{passed}/{args.times} replays passed with {args.burners} CPU burners ({seen})")
    return 0 if passed == args.times else 1


if __name__ == "__main__":
    sys.exit(main())
