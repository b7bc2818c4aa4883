"""The conversational output protocol: how a tool talks to the agent that runs it.

A tool prints plain Markdown, one message per level-two heading, and the agent reads
it as it streams. There are seven kinds of message::

    ## Status: Working            status("Working", "Parsing 12 files")
    ## Progress: 40%              progress(40, "5 of 12 files")
    ## Output                     output({"files": 12}, format="json")
    ## Error: <title>             error("File not found", "...", recovery="...")
    ## Input Needed               input_needed("Which branch?", context="...")
    ## AI Directive: <action>     ai_directive("Review the diff", details="...")
    ## Suggestions                suggestions(["Run the tests", "Open a PR"])

Each function writes its message to stdout (or `file`), flushes at once so the agent
sees it while the tool still works, and returns the text it wrote. A message ends with
a blank line, so consecutive messages stay separate blocks. Tools are stateless: a tool
that needs an answer emits ``## Input Needed`` and exits, and the agent calls it again
with the answer as an argument.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Sequence
from typing import Any, TextIO

import yaml

__all__ = [
    "FORMATS",
    "STATES",
    "ai_directive",
    "error",
    "input_needed",
    "output",
    "progress",
    "status",
    "suggestions",
]

STATES = ("Ready", "Working", "Complete", "Failed")
FORMATS = ("text", "json", "yaml")


def status(state: str, description: str, *, file: TextIO | None = None) -> str:
    """``## Status: <state>``; `state` is Ready, Working, Complete or Failed (any case)."""
    canonical = {s.lower(): s for s in STATES}.get(str(state).strip().lower())
    if canonical is None:
        raise ValueError(f"status state must be one of {', '.join(STATES)}, not {state!r}")
    return _emit(f"## Status: {canonical}", [description], file)


def progress(percent: float, message: str, *, file: TextIO | None = None) -> str:
    """``## Progress: <percent>%``; `percent` is a number from 0 to 100."""
    # NaN and infinities fail the range too.
    if (
        isinstance(percent, bool)
        or not isinstance(percent, (int, float))
        or not 0 <= percent <= 100
    ):
        raise ValueError(f"progress percent must be a number from 0 to 100, not {percent!r}")
    shown = f"{percent:g}" if isinstance(percent, float) else str(percent)
    return _emit(f"## Progress: {shown}%", [message], file)


def output(data: Any, format: str = "text", *, file: TextIO | None = None) -> str:
    """``## Output``: `data` as text, or rendered as JSON or YAML in a fenced code block."""
    if format == "json":
        body = _fenced(json.dumps(data, indent=2, ensure_ascii=False), "json")
    elif format == "yaml":
        body = _fenced(
            yaml.safe_dump(data, sort_keys=False, allow_unicode=True).rstrip("\n"), "yaml"
        )
    elif format == "text":
        body = data if isinstance(data, str) else str(data)
    else:
        raise ValueError(f"output format must be one of {', '.join(FORMATS)}, not {format!r}")
    return _emit("## Output", [body], file)


def error(
    title: str, message: str, recovery: str | None = None, *, file: TextIO | None = None
) -> str:
    """``## Error: <title>``, what went wrong and, when known, how to recover."""
    body = [message]
    if recovery:
        body.append(f"**Recovery:** {recovery}")
    return _emit(f"## Error: {_heading_text(title, 'error title')}", body, file)


def input_needed(question: str, context: str | None = None, *, file: TextIO | None = None) -> str:
    """``## Input Needed``: a question for the agent or user, with optional context."""
    if not str(question).strip():
        raise ValueError("input_needed needs a question")
    body = [question]
    if context:
        body.append(f"**Context:** {context}")
    return _emit("## Input Needed", body, file)


def ai_directive(action: str, details: str | None = None, *, file: TextIO | None = None) -> str:
    """``## AI Directive: <action>``: something the agent is asked to do, with details."""
    return _emit(
        f"## AI Directive: {_heading_text(action, 'directive action')}",
        [details] if details else [],
        file,
    )


def suggestions(options: Sequence[str], *, file: TextIO | None = None) -> str:
    """``## Suggestions``: optional next steps, one list item each."""
    if isinstance(options, str):
        raise ValueError("suggestions takes a list of options, not a single string")
    items = [str(option).strip() for option in options]
    if not items or not all(items):
        raise ValueError("suggestions needs at least one option, and no empty ones")
    # Continuation lines are indented so a multi-line option stays one list item.
    lines = ["- " + item.replace("\n", "\n  ") for item in items]
    return _emit("## Suggestions", ["\n".join(lines)], file)


def _heading_text(text: str, what: str) -> str:
    """One line, not empty: a newline would end the heading."""
    text = str(text).strip()
    if not text or "\n" in text or "\r" in text:
        raise ValueError(f"the {what} must be a single non-empty line, not {text!r}")
    return text


def _fenced(text: str, language: str) -> str:
    """A code block whose fence is longer than any backtick run inside it."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{language}\n{text}\n{fence}"


def _emit(heading: str, body: Sequence[str], file: TextIO | None) -> str:
    """The heading, the first paragraph on the next line, later ones after a blank line,
    and a blank line to end the message; written and flushed at once."""
    paragraphs = [p.strip("\n") for p in map(str, body) if p.strip("\n")]
    text = heading + "".join(("\n" if i == 0 else "\n\n") + p for i, p in enumerate(paragraphs))
    text += "\n\n"
    out = sys.stdout if file is None else file
    out.write(text)
    out.flush()
    return text
