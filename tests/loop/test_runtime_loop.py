"""AtomRuntime's loop with the real Claude Code CLI: every branch of it, one by one.

Each test runs `ClaudeRunner` (the pinned CLI) against the project's scripted gateway on
127.0.0.1, or against tests/faults.py's upstream where the API must fail (a 500, an
overload, a dropped connection): the exit signal, the iteration budget, the deadline's
timeout, retries until one succeeds or they run out, a wait the deadline leaves no room
for, and a CLI that cannot be started. The loop's own seams record the waits instead of
sleeping them: its `sleep` and the `RetryManager`'s messages, so the waits' doubling is
asserted as the loop asked for it and nothing really waits.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from pytest_atom.agents.claude_code.runner import ClaudeRunner, claude_env
from pytest_atom.legacy import AtomRuntime, RetryManager
from pytest_atom.results.record import IterationRecord
from tests.faults import FaultyUpstream
from tests.helpers import bash

pytestmark = pytest.mark.slow  # every test here starts Claude Code

SYSTEM = "Work on USER_PROMPT.md; at most {max_iterations} iterations. Say EXIT_LOOP_NOW."
SESSION = "5a1d0000-0000-4000-8000-00000000100f"
#: The scripted gateway's refusal once its script ran out: an error the CLI gives up on at once.
SPENT = (
    "API Error: 409 pytest-atom scripted gateway: the script has 1 turn but the agent asked "
    "for turn {}. Add a turn, or end the last one with EXIT_LOOP_NOW."
)


class Waits:
    """The runtime's `sleep` and the retry manager's messages, recorded instead of slept."""

    def __init__(self) -> None:
        self.slept: list[float] = []
        self.messages: list[tuple[str, int]] = []

    def seams(self) -> dict[str, Any]:
        """AtomRuntime's keyword arguments that route its waits here."""
        manager = RetryManager(on_retry_message=lambda m, s: self.messages.append((m, s)))
        return {"sleep": self.slept.append, "retry_manager": manager}

    def runtime(self, runner: ClaudeRunner, folder: Path, **kwargs: Any) -> AtomRuntime:
        kwargs.setdefault("max_iterations", 3)
        kwargs.setdefault("verbose", False)
        return AtomRuntime(SYSTEM, folder, runner=runner, **self.seams(), **kwargs)


@pytest.fixture
def waits() -> Waits:
    return Waits()


def prompts(gateway: Any) -> list[str]:
    """What each CLI call said first: the text that ends a turn request's last user
    message (one that ends with a tool's result is the same call going on)."""
    said = []
    for request in turns(gateway):
        *_, last = (m["content"] for m in request["messages"] if m["role"] == "user")
        if isinstance(last, str):
            said.append(last)
        elif last[-1]["type"] == "text":
            said.append(last[-1]["text"])
    return said


def turns(gateway: Any) -> list[Any]:
    return [e.request.json for e in gateway.exchanges if e.request.kind == "turn"]


def test_iterates_in_one_conversation_until_the_exit_signal(
    waits: Waits, gateway_for: Any, runner_for: Any, tmp_path: Path, capsys: Any
) -> None:
    """Two iterations of one pinned conversation in the run folder: the first says the
    system prompt and the task, the next the system prompt alone. Verbose, it prints the
    loop's banners; with cleanup, it removes the prompt file it wrote and nothing the
    agent made."""
    gateway = gateway_for(
        [
            bash("cat USER_PROMPT.md; touch kept"),
            {"text": "working"},
            {"text": "Done.\nEXIT_LOOP_NOW"},
        ]
    )
    work = tmp_path / "work"
    seen: list[tuple[int, str]] = []
    rt = waits.runtime(
        runner_for(gateway),
        work,
        verbose=True,
        cleanup=True,
        session_id=SESSION,
        on_iteration=lambda i, r: seen.append((i, r.output)),
    )
    result = rt.run("Write the report.")
    assert (result["success"], result["iterations"], result["reason"]) == (True, 2, None)
    assert result["output"] == "Done.\nEXIT_LOOP_NOW" and result["error"] is None
    assert result["duration"] > 0
    first, second = prompts(gateway)
    assert first.startswith("Work on USER_PROMPT.md; at most 3 iterations.")  # rendered
    assert first.endswith("\n\n# USER_PROMPT.md\n\nWrite the report.")  # the task, too
    assert second == "Work on USER_PROMPT.md; at most 3 iterations. Say EXIT_LOOP_NOW."
    requests = turns(gateway)
    assert "Write the report." in json.dumps(requests[1]["messages"])  # the file the agent read
    assert "working" in json.dumps(requests[2]["messages"])  # iteration 2 saw iteration 1
    assert [r.session_id for r in rt.records] == [SESSION, SESSION]  # one conversation
    assert (work / "kept").exists()  # the CLI worked in the run folder
    assert seen == [(1, "working"), (2, "Done.\nEXIT_LOOP_NOW")]
    assert [c["iteration"] for c in result["context"]] == [1, 2]
    assert all(c["timestamp"] for c in result["context"])
    assert len(rt.records) == 2 and waits.slept == [] and waits.messages == []
    assert f"{'=' * 60}\nIteration 1/3\n{'=' * 60}" in capsys.readouterr().out
    assert not (work / "USER_PROMPT.md").exists()


def test_a_custom_exit_signal_counts_in_any_assistant_text(
    waits: Waits, gateway_for: Any, runner_for: Any, tmp_path: Path
) -> None:
    """The default signal is no signal under a custom one; the custom one ends the loop
    from a text before the final one (the output is still the final text)."""
    gateway = gateway_for(
        [
            {"text": "EXIT_LOOP_NOW is not mine"},
            bash("true", "ALL DONE, then a summary"),
            {"text": "final words"},
        ]
    )
    result = waits.runtime(runner_for(gateway), tmp_path, exit_signal="ALL DONE").run("task")
    assert (result["success"], result["iterations"]) == (True, 2)
    assert result["output"] == "final words"


def test_stops_when_the_iteration_budget_is_spent(
    waits: Waits, gateway_for: Any, runner_for: Any, tmp_path: Path
) -> None:
    gateway = gateway_for([{"text": "one"}, {"text": "two"}])
    result = waits.runtime(runner_for(gateway), tmp_path, max_iterations=2).run("task")
    assert (result["success"], result["reason"], result["iterations"]) == (
        False,
        "max_iterations",
        2,
    )
    assert result["output"] == "two" and result["error"] is None
    assert "at most 2 iterations" in prompts(gateway)[0]
    assert len(turns(gateway)) == 2  # no third call


def test_the_deadline_ends_the_run_with_a_timeout_and_no_retry(
    waits: Waits, gateway_for: Any, runner_for: Any, tmp_path: Path
) -> None:
    """The second iteration's agent hangs: the call gets what is left of the run's 12 s
    (long enough for a loaded machine's first iteration) and is killed at the deadline;
    a timeout is never retried, whatever `max_retries` allows."""
    gateway = gateway_for([{"text": "working"}, bash("echo waiting; sleep 60")])
    rt = waits.runtime(runner_for(gateway), tmp_path, timeout=12, max_retries=5)
    result = rt.run("task")
    assert (result["success"], result["reason"], result["iterations"]) == (False, "timeout", 2)
    killed = re.search(r"claude timed out after (\S+)s and was killed$", result["error"])
    assert killed, result["error"]
    assert 0 < float(killed.group(1)) < 12  # each call gets what is left
    assert len(turns(gateway)) == 2 and waits.slept == [] and waits.messages == []


def test_errors_are_retried_with_the_loop_backoff_then_reported(
    gateway_for: Any, runner_for: Any
) -> None:
    """The CLI fails (its script runs out within the first call) and is started again
    with the same prompt after the loop's wait, 10 s doubling for an error that names no
    network trouble, until the retries run out: the last try's own words are the error.
    Ephemeral, the runtime removes its folder even so."""
    gateway = gateway_for([bash("true")])  # each try asks for one turn more: 2, 3, 4
    waits = Waits()
    rt = AtomRuntime.create_ephemeral(
        SYSTEM, runner=runner_for(gateway), verbose=False, max_retries=2, **waits.seams()
    )
    folder = rt.conversation_dir
    assert folder.is_dir()
    result = rt.run("task")
    assert waits.slept == [10, 20]  # nothing really slept
    assert waits.messages == [
        ("Error (code 1) - waiting 10s (attempt 1)", 10),
        ("Error (code 1) - waiting 20s (attempt 2)", 20),
    ]
    assert (result["success"], result["reason"], result["iterations"]) == (False, "error", 1)
    assert result["error"] == SPENT.format(4)
    said = prompts(gateway)
    assert len(said) == 3 and set(said) == {said[0]}  # the same prompt each try
    assert not folder.exists()


def test_transient_api_errors_are_retried_doubling_until_one_succeeds(
    waits: Waits, claude_bin: Path, tmp_path: Path
) -> None:
    """A 500, an overload, a dropped connection and a 500 again, then an answer. The CLI
    retries nothing itself (``CLAUDE_CODE_MAX_RETRIES=0``), so each fault fails one call,
    and calls each transient ("usually temporary", "Connection dropped"): the loop waits
    5 s, doubling, with no limit on retries. A retried call is no iteration; its failed
    tries are kept on the one that succeeded."""
    faults = ["500", "529", "reset", "500"]
    upstream = FaultyUpstream([{"text": "Done.\nEXIT_LOOP_NOW"}], faults).start()
    env = claude_env(upstream.url, tmp_path / "claude-config")
    env["CLAUDE_CODE_MAX_RETRIES"] = "0"
    rt = waits.runtime(ClaudeRunner(env=env, claude_bin=claude_bin), tmp_path / "work")
    try:
        result = rt.run("task")
    finally:
        upstream.stop()
    assert (result["success"], result["iterations"]) == (True, 1)
    assert waits.slept == [5, 10, 20, 40]
    assert [m for m, _ in waits.messages] == [
        f"Network error - waiting {s}s (attempt {n})" for n, s in enumerate([5, 10, 20, 40], 1)
    ]
    assert [t for t in upstream.log if t.startswith("turn")] == [
        *(f"turn {fault}" for fault in faults),
        "turn ok",
    ]
    [record] = rt.records
    assert [t.output.split(".")[0] for t in record.failed_tries] == [
        "API Error: 500 Internal server error",
        "API Error: 529 Overloaded",
        "API Error: Connection dropped (ECONNRESET)",
        "API Error: 500 Internal server error",
    ]


def test_zero_retries_reports_the_first_error(
    waits: Waits, gateway_for: Any, runner_for: Any, tmp_path: Path
) -> None:
    gateway = gateway_for([bash("true")])
    result = waits.runtime(runner_for(gateway), tmp_path, max_retries=0).run("task")
    assert (result["reason"], result["error"]) == ("error", SPENT.format(2))
    assert waits.slept == [] and waits.messages == []  # no retry was even considered


def test_a_retry_never_waits_past_the_deadline(
    waits: Waits, gateway_for: Any, runner_for: Any, tmp_path: Path
) -> None:
    """The first error's 10 s wait can never fit in a run of 10 s: the error is reported."""
    gateway = gateway_for([bash("true")])
    rt = waits.runtime(runner_for(gateway), tmp_path, timeout=10, max_retries=3)
    result = rt.run("task")
    assert (result["reason"], result["error"]) == ("error", SPENT.format(2))
    assert waits.messages == [("Error (code 1) - waiting 10s (attempt 1)", 10)]  # asked for
    assert waits.slept == [] and len(turns(gateway)) == 2  # one call: no second try


def test_a_refine_message_replaces_the_first_prompt(
    waits: Waits, gateway_for: Any, runner_for: Any, tmp_path: Path
) -> None:
    gateway = gateway_for([{"text": "more work"}, {"text": "EXIT_LOOP_NOW"}])
    rt = waits.runtime(runner_for(gateway), tmp_path)
    assert rt.run("task", message="A reviewer asks for more.")["success"] is True
    assert prompts(gateway) == [
        "A reviewer asks for more.",
        "Work on USER_PROMPT.md; at most 3 iterations. Say EXIT_LOOP_NOW.",
    ]


def test_a_cli_that_cannot_start_is_reported_not_raised(
    waits: Waits, gateway_for: Any, claude_bin: Path, tmp_path: Path
) -> None:
    """The CLI is gone after the first iteration: starting it raises, and the run reports
    that as its error (and still cleans up)."""
    link = tmp_path / "bin" / "claude"
    link.parent.mkdir()
    link.symlink_to(claude_bin)
    gateway = gateway_for([{"text": "one"}])
    runner = ClaudeRunner(env=claude_env(gateway.url, tmp_path / "config"), claude_bin=link)
    work = tmp_path / "work"

    def vanish(iteration: int, record: IterationRecord) -> None:
        link.unlink()

    rt = waits.runtime(runner, work, cleanup=True, on_iteration=vanish)
    result = rt.run("task")
    assert (result["success"], result["reason"], result["iterations"]) == (False, "error", 1)
    assert result["error"] == f"FileNotFoundError: [Errno 2] No such file or directory: '{link}'"
    assert result["duration"] >= 0 and not (work / "USER_PROMPT.md").exists()  # cleaned up
