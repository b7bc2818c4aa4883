"""What the Claude Code sessions of one ``claude -p`` call used: tokens and cost, per session kind.

One call runs the main session and, when it delegates, its subagents (and the CLI's own side
requests). Its stream-json tells them apart only so far (Claude Code 2.1.330 and 2.1.331):

- ``assistant`` events carry the message's usage as it *started* (output tokens still 1);
  a subagent's carry the ``parent_tool_use_id`` of the ``Agent`` call that started it. A
  subagent's last, text-only answer is never printed, so these figures are provisional.
- the ``result`` event's ``usage`` is the main session's alone; ``modelUsage`` (per model,
  with ``costUSD``) covers every session, and so does ``total_cost_usd``.
- on ``--resume`` both ``modelUsage`` and ``total_cost_usd`` are the *session's* running
  totals, earlier calls included; ``model_usage_since_last_result`` is this call's share.
  Claude Code 2.1.197 has no such key, and its figures are per call.

`CallUsage` folds the parsed events, so a call's record and a run's budget count one way:
provisional while the call runs, exact once it ends.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pytest_atom.cost.billing import Tokens, token_count
from pytest_atom.events import Event, MessageUsage, Result, SessionStarted, ToolCall

#: The kinds of session a spec run reports usage for, in report order; then the steps the
#: API bills on top of a session's answers (``usage.iterations``): the advisor's (which
#: Claude Code files under its model) and compaction's (which it leaves out). Last, ``other``:
#: what no role names (a call stopped before its result, a side request), so the roles
#: always add up to ``atom_tokens`` and the dollars spent.
ROLES = (
    "executor",
    "subagents",
    "reflector",
    "planner",
    "user",
    "advisor",
    "compaction",
    "other",
)

#: The counts of the CLI's per-model ``modelUsage``, with the price weight that splits a
#: model's cost between sessions (input = 1: the ratios of Anthropic's prices).
_MODEL_USAGE_WEIGHTS = {
    "inputTokens": 1.0,
    "outputTokens": 5.0,
    "cacheCreationInputTokens": 1.25,
    "cacheReadInputTokens": 0.1,
}
_AS_MODEL_USAGE = {
    "input_tokens": "inputTokens",
    "output_tokens": "outputTokens",
    "cache_creation_input_tokens": "cacheCreationInputTokens",
    "cache_read_input_tokens": "cacheReadInputTokens",
}


def usage_tokens(usage: Any) -> int:
    """Input, output and cache tokens of a Messages-API usage object (0 for anything else),
    without the steps billed on top of the answer (``usage.iterations``), as Claude Code
    counts them."""
    return Tokens.of(usage).total


def _weight(counts: Mapping[str, Any]) -> float:
    return sum(w * token_count(counts.get(k)) for k, w in _MODEL_USAGE_WEIGHTS.items())


@dataclass(frozen=True)
class RoleUsage:
    """Tokens and Claude Code's price of one kind of session, over a run or a part of it."""

    tokens: int = 0
    cost_usd: float = 0.0

    def __add__(self, other: RoleUsage) -> RoleUsage:
        return RoleUsage(self.tokens + other.tokens, self.cost_usd + other.cost_usd)

    def to_dict(self) -> dict[str, Any]:
        return {"tokens": self.tokens, "cost_usd": round(self.cost_usd, 6)}


@dataclass(frozen=True)
class Dollars:
    """A run's dollars by the one rule every view reads: two figures, never added together.
    `spent` is what the run paid an API (0 when scripted, replayed or cached); `list_price`
    is Claude Code's price of every session, paid or not: what recording them costs."""

    spent: float = 0.0
    list_price: float = 0.0

    @classmethod
    def of(cls, spent: float, roles: Mapping[str, RoleUsage]) -> Dollars:
        return cls(spent, sum(used.cost_usd for used in roles.values()))


@dataclass
class CallUsage:
    """One call's usage, folded event by event (the module doc)."""

    turns: int = 0  # assistant messages streamed (a subagent's final answer is not)
    tool_calls: int = 0
    ended: bool = False  # the result event arrived: the figures below are exact
    main_model: str | None = None
    #: The result event's figures: the main session's usage, per-model usage and cost.
    main_usage: dict[str, Any] = field(default_factory=dict)
    model_usage: dict[str, Any] = field(default_factory=dict)
    cost_usd: float = 0.0
    #: Until then: message id -> provisional tokens, the main session's and subagents'.
    _main: dict[str, int] = field(default_factory=dict, repr=False)
    _subagents: dict[str, int] = field(default_factory=dict, repr=False)

    def fold_all(self, events: Iterable[Event]) -> None:
        for event in events:
            self.fold(event)

    def fold(self, event: Event) -> bool:
        """Count one event; True when it was one that counts (usage, a tool call, the end)."""
        if isinstance(event, SessionStarted):
            self.main_model = event.model
        elif isinstance(event, MessageUsage):
            messages = self._subagents if event.subagent else self._main
            if event.message_id not in messages:
                self.turns += 1
            messages[event.message_id] = max(
                messages.get(event.message_id, 0), usage_tokens(event.usage)
            )
            return True
        elif isinstance(event, ToolCall):
            if not event.server:
                self.tool_calls += 1
            return True
        elif isinstance(event, Result):
            self.ended = True
            self.main_usage = dict(event.usage)
            self.model_usage = dict(event.model_usage)
            self.cost_usd = event.cost_usd
            return True
        return False

    @property
    def main_tokens(self) -> int:
        """The main session's tokens: exact once the call ended, else provisional."""
        return usage_tokens(self.main_usage) if self.ended else sum(self._main.values())

    @property
    def tokens(self) -> int:
        """Every session's tokens: exact once the call ended, else provisional."""
        if self.ended:
            return every_session_tokens(self.main_usage, self.model_usage)
        return sum(self._main.values()) + sum(self._subagents.values())


def every_session_tokens(main_usage: Any, model_usage: Mapping[str, Any]) -> int:
    """A call's tokens over every session: its ``modelUsage``, else the main session's."""
    every = sum(
        token_count(counts.get(k))
        for counts in model_usage.values()
        if isinstance(counts, Mapping)
        for k in _MODEL_USAGE_WEIGHTS
    )
    return max(every, usage_tokens(main_usage))


def subagent_cost(
    main_usage: Any, model_usage: Mapping[str, Any], main_model: str | None, cost: float
) -> float:
    """The share of a call's `cost` spent by every session but the main one. The CLI prices
    per model, not per session: a model the main session did not use is the others' alone;
    the main model's cost is split by price-weighted tokens (an estimate)."""
    models = {k: v for k, v in model_usage.items() if isinstance(v, Mapping)}
    if not models:
        return 0.0
    main_usage = main_usage if isinstance(main_usage, Mapping) else {}
    main = _weight({m: main_usage.get(k) for k, m in _AS_MODEL_USAGE.items()})
    if main_model not in models and len(models) == 1:
        main_model = next(iter(models))  # named apart ("claude-opus-4-8[1m]"): the one
    if main_model not in models:  # unknown: split the whole call by weight
        total = sum(_weight(c) for c in models.values())
        return cost * max(0.0, total - main) / total if total > 0 else 0.0
    share = 0.0
    for model, counts in models.items():
        usd = float(counts.get("costUSD") or 0.0)
        if model != main_model:
            share += usd
        elif (total := _weight(counts)) > 0:
            share += usd * max(0.0, total - main) / total
    return min(share, cost)


#: Where Claude Code files a gateway role's advisor steps: under the advisor's model, which
#: the executor's call counts among its "subagents" (every session but the main one).
_FILED_UNDER = {"executor": "subagents"}


def split_steps(
    roles: dict[str, RoleUsage], steps: Mapping[str, Mapping[str, tuple[int, float]]]
) -> dict[str, dict[str, RoleUsage]]:
    """Give the steps billed on top of the answers (`steps`: gateway role -> kind ->
    (tokens, dollars)) roles of their own in `roles`; return what of them Claude Code
    counted nowhere. An advisor step is taken out of the session Claude Code filed it under;
    a compaction step (or an unknown kind) Claude Code left out."""
    left_out: dict[str, dict[str, RoleUsage]] = {}
    for role, kinds in steps.items():
        session = _FILED_UNDER.get(role, role)
        for kind, (tokens, usd) in kinds.items():
            named = kind if kind in roles else "other"  # a kind with no role yet
            roles[named] = roles.get(named, RoleUsage()) + RoleUsage(tokens, usd)
            held, share = 0, 0.0
            filed = roles.get(session)
            if kind == "advisor" and filed is not None:
                held = min(tokens, filed.tokens)
                share = usd * held / tokens if tokens else 0.0
                roles[session] = RoleUsage(filed.tokens - held, max(0.0, filed.cost_usd - share))
            if tokens - held:
                missing = RoleUsage(tokens - held, usd - share)
                left_out.setdefault(role, {})[kind] = missing
    return left_out
