"""A session's spending limit (``--atom-max-cost-usd``): what recording may spend in total.

Unlike a spec's ``limits: {max_cost_usd}``, known only when a call ends, this limit bounds
the whole session on what the API billed as the streams arrive: the gateway adds each live
answer's price (`billing`, `prices`) once it has passed through. Once it is reached:

- no new ``claude -p`` call starts: a spec not started yet is not run (`SpendingLimitReached`);
- a call under way is stopped the way a spec's limits stop one, and the gateway answers any
  further request with a final API error: at most one answer per session is in flight;
- the session exits 2, as ``claude plugin eval --max-cost-usd`` does, and its summary says
  what was spent and which specs did not run.

Only what was paid counts. Under pytest-xdist each of N workers holds the limit / N.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from pytest_atom.errors import SpendingLimitReached


class Crossing(str):
    """A limit the agent crossed, as the reports word it (``exceeded max_turns: 3 > 2``),
    with the limit named apart (`limit`: ``exceeded max_turns``)."""

    limit: str

    def __new__(cls, text: str, limit: str) -> Crossing:
        crossing = super().__new__(cls, text)
        crossing.limit = limit
        return crossing

    def __getnewargs__(self) -> tuple[str, str]:  # type: ignore[override]
        return str(self), self.limit

    def within(self, step: str) -> Crossing:
        """The crossing within a multi-step spec's step (``step test: ...``)."""
        return Crossing(f"step {step}: {self}", f"step {step}")


#: The exit status of a session stopped by its spending limit (``claude plugin eval``'s).
EXIT_SPENDING_LIMIT = 2
#: The words every report of the limit carries (a front end finds them across processes).
SPEND_WORDS = "the session's spending limit"


@dataclass
class SpendLimit:
    """What a session may spend (`limit_usd`) and has spent; safe to share between threads."""

    limit_usd: float
    option: str = "--atom-max-cost-usd"
    _spent: float = field(default=0.0, init=False)
    _stopped: list[str] = field(default_factory=list, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def add(self, usd: float) -> None:
        with self._lock:
            self._spent += usd

    @property
    def spent_usd(self) -> float:
        with self._lock:
            return self._spent

    @property
    def reached(self) -> bool:
        return self.spent_usd >= self.limit_usd

    def words(self) -> str:
        """``$0.0123 spent of the $0.0100 limit (--atom-max-cost-usd)``."""
        return f"${self.spent_usd:.4f} spent of the ${self.limit_usd:.4f} limit ({self.option})"

    def crossing(self) -> Crossing | None:
        """How a run stopped by the limit is reported, or None."""
        if not self.reached:
            return None
        return Crossing(f"reached {SPEND_WORDS}: {self.words()}", f"reached {SPEND_WORDS}")

    def refuse(self, what: str) -> SpendingLimitReached:
        """The error for `what` (a spec) that will not start; the summary names it."""
        with self._lock:
            self._stopped.append(what)
        return SpendingLimitReached(f"not run: {SPEND_WORDS} is reached: {self.words()}")

    @property
    def not_run(self) -> list[str]:
        with self._lock:
            return list(self._stopped)

    def summary(self) -> str | None:
        """The session's closing line once the limit was reached, else None."""
        if not self.reached:
            return None
        skipped = self.not_run
        rest = f"; {len(skipped)} spec{'s' * (len(skipped) != 1)} not run" if skipped else ""
        return f"spending limit reached: {self.words()}{rest}; exit status {EXIT_SPENDING_LIMIT}"
