"""Replay: model traffic recorded into a cassette once and answered from it after.

`cassette` is the file format (vcrpy's YAML, read fast by `fastyaml`); `recording` is the
model source of a spec run (its script, its cassette or a recorded upstream) behind the
gateway, and why its replay diverged; `responder` answers from a cassette and `upstream`
forwards and records, to an upstream `reachable` checked once a session before the first
recording; `matchers` are the match modes, comparing what `matching` extracts, after
`normalize` and `placeholders` turned machine-specific parts into placeholders; `scrub` and
`detector` keep secrets out; `staleness` and `divergence` say when and how a cassette no
longer fits; `recall` answers a judging session without starting it; `mcp_tape` records and
replays stdio MCP servers; `transcript` folds a conversation into turns; `estimate` prices a
re-recording.

Where to add: a match mode is one `Matcher` class in `matchers` (its name in
`pytest_atom.settings.modes`).

Public: the names in `__all__` (a cassette, loaded and saved; the match modes; a session's
turns); every module here is private.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytest_atom.lazy import exports

#: Each public name and the module here that defines it.
_EXPORTS = {
    "Cassette": "cassette",
    "Interaction": "cassette",
    "Matcher": "matchers",
    "Turn": "transcript",
    "matcher_for": "matchers",
    "stream_turns": "transcript",
}
__all__ = sorted(_EXPORTS)


__getattr__ = exports(__name__, _EXPORTS, globals())


if TYPE_CHECKING:  # the same names, for type checkers and editors
    from pytest_atom.replay.cassette import Cassette, Interaction
    from pytest_atom.replay.matchers import Matcher, matcher_for
    from pytest_atom.replay.transcript import Turn, stream_turns
