"""The ``conversation`` match mode (the default): the user's conversation decides; what Claude
Code owns (system prompt, tools, settings) is drift."""

from __future__ import annotations

from typing import Any, ClassVar

from pytest_atom.replay.cassette import Interaction
from pytest_atom.replay.matchers.base import conversation_key
from pytest_atom.replay.matching import compared_turns
from pytest_atom.settings.modes import MatchMode
from pytest_atom.wire.request import Kind


class ConversationMatcher:
    """A recorded request matches a live one when their kinds and conversations are equal."""

    name: ClassVar[MatchMode] = "conversation"
    exact: ClassVar[bool] = False

    def key(self, kind: Kind, body: Any, *, system: bool = False) -> str:
        return conversation_key(kind, body, system=system)

    def turns(self, body: Any) -> list[dict[str, Any]]:
        return compared_turns(body)

    def results_differ(self, kind: Kind, live: Any, recorded: Any) -> bool:
        return False

    def closest_pool(self, kind: Kind, live: Any, pool: list[Interaction]) -> list[Interaction]:
        return pool


#: The mode's matcher: what the ``pytest_atom.match_modes`` entry point conversation names.
MATCHER = ConversationMatcher()
