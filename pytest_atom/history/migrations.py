"""The store's tables, one schema for SQLite and PostgreSQL, and the steps that migrate it.

The schema is a list of steps (`MIGRATIONS`); a store remembers how many it has taken
(``atom_schema.version``), and opening it takes the rest, in one transaction, under a lock
(SQLite's ``BEGIN IMMEDIATE``, PostgreSQL's advisory lock), so two sessions opening an old
store at once migrate it once. A store newer than this pytest-atom is refused with the fix
(upgrade), never written.

The columns come from the records' declarations (`records.column`): step 1 creates the
tables with the fields of version 1, and step N adds each field declared ``since=N`` before
that step's own statements (`_STEPS`). The SQL is the common part of both dialects: TEXT,
BIGINT, DOUBLE PRECISION, integers for booleans, ISO-8601 UTC text for times, JSON text,
``?`` placeholders. A step stores in the wild have taken is never edited.
"""

from __future__ import annotations

from pytest_atom.history.records import Column, ItemRecord, RunRecord, columns

#: The columns of an item's row that are no field of `ItemRecord`, each with the column it
#: follows.
ITEM_ROW: tuple[tuple[str, Column], ...] = (
    ("run_id", Column("item_no", "INTEGER NOT NULL")),
    ("item_no", Column("started", "TEXT NOT NULL")),
    ("outcome", Column("cached", "INTEGER NOT NULL")),
    ("cost_usd", Column("tokens_total", "BIGINT NOT NULL")),
    ("tokens_total", Column("cost_total", "DOUBLE PRECISION NOT NULL")),
)
#: Each table: its record, the columns that are no field of it, its table constraints.
_TABLES: tuple[tuple[str, type, tuple[tuple[str, Column], ...], str], ...] = (
    ("atom_runs", RunRecord, (), ""),
    ("atom_items", ItemRecord, ITEM_ROW, "PRIMARY KEY (run_id, item_no)"),
)

#: Each version's own statements, after the columns its fields add.
_STEPS: dict[int, tuple[str, ...]] = {
    1: (
        "CREATE INDEX IF NOT EXISTS atom_runs_started ON atom_runs (started, id)",
        # A series' last runs, newest first, read from the index alone (`SqlStore._last_runs`).
        """CREATE INDEX IF NOT EXISTS atom_items_series
        ON atom_items (spec, spec_case, arm, started, run_id)""",
    ),
    # The outcome cache's input digest, and a table of the series (spec, case, arm) so
    # `atom history` lists them without scanning every item.
    2: (
        "CREATE INDEX IF NOT EXISTS atom_items_digest ON atom_items (digest)",
        """CREATE TABLE IF NOT EXISTS atom_series (
        spec TEXT NOT NULL,
        spec_case TEXT NOT NULL,
        arm TEXT NOT NULL,
        PRIMARY KEY (spec, spec_case, arm)
    )""",
        """INSERT INTO atom_series (spec, spec_case, arm)
        SELECT DISTINCT spec, spec_case, arm FROM atom_items WHERE 1 = 1
        ON CONFLICT DO NOTHING""",
    ),
    # Trials kept apart from observations: the items already stored get their kind from the
    # ``cached`` flag and their run's kind (`records.ITEM_KINDS`), and `spent_usd` NULL.
    3: (
        "UPDATE atom_items SET kind = 'cached' WHERE cached = 1",
        """UPDATE atom_items SET kind = 'rescore'
        WHERE run_id IN (SELECT id FROM atom_runs WHERE kind = 'rescore')""",
    ),
}


def _create(table: str, record: type, extra: tuple[tuple[str, Column], ...], key: str) -> str:
    """The table as version 1 made it, with its non-field columns after those they follow."""
    made = [c for _, c in columns(record) if c.since == 1]
    for after, each in extra:
        made.insert(next(n for n, c in enumerate(made) if c.name == after) + 1, each)
    lines = [f"{c.name} {c.sql}" for c in made] + ([key] if key else [])
    return f"CREATE TABLE IF NOT EXISTS {table} (\n        " + ",\n        ".join(lines) + "\n    )"


def _step(version: int) -> tuple[str, ...]:
    if version == 1:
        made = tuple(_create(*table) for table in _TABLES)
    else:
        made = tuple(
            f"ALTER TABLE {table} ADD COLUMN {c.name} {c.sql}"
            for table, record, _, _ in _TABLES
            for _, c in columns(record)
            if c.since == version
        )
    return made + _STEPS.get(version, ())


#: The version this pytest-atom writes: the newest step or field.
SCHEMA_VERSION = max(*_STEPS, *(c.since for _, record, _, _ in _TABLES for _, c in columns(record)))
#: Each step's statements, in order: step N brings a store from version N-1 to N.
MIGRATIONS: tuple[tuple[str, ...], ...] = tuple(_step(n) for n in range(1, SCHEMA_VERSION + 1))
