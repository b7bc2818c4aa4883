"""Judging an attempt: the reflector, a read-only Claude session that gives a verdict.

`reflector` builds the reflector's prompt from the evidence, runs its session (one or several
votes) and combines the votes into a `Verdict`. `calibration` is a criterion's stored
calibration and `trust` what a run's gate makes of it. Deterministic checks are
`pytest_atom.checks`; calibrating the judge is `pytest_atom.calibration`.
"""
