"""AtomRuntime's loop with the real CLI: iterations, exit signal, retries, results."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_atom.legacy import AtomRuntime, RetryManager
from tests.helpers import bash

pytestmark = pytest.mark.slow  # every test here starts Claude Code

SYSTEM = "Work on USER_PROMPT.md; at most {max_iterations} iterations. Say EXIT_LOOP_NOW when done."


def runtime(runner: Any, folder: Path, **kwargs: Any) -> AtomRuntime:
    kwargs.setdefault("max_iterations", 3)
    kwargs.setdefault("verbose", False)
    return AtomRuntime(SYSTEM, folder, runner=runner, **kwargs)


def test_iterates_in_one_conversation_until_the_exit_signal(
    gateway_for: Any, runner_for: Any, tmp_path: Path, capsys: Any
) -> None:
    """Two iterations of one conversation; verbose, it prints the loop's banners; with
    cleanup, it removes the prompt file it wrote and nothing the agent made."""
    gateway = gateway_for(
        [
            bash("cat USER_PROMPT.md; touch kept"),
            {"text": "Still working."},
            {"text": "Finished.\nEXIT_LOOP_NOW"},
        ]
    )
    work = tmp_path / "work"
    rt = runtime(runner_for(gateway), work, verbose=True, cleanup=True)
    result = rt.run("Write the report.")
    assert result["success"] is True
    assert result["iterations"] == 2
    assert result["output"] == "Finished.\nEXIT_LOOP_NOW"
    assert result["reason"] is None and result["error"] is None
    assert result["duration"] > 0
    assert [c["iteration"] for c in result["context"]] == [1, 2]
    assert all(c["timestamp"] for c in result["context"])
    turns = [e.request.json for e in gateway.exchanges if e.request.kind == "turn"]
    assert "at most 3 iterations" in json.dumps(turns[0]["messages"])  # {max_iterations} rendered
    assert "Write the report." in json.dumps(turns[1]["messages"])  # the file the agent read
    assert "Still working." in json.dumps(turns[2]["messages"])  # iteration 2 saw iteration 1
    assert f"{'=' * 60}\nIteration 1/3\n{'=' * 60}" in capsys.readouterr().out
    assert (work / "kept").exists()
    assert not (work / "USER_PROMPT.md").exists()


def test_cli_errors_are_retried_with_the_loop_backoff(gateway_for: Any, runner_for: Any) -> None:
    """A CLI that fails (its script runs out within the first call) is started again after
    the loop's wait; the waits' doubling, and the stop at max_iterations, are
    tests/loop/test_runtime_loop.py's. Ephemeral, the runtime removes its folder even so."""
    gateway = gateway_for([bash("true")])  # the call's second turn exhausts the script
    waits: list[float] = []
    messages: list[tuple[str, int]] = []
    rt = AtomRuntime.create_ephemeral(
        SYSTEM,
        runner=runner_for(gateway),
        verbose=False,
        sleep=waits.append,
        max_retries=1,
        retry_manager=RetryManager(on_retry_message=lambda m, s: messages.append((m, s))),
    )
    folder = rt.conversation_dir
    assert folder.is_dir()
    result = rt.run("task")
    assert waits == [10]  # other errors: 10 s first; nothing really slept
    assert [s for _, s in messages] == [10]
    assert result["success"] is False and result["reason"] == "error"
    assert "has 1 turn but the agent asked for turn 3" in result["error"]  # 2 tries
    assert not folder.exists()
