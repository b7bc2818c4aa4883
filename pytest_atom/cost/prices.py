"""What the API charges per token, per model: the prices Claude Code prices usage with.

The cost reported per call is the CLI's own ``total_cost_usd``; to estimate a recording
(``atom cassette cost``) and to hold a session to a spending limit as streams arrive, usage
is priced from this table: Claude Code 2.1.332's model catalog (US dollars per million
tokens; a web search $0.01). An unknown model gets the CLI's default tier ($5 / $25).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pytest_atom.cost.billing import Billed, Tokens


@dataclass(frozen=True)
class Price:
    """Dollars per million tokens; `web_search` per request."""

    input: float
    output: float
    cache_write_5m: float
    cache_write_1h: float
    cache_read: float
    web_search: float = 0.01

    def of(self, tokens: Tokens) -> float:
        """The price of `tokens`, the one-hour cache writes at their own rate."""
        five_minute = tokens.cache_write - tokens.cache_write_1h
        return (
            tokens.input * self.input
            + tokens.output * self.output
            + tokens.cache_read * self.cache_read
            + five_minute * self.cache_write_5m
            + tokens.cache_write_1h * self.cache_write_1h
        ) / 1e6


def _tier(inp: float, out: float, read: float | None = None) -> Price:
    """A tier as the catalog builds them: writes 1.25x (5 min) and 2x (1 h) the input
    price, reads 0.1x unless the tier names its own."""
    return Price(inp, out, inp * 1.25, inp * 2, inp / 10 if read is None else read)


_TIER_5_25 = _tier(5, 25)
#: Model id (its prefix: dated and ``-fast`` ids share it) -> price.
PRICES: dict[str, Price] = {
    "claude-3-5-haiku": Price(0.8, 4, 1, 1.6, 0.08),
    "claude-haiku-4-5": _tier(1, 5),
    "claude-haiku-5-5": _tier(0.1, 0.5),
    "claude-3-5-sonnet": _tier(3, 15),
    "claude-3-7-sonnet": _tier(3, 15),
    "claude-sonnet-4": _tier(3, 15),
    "claude-sonnet-5": _tier(2, 10),
    "claude-sonnet-5-5": _tier(2, 10, 0.1),
    "claude-opus-4-0": _tier(15, 75),
    "claude-opus-4-1": _tier(15, 75),
    "claude-opus-4": _TIER_5_25,  # 4-5 to 4-8
    "claude-opus-5": _TIER_5_25,
    "claude-opus-5-5": _tier(4, 20, 0.2),
    "claude-fable-5": _tier(10, 50),
    "claude-fable-5-1": _tier(10, 50, 0.25),
    "claude-fable-5-2": _tier(8, 40, 0.2),
    "claude-mythos-5": _tier(10, 50),
    "claude-mythos-5-1": _tier(10, 50, 0.25),
    "claude-mythos-5-2": _tier(8, 40, 0.2),
}


def price_of(model: str | None) -> Price:
    """The price of `model`: the longest id in `PRICES` it starts with (``[1m]`` and
    date suffixes aside), else the CLI's default tier."""
    name = (model or "").split("[")[0].strip()
    best = max(
        (key for key in PRICES if name == key or name.startswith(key + "-")),
        key=len,
        default=None,
    )
    return PRICES[best] if best else _TIER_5_25


def cost_usd(used: Billed, model: str | None) -> float:
    """What `used` costs: the answer at `model`'s price, each extra step at its own
    model's, web searches per request, times 1.1 for US-only inference."""
    tokens = price_of(model).of(used.message)
    tokens += sum(price_of(step.model or model).of(step.tokens) for step in used.iterations)
    geo = 1.1 if used.inference_geo == "us" else 1.0
    return tokens * geo + used.web_search_requests * price_of(model).web_search


@dataclass
class RoleBills:
    """What answers billed, summed by role: tokens (`Billed`), dollars, and the steps billed
    on top of the answers (role -> step kind -> (tokens, dollars))."""

    by_role: dict[str, Billed] = field(default_factory=dict)
    usd_by_role: dict[str, float] = field(default_factory=dict)
    steps: dict[str, dict[str, tuple[int, float]]] = field(default_factory=dict)

    def add(self, role: str, used: Billed, model: str | None, usd: float | None = None) -> float:
        """Add one answer of `role`'s, priced at `model` (or `usd`); its price in dollars."""
        usd = cost_usd(used, model) if usd is None else usd
        self.by_role[role] = self.by_role.get(role, Billed()) + used
        self.usd_by_role[role] = self.usd_by_role.get(role, 0.0) + usd
        kinds = self.steps.setdefault(role, {})
        for step in used.iterations:
            tokens, dollars = kinds.get(step.kind, (0, 0.0))
            price = cost_usd(Billed(iterations=(step,), inference_geo=used.inference_geo), model)
            kinds[step.kind] = (tokens + step.tokens.total, dollars + price)
        return usd
