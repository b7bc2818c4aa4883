"""Divergences: a live request the cassette cannot answer, and where it differs.

A divergence fails the test with a diff against the closest recorded request, named as a
person reads a conversation (``messages[2] (user).content[0] (tool_result)``), and says
where the difference lies (`Divergence.where`): in Claude Code's own part of the request,
in a machine detail, in a tool result or in the conversation itself.
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass, field
from typing import Any, Literal

from pytest_atom.gateway.server import Reply
from pytest_atom.replay.cassette import Interaction
from pytest_atom.replay.matchers import Matcher, matcher_for
from pytest_atom.replay.matching import owned_system
from pytest_atom.settings.modes import DEFAULT_MATCH
from pytest_atom.wire.request import CONVERSATION_KINDS, GatewayRequest, Kind
from pytest_atom.words import plural


@dataclass
class Divergence:
    """A live request that matched nothing recorded (or a recorded turn it cannot replay)."""

    request: GatewayRequest
    kind: Kind
    live: Any  # the normalized live body
    closest: Interaction | None
    matcher: Matcher = field(default_factory=lambda: matcher_for(DEFAULT_MATCH))
    reason: str | None = None  # set when a recording matched but cannot be replayed
    system: bool = False  # the system prompt is the user's (an SDK app's): it must match too

    def describe(self, limit: int | None = 5) -> str:
        """What differs; `limit=None` lists every differing field (the first divergence)."""
        head = f"{self.request.method} {self.request.endpoint} ({self.kind})"
        if self.reason:
            return f"{head}: {self.reason}"
        if self.closest is None:
            return head + ": no recorded interaction matches (the cassette has none of this kind)"
        live, recorded, what = self.live, self.closest.body, "request"
        if not self.matcher.exact and self.kind in CONVERSATION_KINDS:
            live_body, recorded_body = live, recorded
            live = {"messages": self.matcher.turns(live)}
            recorded = {"messages": self.matcher.turns(recorded)}
            what = "conversation"
            if self.system:
                live["system"] = owned_system(live_body)
                recorded["system"] = owned_system(recorded_body)
                what = "conversation and system prompt"
        if live == recorded:
            return (
                f"{head}: its recording was already played; the live run sent this {what} "
                "more often than was recorded"
            )
        return (
            f"{head}: no recorded interaction matches; the closest recorded {what} differs at:\n"
            + describe_difference(live, recorded, limit)
        )

    def where(self) -> tuple[Where, list[str]] | None:
        """Where this divergence lies, with the machine lines that differ (``machine``);
        None when it has no closest recording or a reason of its own."""
        if self.closest is None or self.reason:
            return None
        live, recorded = self.live, self.closest.body
        if self.kind not in CONVERSATION_KINDS:
            return ("played" if live == recorded else "cli"), []
        live_turns = self.matcher.turns(live)
        recorded_turns = self.matcher.turns(recorded)
        if live_turns == recorded_turns:
            if (
                self.system
                and not self.matcher.exact
                and owned_system(live) != owned_system(recorded)
            ):
                return "system", []
            if not self.matcher.exact or live == recorded:
                return "played", []
            labels = _machine_labels(live, recorded)
            return ("machine", labels) if labels else ("cli", [])
        if len(live_turns) == len(recorded_turns) and all(
            a["role"] == b["role"]
            and len(a["content"]) == len(b["content"])
            and all(
                x == y or (x["type"] == y["type"] == "tool_result")
                for x, y in zip(a["content"], b["content"], strict=True)
            )
            for a, b in zip(live_turns, recorded_turns, strict=True)
        ):
            return "tool_result", []
        return "conversation", []


#: Where a divergence lies: Claude Code's own parts of the request only (``cli``), of which
#: only a machine detail (``machine``); a tool result; the rest of the conversation; an SDK
#: app's own system prompt (``system``); nowhere, its recording already played (``played``).
Where = Literal["cli", "machine", "tool_result", "conversation", "system", "played"]

#: A line where Claude Code writes what it finds on the machine (`` - OS Version: …``).
_MACHINE_LINE = re.compile(r"(?: - ([A-Z][\w ]*): |(Filesystem|Network): )")


def machine_line(text: str, at: int) -> str | None:
    """The label of the machine-describing line of `text` that holds position `at`."""
    start = text.rfind("\n", 0, at) + 1
    match = _MACHINE_LINE.match(text, start)
    if match is None:
        return None
    label = match.group(1) or match.group(2)
    return f"the sandbox's {label.lower()} list" if match.group(2) else f"'{label}'"


def divergence_reply() -> Reply:
    """An API error the CLI neither retries nor falls back on; the test report explains."""
    return Reply.refusal(
        "pytest-atom replay: this request matches nothing in the cassette; the test report "
        "shows the difference and its likely cause."
    )


def describe_difference(live: Any, recorded: Any, limit: int | None = 5) -> str:
    """Where two normalized bodies differ, named as a person reads a conversation
    (``messages[2] (user).content[0] (tool_result)``), each with both values; of a long
    text, only the parts that differ, with some context (`text_difference`)."""
    found: list[str] = []
    limit = limit or 100  # every field, within reason

    def walk(a: Any, b: Any, path: list[Any]) -> None:
        if len(found) >= limit or a == b:
            return
        if isinstance(a, dict) and isinstance(b, dict):
            for key in list(dict.fromkeys([*b, *a])):
                if key not in a or key not in b:
                    found.append(
                        f"- {_describe_path(path + [key], live)}: "
                        f"{'only in the recording' if key in b else 'only in the live request'}"
                    )
                else:
                    walk(a[key], b[key], path + [key])
            return
        if isinstance(a, list) and isinstance(b, list):
            for i in range(min(len(a), len(b))):
                walk(a[i], b[i], path + [i])
            if len(a) != len(b) and len(found) < limit:
                found.append(
                    f"- {_describe_path(path, live)}: {plural(len(b), 'item')} recorded, {len(a)} live"
                )
            return
        where = _describe_path(path, live)
        if isinstance(a, str) and isinstance(b, str):
            found.append(f"- {where}: " + text_difference(b, a))
        else:
            found.append(f"- {where}: recorded {json.dumps(b)[:200]}, live {json.dumps(a)[:200]}")

    walk(live, recorded, [])
    return "\n".join(found) or "- (no difference after normalization)"


#: Characters of unchanged text shown on each side of a change, and of a change itself.
_CONTEXT, _CHANGE = 40, 160
#: A string this short, on one line, is shown whole.
_SHORT = 100
#: Changes shown of one text; a text differing in more places is said to.
_HUNKS = 4


def text_difference(recorded: str, live: str) -> str:
    """Both values of a changed text: whole when short, else each differing part with
    `_CONTEXT` characters around it, on one line each (newlines shown as ``\\n``)."""
    if max(len(recorded), len(live)) <= _SHORT and "\n" not in recorded + live:
        return f"recorded {json.dumps(recorded)}, live {json.dumps(live)}"
    hunks = _hunks(recorded, live)
    lines = [f"text changed in {plural(len(hunks), 'place')}:"]
    for rec_start, rec_end, live_start, live_end in hunks[:_HUNKS]:
        line = live.count("\n", 0, live_start) + 1
        lines.append(
            f"    at line {line}, character {live_start - live.rfind(chr(10), 0, live_start)}:"
        )
        lines.append(f"      recorded {_excerpt(recorded, rec_start, rec_end)}")
        lines.append(f"      live     {_excerpt(live, live_start, live_end)}")
    if len(hunks) > _HUNKS:
        lines.append(f"    (+{len(hunks) - _HUNKS} more)")
    return "\n".join(lines)


def _hunks(a: str, b: str) -> list[tuple[int, int, int, int]]:
    """The differing spans of `a` and `b`; spans less than two contexts apart are one."""
    head = 0
    while head < min(len(a), len(b)) and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < min(len(a), len(b)) - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    a_mid, b_mid = a[head : len(a) - tail], b[head : len(b) - tail]
    if max(len(a_mid), len(b_mid)) > 20_000:  # too long to compare closely: one span
        return [(head, len(a) - tail, head, len(b) - tail)]
    matcher = difflib.SequenceMatcher(None, a_mid, b_mid, autojunk=False)
    spans: list[list[int]] = []
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            continue
        if spans and i1 + head - spans[-1][1] < 2 * _CONTEXT:
            spans[-1][1], spans[-1][3] = i2 + head, j2 + head
        else:
            spans.append([i1 + head, i2 + head, j1 + head, j2 + head])
    return [_whole_words(a, b, *span) for span in spans] or [(head, head, head, head)]


def _whole_words(
    a: str, b: str, a_start: int, a_end: int, b_start: int, b_end: int
) -> tuple[int, int, int, int]:
    """A span widened to whole words: ``[false]`` and ``[true]``, not ``[fals]e``."""
    while a_start and b_start and a[a_start - 1] == b[b_start - 1] and a[a_start - 1].isalnum():
        a_start, b_start = a_start - 1, b_start - 1
    while a_end < len(a) and b_end < len(b) and a[a_end] == b[b_end] and a[a_end].isalnum():
        a_end, b_end = a_end + 1, b_end + 1
    return a_start, a_end, b_start, b_end


def _excerpt(text: str, start: int, end: int) -> str:
    """``…before[changed]after…``: the change in brackets, its surroundings clipped."""
    change = text[start:end]
    if len(change) > _CHANGE:
        change = change[: _CHANGE // 2] + "…" + change[-_CHANGE // 2 :]
    before = ("…" if start > _CONTEXT else "") + text[max(0, start - _CONTEXT) : start]
    after = text[end : end + _CONTEXT] + ("…" if end + _CONTEXT < len(text) else "")
    return f"{before}[{change}]{after}".replace("\n", "\\n")


def _machine_labels(live: Any, recorded: Any) -> list[str]:
    """The machine lines in which two bodies differ, when every difference lies in one."""
    labels: list[str] = []

    def walk(a: Any, b: Any) -> bool:
        if a == b:
            return True
        if isinstance(a, dict) and isinstance(b, dict):
            return a.keys() == b.keys() and all(walk(a[k], b[k]) for k in a)
        if isinstance(a, list) and isinstance(b, list):
            return len(a) == len(b) and all(walk(x, y) for x, y in zip(a, b, strict=True))
        if not (isinstance(a, str) and isinstance(b, str)):
            return False
        for _, _, start, _ in _hunks(b, a):
            label = machine_line(a, start)
            if label is None:
                return False
            labels.append(label)
        return True

    return list(dict.fromkeys(labels)) if walk(live, recorded) else []


def _describe_path(path: list[Any], root: Any) -> str:
    """``messages[2] (user) content[0] tool_result`` rather than a bare JSON path."""
    parts: list[str] = []
    node = root
    for step in path:
        try:
            node = node[step]
        except (KeyError, IndexError, TypeError):
            node = None
        part = f"[{step}]" if isinstance(step, int) else f".{step}"
        if isinstance(node, dict) and isinstance(step, int):
            tag = node.get("role") or node.get("type")
            if node.get("type") == "tool_result":
                tag = "tool_result"
            part += f" ({tag})" if tag else ""
        parts.append(part)
    return "".join(parts).lstrip(".")
