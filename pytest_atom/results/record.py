"""What sessions did: the record every agent returns for one call (folded from its typed
events), a session answered from its cassette, what the atom loop came to, and a fault
upstream while recording. A result, below the agents: what reads it imports no agent.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from functools import lru_cache
from typing import Any, Literal

from pytest_atom.cost.limits import Budget, count_line
from pytest_atom.cost.spend import Crossing
from pytest_atom.cost.usage import CallUsage, every_session_tokens, subagent_cost, usage_tokens
from pytest_atom.events import (
    AgentError,
    ApiRetry,
    AssistantText,
    Event,
    Result,
    SessionStarted,
    ToolResult,
    parse,
)
from pytest_atom.events import ToolCall as CallEvent
from pytest_atom.words import last_words


@dataclass
class ToolCall:
    id: str
    name: str
    input: dict[str, Any]
    result: str | None = None
    is_error: bool = False


@dataclass
class IterationRecord:
    """What one `claude -p` call did, folded from its events (pytest_atom.events)."""

    returncode: int
    output: str = ""  # the final result text: where the exit signal is looked for
    stdout: str = ""  # raw stream-json lines, kept for traces
    stderr: str = ""
    texts: list[str] = field(default_factory=list)
    tool_calls: list[ToolCall] = field(default_factory=list)
    #: The result event's figures (pytest_atom.cost.usage).
    usage: dict[str, Any] = field(default_factory=dict)
    model_usage: dict[str, Any] = field(default_factory=dict)
    cost_usd: float = 0.0
    model: str | None = None  # the main session's, from the init event
    num_turns: int = 0
    duration: float = 0.0  # wall seconds of the claude process
    session_id: str | None = None
    cli_version: str | None = None
    is_error: bool = False
    timed_out: bool = False
    structured_output: Any = None  # what `--json-schema` made the model return
    # The CLI's `api_retry` events and the status of the API error it gave up on, if any.
    api_retries: list[dict[str, Any]] = field(default_factory=list)
    api_error_status: int | None = None
    stop_reason: str | None = None  # the result event's: the API's last stop reason
    #: The limit this call crossed ("exceeded max_turns: 3 > 2"): the CLI was stopped.
    limit_exceeded: str | None = None
    #: The questions of an ``AskUserQuestion`` nobody answered: the call was stopped there.
    unanswered: str | None = None
    #: The usage as events arrive: what a call stopped before its result event used.
    meter: CallUsage = field(default_factory=CallUsage, repr=False)
    #: The earlier tries of this call that failed and were retried: paid for, so counted.
    failed_tries: list[IterationRecord] = field(default_factory=list, repr=False)

    #: The kind of API error the CLI answered with instead of a model's reply.
    api_error: str | None = None

    @property
    def ended(self) -> bool:
        """The call's exact figures are known (its result event, or a record made by hand)."""
        return self.meter.ended or bool(self.usage or self.model_usage)

    @property
    def needs_login(self) -> bool:
        return self.api_error == "authentication_failed"

    @property
    def rejected_stream(self) -> str | None:
        """The CLI's words when it gave up on a stream it could not read ("The response
        stream was malformed."): the API's answer was broken, not the agent's work."""
        for text in (self.output, *reversed(self.texts)):
            match = _STREAM_REJECTED.search(text or "")
            if match:
                return match.group(1)
        if self.is_error and self.stop_reason == "pause_turn":
            # A server tool's long turn, paused for a resend: `claude -p` stops with an error.
            return "the API paused the turn (stop_reason pause_turn), which it does not resume"
        return None

    @property
    def tokens(self) -> int:
        """Every session's tokens, subagents included; provisional for a stopped call."""
        if self.ended:
            return every_session_tokens(self.usage, self.model_usage)
        return self.meter.tokens

    @property
    def main_tokens(self) -> int:
        return usage_tokens(self.usage) if self.ended else self.meter.main_tokens

    @property
    def subagent_tokens(self) -> int:
        return self.tokens - self.main_tokens

    @property
    def tries_tokens(self) -> int:
        return sum(t.tokens for t in self.failed_tries)

    @property
    def tries_cost_usd(self) -> float:
        return sum(t.cost_usd for t in self.failed_tries)

    @property
    def paid_tokens(self) -> int:
        """This call's tokens and its failed tries': what the call cost to get."""
        return self.tokens + self.tries_tokens

    @property
    def paid_cost_usd(self) -> float:
        return self.cost_usd + self.tries_cost_usd

    @property
    def subagent_cost_usd(self) -> float:
        """The subagents' share of `cost_usd` (an estimate: see usage.subagent_cost)."""
        return subagent_cost(self.usage, self.model_usage, self.model, self.cost_usd)

    def failure(self, limit: int = 2000) -> str:
        """Why the call failed: the end of what the CLI said, from a whole word on (it is
        cut before any scrubber sees it)."""
        said = (self.output or self.stderr).strip()
        return last_words(said, limit) if said else f"exit code {self.returncode}"

    @property
    def retry_text(self) -> str:
        """What retry rules scan: the CLI reports API and limit errors in either stream."""
        return f"{self.output}\n{self.stderr}"

    def summary(self) -> dict[str, Any]:
        """A JSON-able digest for iteration history and traces (no raw stdout)."""
        data = asdict(replace(self, failed_tries=[]))  # the tries are digested below
        for bulky in ("stdout", "meter"):
            data.pop(bulky)
        data["tokens"] = self.tokens
        data["subagent_tokens"] = self.subagent_tokens
        data["failed_tries"] = [
            {
                "returncode": t.returncode,
                "tokens": t.tokens,
                "cost_usd": t.cost_usd,
                "error": t.failure(300),
            }
            for t in self.failed_tries
        ]
        return data

    @property
    def events(self) -> tuple[Event, ...]:
        """What the call printed, as events (parsed once per output, however many ask)."""
        return _parsed(self.stdout)

    def apply(self, event: Event) -> None:
        self.apply_all((event,))

    def apply_all(self, events: Sequence[Event], budget: Budget | None = None) -> Crossing | None:
        """Fold a line's events into the record (usage into `budget` first); a crossed limit."""
        crossed = count_line(events, self.meter, budget)
        for event in events:
            self._take(event)
        return crossed

    def _take(self, event: Event) -> None:
        """What the record keeps of one event, once `meter` has counted it."""
        if isinstance(event, SessionStarted):
            self.session_id = event.session_id
            self.cli_version = event.agent_version
            self.model = self.meter.main_model
        elif isinstance(event, AgentError):
            self.api_error = event.kind
        elif isinstance(event, AssistantText) and not event.thinking:
            self.texts.append(event.text)
        elif isinstance(event, CallEvent) and not event.server:
            self.tool_calls.append(ToolCall(event.id, event.name, event.input or {}))
        elif isinstance(event, ToolResult):
            for call in self.tool_calls:
                if call.id == event.tool_use_id:
                    call.result = event.text
                    call.is_error = event.is_error
        elif isinstance(event, ApiRetry):
            self.api_retries.append(event.to_dict())
        elif isinstance(event, Result):
            self.api_error_status = event.api_error_status
            self.stop_reason = event.stop_reason
            self.output = event.text
            self.is_error = event.is_error
            self.usage = dict(self.meter.main_usage)
            self.model_usage = dict(self.meter.model_usage)
            self.cost_usd = self.meter.cost_usd
            self.num_turns = event.num_turns
            self.structured_output = event.structured_output


#: How Claude Code (2.1.331) says it gave up on a stream it could not read: an event that
#: was not JSON, a delta for a block never started or already closed.
_STREAM_REJECTED = re.compile(
    r"API Error: ((?:The response stream was malformed|Part of the response never arrived)"
    r"[^\n]*)"
)


@lru_cache(maxsize=32)
def _parsed(stdout: str) -> tuple[Event, ...]:
    return tuple(parse(stdout))


@dataclass(frozen=True)
class Recalled:
    """A session answered from the cassette: its recorded answer and what it cost then."""

    role: str
    answer: Any
    tokens: int = 0
    cost_usd: float = 0.0


#: Why a run ended without the exit signal; None when it signalled completion.
StopReason = Literal["timeout", "error", "max_iterations", "limit"]


@dataclass
class RunOutcome:
    """What one run of the loop came to: the typed form of `AtomRuntime.run`'s result dict."""

    success: bool
    iterations: int
    output: str = ""
    reason: StopReason | None = None
    error: str | None = None
    duration: float = 0.0
    context: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class UpstreamFault:
    """Something that went wrong upstream while recording; `description` names it."""

    method: str
    endpoint: str
    body: Any  # the normalized request, to recognise the retry that made it good
    description: str
    position: int  # how many interactions (slots) the cassette had when it happened
    slot: int | None = None  # where the broken stream was kept as the CLI saw it, if it was
    what: str = ""  # the description's cause in a few words (``refused the connection``)
