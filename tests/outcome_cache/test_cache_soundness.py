"""The outcome cache never reports a stale pass (pytest_atom.outcome_cache.cache): a recording is
never cached, repeats are served whole or not at all, what the digest cannot see keeps an
item out unless its spec trusts it, and `atom history why` names each changed module or
file. A real store (SQLite); the run the cache stands around notes that it was called."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path

import pytest

from pytest_atom.history.records import ItemRecord
from pytest_atom.history.store import open_store
from pytest_atom.outcome_cache.cache import OutcomeCache, uncacheable
from pytest_atom.outcome_cache.input_digest import InputDigest
from pytest_atom.outcome_cache.why import why_items
from pytest_atom.results.spec_result import SpecResult
from pytest_atom.settings.options import RunSettings
from pytest_atom.spec.types import Spec
from tests.cache_helpers import CacheProject, isolated_project
from tests.history_helpers import item, run


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> CacheProject:
    return isolated_project(tmp_path, monkeypatch)


@pytest.fixture
def url(tmp_path: Path) -> str:
    return str(tmp_path / "history.db")


@pytest.fixture
def caches(project: CacheProject, url: str) -> Iterator[list[OutcomeCache]]:
    made: list[OutcomeCache] = []
    yield made
    for cache in made:
        cache.close()


def _session(project: CacheProject, url: str, caches: list[OutcomeCache]) -> OutcomeCache:
    """A new session's outcome cache, with --atom-cache."""
    runs = project.root / ".atom" / "runs"
    caches.append(OutcomeCache(url, project.root, project.config(), runs, enabled=True))
    return caches[-1]


def _store(url: str, items: Sequence[ItemRecord], n: int = 0) -> str:
    store = open_store(url)
    try:
        return store.add_run(run(n), list(items))
    finally:
        store.close()


def _stored(
    project: CacheProject,
    outcome: str = "passed",
    *,
    spec: Spec | None = None,
    settings: RunSettings | None = None,
    repeat: int | None = None,
) -> ItemRecord:
    found = project.digest(settings, spec=spec, repeat=repeat)
    return replace(
        item("greet", outcome, repeat=repeat),
        spec_path=str(project.spec_file),
        digest=found.value,
        digest_parts=dict(found.parts),
    )


class Runs:
    """The run the cache stands around: how often it was called."""

    def __init__(self, spec: Spec, folder: Path) -> None:
        self.spec, self.folder, self.calls = spec, folder, 0

    def __call__(self) -> SpecResult:
        self.calls += 1
        return SpecResult(self.spec, self.folder, [], 1.0, 0.8, harness_error="stand-in run")


def _serve(
    cache: OutcomeCache,
    spec: Spec,
    settings: RunSettings | None = None,
    repeat: int | None = None,
) -> bool:
    """Whether the cache served this item (its run was not called)."""
    runs = Runs(spec, Path())
    cache.around(spec, settings or RunSettings(), repeat, runs)
    return runs.calls == 0


def _unscripted(project: CacheProject) -> Spec:
    return replace(project.spec(), script=None)


def test_a_live_recording_of_a_missing_cassette_is_never_served(
    project: CacheProject, url: str, caches: list[OutcomeCache]
) -> None:
    """`--atom-record-mode=once` records when no cassette exists: that pass is no replay's,
    and with the cassette lost, the same inputs would otherwise serve it again."""
    once = RunSettings(record_mode="once")
    project.cassette.unlink()
    spec = _unscripted(project)
    _store(url, [_stored(project, spec=spec, settings=once)])
    assert not _serve(_session(project, url, caches), spec, once)
    assert uncacheable(spec, once) == "it has no cassette: a run records it (or reports it missing)"


def test_a_replay_of_an_existing_cassette_is_served(
    project: CacheProject, url: str, caches: list[OutcomeCache]
) -> None:
    once = RunSettings(record_mode="once")
    spec = _unscripted(project)
    _store(url, [_stored(project, spec=spec, settings=once)])
    assert _serve(_session(project, url, caches), spec, once)


def _repeats(project: CacheProject, count: int) -> Spec:
    return replace(project.spec(), repeats=count)


def test_repeats_are_never_gathered_across_sessions(
    project: CacheProject, url: str, caches: list[OutcomeCache]
) -> None:
    """A session passed repeats 1 and 3 of 4: served one by one, the passes would stay and
    the failures run again each session, until `pass_at_least` is met by accident."""
    spec = _repeats(project, 4)
    outcomes = ["passed", "failed", "passed", "failed"]
    _store(url, [_stored(project, o, spec=spec, repeat=r) for r, o in enumerate(outcomes, 1)])
    cache = _session(project, url, caches)
    assert [_serve(cache, spec, repeat=r) for r in range(1, 5)] == [False] * 4


def test_repeats_that_all_passed_in_one_session_are_served_whole(
    project: CacheProject, url: str, caches: list[OutcomeCache]
) -> None:
    spec = _repeats(project, 3)
    _store(url, [_stored(project, spec=spec, repeat=r) for r in (1, 2, 3)])
    cache = _session(project, url, caches)
    assert [_serve(cache, spec, repeat=r) for r in (1, 2, 3)] == [True] * 3


def test_repeats_from_two_sessions_are_not_one_whole(
    project: CacheProject, url: str, caches: list[OutcomeCache]
) -> None:
    """Repeats 1-2 passed in one session, 3 in a later one: no one session holds all three
    with today's inputs, so all run."""
    spec = _repeats(project, 3)
    _store(url, [_stored(project, spec=spec, repeat=r) for r in (1, 2)], 0)
    _store(url, [_stored(project, spec=spec, repeat=3)], 1)
    cache = _session(project, url, caches)
    assert [_serve(cache, spec, repeat=r) for r in (1, 2, 3)] == [False] * 3


def test_the_newest_whole_session_decides_a_failure_there_runs_all(
    project: CacheProject, url: str, caches: list[OutcomeCache]
) -> None:
    spec = _repeats(project, 2)
    _store(url, [_stored(project, spec=spec, repeat=r) for r in (1, 2)], 0)
    _store(
        url,
        [_stored(project, o, spec=spec, repeat=r) for r, o in ((1, "passed"), (2, "failed"))],
        1,
    )
    cache = _session(project, url, caches)
    assert [_serve(cache, spec, repeat=r) for r in (1, 2)] == [False, False]


def test_a_networked_spec_is_served_only_when_it_trusts_the_network(
    project: CacheProject, url: str, caches: list[OutcomeCache]
) -> None:
    base = project.spec()
    assert base.sandbox is not None
    networked = replace(base, sandbox=replace(base.sandbox, network=("pypi.org",)))
    trusted = replace(networked, cache_trust=("network",))
    _store(url, [_stored(project, spec=networked)], 0)
    assert not _serve(_session(project, url, caches), networked)
    assert "sandbox: network:" in uncacheable(networked, RunSettings())
    _store(url, [_stored(project, spec=trusted)], 1)
    assert _serve(_session(project, url, caches), trusted)


def test_an_unsandboxed_check_keeps_the_item_out_of_the_cache(project: CacheProject) -> None:
    text = project.spec_file.read_text().replace(
        '  - command: "python3 -c pass"',
        "  - command: {run: 'python3 -c pass', unsandboxed: true, reason: a database on the host}",
    )
    project.spec_file.write_text(text)
    assert "outside the sandbox" in uncacheable(project.spec(), RunSettings())


def test_why_names_the_module_that_changed(
    project: CacheProject, url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`atom history why` runs in another process than pytest's: it hashes the code the
    stored item named, where it is now."""
    (project.root / "wordrules").mkdir()
    (project.root / "wordrules" / "__init__.py").write_text("WORDS = 1\n")
    monkeypatch.syspath_prepend(str(project.root))
    monkeypatch.setitem(sys.modules, "wordrules", None)
    del sys.modules["wordrules"]
    importlib.import_module("wordrules")
    _store(url, [_stored(project)])
    monkeypatch.delitem(sys.modules, "wordrules")  # this process no longer has it loaded
    (project.root / "wordrules" / "__init__.py").write_text("WORDS = 12\n")

    def digest_of(spec: Spec, repeat: int | None, code: Sequence[str] | None) -> InputDigest:
        from pytest_atom.outcome_cache.input_digest import input_digest

        return input_digest(
            spec,
            RunSettings(),
            config=project.config(),
            runs_dir=project.root / ".atom" / "runs",
            repeat=repeat,
            code_at=code,
        )

    store = open_store(url)
    try:
        [why] = why_items(store, [project.spec()], digest_of)
    finally:
        store.close()
    assert why.changed == ("code wordrules",) and not why.cached_now
    assert "code wordrules (code loaded in pytest's process, or the SDK app's)" in why.line()


def test_why_says_a_recording_always_runs(project: CacheProject, url: str) -> None:
    _store(url, [_stored(project)])
    store = open_store(url)
    try:
        [why] = why_items(
            store,
            [project.spec()],
            lambda s, r, c: project.digest(spec=s),
            blocked=lambda s: uncacheable(s, RunSettings(record_mode="all")),
        )
    finally:
        store.close()
    assert not why.cached_now
    assert why.line() == "greet: --atom-cache always runs it: --atom-record-mode=all records it"
