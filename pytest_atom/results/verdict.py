"""The reflector's verdict on an attempt (seed 002's contract): its score, each criterion
met or not with evidence, its feedback, and the votes behind it when several sessions judged.

Parsed from the session's JSON answer against `pytest_atom.gateway.verdict_schema`; the judge
(`pytest_atom.judge.reflector`) makes it and every result, report and hook reads it.
"""

from __future__ import annotations

import functools
import json
from dataclasses import asdict, dataclass
from typing import Any

import jsonschema

from pytest_atom.errors import ReflectorError
from pytest_atom.gateway.verdict_schema import STEP_VERDICT_SCHEMA

__all__ = ["CriterionVerdict", "ReflectorError", "Verdict"]


@dataclass(frozen=True)
class CriterionVerdict:
    criterion: str
    met: bool
    evidence: str
    #: Each vote's answer, in session order, when several reflector sessions judged
    #: (`reflector: {votes: N}`); empty for a single session.
    votes: tuple[bool, ...] = ()

    @property
    def tally(self) -> str:
        """``2/3 votes met``; empty for a single session."""
        return f"{sum(self.votes)}/{len(self.votes)} votes met" if self.votes else ""


@functools.cache
def _verdict_validator() -> Any:
    """The verdict schema's validator, built once: ``jsonschema.validate`` checks the schema
    itself and builds a validator on every call (tens of milliseconds a verdict)."""
    cls = jsonschema.validators.validator_for(STEP_VERDICT_SCHEMA)
    cls.check_schema(STEP_VERDICT_SCHEMA)
    return cls(STEP_VERDICT_SCHEMA)


def _check_verdict(data: Any) -> None:
    """``jsonschema.validate(data, STEP_VERDICT_SCHEMA)``, with the validator built once:
    the same error (its best match) for the same data."""
    error = jsonschema.exceptions.best_match(_verdict_validator().iter_errors(data))
    if error is not None:
        raise error


@dataclass(frozen=True)
class Verdict:
    """The reflector's judgement of one attempt: its score, each criterion met or not with
    the evidence, and the feedback a refined attempt is given."""

    score: float
    decision: str  # what the reflector said; the outcome is derived from the score
    criteria: tuple[CriterionVerdict, ...]
    feedback: str
    flaky: tuple[str, ...] = ()
    target: str | None = None  # the step a `rollback` goes back to
    scores: tuple[float, ...] = ()  # each vote's score, when several sessions judged

    @classmethod
    def parse(cls, data: Any) -> Verdict:
        try:
            _check_verdict(data)
        except jsonschema.ValidationError as exc:
            where = "/".join(str(p) for p in exc.absolute_path) or "(top level)"
            raise ReflectorError(
                f"the reflector's verdict is malformed at {where}: {exc.message}; "
                f"got {json.dumps(data)[:500]}"
            ) from None
        return cls(
            score=float(data["score"]),
            decision=data["decision"],
            criteria=tuple(CriterionVerdict(**c) for c in data["criteria"]),
            feedback=data["feedback"],
            flaky=tuple(data.get("flaky") or ()),
            target=data.get("target") or None,
        )

    @property
    def unmet(self) -> list[CriterionVerdict]:
        return [c for c in self.criteria if not c.met]

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        if self.target is None:  # only a step's rollback names one
            del data["target"]
        if not self.scores:  # a single session: the shape it always had
            del data["scores"]
            for criterion in data["criteria"]:
                del criterion["votes"]
        return data
