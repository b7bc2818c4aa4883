"""Baselines: a committed record of how every spec did, and a run measured against it.

`stats` has the statistics of repeated runs (intervals, pass@k, tests, power); `measure`
what repeats and arms measure per spec; `gate` the sampled gate (PASS, REGRESSION or
INCONCLUSIVE by a named test); `compare` reads, writes and compares baseline files.

Where to add: a gated metric is a field in `compare` and its tolerance in
`pytest_atom.settings.parsers`.
"""
