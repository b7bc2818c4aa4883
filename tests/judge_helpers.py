"""Scenarios the judging tests share: each is run once per test session (`once_per_session`)
through the real CLI, and read by several tests of test_reflector.py, reports/test_trace.py and
test_votes.py.

A scenario's folder holds what its readers need: the pickled `SpecResult` of each run
(tests build traces, properties and reports from it in their own process), the spec's
project with its cassette, and the `claude -p` sessions each run started, as counted by a
wrapper of the CLI (`counting_claude`).
"""

from __future__ import annotations

import os
import pickle
import uuid
from pathlib import Path
from typing import Any

import yaml

from pytest_atom.results.spec_result import SpecResult
from pytest_atom.run.spec_run import run_spec
from pytest_atom.settings.options import RunSettings
from pytest_atom.spec_loader.load import load_spec
from tests.helpers import bash, counting_claude, verdict

CRITERION = "done.txt exists and says done."
#: A one-criterion spec with one check: what the reflector and trace scenarios run.
SPEC = f"""\
name: task
prompt: Create done.txt saying done.
script: script.yaml
max_iterations: 3
timeout: 120
criteria:
  - {CRITERION}
accept:
  - file_exists: done.txt
"""
WRITE = bash("echo done > done.txt", "Writing done.txt.")
#: The environment variable the passing scenario's agent prints: a secret to scrub.
CANARY = "ATOM_CANARY_TOKEN"


def sessions(log: Path) -> int:
    """The `claude -p` sessions the wrapper noted since the last call (the log is emptied)."""
    count = len(log.read_text().splitlines()) if log.exists() else 0
    log.unlink(missing_ok=True)
    return count


def project(folder: Path, spec: str, turns: list[Any], reflector: list[Any]) -> Path:
    """A spec file and its script in `folder`: the spec's path."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "script.yaml").write_text(yaml.safe_dump({"turns": turns, "reflector": reflector}))
    path = folder / "task.atom.yaml"
    path.write_text(spec)
    return path


def run(
    folder: Path,
    claude_bin: Path,
    turns: list[Any],
    reflector: list[Any],
    spec: str = SPEC,
    settings: RunSettings | None = None,
) -> SpecResult:
    """Run a spec written into `folder` through the real CLI, as `pytest --atom` would."""
    path = project(folder, spec, turns, reflector)
    return run_spec(
        load_spec(path), runs_dir=folder / "runs", claude_bin=claude_bin, settings=settings
    )


def keep(folder: Path, name: str, result: SpecResult, started: int) -> None:
    """Save a run's result and the sessions it started for the scenario's readers."""
    (folder / f"{name}.pickle").write_bytes(pickle.dumps(result))
    (folder / f"{name}.sessions").write_text(str(started))


def kept(folder: Path, name: str) -> tuple[SpecResult, int]:
    """A saved run's result (a copy of its own) and the `claude -p` sessions it started."""
    result = pickle.loads((folder / f"{name}.pickle").read_bytes())
    assert isinstance(result, SpecResult)
    return result, int((folder / f"{name}.sessions").read_text())


def build_passing(folder: Path, claude_bin: Path) -> None:
    """A passing scripted run (checks pass, score 0.9) whose agent prints a secret it was
    passed (`pass_env`), and whose reflector quotes it: kept as `passing`, the secret in
    canary.txt."""
    canary = f"canary-{uuid.uuid4().hex}"
    (folder / "canary.txt").write_text(canary)
    wrapper, log = counting_claude(folder / "cli", claude_bin)
    before = os.environ.get(CANARY)
    os.environ[CANARY] = canary
    try:
        result = run(
            folder / "project",
            wrapper,
            [WRITE, bash(f"echo ${CANARY}", "Showing the token."), {"text": "Done. EXIT_LOOP_NOW"}],
            # The reflector quotes the secret, so it reaches the trace as well as transcripts.
            [verdict(0.9, evidence=f"the agent printed {canary}")],
            SPEC + f"pass_env: [{CANARY}]\n",  # a variable the agent gets only if passed
        )
    finally:
        if before is None:
            os.environ.pop(CANARY, None)
        else:
            os.environ[CANARY] = before
    assert result.passed, result.harness_error or result.report()
    keep(folder, "passing", result, sessions(log))


#: The refine scenario's reflector: attempt 1 is asked to say it twice, attempt 2 passes.
REFINE_VERDICTS = [
    verdict(0.6, met=False, evidence="done.txt says it once", feedback="Say it twice."),
    verdict(0.9),
]


def build_refine(folder: Path, claude_bin: Path) -> None:
    """A run the reflector sends back once, recorded (its cassette in project/cassettes):
    two attempts in one conversation, kept as `refine`."""
    wrapper, log = counting_claude(folder / "cli", claude_bin)
    result = run(
        folder / "project",
        wrapper,
        [
            WRITE,
            {"text": "Done. EXIT_LOOP_NOW"},
            bash("echo done >> done.txt"),
            {"text": "Better. EXIT_LOOP_NOW"},
        ],
        REFINE_VERDICTS,
        settings=RunSettings(record_mode="all"),
    )
    assert result.passed, result.harness_error or result.report()
    keep(folder, "refine", result, sessions(log))


#: Three votes on two criteria, the second decided by each criterion (`gate: criteria`).
VOTES_SPEC = """\
name: task
prompt: Create done.txt saying done.
script: script.yaml
attempts: 1
criteria:
  - done.txt exists.
  - done.txt says done, warmly.
reflector:
  votes: 3
  gate: criteria
"""


def ballot(score: float, warm: bool) -> dict[str, Any]:
    """One vote: the first criterion met, the second as `warm` says."""
    return {
        "verdict": {
            "score": score,
            "decision": "proceed" if warm else "refine",
            "criteria": [
                {"criterion": "done.txt exists.", "met": True, "evidence": "it does"},
                {
                    "criterion": "done.txt says done, warmly.",
                    "met": warm,
                    "evidence": "warm enough" if warm else "curt",
                },
            ],
            "feedback": "" if warm else "Say it warmly.",
            "flaky": [],
        }
    }


def build_votes(folder: Path, claude_bin: Path) -> None:
    """Three votes recorded, two of them passing the second criterion (kept as
    `recorded`), then replayed with their input unchanged (kept as `recalled`); the
    cassette is project/cassettes/task/task.yaml."""
    wrapper, log = counting_claude(folder / "cli", claude_bin)
    turns = [WRITE, {"text": "Done. EXIT_LOOP_NOW"}]
    path = project(
        folder / "project", VOTES_SPEC, turns, [ballot(0.9, w) for w in (True, False, True)]
    )
    for name, settings in (("recorded", RunSettings(record_mode="all")), ("recalled", None)):
        result = run_spec(
            load_spec(path), runs_dir=path.parent / "runs", claude_bin=wrapper, settings=settings
        )
        keep(folder, name, result, sessions(log))
