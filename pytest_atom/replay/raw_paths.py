"""Which raw paths in a cassette name the recording machine, and which are the conversation.

Normalization turns the recorded run's folders, its home and its temp folders into
placeholders (`replay.placeholders`: `volatile_paths`, `PathMasks`). A path of
that kind left raw names the machine and will not replay elsewhere: `atom cassette check`
reports it. A path the model wrote itself (``/tmp/example.py`` in a tool input, a path in
Anthropic's code-execution container, a path in its prose) is the conversation: the same
on every machine, so never a finding, and neither is the CLI's echo of it in a tool
result ("File created successfully at: /tmp/x.py").

Two kinds of path are told apart:

- shapes only this machine's run can have: a run folder (``<spec>-<date>-<time>-<id>``) as
  a path or as the CLI's folder slug. Reported wherever they are, the model's text too;
- home and temp folders (``/home/<user>/``, ``/Users/<user>/``, ``/root/``, ``/tmp/…``,
  ``/var/folders/…``): reported where the machine wrote them (the system prompt, a user
  message, a tool result) unless the model wrote that very path itself somewhere in the
  cassette (a response, or an assistant message its requests resend).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

__all__ = ["MachinePaths", "model_written"]

#: Absolute home and temp paths (their first component): what normalization masks.
#: `/tmp/claude` is the CLI's own sandbox TMPDIR, which its prompts may mention.
_HOME_OR_TEMP = re.compile(
    r"(?<![\w.>/-])"
    r"(?:/home/[\w.-]+/|/Users/[\w.-]+/|/root/|(?:/private)?/var/folders/|(?:/private)?/tmp/"
    r"(?!claude(?![\w.-]))(?=[\w.-]))[\w.-]*"
)
#: A run folder's path as the CLI spells it in folder names (every other character a `-`):
#: `-home-me-proj--atom-runs-<spec>-<date>-<time>-<id>`.
_RUN_SLUG = re.compile(r"[\w-]*-atom-runs-[\w.-]*?-\d{8}-\d{6}-[0-9a-f]{6}")
#: A run folder's own path (`run_name`: `<spec>-<date>-<time>-<id>`), up to its name.
_RUN_FOLDER = re.compile(r"(?<![\w.>-])/(?:[\w.@+\[\]-]+/)*?[\w.@+\[\]-]+-\d{8}-\d{6}-[0-9a-f]{6}")
#: A whole path from where a match starts: what the model wrote is compared whole.
_WHOLE_PATH = re.compile(r"/[\w.@+-]*(?:/[\w.@+-]*)*")


def _whole(text: str, start: int) -> str:
    match = _WHOLE_PATH.match(text, start)
    return match.group(0).rstrip(".") if match else ""


def model_written(texts: Iterable[str]) -> frozenset[str]:
    """Every whole absolute path in `texts` (the model's own words)."""
    found: set[str] = set()
    for text in texts:
        for match in _WHOLE_PATH.finditer(text):
            if match.start() == 0 or not (text[match.start() - 1].isalnum()):
                found.add(match.group(0).rstrip("."))
    return frozenset(found)


class MachinePaths:
    """Finds the recording machine's paths left raw, given what the model wrote."""

    def __init__(self, written_by_model: frozenset[str] = frozenset()) -> None:
        self.written_by_model = written_by_model

    def in_text(self, text: str, *, by_model: bool = False) -> list[str]:
        """The machine paths in `text`, each once, in order. `by_model`: the text is the
        model's own (a response), where only a run folder's shapes are the machine's."""
        found = [m.group(0) for m in (*_RUN_FOLDER.finditer(text), *_RUN_SLUG.finditer(text))]
        if not by_model:
            found += [
                m.group(0)
                for m in _HOME_OR_TEMP.finditer(text)
                if _whole(text, m.start()) not in self.written_by_model
            ]
        return _outermost(found)


def _outermost(found: list[str]) -> list[str]:
    """Each path once, dropping one that merely lies inside another found path's text."""
    unique = list(dict.fromkeys(found))
    return [p for p in unique if not any(p != o and p in o for o in unique)]


def assistant_texts(body: Any) -> list[str]:
    """A request body's assistant messages, as JSON text: what the model wrote earlier."""
    if not isinstance(body, dict):
        return []
    messages = body.get("messages")
    if not isinstance(messages, list):
        return []
    return [
        json.dumps(m.get("content"), ensure_ascii=False)
        for m in messages
        if isinstance(m, dict) and m.get("role") == "assistant"
    ]


def non_assistant_text(body: Any) -> str:
    """A request body without its assistant messages: what the CLI and the machine wrote."""
    if isinstance(body, str):
        return body
    if isinstance(body, dict) and isinstance(body.get("messages"), list):
        body = {
            **body,
            "messages": [
                m
                for m in body["messages"]
                if not (isinstance(m, dict) and m.get("role") == "assistant")
            ],
        }
    return json.dumps(body, indent=2, ensure_ascii=False)
