"""The agent's run as trajectory checks read it: its tool calls, where each was made, and its
last message.

A file check asks "is the work right?"; a trajectory kind asks "did the agent go about it as
configured?". They read the attempt's events through `transcript.stream_turns`, which nests
a subagent's turns under its ``Agent`` call and marks refused calls; this module flattens
those turns into calls that know where they were made.

Every result lists the calls it is about, each with its place (``iteration 1 turn 2``, and
under a subagent ``… > subagent general-purpose "helper" turn 1``), so a failure shows what
the agent did instead.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_atom.replay.scrub import Scrubber
from pytest_atom.replay.transcript import (
    Mark,
    MarkKind,
    Text,
    ToolUse,
    Turn,
    call_marks,
    hook_words,
    main_field,
    stream_turns,
    subagent_type,
    tool_label,
)
from pytest_atom.results.record import IterationRecord
from pytest_atom.words import shorten

__all__ = ["Call", "Trajectory", "count_phrase", "listing", "matches", "times"]

#: Calls listed in one result; a run with more says how many were left out.
_LISTED = 20


@dataclass(frozen=True)
class Call:
    """One tool call of an attempt, with where it was made: ``subagents`` it ran under,
    outermost first (empty: the main agent), ``turn`` the model answer in its iteration."""

    name: str
    input: Any
    iteration: int
    turn: int
    subagents: tuple[str, ...] = ()
    is_error: bool = False
    result: str | None = None
    denied: str | None = None  # who refused it (transcript.Denial.reason), None: it ran
    order: tuple[int, int] = (0, 0)  # (iteration, stream-json event): when it was made

    @property
    def by_main(self) -> bool:
        return not self.subagents

    def marked(self, kind: MarkKind) -> Mark | None:
        """The call's mark of that kind (`transcript.call_marks`); None: it has none."""
        return next((m for m in call_marks(self.name, self.input) if m.kind == kind), None)

    def line(self) -> str:
        """``iteration 1 turn 2: Bash rm -f x.txt (refused: rule)``."""
        subagent = self.marked("subagent")
        label = tool_label(self.name, self.input)
        label = f'{subagent.name} "{label}"' if subagent else label
        text = f"{self.where}: {self.name} {label}"
        if self.denied is not None:
            result = hook_words(self.result or "") if self.denied == "hook" else self.result
            return f"{text} (refused: {self.denied}){_first_line(result)}"
        return text + (f" (error){_first_line(self.result)}" if self.is_error else "")

    @property
    def where(self) -> str:
        return f"iteration {self.iteration} " + " > ".join((*self.subagents, f"turn {self.turn}"))


@dataclass(frozen=True)
class Trajectory:
    """An attempt's tool calls in the order they were made, and its last message."""

    calls: tuple[Call, ...]
    final_message: str | None
    #: The folder the agent worked in, where known: a result that names it reads as relative.
    workspace: Path | None = None
    #: The agent's turns (Claude Code calls): in a conversation, the user's messages.
    turns: int = 0

    @classmethod
    def from_records(
        cls, records: Iterable[IterationRecord], workspace: Path | None = None
    ) -> Trajectory:
        calls: list[Call] = []
        final: str | None = None
        iteration = 0
        for iteration, record in enumerate(records, start=1):
            turns = stream_turns(record.events)
            calls += _calls(turns, iteration, ())
            texts = [_texts(turn) for turn in turns]
            final = next((t for t in reversed(texts) if t), final)
        return cls(tuple(sorted(calls, key=lambda c: c.order)), final, workspace, iteration)

    def named(self, name: str) -> list[Call]:
        return [c for c in self.calls if c.name == name]

    def tools(self) -> str:
        """``Bash x3, Read``: what was called, for a result whose own calls are missing."""
        counts = Counter(c.name for c in self.calls)
        return ", ".join(f"{n} x{k}" if k > 1 else n for n, k in counts.items()) or "no tools"


def _calls(turns: Sequence[Turn], iteration: int, above: tuple[str, ...]) -> list[Call]:
    calls = []
    for number, turn in enumerate(turns, start=1):
        for use in turn.tool_uses:
            calls.append(
                Call(
                    use.name,
                    use.input,
                    iteration,
                    number,
                    above,
                    use.is_error,
                    use.result,
                    use.denied,
                    (iteration, use.event),
                )
            )
            if use.subagent:
                label = f'turn {number} > subagent {subagent_type(use.input)} "{_about(use)}"'
                calls += _calls(use.subagent, iteration, (*above, label))
    return calls


def _texts(turn: Turn) -> str:
    return "\n".join(b.text for b in turn.blocks if isinstance(b, Text) and not b.thinking)


def _about(use: ToolUse) -> str:
    about = use.input.get("description") if isinstance(use.input, dict) else None
    return str(about or use.id)


def _first_line(text: str | None) -> str:
    line = Scrubber().scrub((text or "").strip().split("\n")[0])
    return f": {shorten(line, 158)}" if len(line) > 160 else (f": {line}" if line else "")


def matches(pattern: str | None, tool_input: Any) -> bool:
    """The regex finds the call's main field (a command, a path) or its input as JSON."""
    if pattern is None:
        return True
    field = main_field(tool_input)
    if field is not None and re.search(pattern, field, re.MULTILINE):
        return True
    return re.search(pattern, json.dumps(tool_input, ensure_ascii=False), re.MULTILINE) is not None


def listing(calls: Sequence[Call], empty: str = "no calls") -> str:
    if not calls:
        return empty
    lines = [c.line() for c in calls[:_LISTED]]
    if len(calls) > _LISTED:
        lines.append(f"… and {len(calls) - _LISTED} more")
    return "\n".join(lines)


def times(n: int) -> str:
    return "once" if n == 1 else f"{n} times"


def count_phrase(low: int, high: int | None) -> str:
    """How often a check wants a thing done, in words: ``never``, ``1 to 3 times``, ..."""
    if high == 0:
        return "never"
    if high is None:
        return "at least once" if low == 1 else f"at least {low} times"
    if low == high:
        return "exactly once" if low == 1 else f"exactly {low} times"
    return f"at most {high} times" if low == 0 else f"{low} to {high} times"
