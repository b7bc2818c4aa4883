"""`atom cassette`: read a recorded cassette as a transcript, and check cassettes before a commit.

`show` turns a cassette's JSON requests and SSE responses back into the conversation they
carried. `check` is meant for a pre-commit hook: it fails on anything that should never be
committed (a secret, an unnormalized path) or that replay will not match on another machine
(a request recorded without pytest-atom's placeholders).
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click

from pytest_atom.replay.cassette import Cassette, CassetteError, Interaction
from pytest_atom.replay.gateway.messages import parse_sse
from pytest_atom.replay.gateway.scripted import STRUCTURED_OUTPUT
from pytest_atom.replay.scrub import SECRET_HEADERS, Scrubber

__all__ = ["cassette"]

#: At least one of these is in every request body pytest-atom recorded from the CLI.
NORMALIZATION_PLACEHOLDERS = ("<DATE>", "<RUN_DIR>", "<METADATA>")

#: Absolute home and temp paths: normalization turns them into <HOME>, <RUN_DIR> and
#: <WORKSPACE>, so one left in a cassette names this machine and will not replay elsewhere.
#: `/tmp/claude` is the CLI's own sandbox TMPDIR, which its prompts may mention.
_RAW_PATH = re.compile(
    r"(?<![\w.>/-])"
    r"(?:/home/[\w.-]+/|/Users/[\w.-]+/|/root/|(?:/private)?/var/folders/|(?:/private)?/tmp/"
    r"(?!claude(?![\w.-]))(?=[\w.-]))[\w.-]*"
)

#: What a failed recording keeps beside the cassette it did not replace (Cassette.partial_path).
PARTIAL_SUFFIX = ".partial.yaml"

_METADATA_FIELDS = (
    ("Claude Code", "claude_code_version"),
    ("Model", "model"),
    ("Spec", "spec"),
    ("Spec hash", "spec_hash"),
    ("Recorded at", "recorded_at"),
    ("Upstream", "upstream"),
)


@click.group()
def cassette() -> None:
    """Inspect, check and refresh recorded cassettes (cassettes/<spec stem>/<spec name>.yaml).

    A cassette holds every model request and response of one spec, recorded once and
    replayed after. `show` prints one as a readable transcript; `check` scans cassettes for
    secrets, raw machine paths and unnormalized requests before they are committed;
    `refresh` rewrites them for a new Claude Code without spending a token.
    """


# --------------------------------------------------------------------------------- loading


def _load(path: Path) -> tuple[str, Cassette]:
    """The file's text and its cassette; CassetteError (naming the file) for anything else."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise CassetteError(f"cannot read cassette {path}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise CassetteError(f"{path} is not a cassette (not UTF-8 text)") from None
    return text, Cassette.load(path)


def _is_messages(interaction: Interaction) -> bool:
    return interaction.method == "POST" and interaction.endpoint.endswith("/v1/messages")


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'s' * (count != 1)}"


def _without_cache_control(node: Any) -> Any:
    """The CLI moves its cache breakpoints from turn to turn; they are no conversation content."""
    if isinstance(node, list):
        return [_without_cache_control(n) for n in node]
    if isinstance(node, dict):
        return {k: _without_cache_control(v) for k, v in node.items() if k != "cache_control"}
    return node


# ------------------------------------------------------------------------------- responses


@dataclass
class _Reply:
    """An assistant response rebuilt from its SSE stream (or JSON body)."""

    blocks: list[dict[str, Any]] = field(default_factory=list)
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read: int = 0
    cache_creation: int = 0
    error: str | None = None


def _usage(reply: _Reply, usage: Any) -> None:
    if not isinstance(usage, dict):
        return
    for attr, key in (
        ("input_tokens", "input_tokens"),
        ("output_tokens", "output_tokens"),
        ("cache_read", "cache_read_input_tokens"),
        ("cache_creation", "cache_creation_input_tokens"),
    ):
        if isinstance(usage.get(key), int):
            setattr(reply, attr, usage[key])


def _error_text(data: Any, status: int) -> str:
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict):
        return f"{error.get('type', 'error')}: {error.get('message', '')}".strip()
    return f"HTTP {status}"


def _parse_reply(interaction: Interaction) -> _Reply:
    reply = _Reply()
    text = interaction.response
    try:
        data = json.loads(text) if text.lstrip().startswith("{") else None
    except ValueError:
        data = None
    if data is not None:  # a non-streamed message or an API error
        if interaction.status >= 400 or (isinstance(data, dict) and data.get("type") == "error"):
            reply.error = _error_text(data, interaction.status)
        elif isinstance(data, dict):
            reply.blocks = [b for b in data.get("content") or [] if isinstance(b, dict)]
            _usage(reply, data.get("usage"))
        return reply
    blocks: dict[int, dict[str, Any]] = {}
    partial: dict[int, str] = {}
    for name, raw in parse_sse(text):
        try:
            event = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(event, dict):
            continue
        if name == "message_start":
            _usage(reply, (event.get("message") or {}).get("usage"))
        elif name == "message_delta":
            _usage(reply, event.get("usage"))
        elif name == "error":
            reply.error = _error_text(event, interaction.status)
        elif name == "content_block_start" and isinstance(event.get("content_block"), dict):
            blocks[int(event.get("index", len(blocks)))] = dict(event["content_block"])
        elif name == "content_block_delta" and isinstance(event.get("delta"), dict):
            index, delta = int(event.get("index", 0)), event["delta"]
            block = blocks.setdefault(index, {"type": "text", "text": ""})
            kind = delta.get("type")
            if kind == "text_delta":
                block["text"] = block.get("text", "") + str(delta.get("text", ""))
            elif kind == "thinking_delta":
                block["thinking"] = block.get("thinking", "") + str(delta.get("thinking", ""))
            elif kind == "input_json_delta":
                partial[index] = partial.get(index, "") + str(delta.get("partial_json", ""))
    for index, raw_input in partial.items():
        try:
            blocks[index]["input"] = json.loads(raw_input) if raw_input.strip() else {}
        except ValueError:
            blocks[index]["input"] = raw_input
    reply.blocks = [blocks[i] for i in sorted(blocks)]
    if reply.error is None and interaction.status >= 400:
        reply.error = f"HTTP {interaction.status}"
    return reply


# ----------------------------------------------------------------------------------- show


@dataclass
class _Totals:
    turns: int = 0
    tool_calls: int = 0
    verdicts: int = 0
    side: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read: int = 0
    cache_creation: int = 0

    def add(self, reply: _Reply) -> None:
        self.input_tokens += reply.input_tokens
        self.output_tokens += reply.output_tokens
        self.cache_read += reply.cache_read
        self.cache_creation += reply.cache_creation


@dataclass
class _Session:
    key: str
    tools: list[str]
    lines: list[str] = field(default_factory=list)
    turns: int = 0
    last_length: int = 0


class _Transcript:
    """Builds the transcript's lines; sessions are printed one after the other."""

    def __init__(self, max_lines: int) -> None:
        self.max_lines = max_lines
        self.totals = _Totals()
        self.sessions: list[_Session] = []
        self.pending: list[str] = []  # HEAD, side and count_tokens lines before the next turn

    # -- text helpers

    def clip(self, text: str, indent: str) -> list[str]:
        lines = text.rstrip("\n").split("\n") if text.strip() else ["(empty)"]
        hidden = 0
        if self.max_lines and len(lines) > self.max_lines:
            hidden = len(lines) - self.max_lines
            lines = lines[: self.max_lines]
        out = [indent + line for line in lines]
        if hidden:
            out.append(indent + click.style(f"... ({_plural(hidden, 'more line')})", dim=True))
        return out

    def short(self, text: str, limit: int = 400) -> str:
        if self.max_lines and len(text) > limit:
            return text[:limit] + f"... ({_plural(len(text) - limit, 'more character')})"
        return text

    # -- requests

    def user_content(self, content: Any, indent: str) -> list[str]:
        if isinstance(content, str):
            return self.clip(content, indent)
        out: list[str] = []
        for block in content if isinstance(content, list) else []:
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "text":
                text = str(block.get("text", ""))
                if text.lstrip().startswith("<system-reminder>"):
                    n = len(text.strip().split("\n"))
                    out.append(
                        indent + click.style(f"[system reminder, {_plural(n, 'line')}]", dim=True)
                    )
                else:
                    out += self.clip(text, indent)
            elif kind == "tool_result":
                error = " (error)" if block.get("is_error") else ""
                out.append(f"{indent}tool_result {block.get('tool_use_id', '')}{error}:")
                result = block.get("content")
                if isinstance(result, list):
                    parts = [
                        str(b.get("text", "")) if b.get("type") == "text" else f"[{b.get('type')}]"
                        for b in result
                        if isinstance(b, dict)
                    ]
                    result = "\n".join(parts)
                out += self.clip(str(result if result is not None else ""), indent + "  ")
            else:
                out.append(f"{indent}[{kind}]")
        return out

    def assistant(self, reply: _Reply, indent: str) -> list[str]:
        if reply.error:
            return [f"{indent}error: {reply.error}"]
        out: list[str] = []
        for block in reply.blocks:
            kind = block.get("type")
            if kind == "text":
                out += self.clip(str(block.get("text", "")), indent)
            elif kind == "thinking":
                first = str(block.get("thinking", "")).strip().split("\n")[0]
                out.append(indent + click.style(f"(thinking) {self.short(first, 120)}", dim=True))
            elif kind == "redacted_thinking":
                out.append(indent + click.style("(redacted thinking)", dim=True))
            elif kind == "tool_use" and block.get("name") == STRUCTURED_OUTPUT:
                self.totals.verdicts += 1
                out.append(f"{indent}verdict: {_dumps(block.get('input'))}")
            elif kind in ("tool_use", "server_tool_use"):
                self.totals.tool_calls += 1
                out += self.tool_use(block, indent)
            else:
                out.append(f"{indent}[{kind}]")
        return out

    def tool_use(self, block: dict[str, Any], indent: str) -> list[str]:
        name, args = block.get("name", "?"), block.get("input")
        command = args.get("command") if isinstance(args, dict) else None
        if isinstance(command, str):  # shown as typed, not JSON-escaped
            rest = {k: v for k, v in args.items() if k != "command"} if args else {}
            head = f"{indent}tool_use {name}" + (f" {self.short(_dumps(rest))}" if rest else "")
            first, *more = command.split("\n")
            lines = [head, f"{indent}  $ {first}"]
            return lines + (self.clip("\n".join(more), indent + "    ") if more else [])
        shown = args if isinstance(args, str) else _dumps(args)
        return [f"{indent}tool_use {name} {self.short(shown)}"]

    @staticmethod
    def usage(reply: _Reply) -> str:
        parts = [f"{reply.input_tokens} in", f"{reply.output_tokens} out"]
        if reply.cache_read:
            parts.append(f"{reply.cache_read} cache read")
        if reply.cache_creation:
            parts.append(f"{reply.cache_creation} cache write")
        return ", ".join(parts) + " tokens"

    # -- interactions

    def add(self, n: int, interaction: Interaction) -> None:
        body = interaction.body if isinstance(interaction.body, dict) else {}
        where = f"[{n}] {interaction.method} {interaction.endpoint}"
        if interaction.endpoint.endswith("/count_tokens"):
            try:
                count = json.loads(interaction.response).get("input_tokens", "?")
            except (ValueError, AttributeError):
                count = "?"
            self.pending.append(f"  {where}: count_tokens, {count} input tokens")
        elif _is_messages(interaction) and isinstance(body.get("messages"), list):
            if body.get("tools"):
                self.turn(n, where, body, interaction)
            else:
                self.side(where, body, interaction)
        else:
            self.pending.append(f"  {where} -> {interaction.status}")

    def side(self, where: str, body: dict[str, Any], interaction: Interaction) -> None:
        reply = _parse_reply(interaction)
        self.totals.side += 1
        self.totals.add(reply)
        what = "title generation" if "title" in _dumps(body.get("system")).lower() else ""
        if not what:
            schema = _dumps((body.get("output_config") or {}).get("format"))
            what = "title generation" if '"title"' in schema else ""
        if not what:
            last = body["messages"][-1] if body["messages"] else {}
            content = last.get("content") if isinstance(last, dict) else ""
            if isinstance(content, list):
                content = " ".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
            what = " ".join(str(content).split())[:60] or "(no text)"
        answer = reply.error or " ".join(
            str(b.get("text", "")) for b in reply.blocks if b.get("type") == "text"
        )
        answer = " ".join(answer.split())
        answer = answer[:80] + "..." if len(answer) > 80 else answer
        self.pending.append(f"  {where}: side request: {what} -> {answer}")

    def session_for(self, body: dict[str, Any]) -> _Session:
        """The conversation a turn continues: the latest one with the same first message and
        system prompt (cache breakpoints aside) and fewer messages; else a new one.
        """
        messages = body["messages"]
        key = _dumps(_without_cache_control([messages[:1], body.get("system")]))
        if len(messages) > 1:
            for session in reversed(self.sessions):
                if session.key == key and session.last_length < len(messages):
                    return session
        tools = [str(t.get("name")) for t in body.get("tools") or [] if isinstance(t, dict)]
        session = _Session(key, tools)
        self.sessions.append(session)
        return session

    def turn(self, n: int, where: str, body: dict[str, Any], interaction: Interaction) -> None:
        messages: list[Any] = body["messages"]
        session = self.session_for(body)
        session.lines += self.pending
        self.pending = []
        new = messages[session.last_length :] if session.last_length < len(messages) else []
        new = [m for m in new if isinstance(m, dict) and m.get("role") == "user"] or messages[-1:]
        session.last_length = len(messages)
        session.turns += 1
        self.totals.turns += 1
        reply = _parse_reply(interaction)
        self.totals.add(reply)
        session.lines.append(click.style(f"  Turn {session.turns}", bold=True) + f"  {where}")
        session.lines.append("    user:")
        for message in new:
            session.lines += self.user_content(message.get("content"), "      ")
        session.lines.append(f"    assistant ({self.usage(reply)}):")
        session.lines += self.assistant(reply, "      ")

    def lines(self, path: Path, data: Cassette) -> Iterator[str]:
        meta = data.metadata
        width = 14
        yield f"{'Cassette':<{width}}{path}"
        for label, key in _METADATA_FIELDS:
            yield f"{label:<{width}}{meta.get(key, '?')}"
        yield f"{'Interactions':<{width}}{len(data.interactions)}"
        for n, interaction in enumerate(data.interactions, 1):
            self.add(n, interaction)
        if self.pending and self.sessions:
            self.sessions[-1].lines += self.pending
        elif self.pending:
            yield ""
            yield click.style("No conversation", bold=True)
            yield from self.pending
        for number, session in enumerate(self.sessions, 1):
            yield ""
            title = f"Session {number}: {_plural(session.turns, 'turn')}"
            yield click.style(title, bold=True) + f" (tools: {', '.join(session.tools)})"
            yield from session.lines
        t = self.totals
        yield ""
        tokens = f"{t.input_tokens} input / {t.output_tokens} output tokens"
        if t.cache_read or t.cache_creation:
            tokens += f" ({t.cache_read} cache read, {t.cache_creation} cache write)"
        counts = (
            _plural(len(self.sessions), "session"),
            _plural(t.turns, "turn"),
            _plural(t.tool_calls, "tool call"),
            _plural(t.verdicts, "verdict"),
            _plural(t.side, "side request"),
        )
        yield f"Totals: {', '.join(counts)}; {tokens}"


@cassette.command(short_help="Print a cassette as a readable transcript.")
@click.argument("file", type=click.Path(path_type=Path, dir_okay=False))
@click.option(
    "--max-lines",
    type=click.IntRange(min=0),
    default=15,
    show_default=True,
    help="Lines shown of each text and tool result (0: everything, and no shortening).",
)
def show(file: Path, max_lines: int) -> None:
    """Print cassette FILE as a readable transcript: its metadata, then every session's turns
    (the new user content, the assistant's text and tool calls, token usage), then totals.

    Interactions are numbered from 1 in file order, as `atom cassette check` reports them.
    """
    try:
        _, data = _load(file)
    except CassetteError as exc:
        raise click.ClickException(str(exc)) from None
    for line in _Transcript(max_lines).lines(file, data):
        click.echo(line)


# ---------------------------------------------------------------------------------- check


def _secret_findings(scrubber: Scrubber, text: str, where: str, seen: set[str]) -> list[str]:
    """Secrets in ``text`` by name, never by value; their names are added to ``seen``."""
    names = scrubber.contains_secret(text)
    seen.update(names)
    return [f"secret ({_secret_kind(name)}) in {where}" for name in names]


def _secret_kind(name: str) -> str:
    return "REDACTED shape" if name == "REDACTED" else f"value of ${name}"


def _path_findings(text: str, where: str) -> list[str]:
    found = list(dict.fromkeys(m.group(0) for m in _RAW_PATH.finditer(text)))
    if not found:
        return []
    listed = ", ".join(found[:3]) + (f" (+{len(found) - 3} more)" if len(found) > 3 else "")
    return [f"raw path in {where}, normalization did not happen: {listed}"]


def _interaction_findings(
    scrubber: Scrubber, interaction: Interaction, seen: set[str]
) -> list[str]:
    body = interaction.body
    body_text = body if isinstance(body, str) else json.dumps(body, indent=2, ensure_ascii=False)
    out: list[str] = []
    for side, headers in (
        ("request", interaction.request_headers),
        ("response", interaction.response_headers),
    ):
        out += [
            f"secret header {k.lower()} in {side}" for k in headers if k.lower() in SECRET_HEADERS
        ]
    for where, text in (
        ("request uri", interaction.uri),
        ("request body", body_text),
        ("request headers", "\n".join(interaction.request_headers.values())),
        ("response body", interaction.response),
        ("response headers", "\n".join(interaction.response_headers.values())),
    ):
        out += _secret_findings(scrubber, text, where, seen)
        out += _path_findings(text, where)
    if (
        _is_messages(interaction)
        and isinstance(body, dict)
        and ("system" in body or "messages" in body)
        and not any(p in body_text for p in NORMALIZATION_PLACEHOLDERS)
    ):
        out.append(
            "request not normalized (recorded by something other than pytest-atom?): "
            f"its body has none of {', '.join(NORMALIZATION_PLACEHOLDERS)}"
        )
    return out


def _file_findings(scrubber: Scrubber, text: str, data: Cassette) -> Iterator[str]:
    """Findings as `interaction <n>: <what>`, or a bare `<what>` outside the interactions."""
    seen: set[str] = set()
    meta_text = json.dumps(data.metadata, ensure_ascii=False, default=str)
    yield from _secret_findings(scrubber, meta_text, "metadata", seen)
    for n, interaction in enumerate(data.interactions, 1):
        for what in _interaction_findings(scrubber, interaction, seen):
            yield f"interaction {n}: {what}"
    # The whole text, for what the parsed view does not show (a YAML comment, say).
    for name in scrubber.contains_secret(text):
        if name not in seen:
            yield f"secret ({_secret_kind(name)}) in the file text, outside the interactions"


def _expand(paths: Sequence[Path]) -> Iterator[tuple[Path, bool]]:
    """(path, is_cassette_candidate): files as given; for a directory, every `*.yaml` below
    it that lies in a folder named `cassettes` or under one (the directory itself may be
    one), so spec files beside the cassettes are skipped; (directory, False) if none is.
    """
    seen: set[Path] = set()
    for path in paths:
        candidates = [path]
        if path.is_dir():
            candidates = [
                f
                for f in sorted(path.rglob("*.yaml"))
                if f.is_file() and "cassettes" in f.absolute().parent.parts
            ]
            if not candidates:
                yield path, False
        for candidate in candidates:
            if candidate.absolute() not in seen:
                seen.add(candidate.absolute())
                yield candidate, True


@cassette.command(short_help="Scan cassettes for secrets and unnormalized requests.")
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.pass_context
def check(ctx: click.Context, files: tuple[Path, ...]) -> None:
    """Check cassettes before a commit (for a pre-commit hook); FILES may be directories.

    A directory is searched recursively for `*.yaml` files under a folder named
    `cassettes` (the directory itself may be one), so spec files beside them are skipped.
    Each finding is one line, `<file>: interaction <n>: <what>` (interactions numbered from
    1, as `atom cassette show` numbers them); secret values are never printed.

    \b
    Findings:
      - a secret: a known token shape or the value of a secret environment variable,
        anywhere in the file, or a credential header (x-api-key, authorization, ...)
      - a raw home or temp path (/home/<user>/, /Users/<user>/, /root/, /tmp/...):
        path normalization did not happen
      - a /v1/messages request with none of <DATE>, <RUN_DIR>, <METADATA>: not
        recorded through pytest-atom, so it will not replay elsewhere

    A `*.partial.yaml` is no cassette but what a failed recording kept (it never replays):
    it is reported as a stale leftover, to delete or to replace by recording again.

    Exit status: 0 clean, 1 findings or stale partials, 2 a path could not be read as a
    cassette.
    """
    scrubber = Scrubber()
    checked = findings = unreadable = partials = 0
    for path, is_candidate in _expand(files):
        if not is_candidate:
            click.echo(f"{path}: no cassettes found (no *.yaml under a cassettes/ folder)")
            continue
        if path.name.endswith(PARTIAL_SUFFIX):
            partials += 1
            click.echo(
                f"{path}: stale partial recording, not a cassette (a failed recording kept it); "
                "delete it, or record the spec again"
            )
            continue
        try:
            text, data = _load(path)
        except CassetteError as exc:
            unreadable += 1
            click.echo(f"Error: {exc}", err=True)
            continue
        checked += 1
        for what in _file_findings(scrubber, text, data):
            findings += 1
            click.echo(f"{path}: {what}")
    summary = f"{_plural(checked, 'cassette')} checked, {_plural(findings, 'finding')}"
    if partials:
        summary += f", {_plural(partials, 'stale partial')}"
    if unreadable:
        summary += f", {unreadable} unreadable"
    click.echo(summary)
    ctx.exit(2 if unreadable else 1 if findings or partials else 0)


@cassette.command(short_help="Rewrite cassettes for this Claude Code without spending a token.")
@click.argument("specs", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
def refresh(specs: tuple[Path, ...]) -> None:
    """Refresh the cassettes of SPECS (files or folders) for the Claude Code installed here.

    Each spec is replayed with the live CLI, matched on the conversation, and served the
    recorded answers; then the cassette's requests and metadata are rewritten to what this
    CLI sent, atomically, so `--atom-match=strict` passes with it. No request leaves the
    machine. Where the conversation itself diverges, the cassette is left as it was and
    the divergence is reported: that needs a re-recording, not a refresh.

    Exit status: 0 all refreshed, 1 some were not, 2 a spec could not be run at all.
    """
    from atom_cli.run_cmd import collect_specs
    from pytest_atom.execution import HARNESS_ERRORS
    from pytest_atom.harness import host_harness
    from pytest_atom.paths import display_path
    from pytest_atom.spec import spec_files

    files = spec_files(specs)
    harness = host_harness({"record_mode": "refresh"}, spec_dirs={f.parent for f in files})
    found = collect_specs(files, harness.registry())
    refused = 0
    for spec in found:
        try:
            result = harness.run(spec)
        except HARNESS_ERRORS as exc:
            raise click.ClickException(f"{spec.name}: {exc}") from None
        if result.cassette is None:
            refused += 1
            click.echo(f"{spec.name}: not refreshed: {result.harness_error or 'the replay failed'}")
            click.echo(result.report())
            continue
        click.echo(f"{spec.name}: refreshed {display_path(result.cassette)}")
        if result.drift:
            click.echo(f"  {result.drift}")
        if not result.passed and not spec.xfail:
            click.echo(f"  note: the spec fails with this Claude Code:\n{result.report()}")
    sys.exit(1 if refused else 0)
