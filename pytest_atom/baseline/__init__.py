"""Baselines: a committed record of how every spec did, and a run measured against it.

`stats` has the statistics of repeated runs (the one place for intervals, pass@k, tests,
power, and how an estimate is shown); `measure` what repeats, arms, cases and conversations
measure per spec; `triggers` a trigger suite's precision and recall; `gate` the sampled gate
(PASS, REGRESSION or INCONCLUSIVE by a named test); `compare` reads, writes and compares
baseline files.

Where to add: a gated metric is a field in `compare` and its tolerance in
`pytest_atom.settings.parsers`; a new statistic goes in `stats`.
"""
