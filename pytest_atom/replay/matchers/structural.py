"""The ``structural`` match mode: the conversation decides, tool results aside, so a tool
whose output varies from run to run (dates, timings, random ids) still replays its recording."""

from __future__ import annotations

from typing import Any, ClassVar

from pytest_atom.replay.matchers.base import Matcher, conversation_key
from pytest_atom.replay.matching import compared_turns
from pytest_atom.settings.modes import MatchMode
from pytest_atom.wire.request import CONVERSATION_KINDS, Kind


class StructuralMatcher(Matcher):
    """A recorded request matches when kinds and conversations are equal, tool results aside."""

    name: ClassVar[MatchMode] = "structural"
    exact: ClassVar[bool] = False

    def key(self, kind: Kind, body: Any, *, system: bool = False) -> str:
        return conversation_key(kind, body, system=system, blank_results=True)

    def turns(self, body: Any) -> list[dict[str, Any]]:
        return compared_turns(body, blank_results=True)

    def results_differ(self, kind: Kind, live: Any, recorded: Any) -> bool:
        """Whether the match passed over differing tool results."""
        return kind in CONVERSATION_KINDS and conversation_key(kind, live) != conversation_key(
            kind, recorded
        )


#: The mode's matcher: what the ``pytest_atom.match_modes`` entry point structural names.
MATCHER = StructuralMatcher()
