"""The store over SQL: what SQLite and PostgreSQL share, spoken through a DB-API connection.

A backend gives `SqlStore` a connection in autocommit mode, its placeholder, how a write
transaction begins, and its driver's exceptions. Every write is one explicit transaction, so
a run and its items land together or not at all, and concurrent writers each land whole.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import fields
from typing import Any, ClassVar, TypeVar

from pytest_atom.errors import HistoryError
from pytest_atom.history.migrations import ITEM_ROW, MIGRATIONS, SCHEMA_VERSION
from pytest_atom.history.records import (
    TIME,
    Codec,
    Column,
    ItemFigures,
    ItemRecord,
    RunRecord,
    SeriesKey,
    columns,
)

__all__ = ["SqlStore"]

_RUN, _ITEM = columns(RunRecord), columns(ItemRecord)
_RUN_COLUMNS = ", ".join(c.name for _, c in _RUN)
_ITEM_READ = ", ".join(c.name for _, c in _ITEM)
#: An item's row as written: its fields' columns, then those that are no field (`ITEM_ROW`).
_ITEM_COLUMNS = ", ".join([_ITEM_READ, *(c.name for _, c in ITEM_ROW)])
#: What `figures` reads: each field of `ItemFigures` by the column that holds it.
_TOTALS = {
    "total_tokens": Column("tokens_total", "", codec=Codec(int, int)),
    "total_cost": Column("cost_total", "", codec=Codec(float, float)),
}
_FIGURES = tuple((f.name, _TOTALS.get(f.name) or dict(_ITEM)[f.name]) for f in fields(ItemFigures))
_SERIES = "spec = ? AND spec_case = ? AND arm = ?"

Record = TypeVar("Record")


def _insert(table: str, names: str) -> str:
    return f"INSERT INTO {table} ({names}) VALUES ({', '.join('?' * len(names.split(',')))})"


def _run_row(run: RunRecord) -> tuple[Any, ...]:
    return tuple(c.codec.write(getattr(run, name)) for name, c in _RUN)


def _item_row(run: RunRecord, number: int, item: ItemRecord) -> tuple[Any, ...]:
    """`item`, the `number`-th of `run`: its fields (its run's id), then `ITEM_ROW`'s."""
    values = [run.id if n == "run_id" else c.codec.write(getattr(item, n)) for n, c in _ITEM]
    started = TIME.write(run.started)
    return (*values, number, started, int(item.cached), item.total_tokens, item.total_cost)


def _record(kind: type[Record], read: tuple[tuple[str, Column], ...], row: Sequence[Any]) -> Record:
    """The `kind` a row of the columns `read` holds."""
    return kind(**{name: c.codec.read(v) for (name, c), v in zip(read, row, strict=True)})


class SqlStore:
    """`Store` over a DB-API connection in autocommit mode (see the module docstring)."""

    #: The driver's placeholder: the shared SQL's ``?`` becomes this.
    placeholder: ClassVar[str] = "?"
    #: What opens a write transaction.
    begin: ClassVar[str] = "BEGIN"
    #: The driver's exceptions, turned into HistoryError naming the store.
    driver_errors: tuple[type[BaseException], ...] = ()
    #: A query whose one row holds a non-NULL value when the version table exists.
    has_schema_sql: ClassVar[str] = ""

    def __init__(self, connection: Any, url: str) -> None:
        self.connection = connection
        self.url = url

    def _sql(self, sql: str) -> str:
        return sql if self.placeholder == "?" else sql.replace("?", self.placeholder)

    def _fetch(self, sql: str, params: Sequence[Any] = ()) -> list[Sequence[Any]]:
        with self._errors("read"):
            cursor = self.connection.cursor()
            try:
                cursor.execute(self._sql(sql), tuple(params))
                return list(cursor.fetchall())
            finally:
                cursor.close()

    def _begin(self, cursor: Any, locked: bool) -> None:
        """Begin a write transaction; `locked`: one that also holds off other migrations."""
        cursor.execute(self.begin)

    @contextmanager
    def _errors(self, doing: str) -> Iterator[None]:
        try:
            yield
        except self.driver_errors as error:
            raise HistoryError(
                f"the history store {self.url} cannot be {doing}: {error} "
                f"(fix it, or pass --atom-history to another store; --atom-history none "
                f"turns it off)"
            ) from error

    @contextmanager
    def _transaction(self, locked: bool = False) -> Iterator[Any]:
        with self._errors("written"):
            cursor = self.connection.cursor()
            try:
                self._begin(cursor, locked)
                try:
                    yield cursor
                except BaseException:
                    cursor.execute("ROLLBACK")
                    raise
                cursor.execute("COMMIT")
            finally:
                cursor.close()

    # --- the schema ----------------------------------------------------------------------

    def version(self) -> int:
        """The schema version the store holds (0: an empty database)."""
        found = self._fetch(self.has_schema_sql)
        if not found or found[0][0] is None:
            return 0
        rows = self._fetch("SELECT version FROM atom_schema")
        return int(rows[0][0]) if rows else 0

    def migrate(self, to: int = SCHEMA_VERSION) -> None:
        """Take the steps the store has not taken, up to `to`; refuse a store newer than this."""
        if self.version() == to:
            return  # the common case: no lock, no write
        with self._transaction(locked=True) as cursor:
            cursor.execute("CREATE TABLE IF NOT EXISTS atom_schema (version INTEGER NOT NULL)")
            cursor.execute("SELECT version FROM atom_schema")
            row = cursor.fetchone()
            have = 0 if row is None else int(row[0])
            if have > SCHEMA_VERSION:
                raise HistoryError(
                    f"the history store {self.url} has schema version {have}, newer than "
                    f"this pytest-atom's {SCHEMA_VERSION}: upgrade pytest-atom "
                    f"(pip install -U pytest-atom) to use it"
                )
            for step in MIGRATIONS[have:to]:
                for statement in step:
                    cursor.execute(statement)
            cursor.execute("DELETE FROM atom_schema")
            cursor.execute(self._sql(_insert("atom_schema", "version")), (to,))

    def migrate_or_close(self) -> None:
        """`migrate`, the connection closed when it cannot be (the store is not returned)."""
        try:
            self.migrate()
        except BaseException:
            self.connection.close()
            raise

    # --- writing -------------------------------------------------------------------------

    def add_run(self, run: RunRecord, items: Sequence[ItemRecord]) -> str:
        with self._transaction() as cursor:
            cursor.execute(self._sql(_insert("atom_runs", _RUN_COLUMNS)), _run_row(run))
            if items:
                cursor.executemany(
                    self._sql(_insert("atom_items", _ITEM_COLUMNS)),
                    [_item_row(run, n, item) for n, item in enumerate(items)],
                )
                cursor.executemany(
                    self._sql(_insert("atom_series", "spec, spec_case, arm"))
                    + " ON CONFLICT DO NOTHING",
                    sorted({(i.spec, i.case or "", i.arm or "") for i in items}),
                )
        return run.id

    # --- reading -------------------------------------------------------------------------

    def runs(
        self, limit: int | None = 20, spec: str | None = None, kind: str | None = None
    ) -> list[RunRecord]:
        where: list[str] = []
        params: list[Any] = []
        if spec is not None:
            ids = [
                i for _, i in self._last_runs("spec = ?", (spec,), limit if kind is None else None)
            ]
            if not ids:
                return []
            where.append(f"id IN ({', '.join('?' * len(ids))})")
            params.extend(ids)
        if kind is not None:
            where.append("kind = ?")
            params.append(kind)
        sql = f"SELECT {_RUN_COLUMNS} FROM atom_runs"
        sql += " WHERE " + " AND ".join(where) if where else ""
        rows = self._fetch(*_limited(sql + " ORDER BY started DESC, id DESC", params, limit))
        return [_record(RunRecord, _RUN, row) for row in rows]

    def run(self, run_id: str) -> RunRecord:
        rows = self._fetch(
            f"SELECT {_RUN_COLUMNS} FROM atom_runs WHERE id = ? OR id LIKE ? ORDER BY id LIMIT 3",
            (run_id, run_id + "%"),
        )
        exact = [row for row in rows if row[0] == run_id]
        if exact or len(rows) == 1:
            return _record(RunRecord, _RUN, (exact or rows)[0])
        many = ", ".join(row[0] for row in rows)
        raise HistoryError(
            f"no run {run_id!r} in the history store {self.url}: "
            + (f"it names several ({many}, ...): give more of the id" if rows else "")
            + ("" if rows else "`atom history` lists the runs it holds")
        )

    def items(self, run_id: str, spec: str | None = None) -> list[ItemRecord]:
        which = " AND spec = ?" if spec is not None else ""
        params = (self.run(run_id).id, *(() if spec is None else (spec,)))
        rows = self._fetch(
            f"SELECT {_ITEM_READ} FROM atom_items WHERE run_id = ?{which} ORDER BY item_no",
            params,
        )
        return [_record(ItemRecord, _ITEM, row) for row in rows]

    def series(self, spec: str | None = None) -> list[SeriesKey]:
        sql = "SELECT spec, spec_case, arm FROM atom_series"
        return self._keys(sql, ()) if spec is None else self._keys(sql + " WHERE spec = ?", (spec,))

    def selection(self, run_id: str) -> list[SeriesKey]:
        return self._keys(
            "SELECT DISTINCT spec, spec_case, arm FROM atom_items WHERE run_id = ?", (run_id,)
        )

    def _keys(self, sql: str, params: Sequence[Any]) -> list[SeriesKey]:
        return sorted((row[0], row[1] or None, row[2] or None) for row in self._fetch(sql, params))

    def _last_runs(
        self, where: str, params: tuple[Any, ...], limit: int | None
    ) -> list[tuple[str, str]]:
        """(started, id) of the last `limit` runs with an item `where` says, by the series index."""
        sql = (
            f"SELECT DISTINCT started, run_id FROM atom_items WHERE {where} "
            "ORDER BY started DESC, run_id DESC"
        )
        return [(row[0], row[1]) for row in self._fetch(*_limited(sql, params, limit))]

    def _along(
        self,
        kind: type[Record],
        read: tuple[tuple[str, Column], ...],
        key: SeriesKey,
        limit: int | None,
    ) -> list[Record]:
        """The series' items of its last `limit` runs, as `kind`: a range of the series
        index (another run started at the same instant is left out by its id)."""
        spec, case, arm = key
        key = (spec, case or "", arm or "")
        runs = self._last_runs(_SERIES, key, limit)
        if not runs:
            return []
        wanted = {run_id for _, run_id in runs}
        rows = self._fetch(
            f"SELECT run_id, {', '.join(c.name for _, c in read)} FROM atom_items "
            f"WHERE {_SERIES} AND started >= ? ORDER BY started DESC, run_id DESC, item_no",
            (*key, runs[-1][0]),
        )
        return [_record(kind, read, row[1:]) for row in rows if row[0] in wanted]

    def item_history(
        self, spec: str, case: str | None, arm: str | None, limit: int | None = 20
    ) -> list[ItemRecord]:
        return self._along(ItemRecord, _ITEM, (spec, case, arm), limit)

    def figures(
        self, spec: str, case: str | None, arm: str | None, limit: int | None = 20
    ) -> list[ItemFigures]:
        return self._along(ItemFigures, _FIGURES, (spec, case, arm), limit)

    def close(self) -> None:
        with self._errors("closed"):
            self.connection.close()


def _limited(sql: str, params: Sequence[Any], limit: int | None) -> tuple[str, Sequence[Any]]:
    return (sql, params) if limit is None else (sql + " LIMIT ?", (*params, limit))
