"""English for counts, shared by the gateway's messages and every report."""

from __future__ import annotations


def plural(count: int, noun: str) -> str:
    """``1 turn``, ``2 turns``: English for counts in the transcript and its summaries."""
    return f"{count} {noun}{'s' * (count != 1)}"
