"""The names of the record and match modes, in one place for every front end and file.

Record modes mean what they mean in vcrpy and pytest-recording, plus ``refresh``: replay
with the live Claude Code and write back what it sent (no upstream, no tokens spent).
Match modes are explained in `pytest_atom.replay.matchers`; each is a class found through
an entry-point group (`pytest_atom.extensions`). Judge modes say what a
replay does with a structured session (reflector, planner) whose whole input is unchanged:
``recall`` takes its recorded answer without starting the CLI, ``rerun`` starts it anyway
(see `pytest_atom.replay.recall`).
"""

from __future__ import annotations

from typing import Literal

from pytest_atom.extensions import declared

RecordMode = Literal["none", "once", "new_episodes", "all", "refresh"]
RECORD_MODES: tuple[RecordMode, ...] = ("none", "once", "new_episodes", "all", "refresh")

#: A match mode's name: pytest-atom's (conversation, strict, structural) or one another
#: distribution declares in the ``pytest_atom.match_modes`` entry-point group.
MatchMode = str
#: The names the ``match`` option offers: the group's, read from the installed metadata
#: without importing a mode (`pytest_atom.replay.matchers` loads them when replaying).
MATCH_MODES: tuple[MatchMode, ...] = tuple(p.name for p in declared("pytest_atom.match_modes"))
DEFAULT_MATCH: MatchMode = "conversation"

#: What answered the CLI in a run: a script, a cassette, the upstream while recording, a
#: cassette replayed with this Claude Code (refresh), or one whose reflector is re-recorded;
#: or nothing: the history store's passing outcome stood in for the run (cached).
SourceKind = Literal["scripted", "replay", "record", "refresh", "rejudge", "cached"]

JudgeMode = Literal["recall", "rerun"]
JUDGE_MODES: tuple[JudgeMode, ...] = ("recall", "rerun")

#: How a spec's set-up result comes back from the user's cache (run.setup_cache): cloned or
#: copied, or never cached (set-up runs every time). Never hard-linked: an attempt's write
#: would reach the cache.
SetupCacheMode = Literal["copy", "off"]
SETUP_CACHE_MODES: tuple[SetupCacheMode, ...] = ("copy", "off")
