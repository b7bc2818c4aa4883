"""What one Messages-API answer billed: the one fold of a stream's usage.

Every reader of a recorded or live answer counts tokens here, so no two of them disagree.

The rules, from the Messages API and from real streams:

- ``message_start`` carries the usage as the answer starts; ``message_delta`` carries it
  again, cumulatively, at the end. A ``message_delta`` count replaces the start's only
  where it is *given*: a key it leaves out, or a ``0`` where ``message_start`` had a count
  (real streams send ``cache_read_input_tokens: 0`` at the end of an answer whose start
  read 55,096 from the cache), keeps the start's count.
- ``usage.iterations`` lists the sampling steps of one request. Steps of type ``message``
  are the answer itself; the others are billed on top of the top-level counts, less what
  of theirs those already hold (a real compaction stream's ``message_start`` reports the
  compaction step's cache read, which the merge keeps): a ``compaction`` step (the summary
  the API wrote of the conversation) and an ``advisor_message`` (the advisor model's own
  reading and advice, at its model's price). Claude Code (2.1.197, 2.1.331, 2.1.332,
  measured on tests/data/real_api) files an advisor step under the advisor's model in
  ``modelUsage`` and leaves a compaction step out of its totals (`Billed.cli_counted`).
- ``usage.server_tool_use`` counts server tool requests (``web_search_requests``,
  ``web_fetch_requests``, …); web searches are billed per request.
- ``inference_geo: "us"`` is billed at 1.1 times the price (Claude Code's rule).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

#: What the fold names a usage iteration's kind; else as given, less ``_message``.
_KINDS = {"advisor_message": "advisor", "compaction": "compaction", "message": "message"}


def token_count(value: Any) -> int:
    """A count of a usage object: an int (not a bool), else 0."""
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


@dataclass(frozen=True)
class Tokens:
    """The four token counts the API bills (``cache_write_1h``: at the one-hour price)."""

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    cache_write_1h: int = 0

    @classmethod
    def of(cls, usage: Any) -> Tokens:
        if not isinstance(usage, Mapping):
            return cls()
        written = token_count(usage.get("cache_creation_input_tokens"))
        detail = usage.get("cache_creation")
        hour = (
            token_count(detail.get("ephemeral_1h_input_tokens"))
            if isinstance(detail, Mapping)
            else 0
        )
        return cls(
            token_count(usage.get("input_tokens")),
            token_count(usage.get("output_tokens")),
            token_count(usage.get("cache_read_input_tokens")),
            written,
            min(hour, written),
        )

    @property
    def total(self) -> int:
        return self.input + self.output + self.cache_read + self.cache_write

    def __add__(self, other: Tokens) -> Tokens:
        return Tokens(
            self.input + other.input,
            self.output + other.output,
            self.cache_read + other.cache_read,
            self.cache_write + other.cache_write,
            self.cache_write_1h + other.cache_write_1h,
        )

    def text(self) -> str:
        """``12 in, 3 out, 5 cache read tokens``: cache counts only when there are any."""
        parts = [f"{self.input} in", f"{self.output} out"]
        if self.cache_read:
            parts.append(f"{self.cache_read} cache read")
        if self.cache_write:
            parts.append(f"{self.cache_write} cache write")
        return ", ".join(parts) + " tokens"


@dataclass(frozen=True)
class Iteration:
    """A sampling step billed on top of the answer: its kind (``advisor``, ``compaction``),
    the model that ran it (None: the request's own) and its tokens."""

    kind: str
    model: str | None
    tokens: Tokens


@dataclass(frozen=True)
class Billed:
    """What one answer billed: its own tokens, the steps billed on top, server tool requests."""

    message: Tokens = field(default_factory=Tokens)
    iterations: tuple[Iteration, ...] = ()
    server_tool_use: Mapping[str, int] = field(default_factory=dict)
    inference_geo: str | None = None

    @property
    def tokens(self) -> int:
        return self.message.total + sum(i.tokens.total for i in self.iterations)

    @property
    def cli_counted(self) -> int:
        """The tokens Claude Code counts of these: the answers' and their advisor steps'."""
        return self.message.total + sum(
            i.tokens.total for i in self.iterations if i.kind == "advisor"
        )

    def by_kind(self) -> dict[str, int]:
        """Tokens per kind of step: ``message`` (the answer), ``advisor``, ``compaction``."""
        kinds = {"message": self.message.total}
        for step in self.iterations:
            kinds[step.kind] = kinds.get(step.kind, 0) + step.tokens.total
        return kinds

    @property
    def web_search_requests(self) -> int:
        return token_count(self.server_tool_use.get("web_search_requests"))

    def __add__(self, other: Billed) -> Billed:
        tools = dict(self.server_tool_use)
        for key, value in other.server_tool_use.items():
            tools[key] = tools.get(key, 0) + value
        return Billed(
            self.message + other.message,
            self.iterations + other.iterations,
            tools,
            self.inference_geo or other.inference_geo,
        )


def merge_usage(usages: Iterable[Any]) -> dict[str, Any]:
    """The usage of ``message_start`` then each ``message_delta``'s, by the rule above
    (nested counts too); ``iterations`` and text fields whole from the latest that has them."""
    merged: dict[str, Any] = {}
    for usage in usages:
        if isinstance(usage, Mapping):
            _merge_into(merged, usage)
    return merged


def _merge_into(target: dict[str, Any], found: Mapping[str, Any]) -> None:
    for key, value in found.items():
        if isinstance(value, bool) or value is None:
            continue
        if isinstance(value, int):
            if value or not token_count(target.get(key)):
                target[key] = value
        elif isinstance(value, Mapping):
            inner = target.get(key)
            inner = dict(inner) if isinstance(inner, Mapping) else {}
            _merge_into(inner, value)
            target[key] = inner
        else:  # iterations (a list), service_tier, inference_geo: the latest whole
            target[key] = value


def billed(usage: Any) -> Billed:
    """What a (merged) usage object billed."""
    if not isinstance(usage, Mapping):
        return Billed()
    steps = []
    answer = Tokens()
    for step in usage.get("iterations") or ():
        if not isinstance(step, Mapping):
            continue
        raw = str(step.get("type") or "message")
        if raw == "message":
            answer += Tokens.of(step)
            continue
        kind = _KINDS.get(raw, raw.removesuffix("_message"))
        model = step.get("model")
        steps.append(Iteration(kind, model if isinstance(model, str) else None, Tokens.of(step)))
    # What the top-level counts hold beyond the answer's steps is the other steps': once.
    overlap = _minus(Tokens.of(usage), answer)
    for i, step in enumerate(steps):
        spent = _minus(step.tokens, _minus(step.tokens, overlap))  # min(step, overlap)
        steps[i] = Iteration(step.kind, step.model, _minus(step.tokens, spent))
        overlap = _minus(overlap, spent)
    tools = usage.get("server_tool_use")
    geo = usage.get("inference_geo")
    return Billed(
        Tokens.of(usage),
        tuple(steps),
        {k: token_count(v) for k, v in tools.items() if token_count(v)}
        if isinstance(tools, Mapping)
        else {},
        geo if isinstance(geo, str) else None,
    )


def _minus(a: Tokens, b: Tokens) -> Tokens:
    """`a` less `b`, count by count, never below 0."""
    return Tokens(
        max(0, a.input - b.input),
        max(0, a.output - b.output),
        max(0, a.cache_read - b.cache_read),
        max(0, a.cache_write - b.cache_write),
        max(0, a.cache_write_1h - b.cache_write_1h),
    )
