"""Calibrating the judge: labelled samples, the reflector's agreement with humans, and its
stored record.

The package sits in two layers, as the spec does. Low, just below the judge:
`record` -- calibration.json's format, the judge's identity and staleness, which a run and
its gate read. High, between the history store and `atom import`: the commands' machinery --
`samples` (a labelled sample's format and schema, taking one from a run), `agreement`
(Cohen's κ, its interval, McNemar's test), `judging` (running the reflector on every sample
through a run's gateway and cassette), `arms` (comparing judge variants) and `report`
(rendering the results).

Where to add: a figure computed over samples goes in `agreement`; a field stored in
calibration.json in `record` (its format number when old files cannot be read);
a way to take samples in `samples`.
"""
