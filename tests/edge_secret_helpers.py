"""A secret placed at every edge a cut can have, and the check that no piece of it is left:
for the tests that every clip, excerpt and truncation cuts text already scrubbed."""

from __future__ import annotations

from collections.abc import Sequence

#: A secret `pass_env:` hands a run, under a name the scrubber takes as secret.
NAME = "ATOM_T_EDGE_TOKEN"
SECRET = "Edg3-Sekr1t-q7W2x9Z4k8P1m6N3b5V0c"  # 33 characters
#: How much of the secret lies before a cut it straddles.
BEFORE_CUT = 16
#: The shortest piece of the secret that counts as a leak: none of it is ordinary text.
PIECE = 8
_FILL = "."


def at_edges(length: int, cuts: Sequence[int]) -> str:
    """A text of `length` characters (no line breaks) holding the secret at its start, at
    its end, and across each of `cuts` (`BEFORE_CUT` characters before it)."""
    chars = list(_FILL * length)
    for start in (0, *(c - BEFORE_CUT for c in cuts), length - len(SECRET)):
        chars[start : start + len(SECRET)] = SECRET
    assert len(chars) == length
    return "".join(chars)


def pieces_in(text: str) -> list[str]:
    """The pieces of the secret (`PIECE` characters or more) that `text` holds."""
    windows = {SECRET[i : i + PIECE] for i in range(len(SECRET) - PIECE + 1)}
    return sorted(w for w in windows if w in text)
