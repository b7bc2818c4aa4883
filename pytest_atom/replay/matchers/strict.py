"""The ``strict`` match mode: the whole normalized body decides, Claude Code's parts included,
so a replay proves the CLI sends what it sent when recorded."""

from __future__ import annotations

import json
from typing import Any, ClassVar

from pytest_atom.replay.cassette import Interaction
from pytest_atom.replay.matchers.base import Matcher, conversation_key
from pytest_atom.settings.modes import MatchMode
from pytest_atom.wire.request import CONVERSATION_KINDS, Kind


class StrictMatcher(Matcher):
    """A recorded request matches a live one when their normalized bodies are equal."""

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


#: The mode's matcher: what the ``pytest_atom.match_modes`` entry point strict names.
MATCHER = StrictMatcher()
