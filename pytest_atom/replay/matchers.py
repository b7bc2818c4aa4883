"""The match modes: each a class behind the `Matcher` protocol.

=============  ==========================================================
mode           a recorded request matches a live one when
=============  ==========================================================
conversation   (default) their kinds and conversations are equal
structural     their kinds and conversations are equal, tool results aside
strict         their normalized bodies are equal, byte for byte
=============  ==========================================================

Where to add: a match mode is a `Matcher` class and an instance of it, named by one line in
the ``pytest_atom.match_modes`` entry-point group (pyproject.toml for these; another
distribution's own group for its modes). `matchers()` and the choices the ``match`` option
offers (`pytest_atom.settings.modes.MATCH_MODES`, below this layer, which reads the names
without importing a mode) both come from that group.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import cache
from typing import Any, ClassVar, Protocol, runtime_checkable

from pytest_atom.extensions import load
from pytest_atom.gateway.messages import CONVERSATION_KINDS, Kind
from pytest_atom.replay.cassette import Interaction
from pytest_atom.replay.matching import compared_turns, owned_system
from pytest_atom.settings.modes import MatchMode

__all__ = [
    "ConversationMatcher",
    "Matcher",
    "StrictMatcher",
    "StructuralMatcher",
    "conversation_key",
    "match_key",
    "matcher_for",
    "matchers",
]


@runtime_checkable  # `extensions.load` checks each entry point against it
class Matcher(Protocol):
    """How a live request finds its recorded counterpart, in one match mode: which recorded
    request answers a live one (`key`), what of two requests a divergence report compares
    (`turns`), which recordings are the closest when nothing matched (`closest_pool`), and
    whether a match is worth noting as drift (`results_differ`). The replay responder asks
    its matcher and never tests a mode's name."""

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


def conversation_key(
    kind: Kind, body: Any, *, system: bool = False, blank_results: bool = False
) -> str:
    """The key of the conversation modes: a request's kind and its conversation (tool
    results blanked for `blank_results`), and its system prompt where the user owns it."""
    if kind not in CONVERSATION_KINDS:
        return kind
    turns = compared_turns(body, blank_results=blank_results)
    owned = {"system": owned_system(body)} if system else {}
    return kind + ":" + json.dumps([turns, owned], sort_keys=True, ensure_ascii=False)


class ConversationMatcher:
    """``conversation`` (the default): the user's conversation decides; what Claude Code owns
    (system prompt, tools, settings) is drift."""

    name: ClassVar[MatchMode] = "conversation"
    exact: ClassVar[bool] = False
    blank_results: ClassVar[bool] = False

    def key(self, kind: Kind, body: Any, *, system: bool = False) -> str:
        return conversation_key(kind, body, system=system, blank_results=self.blank_results)

    def turns(self, body: Any) -> list[dict[str, Any]]:
        return compared_turns(body, blank_results=self.blank_results)

    def results_differ(self, kind: Kind, live: Any, recorded: Any) -> bool:
        return False

    def closest_pool(self, kind: Kind, live: Any, pool: list[Interaction]) -> list[Interaction]:
        return pool


class StructuralMatcher(ConversationMatcher):
    """``structural``: the conversation decides, tool results aside, so a tool whose output
    varies from run to run (dates, timings, random ids) still replays its recording."""

    name: ClassVar[MatchMode] = "structural"
    blank_results: ClassVar[bool] = True

    def results_differ(self, kind: Kind, live: Any, recorded: Any) -> bool:
        """Whether the match passed over differing tool results: their conversations, tool
        results included, differ."""
        return kind in CONVERSATION_KINDS and conversation_key(kind, live) != conversation_key(
            kind, recorded
        )


class StrictMatcher(ConversationMatcher):
    """``strict``: the whole normalized body decides, Claude Code's parts included, so a
    replay proves the CLI sends what it sent when recorded."""

    name: ClassVar[MatchMode] = "strict"
    exact: ClassVar[bool] = True

    def key(self, kind: Kind, body: Any, *, system: bool = False) -> str:
        return kind + ":" + (body if isinstance(body, str) else json.dumps(body, sort_keys=True))

    def closest_pool(self, kind: Kind, live: Any, pool: list[Interaction]) -> list[Interaction]:
        """The recordings of the same conversation (the default mode's key), when there are
        any: the difference then lies in Claude Code's part of the request, and the report
        can say so."""
        if kind not in CONVERSATION_KINDS:
            return pool
        key = conversation_key(kind, live)
        return [i for i in pool if conversation_key(kind, i.body) == key] or pool


#: The built-in modes' matchers, which the ``pytest_atom.match_modes`` entry points name.
CONVERSATION = ConversationMatcher()
STRUCTURAL = StructuralMatcher()
STRICT = StrictMatcher()


@cache
def matchers() -> Mapping[MatchMode, Matcher]:
    """Every match mode by the name users type, in the order `settings.modes.MATCH_MODES`
    offers them: the group, loaded when a replay first needs a mode (not at import, so a
    plugin's module may import this module while it is itself being loaded)."""
    return load("pytest_atom.match_modes", Matcher)


def __getattr__(name: str) -> Any:
    """`MATCHERS`: `matchers()`, loaded on first use."""
    if name == "MATCHERS":
        return matchers()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def matcher_for(name: str) -> Matcher:
    """The matcher of a mode name; a ValueError naming the choices for any other."""
    try:
        return matchers()[name]
    except KeyError:
        raise ValueError(
            f"unknown match mode {name!r}: choose one of {', '.join(matchers())}"
        ) from None


def match_key(kind: Kind, body: Any, mode: MatchMode, *, system: bool = False) -> str:
    """The string two requests must share to match in `mode` (`Matcher.key`)."""
    return matcher_for(mode).key(kind, body, system=system)
