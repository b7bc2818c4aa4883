"""What a conversation costs to replay, against a single-prompt spec of the same length.

Run by hand; nothing is written to the repo (it needs the pinned Claude Code CLI, which it
runs offline against the specs' own scripts and cassettes):

    python benchmarks/conversation.py [--runs 3]

Two specs play seven agent model turns each (an AskUserQuestion, three Bash commands
that make the same files, three texts) and make the same files:

- ``single``: one prompt, one `claude -p` call that runs all seven turns: the baseline;
- ``chat``: a conversation (`user:` with a simulated user): three agent turns, one call
  each, and the simulated user's four structured sessions (the question's answer, two
  messages, done), each a call of its own.

Each is recorded once from its script (record mode once), then replayed ``--runs`` times
(record mode none, `run_spec`: the code path of `pytest --atom`). Prints, per replay, the
Claude Code processes started (a wrapper counts each ``-p`` call), the median wall seconds
and the median CPU seconds of the replay's child processes, and each as a ratio to
``single`` measured in the same run. Exit 2 when a run fails.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_atom.agents.claude_code.cli import find_claude
from pytest_atom.run.spec_run import run_spec
from pytest_atom.settings.options import RunSettings
from pytest_atom.spec_loader.load import load_spec
from tests.helpers import bash, counting_claude
from tests.run.test_conversation import CHAT, TURNS, USER


def build(specs: Path) -> dict[str, Path]:
    """The two specs and their scripts."""
    specs.mkdir(parents=True)
    (specs / "chat.yaml").write_text(json.dumps({"turns": TURNS, "user": USER}))
    (specs / "chat.atom.yaml").write_text(CHAT)
    # The same seven model turns in one call: a text-only turn would end the call, so the
    # two texts between are short commands, and the last text signals completion.
    said = [bash("echo ok", t["text"]) if "tool_use" not in t else t for t in TURNS[:-1]]
    answered = [*said, {"text": f"{TURNS[-1]['text']}\n\nEXIT_LOOP_NOW"}]
    (specs / "single.yaml").write_text(json.dumps({"turns": answered}))
    single = (
        "name: single\nprompt: Write BLUE into colour.txt and dark into shade.txt.\n"
        "script: single.yaml\ntimeout: 120\nattempts: 1\nmax_iterations: 1\n"
        'accept:\n  - file_contains: {path: shade.txt, pattern: "^dark$"}\n'
    )
    (specs / "single.atom.yaml").write_text(single)
    return {"single": specs / "single.atom.yaml", "chat": specs / "chat.atom.yaml"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="replays of each spec")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="atom-conversation-") as tmp:
        root = Path(tmp)
        claude, log = counting_claude(root / "counted", find_claude())
        files = build(root / "project" / "specs")
        runs_dir = root / "project" / ".atom" / "runs"
        record = replace(RunSettings(), record_mode="once")
        rows: dict[str, dict[str, float]] = {}
        for name, path in files.items():
            spec = load_spec(path)
            recorded = run_spec(spec, runs_dir=runs_dir, claude_bin=claude, settings=record)
            if not recorded.passed:
                print(f"recording {name} failed:\n{recorded.report()}")
                return 2
            walls, cpus, calls = [], [], []
            for _ in range(args.runs):
                before = log.read_text().count("\n") if log.exists() else 0
                usage = resource.getrusage(resource.RUSAGE_CHILDREN)
                started = time.perf_counter()
                result = run_spec(spec, runs_dir=runs_dir, claude_bin=claude)
                walls.append(time.perf_counter() - started)
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                cpus.append(after.ru_utime + after.ru_stime - usage.ru_utime - usage.ru_stime)
                calls.append(log.read_text().count("\n") - before)
                if not result.passed or result.source != "replay":
                    print(result.report())
                    return 2
            rows[name] = {
                "calls": statistics.median(calls),
                "wall": statistics.median(walls),
                "cpu": statistics.median(cpus),
            }
        base = rows["single"]
        print(f"{'replay of':<26}{'claude -p':>10}{'wall s':>9}{'cpu s':>8}")
        for name, label in (
            ("single", "single prompt (7 turns)"),
            ("chat", "conversation (3+4 calls)"),
        ):
            row = rows[name]
            print(f"{label:<26}{row['calls']:>10.0f}{row['wall']:>9.2f}{row['cpu']:>8.2f}")
        chat = rows["chat"]
        print(
            f"conversation / single: {chat['calls'] / base['calls']:.1f} x processes, "
            f"{chat['wall'] / base['wall']:.2f} x wall, {chat['cpu'] / base['cpu']:.2f} x CPU"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
