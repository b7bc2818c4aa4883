"""AtomRuntime's loop and retry logic, driven by a stub runner: every branch in milliseconds.

The stub stands in for ClaudeRunner only here, to reach the loop's branches (exit signal,
budget, timeout, retries, deadline) one by one; test_runtime.py and test_runner.py show
the same loop with the real CLI.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pytest_atom.legacy import AtomRuntime, RetryManager
from pytest_atom.results.record import IterationRecord

SYSTEM = "Work on USER_PROMPT.md; at most {max_iterations} iterations. Say EXIT_LOOP_NOW."


@dataclass
class Call:
    prompt: str
    conversation_dir: Path
    session_id: str | None
    use_context: bool
    timeout: float | None


class StubRunner:
    """Answers each `run` with the next record (or what a callable returns for the call)."""

    def __init__(self, *answers: IterationRecord | Callable[[Call], IterationRecord]) -> None:
        self.answers = list(answers)
        self.calls: list[Call] = []

    def run(
        self,
        prompt: str,
        conversation_dir: Path,
        *,
        session_id: str | None = None,
        use_context: bool = True,
        timeout: float | None = None,
    ) -> IterationRecord:
        call = Call(prompt, conversation_dir, session_id, use_context, timeout)
        self.calls.append(call)
        if not self.answers:
            raise AssertionError(f"unexpected call {len(self.calls)}: {prompt[:60]!r}")
        answer = self.answers.pop(0)
        return answer(call) if callable(answer) else answer


def said(output: str, *texts: str) -> IterationRecord:
    return IterationRecord(returncode=0, output=output, texts=list(texts))


def failed(stderr: str = "API Error: 500", code: int = 1) -> IterationRecord:
    return IterationRecord(returncode=code, stderr=stderr, is_error=True)


def timed_out() -> IterationRecord:
    return IterationRecord(returncode=-9, timed_out=True, is_error=True, stderr="killed")


class Waits:
    """The runtime's `sleep` and the retry manager's messages, recorded instead of slept."""

    def __init__(self) -> None:
        self.slept: list[float] = []
        self.messages: list[str] = []

    def runtime(self, runner: StubRunner, folder: Path, **kwargs: Any) -> AtomRuntime:
        kwargs.setdefault("max_iterations", 3)
        return AtomRuntime(
            SYSTEM,
            folder,
            verbose=False,
            runner=runner,
            sleep=self.slept.append,
            retry_manager=RetryManager(on_retry_message=lambda m, s: self.messages.append(m)),
            **kwargs,
        )


@pytest.fixture
def waits() -> Waits:
    return Waits()


def test_iterates_in_one_session_until_the_exit_signal(waits: Waits, tmp_path: Path) -> None:
    runner = StubRunner(said("working"), said("Done.\nEXIT_LOOP_NOW"))
    seen: list[tuple[int, str]] = []
    rt = waits.runtime(
        runner, tmp_path, session_id="s-1", on_iteration=lambda i, r: seen.append((i, r.output))
    )
    result = rt.run("Write the report.")
    assert (result["success"], result["iterations"], result["reason"]) == (True, 2, None)
    assert result["output"] == "Done.\nEXIT_LOOP_NOW" and result["error"] is None
    first, second = runner.calls
    assert first.prompt.startswith("Work on USER_PROMPT.md; at most 3 iterations.")
    assert first.prompt.endswith("\n\n# USER_PROMPT.md\n\nWrite the report.")  # the task, too
    assert second.prompt == "Work on USER_PROMPT.md; at most 3 iterations. Say EXIT_LOOP_NOW."
    assert {c.session_id for c in runner.calls} == {"s-1"}  # one conversation
    assert all(c.use_context and c.conversation_dir == tmp_path for c in runner.calls)
    assert [c.timeout for c in runner.calls] == [None, None]  # no deadline, no limit
    assert seen == [(1, "working"), (2, "Done.\nEXIT_LOOP_NOW")]
    assert [c["iteration"] for c in result["context"]] == [1, 2]
    assert len(rt.records) == 2 and waits.slept == []
    assert (tmp_path / "USER_PROMPT.md").read_text() == "Write the report."


def test_the_signal_counts_in_any_assistant_text(waits: Waits, tmp_path: Path) -> None:
    runner = StubRunner(said("final words", "EXIT_LOOP_NOW, then a summary"))
    result = waits.runtime(runner, tmp_path).run("task")
    assert result["success"] is True and result["output"] == "final words"


def test_a_custom_exit_signal(waits: Waits, tmp_path: Path) -> None:
    runner = StubRunner(said("EXIT_LOOP_NOW is not mine"), said("ALL DONE"))
    result = waits.runtime(runner, tmp_path, exit_signal="ALL DONE").run("task")
    assert (result["success"], result["iterations"]) == (True, 2)


def test_stops_when_the_iteration_budget_is_spent(waits: Waits, tmp_path: Path) -> None:
    runner = StubRunner(said("one"), said("two"))
    result = waits.runtime(runner, tmp_path, max_iterations=2).run("task")
    assert (result["success"], result["reason"], result["iterations"]) == (
        False,
        "max_iterations",
        2,
    )
    assert result["output"] == "two" and result["error"] is None
    assert "at most 2 iterations" in runner.calls[0].prompt


def test_a_timeout_ends_the_run_without_a_retry(waits: Waits, tmp_path: Path) -> None:
    runner = StubRunner(said("working"), timed_out())
    result = waits.runtime(runner, tmp_path, max_retries=5).run("task")
    assert (result["success"], result["reason"], result["iterations"]) == (False, "timeout", 2)
    assert result["error"] == "killed"
    assert len(runner.calls) == 2 and waits.slept == []


def test_errors_are_retried_with_the_loop_backoff_then_reported(
    waits: Waits, tmp_path: Path
) -> None:
    runner = StubRunner(failed(), failed(), failed("API Error: 500 overloaded"))
    result = waits.runtime(runner, tmp_path, max_retries=2).run("task")
    assert waits.slept == [10, 20]  # other errors: 10 s, doubling
    assert waits.messages == [
        "Error (code 1) - waiting 10s (attempt 1)",
        "Error (code 1) - waiting 20s (attempt 2)",
    ]
    assert (result["success"], result["reason"], result["iterations"]) == (False, "error", 1)
    assert result["error"] == "API Error: 500 overloaded"  # the last try's own words
    assert len(runner.calls) == 3  # the same prompt each time
    assert {c.prompt for c in runner.calls} == {runner.calls[0].prompt}


def test_a_retry_that_succeeds_continues_the_loop(waits: Waits, tmp_path: Path) -> None:
    runner = StubRunner(failed("network connection reset"), said("EXIT_LOOP_NOW"))
    rt = waits.runtime(runner, tmp_path, max_retries=1)
    result = rt.run("task")
    assert result["success"] is True and result["iterations"] == 1
    assert waits.slept == [5]  # a network error: 5 s first
    assert len(rt.records) == 1  # a retried call is not an iteration


def test_without_max_retries_the_seed_retries_until_it_works(waits: Waits, tmp_path: Path) -> None:
    runner = StubRunner(failed(), failed(), failed(), failed(), said("EXIT_LOOP_NOW"))
    result = waits.runtime(runner, tmp_path).run("task")
    assert result["success"] is True and waits.slept == [10, 20, 40, 80]


def test_zero_retries_reports_the_first_error(waits: Waits, tmp_path: Path) -> None:
    runner = StubRunner(failed(stderr="", code=3))
    result = waits.runtime(runner, tmp_path, max_retries=0).run("task")
    assert (result["reason"], result["error"]) == ("error", "exit code 3")
    assert waits.slept == [] and waits.messages == []


def test_a_retry_never_waits_past_the_deadline(waits: Waits, tmp_path: Path) -> None:
    runner = StubRunner(failed())
    result = waits.runtime(runner, tmp_path, timeout=5, max_retries=3).run("task")
    assert result["reason"] == "error" and waits.slept == []  # a 10 s wait would overrun 5 s
    (call,) = runner.calls
    assert call.timeout is not None and 0 < call.timeout <= 5  # each call gets what is left


def test_a_refine_message_replaces_the_first_prompt(waits: Waits, tmp_path: Path) -> None:
    runner = StubRunner(said("more work"), said("EXIT_LOOP_NOW"))
    waits.runtime(runner, tmp_path).run("task", message="A reviewer asks for more.")
    assert runner.calls[0].prompt == "A reviewer asks for more."
    assert runner.calls[1].prompt.startswith("Work on USER_PROMPT.md")


def test_a_runner_that_raises_is_reported_not_raised(waits: Waits, tmp_path: Path) -> None:
    def boom(call: Call) -> IterationRecord:
        raise OSError("claude vanished")

    rt = waits.runtime(StubRunner(said("one"), boom), tmp_path, cleanup=True)
    result = rt.run("task")
    assert (result["success"], result["reason"], result["iterations"]) == (False, "error", 1)
    assert result["error"] == "OSError: claude vanished"
    assert result["duration"] >= 0 and not (tmp_path / "USER_PROMPT.md").exists()  # cleaned up
