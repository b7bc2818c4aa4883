"""Calibrating the judge: labelled samples, the reflector's agreement with humans, and its
stored record.

The package sits in two layers, as the spec does. Low, just below the judge:
`record` -- calibration.json's format, the judge's identity and staleness, which a run and
its gate read (`pytest_atom.judge.trust`). High, between the history store and `atom import`:
the commands' machinery -- `samples` (a labelled sample's format and schema), `taking` (one
taken from a run: `atom label`), `judging` (the reflector on every sample through a run's
gateway and cassette), `agreement` (Cohen's κ, its interval, McNemar's test), `measure`
(verdicts to figures, staleness, arms compared), `variants` (the judge variants of
``arms.yaml``) and `report` (the results as text and JSON).

Where to add: a figure computed over samples goes in `agreement`; a field stored in
calibration.json in `record` (its format number when old files cannot be read);
a sample's field in `samples` (and its schema); a way to take samples in `taking`; a judge
variant's kind in `variants`.
"""
