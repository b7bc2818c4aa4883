"""The store over SQL: what SQLite and PostgreSQL share, spoken through a DB-API connection.

`SqlStore` implements `history.store.Store` once; a backend (`history.sqlite`,
`history.postgres`) gives it a connection in autocommit mode, its placeholder, how a write
transaction begins, and the exceptions its driver raises. Every write is one explicit
transaction (``BEGIN`` … ``COMMIT``), so a run and its items land together or not at all,
and concurrent writers (xdist controllers, two sessions, imports) each land whole.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any, ClassVar

from pytest_atom.errors import HistoryError
from pytest_atom.history.records import (
    CheckRow,
    CriterionRow,
    ItemFigures,
    ItemRecord,
    RunRecord,
    SeriesKey,
)
from pytest_atom.history.migrations import MIGRATIONS, SCHEMA_VERSION

__all__ = ["SqlStore"]

_RUN_COLUMNS = (
    "id, started, kind, rescore_of, git_commit, dirty, atom_version, claude_version, settings"
)
_ITEM_COLUMNS = (
    "run_id, item_no, started, spec, spec_path, spec_case, arm, repeat_no, outcome, cached, "
    "checks, criteria, tokens, cost_usd, tokens_total, cost_total, wall_seconds, tool_calls, "
    "run_folder, why, score, digest, digest_parts, kind, spent_usd"
)
_SERIES = "spec = ? AND spec_case = ? AND arm = ?"
_ITEM_READ = (
    "run_id, spec, spec_path, spec_case, arm, repeat_no, outcome, cached, checks, criteria, "
    "tokens, cost_usd, wall_seconds, tool_calls, digest, digest_parts, run_folder, why, score, "
    "kind, spent_usd"
)


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _run_row(run: RunRecord) -> tuple[Any, ...]:
    started = run.started.isoformat(timespec="microseconds")
    return (
        run.id,
        started,
        run.kind,
        run.rescore_of,
        run.commit,
        int(run.dirty),
        run.atom_version,
        run.claude_version,
        _json(dict(run.settings)),
    )


def _item_row(run: RunRecord, number: int, item: ItemRecord) -> tuple[Any, ...]:
    return (
        run.id,
        number,
        run.started.isoformat(timespec="microseconds"),
        item.spec,
        item.spec_path,
        item.case or "",
        item.arm or "",
        item.repeat,
        item.outcome,
        int(item.cached),
        _json([[c.name, c.passed, c.detail] for c in item.checks]),
        _json([[c.text, c.score, c.passed, c.reasons] for c in item.criteria]),
        _json(dict(item.tokens)),
        _json(dict(item.cost_usd)),
        item.total_tokens,
        item.total_cost,
        item.wall_seconds,
        _json(list(item.tool_calls)),
        item.run_folder,
        item.why,
        item.score,
        item.digest,
        _json(dict(item.digest_parts)),
        item.kind,
        item.spent_usd,
    )


def _run_of(row: Sequence[Any]) -> RunRecord:
    return RunRecord(
        id=row[0],
        started=datetime.fromisoformat(row[1]),
        kind=row[2],
        rescore_of=row[3],
        commit=row[4],
        dirty=bool(row[5]),
        atom_version=row[6],
        claude_version=row[7],
        settings=json.loads(row[8]),
    )


def _item_of(row: Sequence[Any]) -> ItemRecord:
    return ItemRecord(
        run_id=row[0],
        spec=row[1],
        spec_path=row[2],
        case=row[3] or None,
        arm=row[4] or None,
        repeat=row[5],
        outcome=row[6],
        kind=row[19],
        checks=tuple(CheckRow(n, bool(p), d) for n, p, d in json.loads(row[8])),
        criteria=tuple(CriterionRow(t, float(s), bool(p), r) for t, s, p, r in json.loads(row[9])),
        tokens=json.loads(row[10]),
        cost_usd=json.loads(row[11]),
        wall_seconds=float(row[12]),
        tool_calls=tuple(json.loads(row[13])),
        digest=row[14],
        digest_parts=json.loads(row[15]),
        run_folder=row[16],
        why=row[17],
        score=row[18],
        spent_usd=None if row[20] is None else float(row[20]),
    )


class SqlStore:
    """`Store` over a DB-API connection in autocommit mode (see the module docstring)."""

    #: The driver's placeholder: the shared SQL's ``?`` becomes this.
    placeholder: ClassVar[str] = "?"
    #: What opens a write transaction; `locked_begin` also serializes migrations.
    begin: ClassVar[str] = "BEGIN"
    #: The driver's exceptions, turned into HistoryError naming the store.
    driver_errors: tuple[type[BaseException], ...] = ()
    #: Whether the store holds the version table (a query returning one row when it does).
    has_schema_sql: ClassVar[str] = ""

    def __init__(self, connection: Any, url: str) -> None:
        self.connection = connection
        self.url = url

    # --- the connection ------------------------------------------------------------------

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

    def _locked_begin(self, cursor: Any) -> None:
        """Begin a write transaction that also holds off other migrations."""
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
        """One write transaction: committed when the block ends, rolled back if it raises."""
        with self._errors("written"):
            cursor = self.connection.cursor()
            try:
                if locked:
                    self._locked_begin(cursor)
                else:
                    cursor.execute(self.begin)
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
        with self._errors("read"):
            cursor = self.connection.cursor()
            try:
                cursor.execute(self.has_schema_sql)
                row = cursor.fetchone()
                return 0 if row is None or row[0] is None else self._version(cursor)
            finally:
                cursor.close()

    def _version(self, cursor: Any) -> int:
        cursor.execute("SELECT version FROM atom_schema")
        row = cursor.fetchone()
        return 0 if row is None else int(row[0])

    def migrate(self, to: int = SCHEMA_VERSION) -> None:
        """Take the schema steps the store has not taken, up to `to`; refuse a store newer
        than this pytest-atom."""
        if self.version() == to:
            return  # the common case: no lock, no write
        with self._transaction(locked=True) as cursor:
            cursor.execute("CREATE TABLE IF NOT EXISTS atom_schema (version INTEGER NOT NULL)")
            have = self._version(cursor)
            if have > SCHEMA_VERSION:
                raise HistoryError(
                    f"the history store {self.url} has schema version {have}, newer than "
                    f"this pytest-atom's {SCHEMA_VERSION}: upgrade pytest-atom "
                    f"(pip install -U pytest-atom) to use it"
                )
            for step in MIGRATIONS[have:to]:
                for statement in step:
                    cursor.execute(self._dialect(statement))
            cursor.execute("DELETE FROM atom_schema")
            cursor.execute(self._sql("INSERT INTO atom_schema (version) VALUES (?)"), (to,))

    def migrate_or_close(self) -> None:
        """`migrate`, the connection closed when it cannot be (the store is not returned)."""
        try:
            self.migrate()
        except BaseException:
            self.connection.close()
            raise

    def _dialect(self, statement: str) -> str:
        """A schema statement as this database reads it (the shared SQL, by default)."""
        return statement

    # --- writing -------------------------------------------------------------------------

    def add_run(self, run: RunRecord, items: Sequence[ItemRecord]) -> str:
        placeholders = ", ".join("?" * len(_ITEM_COLUMNS.split(",")))
        with self._transaction() as cursor:
            cursor.execute(
                self._sql(f"INSERT INTO atom_runs ({_RUN_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?)"),
                _run_row(run),
            )
            if items:
                cursor.executemany(
                    self._sql(f"INSERT INTO atom_items ({_ITEM_COLUMNS}) VALUES ({placeholders})"),
                    [_item_row(run, n, item) for n, item in enumerate(items)],
                )
                series = sorted({(i.spec, i.case or "", i.arm or "") for i in items})
                cursor.executemany(
                    self._sql(
                        "INSERT INTO atom_series (spec, spec_case, arm) VALUES (?, ?, ?) "
                        "ON CONFLICT DO NOTHING"
                    ),
                    series,
                )
        return run.id

    # --- reading -------------------------------------------------------------------------

    def runs(
        self, limit: int | None = 20, spec: str | None = None, kind: str | None = None
    ) -> list[RunRecord]:
        where: list[str] = []
        params: list[Any] = []
        if spec is not None:
            ids = self._spec_runs(spec, limit if kind is None else None)
            if not ids:
                return []
            where.append(f"id IN ({', '.join('?' * len(ids))})")
            params.extend(ids)
        if kind is not None:
            where.append("kind = ?")
            params.append(kind)
        sql = f"SELECT {_RUN_COLUMNS} FROM atom_runs"
        sql += (
            " WHERE " + " AND ".join(where) if where else ""
        ) + " ORDER BY started DESC, id DESC"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        return [_run_of(row) for row in self._fetch(sql, params)]

    def _spec_runs(self, spec: str, limit: int | None) -> list[str]:
        """The ids of `spec`'s last `limit` runs (any case, any arm), from the series index."""
        sql = (
            "SELECT DISTINCT started, run_id FROM atom_items WHERE spec = ? "
            "ORDER BY started DESC, run_id DESC"
        )
        params: tuple[Any, ...] = (spec,) if limit is None else (spec, limit)
        return [row[1] for row in self._fetch(sql + ("" if limit is None else " LIMIT ?"), params)]

    def run(self, run_id: str) -> RunRecord:
        rows = self._fetch(
            f"SELECT {_RUN_COLUMNS} FROM atom_runs WHERE id = ? OR id LIKE ? ORDER BY id LIMIT 3",
            (run_id, run_id + "%"),
        )
        exact = [row for row in rows if row[0] == run_id]
        if exact or len(rows) == 1:
            return _run_of((exact or rows)[0])
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
        return [_item_of(row) for row in rows]

    def series(self, spec: str | None = None) -> list[SeriesKey]:
        sql = "SELECT spec, spec_case, arm FROM atom_series"
        rows = self._fetch(
            sql + (" WHERE spec = ?" if spec is not None else ""),
            (spec,) if spec is not None else (),
        )
        return sorted((row[0], row[1] or None, row[2] or None) for row in rows)

    def selection(self, run_id: str) -> list[SeriesKey]:
        rows = self._fetch(
            "SELECT DISTINCT spec, spec_case, arm FROM atom_items WHERE run_id = ?", (run_id,)
        )
        return sorted((row[0], row[1] or None, row[2] or None) for row in rows)

    def _last_runs(self, key: tuple[str, str, str], limit: int | None) -> list[tuple[str, str]]:
        """(started, id) of the last `limit` runs with an item of the series `key`, newest
        first: a walk down the series index, which holds both."""
        sql = (
            f"SELECT DISTINCT started, run_id FROM atom_items WHERE {_SERIES} "
            "ORDER BY started DESC, run_id DESC"
        )
        params: tuple[Any, ...] = key if limit is None else (*key, limit)
        rows = self._fetch(sql + ("" if limit is None else " LIMIT ?"), params)
        return [(row[0], row[1]) for row in rows]

    def _series_rows(
        self, columns: str, key: tuple[str, str, str], limit: int | None
    ) -> list[Sequence[Any]]:
        """The series' items of its last `limit` runs: a range of the series index from
        the oldest of those runs' start on (another run started at that instant is left
        out by its id)."""
        runs = self._last_runs(key, limit)
        if not runs:
            return []
        wanted = {run_id for _, run_id in runs}
        rows = self._fetch(
            f"SELECT run_id, {columns} FROM atom_items WHERE {_SERIES} AND started >= ? "
            "ORDER BY started DESC, run_id DESC, item_no",
            (*key, runs[-1][0]),
        )
        return [row[1:] for row in rows if row[0] in wanted]

    def item_history(
        self, spec: str, case: str | None, arm: str | None, limit: int | None = 20
    ) -> list[ItemRecord]:
        rows = self._series_rows(_ITEM_READ, (spec, case or "", arm or ""), limit)
        return [_item_of(row) for row in rows]

    def figures(
        self, spec: str, case: str | None, arm: str | None, limit: int | None = 20
    ) -> list[ItemFigures]:
        columns = (
            "run_id, outcome, digest, tokens_total, cost_total, wall_seconds, kind, spent_usd, "
            "repeat_no"
        )
        rows = self._series_rows(columns, (spec, case or "", arm or ""), limit)
        return [
            ItemFigures(
                r[0],
                r[1],
                r[2],
                int(r[3]),
                float(r[4]),
                float(r[5]),
                r[6],
                None if r[7] is None else float(r[7]),
                r[8],
            )
            for r in rows
        ]

    def find_passing(self, digest: str) -> ItemRecord | None:
        rows = self._fetch(
            f"SELECT {_ITEM_READ} FROM atom_items WHERE digest = ? AND outcome = 'passed' "
            "ORDER BY started DESC, run_id DESC LIMIT 1",
            (digest,),
        )
        return _item_of(rows[0]) if rows else None

    def close(self) -> None:
        with self._errors("closed"):
            self.connection.close()
