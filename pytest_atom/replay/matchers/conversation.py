"""The ``conversation`` match mode (the default): the user's conversation decides; what Claude
Code owns (system prompt, tools, settings) is drift."""

from __future__ import annotations

from typing import Any, ClassVar

from pytest_atom.replay.matchers.base import Matcher, conversation_key
from pytest_atom.settings.modes import MatchMode
from pytest_atom.wire.request import Kind


class ConversationMatcher(Matcher):
    """A recorded request matches a live one when their kinds and conversations are equal."""

    name: ClassVar[MatchMode] = "conversation"
    exact: ClassVar[bool] = False

    def key(self, kind: Kind, body: Any, *, system: bool = False) -> str:
        return conversation_key(kind, body, system=system)


#: The mode's matcher: what the ``pytest_atom.match_modes`` entry point conversation names.
MATCHER = ConversationMatcher()
