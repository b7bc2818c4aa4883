"""The embedded store: one SQLite file per project (default ``.atom/history.db``).

WAL journaling lets readers (`atom history`) read while a session writes; a busy timeout
makes a second writer (another session, an import) wait for the first instead of failing;
``BEGIN IMMEDIATE`` takes the write lock at the start of a transaction, so two writers never
deadlock upgrading a read lock. The file's folder is made when missing.

A store inside the project is a file a pull request can replace: a link there, or on the
way to it, that leads out of the project, or a FIFO, device, socket or folder in its place,
is refused with a line naming it (`check_path`), never followed into a new file elsewhere.
"""

from __future__ import annotations

import os
import sqlite3
import stat
from pathlib import Path
from typing import ClassVar

from pytest_atom.errors import HistoryError
from pytest_atom.files import special_kind
from pytest_atom.history.sql import SqlStore

#: How long a writer waits for another's transaction before the store counts as locked.
BUSY_TIMEOUT_S = 30.0
#: The files SQLite opens for a store: the store itself, its WAL, its shared memory and its
#: rollback journal, each beside it and each written where its name leads.
_FILES = ("", "-wal", "-shm", "-journal")
_FIX = "remove it, or name the store's place with --atom-history (none turns it off)"


def check_path(path: Path, root: Path) -> None:
    """Refuse (HistoryError naming the file and the fix) a store at `path` that SQLite would open
    somewhere it does not name: a file of it that is a FIFO, socket, device or folder, or, for a
    store inside the project `root`, a link on the way that leads out of the project (a store
    named outside the project is the caller's own choice, followed as named)."""
    base = root.resolve()
    inside = Path(os.path.normpath(path)).is_relative_to(os.path.normpath(root))
    for suffix in _FILES:
        file = path.with_name(path.name + suffix)
        try:
            target = file.resolve()
        except (OSError, RuntimeError):  # a loop of links
            raise HistoryError(
                f"the history store file {file} is a loop of links; {_FIX}"
            ) from None
        if inside and not target.is_relative_to(base):
            raise HistoryError(
                f"the history store file {file} leads out of the project, to {target}: "
                f"a link pytest-atom does not follow; {_FIX}"
            )
        try:
            mode = target.stat().st_mode
        except OSError:
            continue  # not there yet: SQLite makes it
        if not stat.S_ISREG(mode):
            kind = "a folder" if stat.S_ISDIR(mode) else special_kind(mode) or "no regular file"
            raise HistoryError(
                f"the history store file {file} is {kind}, not a SQLite file; {_FIX}"
            )


class SqliteStore(SqlStore):
    """`Store` in a SQLite file."""

    begin: ClassVar[str] = "BEGIN IMMEDIATE"
    driver_errors = (sqlite3.Error,)
    has_schema_sql: ClassVar[str] = (
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'atom_schema'"
    )

    @classmethod
    def open(cls, url: str, root: Path) -> SqliteStore:
        """The ``sqlite`` backend: `url` is the file's path, refused where `check_path` says."""
        check_path(Path(url), root)
        return cls.connect(Path(url))

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
