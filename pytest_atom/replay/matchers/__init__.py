"""The match modes: one module per mode, each a class behind the `Matcher` protocol (`base`).

=============  ==========================================================
mode           a recorded request matches a live one when
=============  ==========================================================
conversation   (default) their kinds and conversations are equal
structural     their kinds and conversations are equal, tool results aside
strict         their normalized bodies are equal, byte for byte
=============  ==========================================================

Where to add: a match mode is one module here with its `Matcher` class, a line in
`BUILTIN` below, and its name in `pytest_atom.settings.modes.MATCH_MODES` (the choices the
option offers, below this layer); `tests/replay/test_matchers.py` holds the two lists equal.
No mode imports another (an import-linter independence contract).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_atom.gateway.messages import Kind
from pytest_atom.replay.matchers.base import Matcher
from pytest_atom.replay.matchers.conversation import ConversationMatcher
from pytest_atom.replay.matchers.strict import StrictMatcher
from pytest_atom.replay.matchers.structural import StructuralMatcher
from pytest_atom.settings.modes import MatchMode

__all__ = [
    "MATCHERS",
    "ConversationMatcher",
    "Matcher",
    "StrictMatcher",
    "StructuralMatcher",
    "match_key",
    "matcher_for",
]

#: The built-in match modes, in the order `settings.modes.MATCH_MODES` offers them (typed as
#: the protocol, so mypy checks that each class conforms).
BUILTIN: tuple[Matcher, ...] = (ConversationMatcher(), StructuralMatcher(), StrictMatcher())
#: Every match mode by the name users type.
MATCHERS: Mapping[MatchMode, Matcher] = {m.name: m for m in BUILTIN}


def matcher_for(name: str) -> Matcher:
    """The matcher of a mode name; a ValueError naming the choices for any other."""
    try:
        return MATCHERS[name]  # type: ignore[index]
    except KeyError:
        raise ValueError(
            f"unknown match mode {name!r}: choose one of {', '.join(MATCHERS)}"
        ) from None


def match_key(kind: Kind, body: Any, mode: MatchMode, *, system: bool = False) -> str:
    """The string two requests must share to match in `mode` (`Matcher.key`)."""
    return matcher_for(mode).key(kind, body, system=system)
