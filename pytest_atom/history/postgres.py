"""A team's store: a PostgreSQL database through psycopg 3 (``--atom-history postgresql://…``).

The same schema as SQLite's (`history.migrations`), in tables named ``atom_*`` so the store can
share a database. Each write is one transaction; migrations also hold an advisory lock, so
two sessions opening an old store at once migrate it once. psycopg is an extra
(``pip install 'pytest-atom[postgres]'``), imported only when a PostgreSQL store is opened.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from pytest_atom.errors import HistoryError
from pytest_atom.history.sql import SqlStore
from pytest_atom.history.urls import check_url, display_url, password_source, scrub_passwords

#: The advisory lock migrations hold: any fixed number; this one spells "atom".
_MIGRATION_LOCK = 0x61746F6D


class PostgresStore(SqlStore):
    """`Store` in a PostgreSQL database."""

    placeholder: ClassVar[str] = "%s"
    has_schema_sql: ClassVar[str] = "SELECT to_regclass('atom_schema')"

    @classmethod
    def open(cls, url: str, root: Path) -> PostgresStore:
        """The ``postgresql`` and ``postgres`` backends (`history.store.StoreBackend`)."""
        return cls.connect(url)

    @classmethod
    def connect(cls, url: str, migrate: bool = True) -> PostgresStore:
        """The store at `url`, its schema made and migrated as needed. No message shows a
        password: the URL is shown masked (`display_url`), the driver's own message scrubbed
        of every password the connection sent (`scrub_passwords`), and a password from the
        environment or a passfile is named, not shown."""
        check_url(url)
        try:
            import psycopg
        except ImportError as error:
            raise HistoryError(
                f"the history store {display_url(url)} needs psycopg 3: "
                "pip install 'pytest-atom[postgres]' (or --atom-history none)"
            ) from error
        try:
            connection = psycopg.connect(url, autocommit=True, connect_timeout=10)
        except psycopg.Error as error:
            source = password_source(url)
            raise HistoryError(
                f"the history store {display_url(url)}{f' ({source})' if source else ''} "
                f"cannot be opened: {scrub_passwords(str(error), url)} (start the server or "
                "fix the URL, or pass --atom-history to another store; --atom-history none "
                "turns it off)"
            ) from None  # the driver's error, unscrubbed, must not ride along in a traceback
        store = cls(connection, display_url(url))
        store.driver_errors = (psycopg.Error,)
        if migrate:
            store.migrate_or_close()
        return store

    def _begin(self, cursor: Any, locked: bool) -> None:
        cursor.execute(self.begin)
        if locked:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
