"""The store's SQL schema, one for SQLite and PostgreSQL, and the steps that migrate it.

The schema is a list of steps (`MIGRATIONS`); a store remembers how many it has taken
(``atom_schema.version``), and opening it takes the rest, in one transaction, under a lock
(SQLite's ``BEGIN IMMEDIATE``, PostgreSQL's advisory lock), so two sessions opening an old
store at once migrate it once. A store newer than this pytest-atom is refused with the fix
(upgrade), never written.

The SQL is the common part of both dialects: TEXT, BIGINT, DOUBLE PRECISION, integers for
booleans, times as ISO-8601 UTC text (which sorts as time), structured fields as JSON text,
``?`` placeholders (the PostgreSQL backend turns them into ``%s``). An absent case or arm
is stored as ``''`` so that (spec, case, arm) compares and indexes without NULLs.

Where to add: a new column or table is a new step at the end of `MIGRATIONS` (never an edit
of an old one: stores in the wild have taken it), with a test that opens a store made by
the step before.
"""

from __future__ import annotations

__all__ = ["MIGRATIONS", "SCHEMA_VERSION"]

_V1 = (
    """CREATE TABLE IF NOT EXISTS atom_runs (
        id TEXT PRIMARY KEY,
        started TEXT NOT NULL,
        kind TEXT NOT NULL,
        rescore_of TEXT,
        git_commit TEXT,
        dirty INTEGER NOT NULL,
        atom_version TEXT NOT NULL,
        claude_version TEXT,
        settings TEXT NOT NULL
    )""",
    "CREATE INDEX IF NOT EXISTS atom_runs_started ON atom_runs (started, id)",
    """CREATE TABLE IF NOT EXISTS atom_items (
        run_id TEXT NOT NULL REFERENCES atom_runs (id) ON DELETE CASCADE,
        item_no INTEGER NOT NULL,
        started TEXT NOT NULL,
        spec TEXT NOT NULL,
        spec_path TEXT NOT NULL,
        spec_case TEXT NOT NULL,
        arm TEXT NOT NULL,
        repeat_no INTEGER,
        outcome TEXT NOT NULL,
        cached INTEGER NOT NULL,
        checks TEXT NOT NULL,
        criteria TEXT NOT NULL,
        tokens TEXT NOT NULL,
        cost_usd TEXT NOT NULL,
        tokens_total BIGINT NOT NULL,
        cost_total DOUBLE PRECISION NOT NULL,
        wall_seconds DOUBLE PRECISION NOT NULL,
        tool_calls TEXT NOT NULL,
        run_folder TEXT,
        why TEXT NOT NULL,
        score DOUBLE PRECISION,
        PRIMARY KEY (run_id, item_no)
    )""",
    # A series' last runs, newest first, read from the index alone (`SqlStore._last_runs`).
    """CREATE INDEX IF NOT EXISTS atom_items_series
        ON atom_items (spec, spec_case, arm, started, run_id)""",
)

# Version 2: the outcome cache's input digest (issue 37 item 5) and a table of the series
# (spec, case, arm) so `atom history` lists them without scanning every item.
_V2 = (
    "ALTER TABLE atom_items ADD COLUMN digest TEXT",
    "ALTER TABLE atom_items ADD COLUMN digest_parts TEXT NOT NULL DEFAULT '{}'",
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
)

# Version 3: trials kept apart from observations. An item's kind (``trial``, ``cached``,
# ``rescore``: `records.ITEM_KINDS`), filled for the items already stored from the
# ``cached`` flag and their run's kind; and the dollars an item paid an API (`spent_usd`),
# apart from Claude Code's list price of its sessions (``cost_usd``), NULL where unknown.
_V3 = (
    "ALTER TABLE atom_items ADD COLUMN kind TEXT NOT NULL DEFAULT 'trial'",
    "ALTER TABLE atom_items ADD COLUMN spent_usd DOUBLE PRECISION",
    "UPDATE atom_items SET kind = 'cached' WHERE cached = 1",
    """UPDATE atom_items SET kind = 'rescore'
        WHERE run_id IN (SELECT id FROM atom_runs WHERE kind = 'rescore')""",
)

#: Each step's statements, in order: step N brings a store from version N-1 to N.
MIGRATIONS: tuple[tuple[str, ...], ...] = (_V1, _V2, _V3)
#: The version this pytest-atom writes.
SCHEMA_VERSION = len(MIGRATIONS)
