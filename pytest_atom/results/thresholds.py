"""How many of a spec's repeats must pass: the one rule every report and the exit status apply.

A spec's runs are its rows with one `spec_key` (each arm and case is a spec of its own).
What they must meet, first that applies:

1. the spec's own ``pass_at_least: K`` (of its ``repeats: N``): the author's statement, so
   it alone decides, as a spec's own ``reflector: {threshold}`` beats ``--atom-threshold``;
2. the run's gates, each where set: ``--atom-pass-at-least K`` (all N when K > N) and
   ``--atom-min-pass-rate R``;
3. none: pytest's own status (each failed run fails the session).

A count is met while at most N - K runs failed: a CI shard that ran some of the repeats
fails only once the spec can no longer pass (`atom results combine` counts all shards).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from pytest_atom.results.rows import SummaryRow, spec_key


@dataclass(frozen=True)
class RepeatGates:
    """The run's own gates over repeats, for specs that state no `pass_at_least:`."""

    pass_at_least: int | None = None  # --atom-pass-at-least
    min_pass_rate: float | None = None  # --atom-min-pass-rate


@dataclass(frozen=True)
class Tally:
    """One spec's runs as a threshold sees them."""

    spec: str
    passed: int
    ran: int
    repeats: int  # runs the spec has in all: more than `ran` on a shard
    own: int | None = None  # the spec's own `pass_at_least:`

    @property
    def failed(self) -> int:
        return self.ran - self.passed

    def needed(self, gates: RepeatGates) -> int | None:
        """The passes the spec needs of its `repeats`; None: no count applies."""
        if self.own is not None:
            return self.own
        if gates.pass_at_least is not None:
            return min(gates.pass_at_least, self.repeats)
        return None

    def gated(self, gates: RepeatGates) -> bool:
        """Whether a threshold decides this spec, rather than pytest's own status."""
        return self.needed(gates) is not None or gates.min_pass_rate is not None

    def met(self, gates: RepeatGates) -> bool:
        """Whether the spec passes its threshold: with none, whether every run passed."""
        needed = self.needed(gates)
        rate = gates.min_pass_rate if self.own is None else None  # a spec's own count decides
        if needed is None and rate is None:
            return self.failed == 0
        count_ok = needed is None or self.failed <= self.repeats - needed
        return count_ok and (rate is None or self._rate_met(rate))

    def _rate_met(self, minimum: float) -> bool:
        return self.ran > 0 and self.passed / self.ran >= minimum

    def verdict(self, gates: RepeatGates) -> str:
        """What the summary adds to the spec's line: ``ok, at least 4 of 5 must pass``
        (with how many did not run here), ``BELOW the minimum 0.5``; empty without a
        threshold."""
        parts = []
        needed = self.needed(gates)
        if needed is not None:
            count_ok = self.failed <= self.repeats - needed
            text = f"{'ok' if count_ok else 'BELOW'}, at least {needed} of {self.repeats} must pass"
            missing = self.repeats - self.ran
            if missing > 0:
                text += f"; {missing} of them did not run here"
            parts.append(text)
        if gates.min_pass_rate is not None and self.own is None:
            minimum = gates.min_pass_rate
            parts.append(f"{'ok' if self._rate_met(minimum) else 'BELOW'} the minimum {minimum:g}")
        return "; ".join(parts)


def tallies(rows: Iterable[SummaryRow]) -> list[Tally]:
    """Per spec, in the rows' order: how many runs passed (an expected failure passes, as
    for pytest's exit status), how many ran, and its repeats and own `pass_at_least`."""
    grouped: dict[str, list[SummaryRow]] = {}
    for row in rows:
        grouped.setdefault(spec_key(row.nodeid), []).append(row)
    found = []
    for spec, runs in grouped.items():
        declared = max((row.repeats or 0 for row in runs), default=0)
        own = next((row.pass_at_least for row in runs if row.pass_at_least is not None), None)
        found.append(
            Tally(
                spec,
                passed=sum(row.outcome.ok for row in runs),
                ran=len(runs),
                repeats=max(declared, len(runs)),
                own=own,
            )
        )
    return found
