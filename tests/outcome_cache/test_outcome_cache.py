"""The outcome cache (pytest_atom.outcome_cache.cache) over a real store, SQLite and PostgreSQL:
a stored passing item with the same digest stands in for a run, any changed part runs it;
a cached result in every report. The run it stands around is a callable that notes it was
called: the real CLI's side is tests/history/test_cache_cli.py."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path

import pytest

from pytest_atom.history.records import ItemRecord
from pytest_atom.history.store import open_store
from pytest_atom.history.write import item_record
from pytest_atom.outcome_cache.cache import OutcomeCache, session_cache
from pytest_atom.outcome_cache.input_digest import InputDigest
from pytest_atom.outcome_cache.why import why_items
from pytest_atom.reports.html import render_html, report_row, spec_view
from pytest_atom.reports.properties import result_properties
from pytest_atom.reports.summary import cached_lines, summary_table
from pytest_atom.reports.text import TEXT
from pytest_atom.reports.trace import build_trace
from pytest_atom.results.rows import SummaryRow
from pytest_atom.results.spec_result import SpecResult
from pytest_atom.settings.options import RunSettings
from pytest_atom.spec.types import Spec
from tests.cache_helpers import CHANGES, CacheProject, isolated_project
from tests.helpers import VALIDATOR
from tests.history_helpers import item, run


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> CacheProject:
    return isolated_project(tmp_path, monkeypatch)


class Runs:
    """The run the cache stands around: how often it was called."""

    def __init__(self, spec: Spec, folder: Path) -> None:
        self.spec, self.folder, self.calls = spec, folder, 0

    def __call__(self) -> SpecResult:
        self.calls += 1
        return SpecResult(self.spec, self.folder, [], 1.0, 0.8, harness_error="stand-in run")


CacheFor = Callable[..., OutcomeCache]


@pytest.fixture
def cache_for(project: CacheProject) -> Iterator[CacheFor]:
    """Outcome caches of the project over a store; each closed at teardown."""
    made: list[OutcomeCache] = []

    def make(url: str, *, enabled: bool = True) -> OutcomeCache:
        runs = project.root / ".atom" / "runs"
        made.append(OutcomeCache(url, project.root, project.config(), runs, enabled=enabled))
        return made[-1]

    yield make
    for cache in made:
        cache.close()


def _store_item(url: str, stored: ItemRecord, n: int = 0) -> str:
    store = open_store(url)
    try:
        return store.add_run(run(n), [stored])
    finally:
        store.close()


def _stored(
    project: CacheProject, outcome: str = "passed", settings: RunSettings | None = None
) -> ItemRecord:
    found = project.digest(settings)
    return replace(
        item("greet", outcome),
        spec_path=str(project.spec_file),
        digest=found.value,
        digest_parts=dict(found.parts),
        why="score 0.90 > 0.80",
        score=0.9,
        tool_calls=("Bash",),
    )


def _around(
    project: CacheProject, cache: OutcomeCache, settings: RunSettings | None = None
) -> tuple[SpecResult, Runs]:
    spec = project.spec()
    runs = Runs(spec, project.root)
    return cache.around(spec, settings or RunSettings(), None, runs), runs


def test_a_stored_pass_with_the_same_inputs_stands_in_for_the_run(
    cache_for: CacheFor, project: CacheProject, store_url: str
) -> None:
    run_id = _store_item(store_url, _stored(project))
    result, runs = _around(project, cache_for(store_url))
    assert runs.calls == 0
    assert result.cached_from is not None and result.cached_from.run_id == run_id
    assert result.outcome.label == "passed" and result.passed
    assert result.outcome.why.startswith(f"cached: passed in run {run_id}")
    assert result.source == "cached" and result.attempts == []
    assert result.digest == project.digest().value


@pytest.mark.parametrize("part", list(CHANGES))
def test_any_changed_input_runs_the_item_again(
    cache_for: CacheFor,
    part: str,
    project: CacheProject,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    url = str(tmp_path / "history.db")
    _store_item(url, _stored(project))
    cache = cache_for(url)
    _, unchanged = _around(project, cache)
    assert unchanged.calls == 0  # unchanged: cached
    settings = CHANGES[part](project, monkeypatch)
    result, changed = _around(project, cache_for(url), settings)  # the next session
    assert changed.calls == 1
    assert result.cached_from is None
    assert result.digest == project.digest(settings).value  # the new inputs, recorded


def test_a_run_carries_its_digest_into_the_record_when_the_cache_is_off(
    cache_for: CacheFor, project: CacheProject, tmp_path: Path
) -> None:
    url = str(tmp_path / "history.db")
    _store_item(url, _stored(project))
    result, runs = _around(project, cache_for(url, enabled=False))
    assert runs.calls == 1
    record = item_record(result, None)
    assert record.digest == project.digest().value and not record.cached
    assert set(record.digest_parts) == set(project.digest().parts)


def test_the_newest_item_with_the_digest_decides_a_failure_after_a_pass_runs(
    cache_for: CacheFor, project: CacheProject, tmp_path: Path
) -> None:
    url = str(tmp_path / "history.db")
    _store_item(url, _stored(project), 0)
    _store_item(url, _stored(project, "failed"), 1)
    _, runs = _around(project, cache_for(url))
    assert runs.calls == 1


def test_an_expected_failure_is_cached_as_one(
    cache_for: CacheFor, project: CacheProject, tmp_path: Path
) -> None:
    url = str(tmp_path / "history.db")
    _store_item(url, _stored(project, "xfailed"))
    spec = replace(project.spec(), xfail="the agent cannot do it yet")
    result = cache_for(url).around(spec, RunSettings(), None, Runs(spec, tmp_path))
    assert result.outcome.label == "xfailed"
    assert result.decision == "fail"


@pytest.mark.parametrize(
    "settings",
    [RunSettings(record_mode="all"), RunSettings(record_mode="refresh"), RunSettings(rejudge=True)],
    ids=["record-all", "refresh", "rejudge"],
)
def test_a_recording_always_runs(
    cache_for: CacheFor, settings: RunSettings, project: CacheProject, tmp_path: Path
) -> None:
    url = str(tmp_path / "history.db")
    _store_item(url, _stored(project, settings=settings))
    _, runs = _around(project, cache_for(url), settings)
    assert runs.calls == 1


def test_a_spec_with_snapshots_always_runs(
    cache_for: CacheFor, project: CacheProject, tmp_path: Path
) -> None:
    url = str(tmp_path / "history.db")
    spec = replace(project.spec(), snapshot=("hello.txt",))
    found = project.digest(spec=spec)
    _store_item(url, replace(_stored(project), digest=found.value))
    runs = Runs(spec, tmp_path)
    cache_for(url).around(spec, RunSettings(), None, runs)
    assert runs.calls == 1


def test_with_the_store_off_nothing_is_digested(project: CacheProject) -> None:
    off = RunSettings(history="none", cache=True)
    assert session_cache(off, project.root, project.config(), project.root / "runs") is None


def test_a_store_that_cannot_be_read_runs_the_item_and_says_so(
    cache_for: CacheFor, project: CacheProject, tmp_path: Path
) -> None:
    url = str(tmp_path / "not-a-folder" / "history.db")
    (tmp_path / "not-a-folder").write_text("a file where the store's folder would be")
    cache = cache_for(url)
    _, runs = _around(project, cache)
    assert runs.calls == 1
    assert cache.problem.startswith("--atom-cache: the store could not be read")


def _cached(cache_for: CacheFor, project: CacheProject, tmp_path: Path) -> tuple[SpecResult, str]:
    url = str(tmp_path / "history.db")
    run_id = _store_item(url, _stored(project))
    result, _ = _around(project, cache_for(url))
    return result, run_id


def test_every_report_marks_a_cached_result(
    cache_for: CacheFor, project: CacheProject, tmp_path: Path
) -> None:
    result, run_id = _cached(cache_for, project, tmp_path)
    props = result_properties(result)
    assert props["atom_cached"] == run_id and props["atom_source"] == "cached"
    assert props["atom_outcome"] == "passed" and props["atom_attempts"] == 0
    row = SummaryRow.of("specs/greet.atom.yaml::greet", props)
    assert row.cached == run_id
    assert "passed (cached)" in summary_table([row])[1]
    assert cached_lines([row])[0].startswith("cached: 1 of 1 spec run reported from the history")
    trace = build_trace(result)
    VALIDATOR.validate(trace)
    assert trace["atom"]["cached"]["run_id"] == run_id
    assert trace["atom"]["cached"]["tool_calls"] == ["Bash"]
    assert f"cached: passed in run {run_id}" in TEXT.render(result)
    page = render_html([report_row(row.nodeid, "passed", spec_view(result))])
    assert f"passed in run {run_id} with the same inputs" in page
    assert 'class="badge cached"' in page


def test_a_cached_items_record_keeps_the_stored_account_of_the_work(
    cache_for: CacheFor, project: CacheProject, tmp_path: Path
) -> None:
    result, _ = _cached(cache_for, project, tmp_path)
    record = item_record(result, None)
    assert record.kind == "cached" and record.outcome == "passed"
    assert record.tool_calls == ("Bash",) and record.why == "score 0.90 > 0.80"
    assert [c.name for c in record.checks] == ["file_exists out.txt"]
    assert record.tokens == {} and record.digest == result.digest


def test_why_names_the_changed_parts_and_what_the_cache_will_do(
    project: CacheProject, tmp_path: Path
) -> None:
    url = str(tmp_path / "history.db")
    run_id = _store_item(url, _stored(project))
    store = open_store(url)

    def digest_of(spec: Spec, repeat: int | None, code: Sequence[str] | None) -> InputDigest:
        return project.digest(spec=spec, repeat=repeat)

    [same] = why_items(store, [project.spec()], digest_of)
    assert same.cached_now and same.changed == ()
    assert (
        same.line()
        == f"greet: nothing changed since run {run_id} (passed): --atom-cache reports it from the store"
    )
    (project.workspace / "notes.txt").write_text("changed\n")
    project.script.write_text(project.script.read_text() + "\n# edited\n")
    [changed] = why_items(store, [project.spec()], digest_of)
    assert changed.changed == ("workspace", "script") and not changed.cached_now
    assert changed.line().startswith(f"greet: changed since run {run_id} (passed): workspace (")
    store.close()


def test_why_says_unknown_for_an_item_stored_without_a_digest(
    project: CacheProject, tmp_path: Path
) -> None:
    url = str(tmp_path / "history.db")
    _store_item(url, replace(item("greet"), spec_path=str(project.spec_file)))
    store = open_store(url)
    [unknown] = why_items(store, [project.spec()], lambda s, r, c: project.digest(spec=s))
    assert not unknown.cached_now
    assert "stored without an input digest: unknown, it runs" in unknown.line()
    store.close()
