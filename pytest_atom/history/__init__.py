"""history: every run kept, compared, re-judged, and skipped when nothing changed.

A project's store (SQLite at ``.atom/history.db`` by default, PostgreSQL for a team, one
schema) holds one record per session (`pytest --atom`, `atom run`, an import, a rescore) and
one per item (spec, case, arm, repeat). Everything that reads the past reads this store.

- The store: `records` (what is kept), `store` (the protocol, `open_store`), one module per
  backend (`sqlite`, `postgres`) over what they share (`sql`), `schema` (the versioned SQL
  and its migration steps), `urls` (where a store is).
- Writing: `recording` (a session's typed results as records, the one write per session),
  `imports` (`atom history import`: CI shards and artifacts).
- Reading: `query` (`atom history`: pass rates, trends, flaky items), `diff` (`atom diff`),
  `view` (the HTML report's comparison and trends), `last_failed` (``--atom-last-failed``).
- Acting on it: `rescore` (`atom rescore`), `digest`, `inputs`, `cache` and `why` (the
  outcome cache, ``--atom-cache``, `atom history why`: `inputs` finds what an item can read,
  `digest` hashes it into named parts), `bisect` (`atom bisect` over Claude Code releases).

Where to add: a new stored field is a column of `schema` and a field of `records`, with a
migration step for stores that already exist, filled in `recording`; a new backend is one
module implementing `store.Store` and `store.StoreBackend`, and its URL scheme's line in the
``pytest_atom.stores`` entry-point group (`open_store` picks it); a new question about the past is a
query here and a command in `atom_cli`; a new input of the outcome cache is a part in
`digest.PARTS` (or a named part found in `inputs`), with a test changing it alone.
"""
