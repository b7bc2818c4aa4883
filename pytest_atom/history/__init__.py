"""history: every run kept, its items compared and asked about.

A project's store (SQLite at ``.atom/history.db`` by default, PostgreSQL for a team, one
schema) holds one record per session (`pytest --atom`, `atom run`, an import, a rescore) and
one per item (spec, case, arm, repeat). Everything that reads the past reads this store;
what acts on it lives above it (`pytest_atom.outcome_cache`, `pytest_atom.rescore`).

- The store: `records` (what is kept, each field declared once with its column), `store`
  (the protocol, `open_store`), the backends `sqlite` and `postgres` over `sql`,
  `migrations` (the schema's steps, made from the records' declarations), `urls`.
- Writing: `write` (a session's results as records; `atom history import`).
- Reading: `query` (`atom history`, ``--atom-last-failed``), `diff` (`atom diff`), `view`
  (the HTML report's comparison and trends).

Where to add: a stored field is one field of `records.RunRecord` or `ItemRecord` declared
with ``column(sql, since=N)``, filled in `write`; a backend is one module implementing
`store.Store` and `store.StoreBackend`, named in the ``pytest_atom.stores`` entry-point
group; a question about the past is a function of `query` and a command in `atom_cli`.

Public: the names in `__all__` (a store, what it holds, and the questions `atom history` and
`atom diff` ask of it); every module here is private.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytest_atom.lazy import exports

#: Each public name and the module here that defines it.
_EXPORTS = {
    "FlakyReport": "query",
    "ItemRecord": "records",
    "RunDiff": "diff",
    "RunRecord": "records",
    "SpecRun": "query",
    "Store": "store",
    "Summary": "query",
    "diff_runs": "diff",
    "flaky": "query",
    "open_store": "store",
    "spec_runs": "query",
    "summarize": "query",
}
__all__ = sorted(_EXPORTS)


__getattr__ = exports(__name__, _EXPORTS, globals())


if TYPE_CHECKING:  # the same names, for type checkers and editors
    from pytest_atom.history.diff import RunDiff, diff_runs
    from pytest_atom.history.query import FlakyReport, SpecRun, Summary, flaky, spec_runs, summarize
    from pytest_atom.history.records import ItemRecord, RunRecord
    from pytest_atom.history.store import Store, open_store
