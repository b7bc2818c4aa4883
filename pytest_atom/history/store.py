"""The history store: one protocol, one module per backend, opened from a URL.

`open_store` reads what `--atom-history` (ini ``atom_history``, ``history:`` in
`.atom/config.yaml`) says: a path or ``sqlite:///path`` is an embedded SQLite file
(`history.sqlite`), ``postgresql://…`` a team's PostgreSQL database (`history.postgres`),
``none`` no store at all (`NoStore`). Each backend is named under its URL scheme in the
``pytest_atom.stores`` entry-point group; `open_store` loads only the one a URL asks for.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from pytest_atom.errors import HistoryError
from pytest_atom.extensions import declared, load_one
from pytest_atom.history.urls import OFF, display_url, store_url

if TYPE_CHECKING:
    from pytest_atom.history.records import ItemFigures, ItemRecord, RunRecord, SeriesKey
    from pytest_atom.settings.options import RunSettings

__all__ = ["STORES", "NoStore", "Store", "StoreBackend", "open_store", "session_store"]

#: The store-backend entry-point group: each entry point names a `StoreBackend` class
#: under the URL scheme it opens (a path without a scheme is ``sqlite``'s).
STORES = "pytest_atom.stores"


@runtime_checkable
class Store(Protocol):
    """A history store: runs and their items, written in one transaction per run. Every listing
    is newest first (by start time, then id); a run id may be given whole or as a unique prefix."""

    #: Where the store is, fit to print (a PostgreSQL URL's password left out).
    url: str

    def add_run(self, run: RunRecord, items: Sequence[ItemRecord]) -> str:
        """Record `run` and its `items` at once (all or nothing); return the run's id."""
        ...

    def runs(
        self, limit: int | None = 20, spec: str | None = None, kind: str | None = None
    ) -> list[RunRecord]:
        """The last `limit` runs (None: all), those with an item of `spec`, of `kind`."""
        ...

    def run(self, run_id: str) -> RunRecord:
        """The run with this id (or unique id prefix); HistoryError naming the store when none."""
        ...

    def items(self, run_id: str, spec: str | None = None) -> list[ItemRecord]:
        """A run's items (of `spec` only, when given), in the order they were recorded."""
        ...

    def series(self, spec: str | None = None) -> list[SeriesKey]:
        """Every (spec, case, arm) the store holds an item of (of `spec`), sorted."""
        ...

    def selection(self, run_id: str) -> list[SeriesKey]:
        """The (spec, case, arm) lines run `run_id` (a whole id) covered, sorted."""
        ...

    def item_history(
        self, spec: str, case: str | None, arm: str | None, limit: int | None = 20
    ) -> list[ItemRecord]:
        """A line's items in its last `limit` runs (None: all): newest first, repeats in order."""
        ...

    def figures(
        self, spec: str, case: str | None, arm: str | None, limit: int | None = 20
    ) -> list[ItemFigures]:
        """`item_history`'s items as their figures only: what a listing reads, fast."""
        ...

    def close(self) -> None:
        """Let go of the connection (a store is not used after)."""
        ...


@runtime_checkable  # `extensions.load_one` checks each entry point against it
class StoreBackend(Protocol):
    """A backend: the class an entry point of the ``pytest_atom.stores`` group names."""

    def open(self, url: str, root: Path) -> Store:
        """The store at `url` (sqlite: a path), made and migrated; `root`: the project's. Called on
        the class (a classmethod)."""
        ...


class NoStore:
    """``--atom-history none``: records nothing and holds nothing."""

    url = OFF

    def add_run(self, run: RunRecord, items: Sequence[ItemRecord]) -> str:
        return run.id

    def runs(
        self, limit: int | None = 20, spec: str | None = None, kind: str | None = None
    ) -> list[RunRecord]:
        return []

    def run(self, run_id: str) -> RunRecord:
        raise HistoryError(
            f"no run {run_id!r}: the history store is off (--atom-history none); "
            "set --atom-history to a store (default .atom/history.db) to keep runs"
        )

    def items(self, run_id: str, spec: str | None = None) -> list[ItemRecord]:
        return []

    def series(self, spec: str | None = None) -> list[SeriesKey]:
        return []

    def selection(self, run_id: str) -> list[SeriesKey]:
        return []

    def item_history(
        self, spec: str, case: str | None, arm: str | None, limit: int | None = 20
    ) -> list[ItemRecord]:
        return []

    def figures(
        self, spec: str, case: str | None, arm: str | None, limit: int | None = 20
    ) -> list[ItemFigures]:
        return []

    def close(self) -> None:
        return None


def open_store(url_or_path: str | Path, root: Path | None = None) -> Store:
    """The store at `url_or_path` (relative: `root`'s), made and migrated; else HistoryError."""
    root = root or Path.cwd()
    url = store_url(url_or_path, root)
    if url == OFF:
        return NoStore()
    scheme = url.split("://", 1)[0].lower() if "://" in url else "sqlite"
    backend: StoreBackend | None = load_one(STORES, scheme, StoreBackend)
    if backend is None:
        schemes = ", ".join(f"{p.name}://" for p in declared(STORES))
        raise HistoryError(
            f"the history store {display_url(url)} has a scheme no installed backend opens "
            f"(these do: {schemes}, or a path for sqlite): fix --atom-history, or install "
            f"the distribution that declares {scheme!r} in the {STORES!r} entry-point group"
        )
    return backend.open(url, root)


def session_store(settings: RunSettings, root: Path) -> Store:
    """The store a session records into and reads from: `settings.history` under `root`."""
    return open_store(settings.history, root)
