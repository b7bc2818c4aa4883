"""Calibrating the judge: labelled samples and the reflector's agreement with humans.

`samples` (a labelled sample's format and schema), `taking` (one taken from a run: `atom
label`), `judging` (the reflector on every sample through a run's gateway and cassette),
`agreement` (Cohen's κ, its interval, McNemar's test), `measure` (verdicts to figures,
staleness, arms compared), `variants` (the judge variants of ``arms.yaml``) and `report` (the
results as text and JSON). What they store, calibration.json, is the judge's
(`pytest_atom.judge.calibration`): a run's gate reads it without loading this package.

Where to add: a figure computed over samples goes in `agreement`; a field stored in
calibration.json in `pytest_atom.judge.calibration` (its format number when old files cannot be
read); a sample's field in `samples` (and its schema); a way to take samples in `taking`; a
judge variant's kind in `variants`.
"""
