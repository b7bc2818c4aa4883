"""English for counts, shared by the gateway's messages and every report, and the ways a
long text is cut short: `clip` (head and tail) and `shorten` (head) take only text a
Scrubber has passed; `last_words`, for the layers below the scrubber, cuts at a word."""

from __future__ import annotations

from typing import NewType

#: Text a Scrubber returned, the only text `clip` takes: a cut made first can split a secret,
#: which the scrubber, knowing it whole, then lets through. A type, so mypy refuses a new
#: place that clips text it has not scrubbed.
Scrubbed = NewType("Scrubbed", str)


def plural(count: int, noun: str) -> str:
    """``1 turn``, ``2 turns``: English for counts in the transcript and its summaries."""
    return f"{count} {noun}{'s' * (count != 1)}"


def last_words(text: str, limit: int) -> str:
    """The end of `text`, at most `limit` characters, starting at a word: for a layer below
    the scrubber. A word the cut goes through is left out whole, so no part of a secret is
    shown for the scrubber, which knows it only whole, to miss."""
    if len(text) <= limit:
        return text
    kept = text[-limit:]
    space = next((i for i, c in enumerate(kept) if c.isspace()), None)
    return "…" if space is None else "…" + kept[space:].lstrip()


def shorten(text: Scrubbed, limit: int) -> Scrubbed:
    """`text`, else its first `limit` - 1 characters and ``…``, for a one-line view."""
    return text if len(text) <= limit else Scrubbed(text[: limit - 1] + "…")


def clip(text: Scrubbed, limit: int, whole: str) -> Scrubbed:
    """`text`, else its head and its tail, about `limit` characters in all, around a line saying
    how much was clipped and where the `whole` text is (a log ends with what matters); each
    part ends at a line break where one is near."""
    if len(text) <= limit:
        return text
    keep = max(limit // 2, 1)
    head, tail = text[:keep], text[-keep:]
    if (end := head.rfind("\n")) > keep * 4 // 5:
        head = head[: end + 1]
    if 0 <= (start := tail.find("\n")) < keep // 5:
        tail = tail[start + 1 :]
    clipped = text[len(head) : len(text) - len(tail)]
    lines = clipped.count("\n")
    counted = f" ({lines:,} line{'s' * (lines != 1)})" if lines else ""
    note = f"[... {len(clipped):,} characters{counted} clipped here; {whole}]"
    return Scrubbed(f"{head.rstrip(chr(10))}\n{note}\n{tail}")
