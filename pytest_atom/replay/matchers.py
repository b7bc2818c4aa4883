"""The match modes, one small class each behind the `Matcher` protocol.

A mode decides which recorded request answers a live one (`key`), what of two requests a
divergence report compares (`turns`), which recordings are the closest when nothing
matched (`closest_pool`), and whether a match is worth noting as drift
(`results_differ`). The replay responder asks its matcher and never tests a mode's name;
a new mode is a class here and a line in `MATCHERS` (and its name in `settings.modes`).

=============  ==========================================================
mode           a recorded request matches a live one when
=============  ==========================================================
conversation   (default) their kinds and conversations are equal
structural     their kinds and conversations are equal, tool results aside
strict         their normalized bodies are equal, byte for byte
=============  ==========================================================
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, ClassVar, Protocol

from pytest_atom.gateway.messages import CONVERSATION_KINDS, Kind
from pytest_atom.replay.cassette import Interaction
from pytest_atom.replay.matching import compared_turns, owned_system
from pytest_atom.settings.modes import DEFAULT_MATCH, MatchMode

__all__ = [
    "MATCHERS",
    "ConversationMatcher",
    "Matcher",
    "StrictMatcher",
    "StructuralMatcher",
    "match_key",
    "matcher_for",
]


class Matcher(Protocol):
    """How a live request finds its recorded counterpart, in one match mode."""

    #: The name users type (``--atom-match=NAME``, ``match:`` in atom.yaml).
    name: ClassVar[MatchMode]
    #: Only a byte-identical normalized body matches: Claude Code's own parts of a request
    #: (system prompt, tools, settings) count, so a request it alone sends (a preflight, a
    #: title) gets no stand-in and a refresh cannot use this mode.
    exact: ClassVar[bool]

    def key(self, kind: Kind, body: Any, *, system: bool = False) -> str:
        """The string two requests of `kind` must share to match (compared, never parsed).

        `system`: the system prompt is the user's too (an SDK app sets its own), so it is
        part of the match, Claude Code's billing block aside.
        """
        ...

    def turns(self, body: Any) -> list[dict[str, Any]]:
        """A request's conversation as this mode compares it, for saying where two differ."""
        ...

    def results_differ(self, kind: Kind, live: Any, recorded: Any) -> bool:
        """Whether a match of `live` with `recorded` passed over differing tool results."""
        ...

    def closest_pool(self, kind: Kind, live: Any, pool: list[Interaction]) -> list[Interaction]:
        """The recordings among `pool` that a divergence report compares `live` with."""
        ...


def _conversation_key(kind: Kind, body: Any, *, system: bool, blank_results: bool) -> str:
    if kind not in CONVERSATION_KINDS:
        return kind
    turns = compared_turns(body, blank_results=blank_results)
    owned = {"system": owned_system(body)} if system else {}
    return kind + ":" + json.dumps([turns, owned], sort_keys=True, ensure_ascii=False)


class ConversationMatcher:
    """The default: the user's conversation decides; what Claude Code owns is drift."""

    name: ClassVar[MatchMode] = "conversation"
    exact: ClassVar[bool] = False

    def key(self, kind: Kind, body: Any, *, system: bool = False) -> str:
        return _conversation_key(kind, body, system=system, blank_results=False)

    def turns(self, body: Any) -> list[dict[str, Any]]:
        return compared_turns(body)

    def results_differ(self, kind: Kind, live: Any, recorded: Any) -> bool:
        return False

    def closest_pool(self, kind: Kind, live: Any, pool: list[Interaction]) -> list[Interaction]:
        return pool


class StructuralMatcher(ConversationMatcher):
    """The conversation decides, tool results aside: a tool whose output varies from run
    to run (dates, timings, random ids) still replays its recording."""

    name: ClassVar[MatchMode] = "structural"

    def key(self, kind: Kind, body: Any, *, system: bool = False) -> str:
        return _conversation_key(kind, body, system=system, blank_results=True)

    def turns(self, body: Any) -> list[dict[str, Any]]:
        return compared_turns(body, blank_results=True)

    def results_differ(self, kind: Kind, live: Any, recorded: Any) -> bool:
        conversation = MATCHERS["conversation"]
        return kind in CONVERSATION_KINDS and conversation.key(kind, live) != conversation.key(
            kind, recorded
        )


class StrictMatcher:
    """The whole normalized body decides, Claude Code's parts included: a replay proves
    the CLI sends what it sent when recorded."""

    name: ClassVar[MatchMode] = "strict"
    exact: ClassVar[bool] = True

    def key(self, kind: Kind, body: Any, *, system: bool = False) -> str:
        return kind + ":" + (body if isinstance(body, str) else json.dumps(body, sort_keys=True))

    def turns(self, body: Any) -> list[dict[str, Any]]:
        return compared_turns(body)

    def results_differ(self, kind: Kind, live: Any, recorded: Any) -> bool:
        return False

    def closest_pool(self, kind: Kind, live: Any, pool: list[Interaction]) -> list[Interaction]:
        """The recordings of the same conversation, when there are any: the difference then
        lies in Claude Code's part of the request, and the report can say so."""
        if kind not in CONVERSATION_KINDS:
            return pool
        default = MATCHERS[DEFAULT_MATCH]
        key = default.key(kind, live)
        return [i for i in pool if default.key(kind, i.body) == key] or pool


#: Every match mode, in the order `settings.modes.MATCH_MODES` offers them (typed as the
#: protocol, so mypy checks that each class conforms).
_MODES: tuple[Matcher, ...] = (ConversationMatcher(), StructuralMatcher(), StrictMatcher())
#: Every match mode by the name users type.
MATCHERS: Mapping[MatchMode, Matcher] = {m.name: m for m in _MODES}


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
