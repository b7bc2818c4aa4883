"""history: every run kept, compared, re-judged, and skipped when nothing changed.

A project's store (SQLite at ``.atom/history.db`` by default, PostgreSQL for a team, one
schema) holds one record per session (`pytest --atom`, `atom run`, an import, a rescore) and
one per item (spec, case, arm, repeat). Everything that reads the past reads this store:
`atom history` (pass rates, trends, flaky items), `atom diff`, `atom rescore`,
``--atom-last-failed``, the outcome cache (``--atom-cache``, `atom history why`) and
`atom bisect`.

Where to add: a new stored field is a column of the schema and a field of the records, with a
migration step for stores that already exist; a new question about the past is a query of the
store and a command in `atom_cli`.
"""
