"""Judging an attempt: the reflector, a read-only Claude session that gives a verdict.

`reflector` builds the reflector's prompt from the evidence (the task, the checks, the diff,
the final message), runs its session (one or several votes) and combines the votes into a
`pytest_atom.results.verdict.Verdict`. Deterministic checks are `pytest_atom.checks`.
"""
