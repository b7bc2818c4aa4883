"""Stores with runs in them, for `atom diff`, `--atom-last-failed`, the report's history.

Records are made here by hand, as the suite would record them, and written into a real
SQLite store (`open_store`), so the commands read them through the store's own queries.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from pytest_atom.history.records import ItemRecord, RunRecord, new_run_id
from pytest_atom.history.store import open_store
from pytest_atom.results.spec_result import CheckRow, CriterionRow

__all__ = ["add_run", "make_item", "make_run"]

T0 = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)


def make_run(minutes: int = 0, kind: str = "pytest", rescore_of: str | None = None) -> RunRecord:
    """A run that started `minutes` after a fixed time."""
    started = T0 + timedelta(minutes=minutes)
    return RunRecord(
        id=new_run_id(started),
        started=started,
        kind=kind,
        rescore_of=rescore_of,
        commit="abc123",
        dirty=False,
        atom_version="0.0.0",
        claude_version="2.1.332",
        settings={},
    )


def make_item(
    spec: str,
    outcome: str = "passed",
    *,
    repeat: int | None = None,
    case: str | None = None,
    arm: str | None = None,
    checks: Sequence[tuple[str, bool]] = (),
    criteria: Sequence[tuple[str, float]] = (),
    tools: Sequence[str] = (),
    tokens: int = 1000,
    cost: float = 0.01,
    run_id: str = "",
    spec_path: str | None = None,
    **extra: Any,
) -> ItemRecord:
    """An item of `spec` (criteria: (text, score), met above 0.5)."""
    return ItemRecord(
        run_id=run_id,
        spec=spec,
        spec_path=spec_path or f"specs/{spec}.atom.yaml",
        case=case,
        arm=arm,
        repeat=repeat,
        outcome=outcome,
        checks=tuple(CheckRow(n, p, "ok" if p else f"{n} failed") for n, p in checks),
        criteria=tuple(
            CriterionRow(t, s, s > 0.5, "fine" if s > 0.5 else "not met") for t, s in criteria
        ),
        tokens={"executor": tokens, "reflector": 100},
        cost_usd={"executor": cost},
        wall_seconds=1.5,
        tool_calls=tuple(tools),
        **extra,
    )


def add_run(store_path: Path, run: RunRecord, items: Sequence[ItemRecord]) -> str:
    """Record `run` with `items` in the SQLite store at `store_path`."""
    store = open_store(store_path)
    try:
        return store.add_run(run, items)
    finally:
        store.close()
