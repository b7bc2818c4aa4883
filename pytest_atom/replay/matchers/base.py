"""The `Matcher` protocol every match mode implements, and what the conversation modes share.
The replay responder asks its matcher and never tests a mode's name."""

from __future__ import annotations

import json
from typing import Any, ClassVar, Protocol, runtime_checkable

from pytest_atom.replay.cassette import Interaction
from pytest_atom.replay.matching import compared_turns, owned_system
from pytest_atom.settings.modes import MatchMode
from pytest_atom.wire.request import CONVERSATION_KINDS, Kind

__all__ = ["Matcher", "conversation_key"]


@runtime_checkable  # `extensions.load` checks each entry point against it
class Matcher(Protocol):
    """How a live request finds its recorded counterpart, in one match mode. A mode may
    subclass it for the defaults of `turns`, `results_differ` and `closest_pool`."""

    #: The name users type (``--atom-match=NAME``, ``match:`` in atom.yaml).
    name: ClassVar[MatchMode]
    #: Only a byte-identical normalized body matches: Claude Code's own parts of a request
    #: (system prompt, tools, settings) count, so a request it alone sends (a preflight, a
    #: title) gets no stand-in and a refresh cannot use this mode.
    exact: ClassVar[bool]

    def key(self, kind: Kind, body: Any, *, system: bool = False) -> str:
        """The string two requests of `kind` must share to match (compared, never parsed).
        `system`: the system prompt is the user's too (an SDK app's), so it is matched on."""
        ...

    def turns(self, body: Any) -> list[dict[str, Any]]:
        """A request's conversation as this mode compares it, for saying where two differ."""
        return compared_turns(body)

    def results_differ(self, kind: Kind, live: Any, recorded: Any) -> bool:
        """Whether a match of `live` with `recorded` passed over differing tool results."""
        return False

    def closest_pool(self, kind: Kind, live: Any, pool: list[Interaction]) -> list[Interaction]:
        """The recordings among `pool` that a divergence report compares `live` with."""
        return pool


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
