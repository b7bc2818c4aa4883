"""Calibrating the judge: labelled samples and the reflector's agreement with humans.

`samples` (a labelled sample's format), `taking` (one taken from a run: `atom label`),
`judging` (the reflector on every sample through a run's gateway and cassette), `agreement`
(Cohen's κ, its interval, McNemar's test), `calibrate` (verdicts to figures, staleness, arms
compared), `variants` (``arms.yaml``) and `report` (text and JSON). What they store,
calibration.json, is the judge's (`pytest_atom.judge.calibration`): a run's gate reads it
without loading this package.

Where to add: a figure over samples in `agreement`; a field of calibration.json in
`pytest_atom.judge.calibration`; a sample's field in `samples` (and its schema); a way to
take samples in `taking`; a judge variant's kind in `variants`.

Public: the names in `__all__` (a criterion's stored calibration, labelled samples, the
agreement figures, a spec calibrated); every module here is private.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytest_atom.lazy import exports

#: Each public name and the module that defines it (here, or the judge's).
_EXPORTS = {
    "Agreement": "agreement",
    "CriterionCalibration": "pytest_atom.judge.calibration",
    "JudgeIdentity": "pytest_atom.judge.calibration",
    "Label": "samples",
    "Sample": "samples",
    "SpecCalibration": "calibrate",
    "calibrate_spec": "calibrate",
    "kappa": "agreement",
    "load_calibration": "pytest_atom.judge.calibration",
    "load_samples": "samples",
    "write_sample": "samples",
}
__all__ = sorted(_EXPORTS)


__getattr__ = exports(__name__, _EXPORTS, globals())


if TYPE_CHECKING:  # the same names, for type checkers and editors
    from pytest_atom.calibration.agreement import Agreement, kappa
    from pytest_atom.calibration.calibrate import SpecCalibration, calibrate_spec
    from pytest_atom.calibration.samples import Label, Sample, load_samples, write_sample
    from pytest_atom.judge.calibration import CriterionCalibration, JudgeIdentity, load_calibration
