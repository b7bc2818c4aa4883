"""Budgets an agent must stay within (docs/how-to/budgets.md), enforced while it runs.

A spec's ``limits:`` (``.atom/config.yaml``'s as project defaults) bound what the *agent*
may use over a whole spec run, refine attempts included: a budget is what getting the task
done costs. The reflector is the harness's judge, not the agent: it never counts.
`Budget.observe` folds events in as they arrive (replayed too), so the runner can stop the
CLI the moment a limit is crossed.

- turns: assistant messages the CLI streams, a subagent's among them (the CLI emits one
  event per content block, all with the message's id; a message counts once; a subagent's
  final answer is never streamed);
- tool calls: ``tool_use`` blocks, a subagent's among them;
- tokens: every session's of the agent's calls, subagents included: provisional while a
  call runs, then its ``result`` event's exact figure (pytest_atom.cost.usage);
- cost: the CLI's price of that usage (scripted and replayed too), known when a call ends,
  so a cost limit stops the run after the iteration that crossed it;
- timeout: seconds per attempt of the agent, as the spec's older top-level ``timeout``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from pytest_atom.cost.spend import Crossing, SpendLimit
from pytest_atom.cost.usage import CallUsage
from pytest_atom.events import Event

#: The keys of ``limits:``, in the order reports list them.
LIMIT_KEYS = ("max_turns", "max_tool_calls", "max_tokens", "max_cost_usd", "timeout")
_INTEGER_KEYS = frozenset({"max_turns", "max_tool_calls", "max_tokens"})


@dataclass(frozen=True)
class Limits:
    """Upper bounds on the agent's usage; None: no bound."""

    max_turns: int | None = None
    max_tool_calls: int | None = None
    max_tokens: int | None = None
    max_cost_usd: float | None = None
    timeout: float | None = None

    def over(self, defaults: Limits) -> Limits:
        """These limits, with `defaults` (the project's) filling the keys not set here."""
        return replace(
            defaults,
            **{f.name: v for f in fields(self) if (v := getattr(self, f.name)) is not None},
        )

    def to_dict(self) -> dict[str, Any]:
        """Every key, None where unbounded: what a trace's ``effective_limits`` shows."""
        return asdict(self)


def parse_limits(data: Mapping[str, Any]) -> Limits:
    """A config file's ``limits:`` mapping (no schema checks it); ValueError names a bad key."""
    values: dict[str, Any] = {}
    for key, value in data.items():
        if key not in LIMIT_KEYS:
            raise ValueError(f"unknown limit {key!r} (known: {', '.join(LIMIT_KEYS)})")
        if value is None:
            continue
        integer = key in _INTEGER_KEYS
        ok = not isinstance(value, bool) and (
            isinstance(value, int) if integer else isinstance(value, (int, float))
        )
        if not ok or not math.isfinite(value) or value < 0 or (key == "timeout" and not value):
            what = "a whole number >= 0" if integer else "a number >= 0"
            what = "a number of seconds > 0" if key == "timeout" else what
            raise ValueError(f"limit {key!r} must be {what}, not {value!r}")
        values[key] = int(value) if integer else float(value)
    return Limits(**values)


@dataclass
class Usage:
    """What the agent used over a spec run (the trace's ``effects_observed``)."""

    turns: int = 0
    tool_calls: int = 0
    tokens: int = 0
    cost_usd: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["cost_usd"] = round(self.cost_usd, 6)
        return data


class Budget:
    """The agent's usage over a spec run (every iteration and attempt), checked against its
    limits event by event. The first limit crossed is kept in `exceeded`; later events still
    count, so the report shows what the agent had used when it was stopped."""

    def __init__(self, limits: Limits, spend: SpendLimit | None = None) -> None:
        self.limits = limits
        self.spend = spend
        self.usage = Usage()
        self.exceeded: Crossing | None = None
        self._settled = Usage()  # the calls that have ended
        self._call = CallUsage()  # the call under way

    def observe(self, events: Iterable[Event]) -> Crossing | None:
        """Count events as they arrive; the first limit they crossed, else None."""
        crossed = None
        for event in events:
            crossed = self._observe(event) or crossed
        return crossed

    def _observe(self, event: Event) -> Crossing | None:
        if not self._call.fold(event):
            return None
        call, settled = self._call, self._settled
        self.usage = Usage(
            settled.turns + call.turns,
            settled.tool_calls + call.tool_calls,
            settled.tokens + call.tokens,
            settled.cost_usd + call.cost_usd,
        )
        if call.ended:
            self._settled, self._call = self.usage, CallUsage()
            self.usage = replace(self._settled)
        crossed = self.crossed()
        if crossed and self.exceeded is None:
            self.exceeded = crossed
            return crossed
        return None

    def crossed(self) -> Crossing | None:
        """The first limit the usage is beyond, as the report words it, or None."""
        limits, usage = self.limits, self.usage
        checks: tuple[tuple[str, float | None, float], ...] = (
            ("max_turns", limits.max_turns, usage.turns),
            ("max_tool_calls", limits.max_tool_calls, usage.tool_calls),
            ("max_tokens", limits.max_tokens, usage.tokens),
            ("max_cost_usd", limits.max_cost_usd, usage.cost_usd),
        )
        for key, limit, used in checks:
            if limit is not None and used > limit:
                return Crossing(
                    f"exceeded {key}: {_show(used)} > {_show(limit)}", f"exceeded {key}"
                )
        return self.spend.crossing() if self.spend is not None else None


def _show(value: float) -> str:
    return str(value) if isinstance(value, int) else f"{value:g}"


def count_line(events: Sequence[Event], meter: CallUsage, budget: Budget | None) -> Crossing | None:
    """A line's events counted by its call's meter, then by the run's budget (if any)."""
    meter.fold_all(events)
    return budget.observe(events) if budget is not None else None
