"""Judging an attempt: the reflector, a read-only Claude session that gives a verdict.

`reflector` builds the reflector's prompt from the evidence (the task, the checks, the diff,
the final message), runs its session (one or several votes) and combines the votes into a
`pytest_atom.results.verdict.Verdict`. `calibration` is a criterion's stored calibration
(calibration.json, the judge's identity, staleness) and `trust` what a run's gate makes of it.
Deterministic checks are `pytest_atom.checks`; taking samples and calibrating the judge on them
is `pytest_atom.calibration`.
"""
