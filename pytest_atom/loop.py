"""The atom loop: one Claude Code conversation iterated until it prints its exit signal.

`AtomRuntime` writes USER_PROMPT.md, sends the prompt, retries what `RetryManager` says is
transient and keeps each iteration (`IterationHistory`). It is `atom loop`, the seed-era
Python API (`pytest_atom.legacy`) and the executor's loop inside each attempt of a spec run
(`pytest_atom.run.execution`). The conversation goes on through a pinned session id (not
``claude -c``, the latest conversation of a folder), so parallel atoms in one folder cannot
cross.

Where to add: how an iteration ends goes in `AtomRuntime._iterate`; what is retried, and
after how long, in `RetryManager`. What an attempt does around the loop (workspace, checks,
judge) is `pytest_atom.run`'s.
"""

from __future__ import annotations

import itertools
import re
import shutil
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_atom.prompts import first_message, render_prompt
from pytest_atom.results.record import IterationRecord, RunOutcome, StopReason

if TYPE_CHECKING:
    from pytest_atom.agents.protocol import SessionRunner

NETWORK_ERROR_KEYWORDS = ["network", "timeout", "connection", "temporary"]
NETWORK_RETRY_BASE = 5  # seconds; doubles per attempt
NETWORK_RETRY_MAX = 300
OTHER_RETRY_BASE = 10
OTHER_RETRY_MAX = 600
SESSION_LIMIT_BUFFER = 300  # reset times are rounded to the hour, so wait a little longer
DEFAULT_SESSION_LIMIT_WAIT = 3600  # when the message carries no reset time

_RESET_RE = re.compile(r"resets (\d+)(am|pm)", re.IGNORECASE)


def _print_to_stderr(message: str, seconds: int) -> None:
    # stderr, because stdout may be the data channel of whoever embeds the atom.
    print(message, file=sys.stderr)


def _backoff(base: int, cap: int, attempt: int) -> int:
    return min(base << (max(attempt, 1) - 1), cap)  # base * 2**(attempt-1), kept an int


class RetryManager:
    """Classify a failed run into "retry after N seconds" or not; the caller sleeps."""

    def __init__(
        self,
        on_retry_message: Callable[[str, int], None] | None = None,
        *,
        clock: Callable[[], datetime] = datetime.now,
    ) -> None:
        """`on_retry_message(message, seconds)` reports each decision to retry;
        `clock` returns the local wall time that "resets 3pm" refers to."""
        self._notify = on_retry_message or _print_to_stderr
        self._clock = clock

    def check(self, stdout: str, returncode: int, attempt: int = 1) -> tuple[bool, int]:
        """Return ``(should_retry, wait_seconds)`` for the `attempt`-th try (1-based)."""
        if returncode == 0:
            return False, 0
        if "Session limit reached" in stdout:
            wait = self._parse_reset_time(stdout)
            if wait > 0:
                self._notify(f"Session limit - waiting until reset ({wait // 60} minutes)", wait)
            else:
                wait = DEFAULT_SESSION_LIMIT_WAIT
                self._notify(f"Session limit - waiting {wait // 60} minutes", wait)
            return True, wait
        if any(keyword in stdout.lower() for keyword in NETWORK_ERROR_KEYWORDS):
            wait = _backoff(NETWORK_RETRY_BASE, NETWORK_RETRY_MAX, attempt)
            self._notify(f"Network error - waiting {wait}s (attempt {attempt})", wait)
            return True, wait
        wait = _backoff(OTHER_RETRY_BASE, OTHER_RETRY_MAX, attempt)
        self._notify(f"Error (code {returncode}) - waiting {wait}s (attempt {attempt})", wait)
        return True, wait

    def _parse_reset_time(self, text: str) -> int:
        """Seconds until the "resets 3pm" time (tomorrow if already past) plus the
        buffer, or 0 when the text names no valid 12-hour time."""
        match = _RESET_RE.search(text)
        if not match or not 1 <= int(match.group(1)) <= 12:
            return 0
        hour = int(match.group(1)) % 12 + (12 if match.group(2).lower() == "pm" else 0)
        now = self._clock()
        reset = now.replace(hour=hour, minute=0, second=0, microsecond=0)
        if reset <= now:
            reset += timedelta(days=1)
        return int((reset - now).total_seconds()) + SESSION_LIMIT_BUFFER


class IterationHistory:
    """Ordered, timestamped results of an atom's iterations."""

    def __init__(self, *, clock: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self._clock = clock
        self._entries: list[dict[str, Any]] = []

    def add_iteration(self, iteration: int, result: Mapping[str, Any]) -> None:
        """Store `result` with its iteration number and a UTC ISO-8601 timestamp (both over
        keys of `result`); a missing stdout or returncode reads "" and -1."""
        now = self._clock()
        # A naive clock is taken to be UTC already: astimezone() would assume local time.
        if now.tzinfo is None:
            now = now.replace(tzinfo=UTC)
        stamp = now.astimezone(UTC).isoformat()
        entry = {"iteration": iteration, "timestamp": stamp, "stdout": "", "returncode": -1}
        entry.update((k, v) for k, v in result.items() if k not in ("iteration", "timestamp"))
        self._entries.append(entry)

    def get_all_iterations(self) -> list[dict[str, Any]]:
        """A copy (entries included), so callers cannot rewrite the record."""
        return [dict(entry) for entry in self._entries]

    def get_summary(self) -> str:
        return f"{len(self._entries)} iterations completed"

    def __len__(self) -> int:
        return len(self._entries)


class AtomRuntime:
    """Embeddable atom orchestration: iterations, retries, a structured result."""

    def __init__(  # noqa: PLR0913 -- the seed-era public signature, kept as users call it
        self,
        system_prompt: str,
        conversation_dir: Path,
        max_iterations: int = 25,
        exit_signal: str = "EXIT_LOOP_NOW",
        verbose: bool | None = None,
        cleanup: bool = False,
        *,
        runner: SessionRunner | None = None,
        session_id: str | None = None,
        retry_manager: RetryManager | None = None,
        max_retries: int | None = None,
        timeout: float | None = None,
        sleep: Callable[[float], None] = time.sleep,
        on_iteration: Callable[[int, IterationRecord], None] | None = None,
        reply: Callable[[IterationRecord], str | None] | None = None,
    ) -> None:
        """
        Keyword-only:
            runner: the agent to use (default: Claude Code in the caller's environment).
            session_id: the conversation's id; a fresh one when omitted.
            max_retries: retries per iteration; None retries forever.
            timeout: seconds for the whole run; each call gets what is left.
            reply: a conversation's user: after each iteration, the next message, or None
                when the user is done (the run succeeded); no exit signal is looked for."""
        self.system_prompt = system_prompt
        self.conversation_dir = Path(conversation_dir)
        self.max_iterations = max_iterations
        self.exit_signal = exit_signal
        self.verbose = sys.stdout.isatty() if verbose is None else verbose
        self.cleanup = cleanup
        self._runner = runner
        self.session_id = session_id or str(uuid.uuid4())
        self.retry_manager = retry_manager or RetryManager(
            lambda message, _: print(message) if self.verbose else None
        )
        self.max_retries = max_retries
        self.timeout = timeout
        self.sleep = sleep
        self.on_iteration = on_iteration
        self.reply = reply
        self.history = IterationHistory()
        self.records: list[IterationRecord] = []
        self._ephemeral = False

    @classmethod
    def create_ephemeral(cls, system_prompt: str, **kwargs: Any) -> AtomRuntime:
        """A runtime in a fresh temporary folder, removed after `run()` unless cleanup=False."""
        kwargs.setdefault("cleanup", True)
        runtime = cls(system_prompt, Path(tempfile.mkdtemp(prefix="atom-")), **kwargs)
        runtime._ephemeral = True
        return runtime

    @property
    def runner(self) -> SessionRunner:
        if self._runner is None:
            from pytest_atom.agents.claude_code.runner import ClaudeRunner

            self._runner = ClaudeRunner()  # the pinned CLI in the caller's own environment
        return self._runner

    def run(self, user_prompt: str, *, message: str | None = None) -> dict[str, Any]:
        """Iterate until done; the result as a dict (`execute`: typed)."""
        return self.execute(user_prompt, message=message).as_dict()

    def execute(self, user_prompt: str, *, message: str | None = None) -> RunOutcome:
        """Iterate until done; never raises for the CLI's failures, reports them instead.
        `message` replaces the first iteration's (a refine attempt's continued conversation)."""
        started = time.monotonic()
        deadline = started + self.timeout if self.timeout else None
        try:
            self.conversation_dir.mkdir(parents=True, exist_ok=True)
            (self.conversation_dir / "USER_PROMPT.md").write_text(user_prompt, encoding="utf-8")
            outcome = self._iterate(user_prompt, deadline, message)
        except (OSError, RuntimeError) as exc:
            outcome = RunOutcome(
                False, len(self.records), reason="error", error=f"{type(exc).__name__}: {exc}"
            )
        finally:
            self._cleanup()
        outcome.duration = time.monotonic() - started
        outcome.context = self.history.get_all_iterations()
        return outcome

    def _iterate(self, user_prompt: str, deadline: float | None, message: str | None) -> RunOutcome:
        prompt = render_prompt(self.system_prompt, self.max_iterations)
        said = message or first_message(prompt, user_prompt)
        record: IterationRecord | None = None
        for iteration in range(1, self.max_iterations + 1):
            if self.verbose:
                print(f"{'=' * 60}\nIteration {iteration}/{self.max_iterations}\n{'=' * 60}\n")
            record = self._run_with_retry(said, deadline)
            self.records.append(record)
            self.history.add_iteration(iteration, {"stdout": record.output, **record.summary()})
            if self.on_iteration:
                self.on_iteration(iteration, record)
            if record.limit_exceeded:  # the agent's failure, whatever the CLI's exit status
                outcome = self._failed("limit", iteration, record)
                outcome.error = record.limit_exceeded
                return outcome
            if record.timed_out:
                return self._failed("timeout", iteration, record)
            if record.returncode != 0 or record.unanswered:
                return self._failed("error", iteration, record)
            if self.reply is not None:
                following = self.reply(record)
                if following is None:  # the user is done
                    return RunOutcome(True, iteration, record.output)
                said = following
            elif self.exit_signal in record.output or any(
                self.exit_signal in t for t in record.texts
            ):
                return RunOutcome(True, iteration, record.output)
            else:
                said = prompt
        return self._failed("max_iterations", self.max_iterations, record)

    def _run_with_retry(self, prompt: str, deadline: float | None) -> IterationRecord:
        failed: list[IterationRecord] = []  # tries retried: paid for, kept on the last one
        for attempt in itertools.count(1):
            left = None if deadline is None else max(0.1, deadline - time.monotonic())
            record = self.runner.run(
                prompt,
                self.conversation_dir,
                session_id=self.session_id,
                use_context=True,
                timeout=left,
            )
            record.failed_tries = failed
            failed = [*failed, record]
            if (
                record.timed_out
                or record.limit_exceeded
                or record.needs_login  # waiting never brings credentials
                or record.unanswered  # asking again asks the same question
                or record.returncode == 0
                or (self.max_retries is not None and attempt > self.max_retries)
            ):
                return record
            retry, wait = self.retry_manager.check(record.retry_text, record.returncode, attempt)
            if not retry or (deadline is not None and time.monotonic() + wait >= deadline):
                return record
            self.sleep(wait)
        raise AssertionError("unreachable")

    @staticmethod
    def _failed(reason: StopReason, iterations: int, record: IterationRecord | None) -> RunOutcome:
        error = None
        if record is not None and (record.returncode != 0 or record.timed_out):
            error = record.failure(2000)
        return RunOutcome(False, iterations, record.output if record else "", reason, error)

    def _cleanup(self) -> None:
        if not self.cleanup:
            return
        if self._ephemeral:
            shutil.rmtree(self.conversation_dir, ignore_errors=True)
        else:
            (self.conversation_dir / "USER_PROMPT.md").unlink(missing_ok=True)
