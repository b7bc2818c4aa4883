"""The outcome cache: an item whose inputs are those of a stored passing item is not run.

`OutcomeCache` is the harness's `Recall` (`pytest_atom.run.recall`) when the history store
is on. Around each run it computes the item's input digest (`history.digest`) and stamps
it on the result, so the store records it (`ItemRecord.digest`, `digest_parts`); with
``--atom-cache`` it first asks the store for the newest item of the same (spec, case, arm)
with that digest (`Store.item_history`) and, when that one passed the session (passed,
xpassed, or xfailed as its spec expects), reports it instead: a `SpecResult` with
`cached_from` set, no attempt, no CLI started, nothing spent.

Only a replay or a scripted run is taken from the cache, and never one of a spec with
`snapshot:` (pytest compares those files after the run, against snapshots the digest does
not cover): a recording (``--atom-record-mode``
``new_episodes``, ``all``, ``refresh``) and ``--atom-rejudge`` ask for sessions to run, so
they always run. A digest that cannot be computed (an input the run itself would refuse)
leaves the item to run and report it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_atom.errors import AtomError, HistoryError
from pytest_atom.history.digest import InputDigest, input_digest
from pytest_atom.history.recording import identity
from pytest_atom.history.records import ItemRecord
from pytest_atom.history.store import Store, open_store
from pytest_atom.history.urls import OFF, store_url
from pytest_atom.results.cached import CachedCheck, CachedCriterion, CachedFrom
from pytest_atom.results.spec_result import SpecResult

if TYPE_CHECKING:
    from pytest_atom.settings.config import AtomConfig
    from pytest_atom.settings.options import RunSettings
    from pytest_atom.spec.types import Spec

__all__ = ["CACHEABLE_MODES", "OutcomeCache", "cached_result", "session_cache"]

#: The record modes in which a stored outcome may stand in for a run: those that replay.
CACHEABLE_MODES = ("none", "once")
#: The stored outcomes that stand in for a run: those a session counts as passing.
OK_OUTCOMES = ("passed", "xpassed", "xfailed")
#: How many of a series' last runs are searched for the item's digest.
LOOK_BACK = 50


class OutcomeCache:
    """Digests every run of a session; with `enabled` (``--atom-cache``) reports a stored
    passing item in place of a run whose digest it has."""

    def __init__(
        self,
        url: str,
        root: Path,
        config: AtomConfig | None,
        runs_dir: Path,
        *,
        enabled: bool,
    ) -> None:
        self.url, self.root, self.config, self.runs_dir = url, root, config, runs_dir
        self.enabled = enabled
        self._store: Store | None = None
        #: Why the store could not be read for the cache (the items ran instead), once.
        self.problem = ""

    def digest(self, spec: Spec, settings: RunSettings, repeat: int | None) -> InputDigest | None:
        """`spec`'s input digest now; None when an input cannot be read (the run says why)."""
        try:
            return input_digest(
                spec, settings, config=self.config, runs_dir=self.runs_dir, repeat=repeat
            )
        except (AtomError, OSError):
            return None

    def around(
        self,
        spec: Spec,
        settings: RunSettings,
        repeat: int | None,
        run: Callable[[], SpecResult],
    ) -> SpecResult:
        """The stored outcome when the cache is on and has one, else `run()`'s result; each
        with the item's digest."""
        started = time.perf_counter()
        found = self.digest(spec, settings, repeat)
        stored = self._lookup(spec, found, settings)
        if found is not None and stored is not None:
            return cached_result(spec, settings, stored, found, time.perf_counter() - started)
        result = run()
        if found is not None:
            result.digest, result.digest_parts = found.value, dict(found.parts)
        return result

    def _lookup(
        self, spec: Spec, found: InputDigest | None, settings: RunSettings
    ) -> ItemRecord | None:
        """The newest stored item of `spec` with this digest, when its outcome passed the
        session (passed, xpassed, or xfailed as its spec expects). When the newest such
        item failed, the item runs: a pass further back does not hide a flaky one."""
        if found is None or not self.enabled or settings.rejudge or spec.snapshot:
            return None  # a `snapshot:` is compared with files only a run makes
        if settings.record_mode not in CACHEABLE_MODES:
            return None
        name, case, arm = identity(spec)
        try:
            if self._store is None:
                self._store = open_store(self.url, self.root)
            history = self._store.item_history(name, case, arm, limit=LOOK_BACK)
        except (HistoryError, OSError) as error:
            self.problem = self.problem or f"--atom-cache: the store could not be read: {error}"
            return None
        same = next((item for item in history if item.digest == found.value), None)
        return same if same is not None and same.outcome in OK_OUTCOMES else None

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None


def session_cache(
    settings: RunSettings, root: Path, config: AtomConfig | None, runs_dir: Path
) -> OutcomeCache | None:
    """The session's outcome cache: None when the history store is off (nothing to record
    a digest in, nothing to recall); digesting only, unless ``--atom-cache``."""
    url = store_url(settings.history, root)
    if url == OFF:
        return None
    return OutcomeCache(url, root, config, runs_dir, enabled=settings.cache)


def cached_result(
    spec: Spec,
    settings: RunSettings,
    stored: ItemRecord,
    found: InputDigest,
    seconds: float,
) -> SpecResult:
    """The result that reports `stored` for `spec`: no attempt, the stored item's outcome,
    score, checks, criteria and tool calls, its run folder if it is still there."""
    from pytest_atom.reports.text import TEXT  # the format a result renders its report with

    folder = Path(stored.run_folder) if stored.run_folder else None
    threshold = spec.reflector.threshold if spec.reflector.threshold_set else settings.threshold
    return SpecResult(
        spec=spec,
        run_dir=folder if folder is not None and folder.is_dir() else Path(),
        attempts=[],
        duration=seconds,
        threshold=threshold,
        source="cached",
        renderer=TEXT.render,
        digest=found.value,
        digest_parts=dict(found.parts),
        cached_from=cached_from(stored),
    )


def cached_from(stored: ItemRecord) -> CachedFrom:
    """What a report says of the stored item that stands in for a run."""
    return CachedFrom(
        run_id=stored.run_id,
        started=stored.run_id.split("-", 1)[0],  # a run id begins with its start (UTC)
        outcome=stored.outcome,
        why=stored.why,
        score=stored.score,
        wall_seconds=stored.wall_seconds,
        tool_calls=tuple(stored.tool_calls),
        checks=tuple(CachedCheck(c.name, c.passed, c.detail) for c in stored.checks),
        criteria=tuple(
            CachedCriterion(c.text, c.score, c.passed, c.reasons) for c in stored.criteria
        ),
    )
