"""`atom history import`: results files from elsewhere (CI shards, CI artifacts) as runs.

A session run with ``--atom-report DIR`` writes ``DIR/results.json`` (`suite.shards`):
every item's node id, outcome and figures, and its history run and items (``history``),
scrubbed. Importing such files records:

- by default, one run of them all: the shards of one CI run, joined as ``atom results
  combine`` joins them (a spec in two files is an error naming both). Its id is made from
  the shards' own run ids, so importing the same shards again changes nothing;
- with `each`, one run per file (artifacts of separate CI runs), each keeping its own id.

A file without ``history`` (a results file of an older pytest-atom, `last-run.json`)
brings what its rows say: outcomes, tokens and cost by role, wall time (no checks, criteria
or tool calls), dated by the file's modification time. An imported run's kind is
``import``; `settings` keeps the kind it had (``imported_from``) and its files.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pytest_atom import __version__
from pytest_atom.baseline.compare import read_results
from pytest_atom.errors import BaselineError, HistoryError
from pytest_atom.history.write import item_of_properties
from pytest_atom.history.records import (
    ItemRecord,
    RunRecord,
    item_from_dict,
    new_run_id,
    run_from_dict,
)
from pytest_atom.history.store import Store

__all__ = ["Imported", "ResultsFile", "import_files", "read_file"]

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
    """A results file (or a ``--atom-report`` folder holding one); HistoryError naming the
    file and what it should be."""
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
            replace(found, outcome=_word(label))
            if found is not None
            else item_of_properties(row.nodeid, label, row.properties)
        )
    return ResultsFile(file, run, items)


def _word(label: str) -> str:
    return "error" if label.endswith("error") else label


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
    """Record the results files at `paths` in `store` (see the module docstring)."""
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
