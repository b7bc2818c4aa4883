"""How runs enter the store: a session's results as records, and results files imported.

`item_record` maps a typed `SpecResult` to an `ItemRecord` (the only place that does).
`write_run` is the one write of a session: a store that cannot be written gives back a
warning line naming the store and the fix, never an exception, so a run's own results and
exit status stand.

`import_files` (`atom history import`) records ``--atom-report DIR`` runs' ``results.json``
files from elsewhere (CI shards, artifacts). By default the files are one run, the shards
of one CI run (a spec in two files is an error naming both), whose id is made from the
shards' own run ids, so importing the same shards again changes nothing; with `each`, one
run per file, each keeping its own id. A file without ``history`` (`last-run.json`) brings
what its rows say, dated by the file's modification time. An imported run's kind is
``import``; `settings` keeps the kind it had (``imported_from``) and its files.

Secrets: a check's detail and a criterion's reasons go through the scrubber; records hold no
transcript, only the executor's tool names.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_atom import __version__
from pytest_atom.baseline.compare import read_results
from pytest_atom.diffs import project_git
from pytest_atom.errors import BaselineError, HistoryError
from pytest_atom.history.records import (
    ItemRecord,
    RunRecord,
    item_from_dict,
    new_run_id,
    run_from_dict,
)
from pytest_atom.history.store import Store, open_store
from pytest_atom.history.urls import display_url, store_url
from pytest_atom.results.spec_result import CheckRow, CriterionRow, SpecResult
from pytest_atom.settings.options import OPTIONS

if TYPE_CHECKING:
    from pytest_atom.replay.scrub import Scrubber
    from pytest_atom.settings.options import RunSettings
    from pytest_atom.spec.types import Spec

#: Settings that never change an outcome: where files go, how many stay, where the store is.
_HOUSEKEEPING = frozenset({"keep_runs", "history", "upstream"})
_HOUSEKEEPING_KINDS = frozenset({"path", "paths", "size"})
_REPEAT = re.compile(r"\[r(\d+)\]$")


def outcome_word(label: str) -> str:
    """An outcome label as the store keeps it (``upstream error`` is an ``error``)."""
    return "error" if label.endswith("error") else label


def identity(spec: Spec) -> tuple[str, str | None, str | None]:
    """(spec base name, case, arm): `Spec.name` is ``base[case][arm]``."""
    return _base(spec.name, spec.case, spec.arm), spec.case, spec.arm


def _base(name: str, case: str | None, arm: str | None) -> str:
    for part in (arm, case):
        if part is not None:
            name = name.removesuffix(f"[{part}]")
    return name


def _scrubbed(scrubber: Scrubber | None, text: str) -> str:
    return text if scrubber is None or not text else scrubber.scrub(text)


def item_record(
    result: SpecResult,
    repeat: int | None,
    *,
    outcome: str | None = None,
    scrubber: Scrubber | None = None,
    run_id: str = "",
) -> ItemRecord:
    """The item `result` ran; `outcome` as pytest finally reported it, when that differs
    from the result's own (a snapshot mismatch fails a passed run)."""
    spec, case, arm = identity(result.spec)
    verdict = result.verdict
    criteria = tuple(
        CriterionRow(
            c.criterion,
            sum(c.votes) / len(c.votes) if c.votes else float(c.met),
            c.met,
            _scrubbed(scrubber, c.evidence),
        )
        for c in (verdict.criteria if verdict is not None else ())
    )
    checks = tuple(
        CheckRow(c.check.describe(), c.passed, _scrubbed(scrubber, c.summary))
        for c in result.checks
    )
    roles = {
        role: used for role, used in result.usage_by_role().items() if used.tokens or used.cost_usd
    }
    executor = [r for a in result.all_attempts for r in a.records]
    cached = result.cached_from
    if cached is not None:  # the stored item's account of the agent's work stands
        checks, criteria = cached.checks, cached.criteria
    return ItemRecord(
        run_id=run_id,
        spec=spec,
        spec_path=str(result.spec.path),
        case=case,
        arm=arm,
        repeat=repeat,
        outcome=outcome_word(outcome or result.outcome.label),
        checks=checks,
        criteria=criteria,
        tokens={role: used.tokens for role, used in roles.items()},
        cost_usd={role: round(used.cost_usd, 6) for role, used in roles.items()},
        spent_usd=round(result.dollars().spent, 6),
        wall_seconds=round(result.duration, 3),
        tool_calls=cached.tool_calls
        if cached is not None
        else tuple(call.name for r in executor for call in r.tool_calls),
        kind="cached" if cached is not None else "trial",
        digest=result.digest,
        digest_parts=dict(result.digest_parts),
        run_folder=None if cached is not None else str(result.run_dir),
        why=cached.why if cached is not None else _scrubbed(scrubber, result.outcome.why),
        score=result.score,
        user_turns=result.user_turns if result.user_done else None,
    )


def item_of_spec(spec: Spec, repeat: int | None, outcome: str, why: str = "") -> ItemRecord:
    """An item with no result: not run (``error``) or not started (``skipped``, at the limit)."""
    name, case, arm = identity(spec)
    return ItemRecord(
        run_id="",
        spec=name,
        spec_path=str(spec.path),
        case=case,
        arm=arm,
        repeat=repeat,
        outcome=outcome_word(outcome),
        spent_usd=0.0,
        why=why,
    )


def claude_version_of(result: SpecResult) -> str | None:
    """The Claude Code version the result's sessions reported, if any did."""
    return next((r.cli_version for r in result.records if r.cli_version), None)


def _split_nodeid(nodeid: str) -> tuple[str, str, int | None]:
    """(spec file, spec name, repeat) of ``specs/x.atom.yaml::name[arm][r2]``."""
    path, _, name = nodeid.partition("::")
    repeat = _REPEAT.search(name)
    if repeat:
        name = name[: repeat.start()]
    return path, name, int(repeat[1]) if repeat else None


def item_of_properties(
    nodeid: str,
    outcome: str,
    props: Mapping[str, Any],
    *,
    case: str | None = None,
    arm: str | None = None,
) -> ItemRecord:
    """An item from a report's figures (`reports.properties`), without checks or tool calls."""
    path, name, repeat = _split_nodeid(nodeid)
    arm = arm if arm is not None else (str(props["atom_arm"]) if props.get("atom_arm") else None)
    tokens: dict[str, int] = {}
    cost: dict[str, float] = {}
    for key, value in props.items():
        role = re.fullmatch(r"atom_([a-z]+)_(tokens|cost_usd)", key)
        if role and role[1] not in ("agent", "billed", "cli", "recorded") and value:
            if role[2] == "tokens":
                tokens[role[1]] = int(value)
            else:
                cost[role[1]] = float(value)
    score = props.get("atom_score")
    spent = props.get("atom_cost_usd")
    return ItemRecord(
        run_id="",
        spec=_base(name, case, arm),
        spec_path=path,
        case=case,
        arm=arm,
        repeat=repeat,
        outcome=outcome_word(outcome),
        kind="cached" if props.get("atom_cached") else "trial",
        tokens=tokens,
        cost_usd=cost,
        spent_usd=float(spent) if isinstance(spent, (int, float)) else None,
        wall_seconds=float(props.get("atom_duration_s") or 0.0),
        why=str(props.get("atom_why") or ""),
        score=float(score) if isinstance(score, (int, float)) else None,
    )


def git_state(root: Path) -> tuple[str | None, bool]:
    """The project's commit and whether its tree differs from it (None, False: no git)."""
    commit = project_git(root, "rev-parse", "HEAD")
    if commit is None:
        return None, False
    return commit, bool(project_git(root, "status", "--porcelain", "--untracked-files=no"))


def _jsonable(value: Any) -> Any:
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, (tuple, list, frozenset, set)):
        return [_jsonable(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    return value


def settings_snapshot(settings: RunSettings) -> dict[str, Any]:
    """The settings that can change an outcome (not where files go or how many stay)."""
    return {
        o.name: _jsonable(getattr(settings, o.name))
        for o in OPTIONS
        if o.kind not in _HOUSEKEEPING_KINDS and o.name not in _HOUSEKEEPING
    }


def run_record(
    kind: str,
    settings: RunSettings,
    root: Path,
    claude_version: str | None,
    *,
    started: datetime | None = None,
    rescore_of: str | None = None,
) -> RunRecord:
    """The session's record: `started` (default: now), the project's git state."""
    when = (started or datetime.now(UTC)).astimezone(UTC)
    commit, dirty = git_state(root)
    return RunRecord(
        id=new_run_id(when),
        started=when,
        kind=kind,
        rescore_of=rescore_of,
        commit=commit,
        dirty=dirty,
        atom_version=__version__,
        claude_version=claude_version,
        settings=settings_snapshot(settings),
    )


def first_version(versions: Iterable[str | None]) -> str | None:
    """The first known version among `versions`."""
    return next((v for v in versions if v), None)


def write_run(where: str, root: Path, run: RunRecord, items: Sequence[ItemRecord]) -> str | None:
    """Record `run` in the store `where` names; None when written, else the warning line to show."""
    url = store_url(where, root)  # `none` opens a store that records nothing
    try:
        store = open_store(url, root)
        try:
            store.add_run(run, items)
        finally:
            store.close()
    except HistoryError as error:
        return f"history: run {run.id} was not recorded: {error}"
    except OSError as error:  # a folder that cannot be made, a full disk
        return (
            f"history: run {run.id} was not recorded in {display_url(url)}: {error} "
            "(make it writable, or pass --atom-history to another store or none)"
        )
    return None


_RESULTS = "results.json"


@dataclass(frozen=True)
class ResultsFile:
    """One results file's run (as recorded, or made from the file) and items by node id."""

    path: Path
    run: RunRecord
    items: Mapping[str, ItemRecord]


@dataclass(frozen=True)
class Imported:
    """What an import did: the runs recorded, and those the store already held."""

    recorded: list[tuple[RunRecord, int]]
    already: list[str]


def read_file(path: Path) -> ResultsFile:
    """A results file (or a ``--atom-report`` folder holding one); HistoryError says why not."""
    file = path / _RESULTS if path.is_dir() else path
    try:
        rows = read_results(file)
        data = json.loads(file.read_text(encoding="utf-8"))
    except BaselineError as error:
        raise HistoryError(f"cannot import {file}: {error}") from None
    history = data.get("history") if isinstance(data, dict) else None
    try:
        if isinstance(history, dict):
            run = run_from_dict(history["run"])
            stored = {str(k): item_from_dict(v) for k, v in history["items"].items()}
        else:
            when = datetime.fromtimestamp(file.stat().st_mtime, UTC)
            run = RunRecord(new_run_id(when), when, "pytest", None, None, False, __version__, None)
            stored = {}
    except (KeyError, TypeError, ValueError) as error:
        raise HistoryError(
            f"cannot import {file}: its history part is malformed ({error!r}); write it "
            "anew with `pytest --atom --atom-report DIR`"
        ) from None
    items = {}
    for row in rows:
        label = row.outcome.label
        found = stored.get(row.nodeid)
        # The row's outcome is the session's last word (pytest may fail a passed spec).
        items[row.nodeid] = (
            replace(found, outcome=outcome_word(label))
            if found is not None
            else item_of_properties(row.nodeid, label, row.properties)
        )
    return ResultsFile(file, run, items)


def _as_import(run: RunRecord, files: Sequence[Path], run_id: str | None = None) -> RunRecord:
    settings: dict[str, Any] = {
        **dict(run.settings),
        "imported_from": run.kind,
        "files": [str(f) for f in files],
    }
    return replace(run, id=run_id or run.id, kind="import", settings=settings)


def _joined(files: Sequence[ResultsFile]) -> tuple[RunRecord, list[ItemRecord]]:
    """The files as one run: the shards of one CI run."""
    seen: dict[str, Path] = {}
    for each in files:
        for nodeid in each.items:
            if nodeid in seen:
                raise HistoryError(
                    f"{nodeid} is in {seen[nodeid]} and in {each.path}: shards of one run hold "
                    "each spec once; import separate runs with --each"
                )
            seen[nodeid] = each.path
    first = min(files, key=lambda f: f.run.started)
    digest = hashlib.sha256("\n".join(sorted(f.run.id for f in files)).encode()).hexdigest()
    run_id = f"{first.run.started.astimezone(UTC):%Y%m%dT%H%M%S}-{digest[:8]}"
    run = _as_import(first.run, [f.path for f in files], run_id if len(files) > 1 else None)
    run = replace(run, dirty=any(f.run.dirty for f in files))
    items = [item for f in files for item in f.items.values()]
    return run, items


def _holds(store: Store, run_id: str) -> bool:
    try:
        return store.run(run_id).id == run_id
    except HistoryError:
        return False


def import_files(store: Store, paths: Sequence[Path], *, each: bool = False) -> Imported:
    """Record the results files at `paths` in `store`."""
    files = [read_file(path) for path in paths]
    if each:
        batches = [(_as_import(f.run, [f.path]), list(f.items.values())) for f in files]
    else:
        batches = [_joined(files)]
    recorded, already = [], []
    for run, items in batches:
        if _holds(store, run.id):
            already.append(run.id)
            continue
        store.add_run(run, items)
        recorded.append((run, len(items)))
    return Imported(recorded, already)
