"""The reflector's verdict on an attempt (docs/explanation/reflector.md): its score, each
criterion met or not with evidence, its feedback, and the votes behind it; parsed from the
session's JSON answer against `pytest_atom.wire.verdict_schema`.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any, Literal

import jsonschema

from pytest_atom.errors import ReflectorError
from pytest_atom.results.outcome import NO_VERDICT
from pytest_atom.wire.verdict_schema import STEP_VERDICT_SCHEMA

#: Why a criterion gates or is advisory (judge.trust).
TrustReason = Literal["unfloored", "calibrated", "uncalibrated", "stale", "kappa", "samples"]
GATED_WORDS: dict[str, str] = {"unfloored": "no calibration floor", "calibrated": "calibrated"}
ADVISORY_WORDS: dict[str, str] = {
    "uncalibrated": "not calibrated",
    "stale": "calibration stale",
    "kappa": "kappa below the floor",
    "samples": "too few samples",
}


@dataclass(frozen=True)
class Trust:
    """Whether a criterion's verdict may fail a run: only when the judge's calibration for
    it (`atom calibrate`) is fresh and reaches the criterion's floor (judge.trust decides)."""

    reason: TrustReason
    detail: str  # one line: "kappa 0.41 < 0.6 on 24 samples", "the model changed: …"

    @property
    def gates(self) -> bool:
        return self.reason in GATED_WORDS

    @property
    def label(self) -> str:
        return "gated" if self.gates else "advisory"

    @property
    def line(self) -> str:
        """``advisory (calibration stale: the model changed …)``."""
        word = GATED_WORDS.get(self.reason) or ADVISORY_WORDS[self.reason]
        return f"{self.label} ({word}: {self.detail})" if self.detail else f"{self.label} ({word})"

    def to_dict(self) -> dict[str, Any]:
        return {"trust": self.label, "reason": self.reason, "detail": self.detail}


#: The trust of a criterion no calibration floor applies to: it gates.
UNFLOORED = Trust("unfloored", "")


@dataclass(frozen=True)
class CriterionVerdict:
    criterion: str
    met: bool
    evidence: str
    votes: tuple[bool, ...] = ()  # each vote's answer, in session order; empty for one session
    trust: Trust | None = None  # whether it may fail the run; None: no floor applies, it gates
    missing: bool = False  # the judge's verdict left it out (`Verdict.completed`): unmet

    @property
    def tally(self) -> str:
        """``2/3 votes met``; empty for a single session."""
        return f"{sum(self.votes)}/{len(self.votes)} votes met" if self.votes else ""

    @property
    def gates(self) -> bool:
        return self.trust is None or self.trust.gates

    @property
    def advisory(self) -> bool:
        return not self.gates


@functools.cache
def _verdict_validator() -> Any:
    """Built once: ``jsonschema.validate`` builds one on every call (tens of milliseconds)."""
    cls = jsonschema.validators.validator_for(STEP_VERDICT_SCHEMA)
    cls.check_schema(STEP_VERDICT_SCHEMA)
    return cls(STEP_VERDICT_SCHEMA)


@dataclass(frozen=True)
class Verdict:
    """The reflector's judgement of one attempt: score, criteria with evidence, feedback."""

    score: float
    decision: str  # what the reflector said; the outcome is derived from the score
    criteria: tuple[CriterionVerdict, ...]
    feedback: str
    flaky: tuple[str, ...] = ()
    target: str | None = None  # the step a `rollback` goes back to
    scores: tuple[float, ...] = ()  # each vote's score, when several sessions judged

    @classmethod
    def parse(cls, data: Any) -> Verdict:
        error = jsonschema.exceptions.best_match(_verdict_validator().iter_errors(data))
        if error is not None:
            where = "/".join(str(p) for p in error.absolute_path) or "(top level)"
            raise ReflectorError(
                f"the reflector's verdict is malformed at {where}: {error.message}; "
                f"got {json.dumps(data)[:500]}"
            )
        return cls(
            score=float(data["score"]),
            decision=data["decision"],
            criteria=tuple(
                CriterionVerdict(c["criterion"], c["met"], c["evidence"]) for c in data["criteria"]
            ),
            feedback=data["feedback"],
            flaky=tuple(data.get("flaky") or ()),
            target=data.get("target") or None,
        )

    def omits(self, criteria: Sequence[str]) -> bool:
        return len(self.criteria) < len(criteria)

    def completed(self, criteria: Sequence[str]) -> Verdict:
        """This verdict with one answer per criterion of the spec, in the spec's order: one
        that left some out has its answers placed by their words first, the rest in order,
        and each criterion left without one unmet with `NO_VERDICT` (never a pass)."""
        if not self.omits(criteria):
            return self
        answers = list(self.criteria)
        placed: list[CriterionVerdict | None] = []
        for text in criteria:
            same = next((a for a in answers if a.criterion.strip() == text.strip()), None)
            if same is not None:
                answers.remove(same)
            placed.append(same)
        rest = iter(answers)
        filled = tuple(
            answer or next(rest, None) or CriterionVerdict(text, False, NO_VERDICT, missing=True)
            for text, answer in zip(criteria, placed, strict=True)
        )
        return replace(self, criteria=filled)

    @property
    def missing(self) -> list[CriterionVerdict]:
        return [c for c in self.criteria if c.missing]

    @property
    def unmet(self) -> list[CriterionVerdict]:
        """Every criterion not met, advisory ones too."""
        return [c for c in self.criteria if not c.met]

    @property
    def gating_unmet(self) -> list[CriterionVerdict]:
        return [c for c in self.criteria if not c.met and c.gates]

    @property
    def advisory(self) -> list[CriterionVerdict]:
        return [c for c in self.criteria if c.advisory]

    def with_trust(self, trusts: Sequence[Trust | None]) -> Verdict:
        """This verdict with each criterion's trust, in the spec's order; a criterion the
        reflector added beyond the spec's gets none: it gates."""
        if not any(trusts):
            return self
        criteria = tuple(
            replace(c, trust=trusts[i] if i < len(trusts) else None)
            for i, c in enumerate(self.criteria)
        )
        return replace(self, criteria=criteria)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        if self.target is None:  # only a step's rollback names one
            del data["target"]
        for criterion, own in zip(data["criteria"], self.criteria, strict=True):
            if own.trust is None:  # each key only where it says something
                del criterion["trust"]
            else:
                criterion["trust"] = own.trust.to_dict()
            if not own.missing:
                del criterion["missing"]
        if not self.scores:
            del data["scores"]
            for criterion in data["criteria"]:
                del criterion["votes"]
        return data
