"""outcome_cache: an item whose inputs are those of a stored passing item is reported, not run.

Every item run with the history store on gets an input digest (everything its outcome can
depend on, as named parts and one value), kept with its record; with ``--atom-cache`` an
item whose digest a stored passing item has is reported from the store, and `atom history
why SPEC` names the parts that changed since.

- `cache`: `OutcomeCache` (a `run.harness.AroundRun`), and when a stored outcome may stand
  in for a run (`uncacheable`).
- `input_digest`: `InputDigest` and its fixed parts (`PARTS`); `inputs`: the parts that are
  files and folders, and what the digest cannot see (`unseen`).
- `why`: `atom history why`, item by item.

Where to add: a new input is a part in `input_digest.PARTS` (or a named part found in
`inputs`), with a test changing it alone (tests/outcome_cache/test_cache_mutations.py); a new
reason never to serve an item is a line of `cache.uncacheable`.
"""
