"""Record of what each iteration of an atom produced.

Claude Code's ``-c`` flag is what carries the conversation from one iteration to the
next; this history never goes back to Claude. It exists so a runner, a report or a
failing test can show what happened and when.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any


def _utc_now() -> datetime:
    return datetime.now(UTC)


class IterationHistory:
    """Ordered, timestamped results of an atom's iterations (cc_atoms' ContextAccumulator)."""

    def __init__(self, *, clock: Callable[[], datetime] = _utc_now) -> None:
        """`clock` is injectable so recorded timestamps are deterministic in tests."""
        self._clock = clock
        self._entries: list[dict[str, Any]] = []

    def add_iteration(self, iteration: int, result: Mapping[str, Any]) -> None:
        """Store `result` with its iteration number and a UTC ISO-8601 timestamp.

        Extra keys in `result` are kept, so callers can record more than
        stdout/returncode (duration, cost, ...); missing stdout/returncode get the
        defaults ("" and -1) so every entry can be read the same way.
        """
        now = self._clock()
        # A naive clock is taken to be UTC already: astimezone() would assume local time.
        if now.tzinfo is None:
            now = now.replace(tzinfo=UTC)
        entry: dict[str, Any] = {
            "iteration": iteration,
            "timestamp": now.astimezone(UTC).isoformat(),
            "stdout": "",
            "returncode": -1,
        }
        # The history's own iteration number and timestamp are authoritative.
        entry.update((k, v) for k, v in result.items() if k not in ("iteration", "timestamp"))
        self._entries.append(entry)

    def get_all_iterations(self) -> list[dict[str, Any]]:
        """A copy (entries included), so callers cannot rewrite the record."""
        return [dict(entry) for entry in self._entries]

    def get_summary(self) -> str:
        """One line for logs, worded as in cc_atoms."""
        return f"{len(self._entries)} iterations completed"

    def __len__(self) -> int:
        return len(self._entries)
