"""AtomRuntime's loop with the real CLI: iterations, exit signal, retries, results."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_atom import AtomRuntime, RetryManager

pytestmark = pytest.mark.slow  # every test here starts Claude Code

SYSTEM = "Work on USER_PROMPT.md; at most {max_iterations} iterations. Say EXIT_LOOP_NOW when done."


def runtime(runner: Any, folder: Path, **kwargs: Any) -> AtomRuntime:
    kwargs.setdefault("max_iterations", 3)
    kwargs.setdefault("verbose", False)
    return AtomRuntime(SYSTEM, folder, runner=runner, **kwargs)


def test_iterates_in_one_conversation_until_the_exit_signal(
    gateway_for: Any, runner_for: Any, tmp_path: Path
) -> None:
    gateway = gateway_for([{"text": "Still working."}, {"text": "Finished.\nEXIT_LOOP_NOW"}])
    rt = runtime(runner_for(gateway), tmp_path / "work")
    result = rt.run("Write the report.")
    assert result["success"] is True
    assert result["iterations"] == 2
    assert result["output"] == "Finished.\nEXIT_LOOP_NOW"
    assert result["reason"] is None and result["error"] is None
    assert result["duration"] > 0
    assert (tmp_path / "work" / "USER_PROMPT.md").read_text() == "Write the report."
    assert [c["iteration"] for c in result["context"]] == [1, 2]
    assert all(c["timestamp"] for c in result["context"])
    turns = [e.request.json for e in gateway.exchanges if e.request.kind == "turn"]
    assert "at most 3 iterations" in json.dumps(turns[0]["messages"])  # {max_iterations} rendered
    assert "Still working." in json.dumps(turns[1]["messages"])  # iteration 2 saw iteration 1


def test_stops_at_max_iterations(gateway_for: Any, runner_for: Any, tmp_path: Path) -> None:
    gateway = gateway_for([{"text": "step 1"}, {"text": "step 2"}])
    result = runtime(runner_for(gateway), tmp_path, max_iterations=2).run("task")
    assert result["success"] is False
    assert result["reason"] == "max_iterations"
    assert result["iterations"] == 2
    assert result["output"] == "step 2"


def test_cli_errors_are_retried_with_the_seed_backoff(
    gateway_for: Any, runner_for: Any, tmp_path: Path
) -> None:
    gateway = gateway_for([{"text": "no exit signal"}])  # iteration 2 exhausts the script
    waits: list[float] = []
    messages: list[tuple[str, int]] = []
    rt = runtime(
        runner_for(gateway),
        tmp_path,
        sleep=waits.append,
        max_retries=2,
        retry_manager=RetryManager(on_retry_message=lambda m, s: messages.append((m, s))),
    )
    result = rt.run("task")
    assert waits == [10, 20]  # other errors: 10 s doubling; nothing really slept
    assert [s for _, s in messages] == [10, 20]
    assert result["success"] is False and result["reason"] == "error"
    assert "has 1 turn but the agent asked for turn 4" in result["error"]  # 1 + 3 tries


def test_ephemeral_runtime_cleans_up_its_folder(gateway_for: Any, runner_for: Any) -> None:
    gateway = gateway_for([{"text": "done EXIT_LOOP_NOW"}])
    rt = AtomRuntime.create_ephemeral(SYSTEM, runner=runner_for(gateway), verbose=False)
    folder = rt.conversation_dir
    assert folder.is_dir()
    assert rt.run("quick task")["success"] is True
    assert not folder.exists()


def test_cleanup_removes_only_the_prompt_file(
    gateway_for: Any, runner_for: Any, tmp_path: Path
) -> None:
    gateway = gateway_for(
        [
            {"tool_use": [{"name": "Bash", "input": {"command": "touch kept"}}]},
            {"text": "EXIT_LOOP_NOW"},
        ]
    )
    runtime(runner_for(gateway), tmp_path, cleanup=True).run("task")
    assert (tmp_path / "kept").exists()
    assert not (tmp_path / "USER_PROMPT.md").exists()


def test_verbose_prints_the_seed_banners(
    gateway_for: Any, runner_for: Any, tmp_path: Path, capsys: Any
) -> None:
    gateway = gateway_for([{"text": "EXIT_LOOP_NOW"}])
    runtime(runner_for(gateway), tmp_path, verbose=True, max_iterations=4).run("task")
    assert f"{'=' * 60}\nIteration 1/4\n{'=' * 60}" in capsys.readouterr().out
