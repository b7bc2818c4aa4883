"""The names of the modes, in one place for every front end and file.

Record modes mean what they mean in vcrpy and pytest-recording, plus ``refresh``: replay
with the live Claude Code and write back what it sent. Match modes are explained in
`pytest_atom.replay.matching`. Judge modes say what a replay does with a structured session
whose whole input is unchanged (`pytest_atom.replay.recall`).
"""

from __future__ import annotations

from typing import Literal

from pytest_atom.extensions import declared

RecordMode = Literal["none", "once", "new_episodes", "all", "refresh"]
RECORD_MODES: tuple[RecordMode, ...] = ("none", "once", "new_episodes", "all", "refresh")

#: A match mode's name: one the ``pytest_atom.match_modes`` entry-point group declares.
MatchMode = str
MATCH_MODES: tuple[MatchMode, ...] = tuple(p.name for p in declared("pytest_atom.match_modes"))
DEFAULT_MATCH: MatchMode = "conversation"

#: What answered the CLI in a run; ``cached``: nothing, the history store's passing outcome
#: stood in for the run.
SourceKind = Literal["scripted", "replay", "record", "refresh", "rejudge", "cached"]

JudgeMode = Literal["recall", "rerun"]
JUDGE_MODES: tuple[JudgeMode, ...] = ("recall", "rerun")

#: How a set-up result comes back from the cache: cloned or copied (never hard-linked: an
#: attempt's write would reach the cache), or never cached.
SetupCacheMode = Literal["copy", "off"]
SETUP_CACHE_MODES: tuple[SetupCacheMode, ...] = ("copy", "off")
