"""The outcome cache: an item whose inputs are those of a stored passing item is not run.

`OutcomeCache` stands around each of the harness's runs when the history store is on: it
stamps the item's input digest on the result, so the store records it. With ``--atom-cache``
it first looks for the newest stored item of the same (spec, case, arm) with those inputs
(`InputDigest.matches`) and, when that one passed, reports it instead: no attempt, no CLI
started, nothing spent.

A recording and ``--atom-rejudge`` always run (`uncacheable` lists every such rule). A
digest that cannot be computed leaves the item to run and report it.

Repeats are served whole or not at all, from the newest stored session in which every
repeat had today's inputs, when all of them passed there: a threshold over repeats
(``pass_at_least:``) is decided on one session's draws, never on passes gathered across
sessions.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_atom.errors import AtomError, HistoryError
from pytest_atom.history.records import ItemRecord
from pytest_atom.history.store import Store, open_store
from pytest_atom.history.urls import OFF, store_url
from pytest_atom.history.write import identity
from pytest_atom.outcome_cache.input_digest import InputDigest, input_digest
from pytest_atom.outcome_cache.inputs import Reads, unseen
from pytest_atom.results.spec_result import CachedFrom, SpecResult

if TYPE_CHECKING:
    from pytest_atom.settings.config import AtomConfig
    from pytest_atom.settings.options import RunSettings
    from pytest_atom.spec.types import Spec

#: The record modes in which a stored outcome may stand in for a run: those that replay.
CACHEABLE_MODES = ("none", "once")
#: The stored outcomes that stand in for a run: those a session counts as passing.
OK_OUTCOMES = ("passed", "xpassed", "xfailed")
#: How many of a series' last runs are searched for the item's digest.
LOOK_BACK = 50


class OutcomeCache:
    """Digests every run; with `enabled` (``--atom-cache``) reports a stored pass in its place."""

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
        #: What is walked once per session: the code in this process, the toolchain.
        self.reads = Reads(config.root if config is not None else root)
        #: Each series' decision (`_series`): its repeats' stored items, or None: all run.
        self._decided: dict[tuple[str, str | None, str | None], dict[int, ItemRecord] | None] = {}

    def digest(self, spec: Spec, settings: RunSettings, repeat: int | None) -> InputDigest | None:
        """`spec`'s input digest now; None when an input cannot be read (the run says why)."""
        try:
            return input_digest(
                spec,
                settings,
                config=self.config,
                runs_dir=self.runs_dir,
                repeat=repeat,
                reads=self.reads,
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
        """The stored outcome when the cache has one, else `run()`'s; each with its digest."""
        started = time.perf_counter()
        found = self.digest(spec, settings, repeat)
        stored = self._lookup(spec, found, settings, repeat)
        if found is not None and stored is not None:
            return cached_result(spec, settings, stored, found, time.perf_counter() - started)
        result = run()
        if found is not None:
            result.digest, result.digest_parts = found.value, dict(found.parts)
        return result

    def _lookup(
        self, spec: Spec, found: InputDigest | None, settings: RunSettings, repeat: int | None
    ) -> ItemRecord | None:
        """The stored item that stands in for this run, or None: it runs. A single run's is
        the newest stored item of `spec` with this digest, when its outcome passed the
        session (passed, xpassed, or xfailed as its spec expects): when the newest such
        item failed, the item runs, so a pass further back does not hide a flaky one. A
        repeat's comes from its series' decision (`_series`)."""
        if found is None or not self.enabled or uncacheable(spec, settings):
            return None
        if repeat is not None:
            decided = self._series(spec, settings)
            return None if decided is None else decided.get(repeat)
        history = self._history(spec)
        same = next((item for item in history if found.matches(item.digest_parts)), None)
        return same if same is not None and same.outcome in OK_OUTCOMES else None

    def _history(self, spec: Spec) -> list[ItemRecord]:
        name, case, arm = identity(spec)
        try:
            if self._store is None:
                self._store = open_store(self.url, self.root)
            return self._store.item_history(name, case, arm, limit=LOOK_BACK)
        except (HistoryError, OSError) as error:
            self.problem = self.problem or f"--atom-cache: the store could not be read: {error}"
            return []

    def _series(self, spec: Spec, settings: RunSettings) -> dict[int, ItemRecord] | None:
        """Every repeat of `spec`'s series from one stored session, or None: all of them
        run. The newest session in which each repeat 1..N had its digest of now decides:
        it stands in when every repeat passed there. Decided once per series, so every
        repeat (on any worker) gets the same answer."""
        key = identity(spec)
        if key not in self._decided:
            self._decided[key] = None
            count = spec.repeats or 1
            now = {r: self.digest(spec, settings, r) for r in range(1, count + 1)}
            if all(d is not None for d in now.values()):
                sessions: dict[str, dict[int, ItemRecord]] = {}
                for item in self._history(spec):
                    if item.repeat is not None:
                        sessions.setdefault(item.run_id, {})[item.repeat] = item
                for items in sessions.values():  # newest session first
                    if all(
                        r in items and d is not None and d.matches(items[r].digest_parts)
                        for r, d in now.items()
                    ):
                        whole = all(items[r].outcome in OK_OUTCOMES for r in now)
                        self._decided[key] = {r: items[r] for r in now} if whole else None
                        break
        return self._decided[key]

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None


def uncacheable(spec: Spec, settings: RunSettings) -> str:
    """Why no stored outcome may stand in for `spec`'s run, or "": one stands in only for a
    replay of an existing cassette or a scripted run, of a spec without snapshots and no
    trigger suite's prompt, whose run reaches nothing untrusted the digest cannot see."""
    from pytest_atom.outcome_cache.inputs import TRUSTS
    from pytest_atom.replay.recording import cassette_path

    if settings.rejudge:
        return "--atom-rejudge judges it again"
    if settings.record_mode not in CACHEABLE_MODES:
        return f"--atom-record-mode={settings.record_mode} records it"
    if spec.snapshot:
        return "its snapshot: files are compared with what a run makes"
    if spec.trigger is not None:
        return "it is a trigger suite's trial: precision and recall count runs, not stored outcomes"
    if spec.script is None and not cassette_path(spec).is_file():
        return "it has no cassette: a run records it (or reports it missing)"
    blind = unseen(spec)
    if blind:
        trust = ", ".join(blind)
        return f"{TRUSTS[blind[0]]}, which the digest cannot see (`cache: {{trust: [{trust}]}}`)"
    return ""


def session_cache(
    settings: RunSettings, root: Path, config: AtomConfig | None, runs_dir: Path
) -> OutcomeCache | None:
    """The session's outcome cache (None: no history store); only digesting without --atom-cache."""
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
    """The result that reports `stored` for `spec`: no attempt, the stored item's figures."""
    from pytest_atom.reports.text import TEXT  # the format a result renders its report with

    folder = Path(stored.run_folder) if stored.run_folder else None
    return SpecResult(
        spec=spec,
        run_dir=folder if folder is not None and folder.is_dir() else Path(),
        attempts=[],
        duration=seconds,
        threshold=spec.reflector.threshold_or(settings.threshold),
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
        checks=stored.checks,
        criteria=stored.criteria,
    )
