"""The match modes: one module per mode, each a class behind the `Matcher` protocol (`base`).

=============  ==========================================================
mode           a recorded request matches a live one when
=============  ==========================================================
conversation   (default) their kinds and conversations are equal
structural     their kinds and conversations are equal, tool results aside
strict         their normalized bodies are equal, byte for byte
=============  ==========================================================

Where to add: a match mode is one module with its `Matcher` class and a ``MATCHER``
instance, and one line in the ``pytest_atom.match_modes`` entry-point group (pyproject.toml
for these; another distribution's own group for its modes). `matchers()` below and the
``match`` option's choices (`settings.modes.MATCH_MODES`) both come from that group. No mode
imports another (an import-linter independence contract).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache

from pytest_atom.extensions import load
from pytest_atom.replay.matchers.base import Matcher
from pytest_atom.replay.matchers.conversation import ConversationMatcher
from pytest_atom.replay.matchers.strict import StrictMatcher
from pytest_atom.replay.matchers.structural import StructuralMatcher
from pytest_atom.settings.modes import MatchMode

__all__ = [
    "ConversationMatcher",
    "Matcher",
    "StrictMatcher",
    "StructuralMatcher",
    "matcher_for",
    "matchers",
]

#: The match-mode entry-point group (`pytest_atom.extensions`).
GROUP = "pytest_atom.match_modes"


@cache
def matchers() -> Mapping[MatchMode, Matcher]:
    """Every match mode by the name users type, in the order `MATCH_MODES` offers them,
    loaded when a replay first needs one (a plugin's module may import this package)."""
    return load(GROUP, Matcher)


def matcher_for(name: str) -> Matcher:
    """The matcher of a mode name; a ValueError naming the choices for any other."""
    try:
        return matchers()[name]
    except KeyError:
        raise ValueError(
            f"unknown match mode {name!r}: choose one of {', '.join(matchers())}"
        ) from None
