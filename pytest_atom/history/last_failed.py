"""``--atom-last-failed``: the items that failed in the store's last run, as `pytest --lf`.

The last run is the newest the store holds, of any kind. An item is selected by its line
(spec, case, arm), so every repeat of a line that failed runs again: a repeat is one
draw of a sample, and re-running only the draws that failed would make a pass rate of
nothing. With no failed item (or no run, or no store) nothing is deselected, and the note
says so, as pytest's ``run-last-failure: no previously failed tests, not deselecting
items.``
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_atom.errors import HistoryError
from pytest_atom.history.write import identity
from pytest_atom.history.records import RunRecord, SeriesKey
from pytest_atom.history.store import session_store

if TYPE_CHECKING:
    from pytest_atom.settings.options import RunSettings
    from pytest_atom.spec.types import Spec

__all__ = ["FAILED_OUTCOMES", "LastFailed", "last_failed"]

#: The outcomes `--atom-last-failed` runs again (pytest's --lf: failed, and errors).
FAILED_OUTCOMES = frozenset({"failed", "error"})


@dataclass(frozen=True)
class LastFailed:
    """The store's last run and the lines that failed in it (empty: select everything)."""

    run: RunRecord | None
    failed: frozenset[SeriesKey]
    problem: str = ""  # the store could not be read

    def selects(self, spec: Spec) -> bool:
        """Whether `spec` runs: it failed last time, or nothing did."""
        return not self.failed or identity(spec) in self.failed

    def note(self, selected: int, deselected: int) -> str:
        """The line the front end prints, as pytest's run-last-failure line."""
        if self.problem:
            return f"atom-last-failed: {self.problem}; not deselecting items"
        if self.run is None:
            return "atom-last-failed: the history store holds no run; not deselecting items"
        if not self.failed:
            return f"atom-last-failed: no failed items in run {self.run.id}; not deselecting items"
        lines = len(self.failed)
        return (
            f"atom-last-failed: rerun {lines} failed item{'s' * (lines != 1)} of run "
            f"{self.run.id} ({selected} to run, {deselected} deselected)"
        )


def last_failed(settings: RunSettings, root: Path) -> LastFailed:
    """The failed lines of the last run in the session's store (`settings.history`)."""
    try:
        store = session_store(settings, root)
        try:
            runs = store.runs(limit=1)
            items = store.items(runs[0].id) if runs else []
        finally:
            store.close()
    except HistoryError as exc:
        return LastFailed(None, frozenset(), f"the history store cannot be read: {exc}")
    if not runs:
        return LastFailed(None, frozenset())
    return LastFailed(runs[0], frozenset(i.series for i in items if i.outcome in FAILED_OUTCOMES))
