"""The embedded store: one SQLite file per project (default ``.atom/history.db``).

WAL journaling lets readers (`atom history`) read while a session writes; a busy timeout
makes a second writer (another session, an import) wait for the first instead of failing;
``BEGIN IMMEDIATE`` takes the write lock at the start of a transaction, so two writers never
deadlock upgrading a read lock. The file's folder is made when missing.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import ClassVar

from pytest_atom.errors import HistoryError
from pytest_atom.history.sql import SqlStore

__all__ = ["BUSY_TIMEOUT_S", "SqliteStore"]

#: How long a writer waits for another's transaction before the store counts as locked.
BUSY_TIMEOUT_S = 30.0


class SqliteStore(SqlStore):
    """`Store` in a SQLite file (see the module docstring)."""

    placeholder: ClassVar[str] = "?"
    begin: ClassVar[str] = "BEGIN IMMEDIATE"
    driver_errors = (sqlite3.Error,)
    has_schema_sql: ClassVar[str] = (
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'atom_schema'"
    )

    @classmethod
    def connect(cls, path: Path, migrate: bool = True) -> SqliteStore:
        """The store in `path`, made and migrated to the current schema as needed."""
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            connection = sqlite3.connect(
                path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
            )
            connection.execute("PRAGMA journal_mode=WAL")
            connection.execute("PRAGMA synchronous=NORMAL")
            connection.execute("PRAGMA foreign_keys=ON")
        except (OSError, sqlite3.Error) as error:
            raise HistoryError(
                f"the history store {path} cannot be opened: {error} (make its folder "
                "writable, or pass --atom-history to another store; --atom-history none "
                "turns it off)"
            ) from error
        store = cls(connection, str(path))
        if migrate:
            store.migrate_or_close()
        return store
