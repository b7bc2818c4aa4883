"""Decide whether a failed Claude Code run is worth retrying, and after how long.

RetryManager only *computes* the wait: the caller sleeps, which keeps this module free of
real time and lets tests inject a clock instead of waiting for 3pm.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from datetime import datetime, timedelta

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
    """Classify a run's outcome into "done" or "retry after N seconds"."""

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
                return True, wait
            wait = DEFAULT_SESSION_LIMIT_WAIT
            self._notify(f"Session limit - waiting {wait // 60} minutes", wait)
            return True, wait
        lowered = stdout.lower()
        if any(keyword in lowered for keyword in NETWORK_ERROR_KEYWORDS):
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
