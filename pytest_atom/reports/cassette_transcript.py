"""A cassette as a transcript a person reads: `atom cassette show` prints its lines.

Every request of a cassette repeats the whole conversation so far: `cassette_lines` groups
them into sessions, shows each turn's new user content and its answer (`read_reply`), marks
calls as the trajectory checks and the HTML report do (`call_marks`), and sums the usage.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pytest_atom.cost.billing import Billed
from pytest_atom.cost.prices import cost_usd
from pytest_atom.events import flatten_tool_result
from pytest_atom.gateway.messages import Reply, read_reply, requests_text
from pytest_atom.inert import inert
from pytest_atom.replay.cassette import FAULT_HEADER, Cassette, Interaction
from pytest_atom.replay.matching import tools_by_name
from pytest_atom.replay.transcript import (
    AGENT_TOOLS,
    Mark,
    call_marks,
    is_messages,
    marks_summary,
    refusal_in_result,
)
from pytest_atom.wire.request import CONVERSATION_KINDS, request_kind
from pytest_atom.wire.roles import STRUCTURED_OUTPUT
from pytest_atom.words import plural

_REMINDER = re.compile(r"<system-reminder>.*?</system-reminder>", re.DOTALL)

#: How a line (or its emphasized part) is shown on a terminal; the text never depends on it.
Style = Literal["", "bold", "dim"]


@dataclass(frozen=True)
class Line:
    """One line of a transcript: ``prefix + text + suffix``, `text` in `style` (data, not
    escape codes: ``str(line)`` is the plain text). Inert (`pytest_atom.inert`): what a
    cassette quotes may hold terminal control sequences (an OSC that sets the clipboard)."""

    text: str
    style: Style = ""
    prefix: str = ""
    suffix: str = ""

    def __post_init__(self) -> None:
        for name in ("text", "prefix", "suffix"):
            object.__setattr__(self, name, inert(getattr(self, name)))

    def __str__(self) -> str:
        return self.prefix + self.text + self.suffix


_METADATA_FIELDS = (
    ("Claude Code", "claude_code_version"),
    ("Model", "model"),
    ("Spec", "spec"),
    ("Spec hash", "spec_hash"),
    ("Recorded at", "recorded_at"),
    ("Upstream", "upstream"),
)


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _without_cache_control(node: Any) -> Any:
    """The CLI moves its cache breakpoints from turn to turn; they are no conversation content."""
    if isinstance(node, list):
        return [_without_cache_control(n) for n in node]
    if isinstance(node, dict):
        return {k: _without_cache_control(v) for k, v in node.items() if k != "cache_control"}
    return node


@dataclass
class _Totals:
    turns: int = 0
    tool_calls: int = 0
    server_calls: int = 0
    verdicts: int = 0
    plans: int = 0  # planner mode: the planner's structured answers
    side: int = 0
    billed: Billed = field(default_factory=Billed)
    cost_usd: float = 0.0  # at today's prices (pytest_atom.cost.prices)
    #: What broken streams billed that the cassette left out (its ``upstream_faults``).
    broken: int = 0

    def add(self, reply: Reply, body: dict[str, Any]) -> None:
        """Count an answer, priced as the model its request asked for (as Claude Code and
        `atom cassette cost` price it), else the answer's."""
        asked = body.get("model")
        self.billed += reply.billed
        self.cost_usd += cost_usd(reply.billed, asked if isinstance(asked, str) else reply.model)


@dataclass
class _Session:
    key: str
    tools: list[str]
    first: str = ""  # the first user message's own text: a subagent's is its Agent prompt
    lines: list[Line] = field(default_factory=list)
    turns: int = 0
    last_length: int = 0
    #: Agent calls: (index in `lines` just past the call, its prompt, its description).
    agent_calls: list[tuple[int, str, str]] = field(default_factory=list)
    #: The assistant messages its requests carried back, as `_answers` writes them.
    answers: set[str] = field(default_factory=set)


def _answers(messages: list[Any]) -> dict[int, str]:
    """The assistant messages of a request by index, cache breakpoints aside: what ties a
    later request to the conversation that gave those answers."""
    return {
        n: _dumps(_without_cache_control(m.get("content")))
        for n, m in enumerate(messages)
        if isinstance(m, dict) and m.get("role") == "assistant"
    }


def cassette_lines(path: Path, data: Cassette, max_lines: int = 15) -> Iterator[Line]:
    """A cassette as a transcript: its metadata, every session's turns, then totals.
    `max_lines` bounds each text and tool result (0: everything); interactions are numbered
    from 1 in file order, as `atom cassette check` numbers them."""
    return _CassetteTranscript(max_lines).lines(path, data)


class _CassetteTranscript:
    def __init__(self, max_lines: int) -> None:
        self.max_lines = max_lines
        self.totals = _Totals()
        self.sessions: list[_Session] = []
        self.pending: list[Line] = []  # HEAD, side and count_tokens lines before the next turn
        self.marks: list[Mark] = []  # every call's, for the totals

    def clip(self, text: str, indent: str) -> list[Line]:
        """The text's lines, indented, at most `max_lines` of them and a note of the rest."""
        lines = text.rstrip("\n").split("\n") if text.strip() else ["(empty)"]
        hidden = 0
        if self.max_lines and len(lines) > self.max_lines:
            hidden = len(lines) - self.max_lines
            lines = lines[: self.max_lines]
        out = [Line(indent + line) for line in lines]
        if hidden:
            out.append(Line(f"... ({plural(hidden, 'more line')})", "dim", prefix=indent))
        return out

    def short(self, text: str, limit: int = 400) -> str:
        if self.max_lines and len(text) > limit:
            return text[:limit] + f"... ({plural(len(text) - limit, 'more character')})"
        return text

    def user_content(self, content: Any, indent: str) -> list[Line]:
        """What the user side sent: text (system reminders only counted) and tool results."""
        if isinstance(content, str):
            return self.clip(content, indent)
        out: list[Line] = []
        for block in content if isinstance(content, list) else []:
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "text":
                text = str(block.get("text", ""))
                if text.lstrip().startswith("<system-reminder>"):
                    n = len(text.strip().split("\n"))
                    out.append(Line(f"[system reminder, {plural(n, 'line')}]", "dim", indent))
                else:
                    out += self.clip(text, indent)
            elif kind == "tool_result":
                result = flatten_tool_result(block.get("content"))
                error = " (error)" if block.get("is_error") else ""
                refused = refusal_in_result(result) if error else None
                if refused is not None:
                    mark = Mark("refused", refused)
                    self.marks.append(mark)
                    error += f" {mark.tag}"
                out.append(Line(f"{indent}tool_result {block.get('tool_use_id', '')}{error}:"))
                out += self.clip(result, indent + "  ")
            else:
                out.append(Line(f"{indent}[{kind}]"))
        return out

    def assistant(self, reply: Reply, indent: str, session: str = "turn") -> list[Line]:
        if reply.error:
            return [Line(f"{indent}error: {reply.error}")]
        out: list[Line] = []
        for block in reply.blocks:
            out += self.block(block, indent, session)
            if block.get("type") == "text" and isinstance(block.get("citations"), list):
                out += [
                    Line(f"{indent}  [cites] {_citation(c)}")
                    for c in block["citations"]
                    if isinstance(c, dict)
                ]
        return out

    def block(self, block: dict[str, Any], indent: str, session: str) -> list[Line]:
        kind = block.get("type")
        if kind == "text":
            return self.clip(str(block.get("text", "")), indent)
        if kind == "thinking":
            first = str(block.get("thinking", "")).strip().split("\n")[0]
            return [Line(f"(thinking) {self.short(first, 120)}", "dim", indent)]
        if kind == "redacted_thinking":
            return [Line("(redacted thinking)", "dim", indent)]
        if kind == "tool_use" and block.get("name") == STRUCTURED_OUTPUT:
            plan = session == "planner"  # else the reflector's verdict
            self.totals.plans += plan
            self.totals.verdicts += not plan
            return [Line(f"{indent}{'plan' if plan else 'verdict'}: {_dumps(block.get('input'))}")]
        if kind == "tool_use":
            self.totals.tool_calls += 1
            return self.tool_use(block, indent)
        if kind == "server_tool_use":
            self.totals.server_calls += 1
            return self.tool_use(block, indent, "server_tool_use")
        if kind == "compaction":
            summary = self.clip(str(block.get("content") or ""), indent + "  ")
            return [Line("(compaction summary)", "dim", indent), *summary]
        if isinstance(kind, str) and kind.endswith("_tool_result"):
            error = " (error)" if _result_error(block.get("content")) else ""
            text = "\n".join(_result_text(block.get("content")))
            return [
                Line(f"{indent}{kind} {block.get('tool_use_id', '')}{error}:"),
                *self.clip(text, indent + "  "),
            ]
        return [Line(f"{indent}[{kind}]")]

    def tool_use(self, block: dict[str, Any], indent: str, word: str = "tool_use") -> list[Line]:
        """A tool call, tagged (`call_marks`), a shell command as typed (not JSON-escaped).
        A refusal shows on the result, the only place a cassette keeps it."""
        name, args = str(block.get("name", "?")), block.get("input")
        marks = call_marks(name, args)
        self.marks += marks
        head = f"{indent}{word} {name}" + "".join(f" {mark.tag}" for mark in marks)
        command = args.get("command") if isinstance(args, dict) else None
        if isinstance(command, str):
            rest = {k: v for k, v in args.items() if k != "command"} if args else {}
            head += f" {self.short(_dumps(rest))}" if rest else ""
            first, *more = command.split("\n")
            lines = [Line(head), Line(f"{indent}  $ {first}")]
            return lines + (self.clip("\n".join(more), indent + "    ") if more else [])
        shown = args if isinstance(args, str) else _dumps(args)
        return [Line(f"{head} {self.short(shown)}")]

    def add(self, n: int, interaction: Interaction) -> None:
        """A turn joins its session; anything else waits in `pending` for the next turn."""
        body = interaction.body if isinstance(interaction.body, dict) else {}
        where = f"[{n}] {interaction.method} {interaction.endpoint}"
        kind = request_kind(interaction.method, interaction.endpoint, body, interaction.role)
        if kind == "count_tokens":
            try:
                count = json.loads(interaction.response).get("input_tokens", "?")
            except (ValueError, AttributeError):
                count = "?"
            self.pending.append(Line(f"  {where}: count_tokens, {count} input tokens"))
        elif is_messages(interaction) and isinstance(body.get("messages"), list):
            if kind in CONVERSATION_KINDS:
                self.turn(where, body, interaction, kind)
            else:
                self.side(where, body, interaction)
        else:
            self.pending.append(Line(f"  {where} -> {interaction.status}"))

    def side(self, where: str, body: dict[str, Any], interaction: Interaction) -> None:
        """A request without tools (a title, a summary): what was asked and said, one line."""
        reply = read_reply(interaction.response, interaction.status)
        self.totals.side += 1
        self.totals.add(reply, body)
        answer = reply.error or " ".join(
            str(b.get("text", "")) for b in reply.blocks if b.get("type") == "text"
        )
        answer = " ".join(answer.split())
        answer = answer[:80] + "..." if len(answer) > 80 else answer
        self.pending.append(Line(f"  {where}: side request: {_side_topic(body)} -> {answer}"))

    def session_for(self, body: dict[str, Any]) -> _Session:
        """The conversation a turn continues: the latest one with the same first message and
        system prompt (cache breakpoints aside) and fewer messages; else the latest one whose
        answers the request carries back (a later ``claude -p`` call of the same session:
        Claude Code then merges its ``role: system`` entries into the first user message,
        so that message differs); else a new one."""
        messages = body["messages"]
        key = _dumps(_without_cache_control([messages[:1], body.get("system")]))
        if len(messages) > 1:
            for session in reversed(self.sessions):
                if session.key == key and session.last_length < len(messages):
                    return session
            answers = set(_answers(messages).values())
            for session in reversed(self.sessions):
                if answers & session.answers:
                    session.key = key
                    return session
        first = messages[0].get("content") if messages and isinstance(messages[0], dict) else ""
        session = _Session(key, list(tools_by_name(body)), _own_text(first))
        self.sessions.append(session)
        return session

    def turn(self, where: str, body: dict[str, Any], interaction: Interaction, kind: str) -> None:
        """A turn of its session: only the user content new since its previous turn."""
        messages: list[Any] = body["messages"]
        session = self.session_for(body)
        session.lines += self.pending
        self.pending = []
        answers = _answers(messages)
        after = max(answers) + 1 if answers else session.last_length
        new = messages[after:] if after < len(messages) else []
        new = [m for m in new if isinstance(m, dict) and m.get("role") == "user"] or messages[-1:]
        session.answers.update(answers.values())
        session.last_length = len(messages)
        session.turns += 1
        self.totals.turns += 1
        reply = read_reply(interaction.response, interaction.status)
        self.totals.add(reply, body)
        session.lines.append(Line(f"  Turn {session.turns}", "bold", suffix=f"  {where}"))
        session.lines.append(Line("    user:"))
        for message in new:
            content = message.get("content") if isinstance(message, dict) else message
            session.lines += self.user_content(content, "      ")
        session.lines.append(Line(f"    assistant ({reply.usage_text()}):"))
        start = len(session.lines)
        session.lines += self.assistant(reply, "      ", kind)
        fault = interaction.response_headers.get(FAULT_HEADER)
        if fault:
            session.lines.append(
                Line(f"the stream broke here ({fault}), kept as the CLI saw it", "dim", "      ")
            )
        calls = [b.get("input") for b in reply.blocks if b.get("name") in AGENT_TOOLS]
        heads = tuple(f"      tool_use {name} " for name in AGENT_TOOLS)
        ends = [
            n + 1
            for n in range(start, len(session.lines))
            if session.lines[n].text.startswith(heads)
        ]
        for end, call in zip(ends, calls, strict=False):
            if isinstance(call, dict):
                prompt, about = str(call.get("prompt", "")), str(call.get("description", ""))
                session.agent_calls.append((end, prompt.strip(), about))

    def lines(self, path: Path, data: Cassette) -> Iterator[Line]:
        width = 14
        yield Line(f"{'Cassette':<{width}}{path}")
        for label, key in _METADATA_FIELDS:
            yield Line(f"{label:<{width}}{data.metadata.get(key, '?')}")
        yield Line(f"{'Interactions':<{width}}{len(data.interactions)}")
        for n, interaction in enumerate(data.interactions, 1):
            self.add(n, interaction)
        self.totals.broken = _broken_billed(data.metadata.get("upstream_faults"))
        if self.pending and self.sessions:
            self.sessions[-1].lines += self.pending
        elif self.pending:
            yield Line("")
            yield Line("No conversation", "bold")
            yield from self.pending
        nested = self.nest()
        children = {id(child) for kids in nested.values() for _, _, child in kids}
        top = [s for s in self.sessions if id(s) not in children]
        for number, session in enumerate(top, 1):
            yield Line("")
            title = f"Session {number}: {plural(session.turns, 'turn')}"
            yield Line(title, "bold", suffix=f" (tools: {', '.join(session.tools)})")
            yield from self.session_lines(session, nested, "")
        yield Line("")
        yield Line(self.totals_line())

    def nest(self) -> dict[int, list[tuple[int, str, _Session]]]:
        """Which sessions are subagents, and under which Agent call: id(parent) ->
        [(line index past the call, its description, the subagent's session)]; each call
        takes the first session started from its prompt that no other call took."""
        nested: dict[int, list[tuple[int, str, _Session]]] = {}
        taken: set[int] = set()
        for parent in self.sessions:
            for end, prompt, about in parent.agent_calls:
                child = next(
                    (
                        s
                        for s in self.sessions
                        if s is not parent and id(s) not in taken and prompt and prompt in s.first
                    ),
                    None,
                )
                if child is not None:
                    taken.add(id(child))
                    nested.setdefault(id(parent), []).append((end, about, child))
        return nested

    def session_lines(
        self, session: _Session, nested: dict[int, list[tuple[int, str, _Session]]], pad: str
    ) -> Iterator[Line]:
        """A session's lines, each subagent's session under the Agent call that started it."""
        kids = sorted(nested.get(id(session), []), key=lambda kid: kid[0])
        done = 0
        for end, about, child in kids:
            yield from (_indented(line, pad) for line in session.lines[done:end])
            done = end
            inner = pad + "        "
            title = f"subagent: {about or 'Agent'} ({plural(child.turns, 'turn')})"
            yield Line(title, "bold", prefix=inner)
            yield from self.session_lines(child, nested, inner)
        yield from (_indented(line, pad) for line in session.lines[done:])

    def totals_line(self) -> str:
        t = self.totals
        m = t.billed.message
        tokens = f"{m.input} input / {m.output} output tokens"
        if m.cache_read or m.cache_write:
            tokens += f" ({m.cache_read} cache read, {m.cache_write} cache write)"
        counts = (
            plural(len(self.sessions), "session"),
            plural(t.turns, "turn"),
            plural(t.tool_calls, "tool call"),
            plural(t.verdicts, "verdict"),
            *([plural(t.plans, "plan")] if t.plans else []),
            *([plural(t.server_calls, "server tool call")] if t.server_calls else []),
            plural(t.side, "side request"),
        )
        marks = marks_summary(self.marks)
        # What the API billed leads, as in every report; the answers' own counts follow.
        spent = billed_words(t.billed, t.cost_usd, t.broken)
        return f"Totals: {', '.join(counts)}; {spent}; answers {tokens}" + (
            f"; {marks}" if marks else ""
        )


def _broken_billed(notes: Any) -> int:
    """The tokens of the broken streams a cassette's ``upstream_faults`` notes say were
    billed and left out of it (made good by the CLI's retry)."""
    return sum(
        n["tokens"]
        for n in (notes if isinstance(notes, list) else ())
        if isinstance(n, dict) and not n.get("in_cassette") and isinstance(n.get("tokens"), int)
    )


def billed_words(billed: Billed, usd: float, broken: int = 0) -> str:
    """``billed 72,396 tokens (Claude Code counted 72,213): message 72,213, compaction 183,
    $0.0643 at today's prices``: Claude Code's count only where it differs (it leaves
    compaction out). `broken`: what broken streams left out of the cassette billed."""
    total = billed.tokens + broken
    words = f"billed {total:,} tokens"
    if billed.cli_counted != total:
        words += f" (Claude Code counted {billed.cli_counted:,})"
    kinds = billed.by_kind() | ({"broken streams left out": broken} if broken else {})
    parts = [f"{k} {n:,}" for k, n in kinds.items()] if len(kinds) > 1 else []
    parts += [requests_text(key, count) for key, count in billed.server_tool_use.items()]
    if parts:
        words += ": " + ", ".join(parts)
    return f"{words}, ${usd:.4f} at today's prices"


def _result_error(content: Any) -> bool:
    """Whether a server tool's result is its error (``web_search_tool_result_error``, …)."""
    return isinstance(content, dict) and str(content.get("type", "")).endswith("_error")


#: The fields of a server tool's result shown as they are, in this order.
_RESULT_FIELDS = ("error_code", "return_code", "stdout", "stderr", "text", "file_type")


def _result_text(content: Any) -> list[str]:
    """A server tool's result as lines; encrypted parts are named, not shown."""
    if isinstance(content, str):
        return [content]
    if isinstance(content, list):
        return [line for item in content for line in _result_text(item)]
    if not isinstance(content, dict):
        return []
    kind = str(content.get("type", ""))
    lines = _result_heading(content)
    for key in _RESULT_FIELDS:
        value = content.get(key)
        if value not in (None, ""):
            lines.append(str(value) if key == "text" else f"{key}: {value}")
    lines += _result_source(content.get("source"))
    for key in ("content", "document"):
        if content.get(key) is not None:
            lines += _result_text(content[key])
    if content.get("encrypted_content") or content.get("encrypted_index"):
        lines.append(f"({kind or 'result'}: encrypted)")
    return lines


def _result_heading(content: dict[str, Any]) -> list[str]:
    title, url = content.get("title"), content.get("url")
    if not (url or title):
        return []
    line = " ".join(str(x) for x in (f"- {title}" if title else "-", url and f"<{url}>") if x)
    return [f"{line} ({content['page_age']})" if content.get("page_age") else line]


def _result_source(source: Any) -> list[str]:
    if not (isinstance(source, dict) and isinstance(source.get("data"), str)):
        return []
    if source.get("type") == "base64":
        return [f"({source.get('media_type', 'binary')}, {len(source['data'])} base64 characters)"]
    return [source["data"]]


def _citation(citation: dict[str, Any]) -> str:
    """A citation in one line: what it cites (page, document) and the words it quotes."""
    where = citation.get("title") or citation.get("document_title") or citation.get("url") or ""
    if citation.get("url") and citation.get("url") != where:
        where = f"{where} <{citation['url']}>"
    quoted = " ".join(str(citation.get("cited_text") or "").split())
    quoted = quoted[:160] + "…" if len(quoted) > 160 else quoted
    return f'{where}: "{quoted}"' if quoted else str(where or citation.get("type", "citation"))


def _indented(line: Line, pad: str) -> Line:
    return Line(line.text, line.style, pad + line.prefix, line.suffix) if pad else line


def _own_text(content: Any) -> str:
    """A user message's text without Claude Code's system reminders."""
    if isinstance(content, list):
        content = "\n".join(
            str(b.get("text", ""))
            for b in content
            if isinstance(b, dict) and b.get("type") == "text"
        )
    return _REMINDER.sub("", str(content or "")).strip()


def _side_topic(body: dict[str, Any]) -> str:
    """What a side request is for: title generation, else the start of its last message."""
    schema = _dumps((body.get("output_config") or {}).get("format"))
    if "title" in _dumps(body.get("system")).lower() or '"title"' in schema:
        return "title generation"
    last = body["messages"][-1] if body["messages"] else {}
    content = last.get("content") if isinstance(last, dict) else ""
    if isinstance(content, list):
        content = " ".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return " ".join(str(content).split())[:60] or "(no text)"
