"""Every benchmark runs: each script under benchmarks/ with its smallest arguments.

A benchmark is run by hand, so nothing else notices when a change breaks one (replay.py's
latency section once answered 409 to every request for weeks). Here each runs end to end
as a user runs it, in a process of its own; the figures are not judged, only that the
script completes and prints its table. The ones that replay a spec start Claude Code and
are `slow`; `tests/cli_starts.py` keeps that true. Their fuller forms are the sweep's.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import REPO

#: benchmark -> (its smallest arguments, a line its report prints when it ran through).
FAST = {
    "gate_power.py": (["--comparisons", "2"], "REGRESSION in"),
    "datasets.py": (["--cases", "5", "--runs", "1"], "Claude Code started by a collect-only: no"),
    "history_query.py": (
        ["--runs", "20", "--per-run", "5", "--small", "5", "--rounds", "1"],
        "atom history: ",
    ),
    "history_diff.py": (
        ["--runs", "20", "--specs", "5", "--per-run", "5", "--rounds", "1"],
        "atom diff: ",
    ),
    "scrub.py": (["--rounds", "1"], "baseline: the same strings"),
    "trust.py": (["--criteria", "2", "--rounds", "2"], "gate / load_spec"),
    "setup_sandbox.py": (["--runs", "1"], "claude starts"),
    "hook_cost.py": (["--runs", "1"], "srt (now)"),
    "workspace_copy.py": (["--files", "10", "--runs", "1"], "cp -r (tracked only)"),
    "plugin_cost.py": (["--runs", "1"], "importing pytest_atom.plugin after pytest"),
    "spawn.py": (["--runs", "2", "--kills", "1", "--wait", "1"], "the supervisor adds"),
    "suite.py": (["--workers", "0", "tests/test_yamldoc.py"], "tests/test_yamldoc.py"),
    # The gateway's latency and the cassette's load time alone: no (a), no (d), no claude.
    "replay.py": (
        ["--runs", "0", "--rounds", "5", "--loads", "1", "--recall-specs"],
        "(b) p50 replay vs static (one send)",
    ),
}
#: The ones that start Claude Code: one spec, one run, one stream each (parallel.py's
#: speed-up needs a run without xdist and one with it; a stream's recording, two turns).
SLOW = {
    "cassette.py": (["--interactions", "2", "--turns", "1", "--repeat", "1"], "Cassette.load"),
    "conversation.py": (["--runs", "1"], "conversation / single"),
    "determinism.py": (["--times", "1", "--specs", "create_file.atom.yaml"], "deterministic"),
    "house.py": ([], "modules"),
    "parallel.py": (
        ["--runs", "1", "--copies", "1", "--warmups", "0", "--sources", "create_file"],
        "speed-up",
    ),
    "outcome_cache.py": (
        ["--runs", "1", "--specs", "fixtures/specs/create_file.atom.yaml"],
        "of it",
    ),
    "env_count.py": (["--extra", "5"], "caller names reaching the agent"),
    "machines.py": (["--machines", "1", "--specs", "create_file"], "caller folders unchanged"),
    "real_streams.py": (["--record-only", "compaction"], "compaction"),
    "run_folder.py": (["--mb", "10"], "run folder / attempt"),
    "setup_cache.py": (["--runs", "1", "--files", "100"], "key of a 100-file workspace"),
    "subagents.py": (["--times", "0", "--burners", "0"], "recorded in"),
}
#: Their fuller forms, for the sweep (CI runs `-m sweep` once): what the smallest leave out
#: (replay.py's (a), the harness against claude alone; replays; the rejected stream; a CPU
#: burner beside the subagents; warm-up runs). Not the subagents in the background: when one
#: finishes after the main agent has answered the other's notification, Claude Code asks
#: for a turn the recording never had (1 replay in about 20 here), so that form is a
#: measurement to run by hand (`--shape background`), not a check.
SWEEP = {
    "replay.py": (["--runs", "1", "--rounds", "5", "--recall-specs"], "(a) create-file item"),
    "real_streams.py": (["--replays", "1", "compaction"], "rejected ("),
    "subagents.py": (
        ["--times", "1", "--burners", "1"],
        "1/1 replays passed",
    ),
    "parallel.py": (["--runs", "1", "--copies", "1"], "speed-up"),
}


def test_every_benchmark_is_run_here() -> None:
    assert sorted(FAST.keys() | SLOW.keys()) == sorted(
        p.name for p in (REPO / "benchmarks").glob("*.py")
    )


def run_benchmark(name: str, args: list[str], tmp_path: Path) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    done = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / name), *args],
        cwd=tmp_path,  # nothing is written to the repo
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    return output


@pytest.mark.parametrize("name", sorted(FAST))
def test_a_benchmark_without_the_cli_runs(name: str, tmp_path: Path) -> None:
    args, printed = FAST[name]
    assert printed in run_benchmark(name, args, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SLOW))
def test_a_benchmark_that_replays_runs(name: str, tmp_path: Path) -> None:
    args, printed = SLOW[name]
    assert printed in run_benchmark(name, args, tmp_path)


@pytest.mark.slow
@pytest.mark.sweep
@pytest.mark.parametrize("name", sorted(SWEEP))
def test_a_benchmark_runs_in_its_fuller_form(name: str, tmp_path: Path) -> None:
    args, printed = SWEEP[name]
    assert printed in run_benchmark(name, args, tmp_path)
