"""The outcome of a spec run, decided once: what every front end and report reads.

The scoring model (docs/explanation/reflector.md) decides each attempt (`judge`: proceed,
refine or fail); `decide` turns a whole run into an `Outcome`: passed, failed or error (the
machinery around the agent broke), with why, in a line. Every front end and report reads
that one value (`SpecResult.outcome`), never its own reading of the figures. Plain values in
(`RunFacts`), plain values out: nothing here imports the results built on it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, get_args

from pytest_atom.cost.spend import Crossing

#: The harness's decision on an attempt: pass on, try again, or give up.
Decision = Literal["proceed", "refine", "fail"]
#: What a run came to: the agent did the task, did not, or the machinery failed.
Status = Literal["passed", "failed", "error"]
#: Which part failed: the machinery, or the spec itself; never the agent's fault.
ErrorKind = Literal["harness", "replay", "upstream", "spec"]
#: Outcomes that do not fail a run: what pytest's exit status counts as success too.
OK_LABELS = frozenset({"passed", "xfailed", "xpassed"})


class _Check(Protocol):
    @property
    def passed(self) -> bool: ...


#: The evidence of a criterion the judge's verdict left out, even when asked again: the
#: criterion is unmet, and every report says why in these words.
NO_VERDICT = "the judge gave no verdict"

#: What passes a judged attempt: its score above the threshold, or each criterion's votes.
Gate = Literal["score", "criteria"]


class _Criterion(Protocol):
    @property
    def met(self) -> bool: ...

    @property
    def gates(self) -> bool: ...

    @property
    def missing(self) -> bool: ...


class _Scored(Protocol):
    @property
    def score(self) -> float: ...

    @property
    def criteria(self) -> Sequence[_Criterion]: ...


def judge(
    completed: bool,
    checks: Iterable[_Check],
    verdict: _Scored | None,
    threshold: float,
    gate: Gate = "score",
) -> Decision:
    """``proceed``, ``refine`` or ``fail`` for one attempt (the scoring model).

    A failed check, or an agent that never signalled completion, fails whatever the score.
    Gated by ``criteria``, every gated criterion must be met by its vote majority and the
    score is not read; an advisory criterion never fails an attempt nor asks for another."""
    if not completed or not all(c.passed for c in checks):
        return "fail"
    if verdict is None:
        return "proceed"
    if effective_gate(gate, verdict.criteria) == "criteria":
        return "proceed" if all(c.met for c in verdict.criteria if c.gates) else "refine"
    if verdict.score > threshold:
        return "proceed"
    return "refine" if verdict.score >= 0.5 else "fail"


def effective_gate(gate: Gate, criteria: Iterable[_Criterion]) -> Gate:
    """What passes a judged attempt: the spec's `gate`, but ``criteria`` (the gated ones,
    each met) once any criterion is advisory, whose verdict the score would still weigh,
    or the judge gave no verdict on one, which its score cannot have weighed."""
    return "criteria" if any(not c.gates or c.missing for c in criteria) else gate


@dataclass(frozen=True)
class Outcome:
    """A spec run's outcome: `label` is the word every report shows; gates read `ok`."""

    status: Status
    why: str  # one line: the score against the threshold, the check that failed, the error
    error: ErrorKind | None = None  # set exactly when status is "error"
    xfail: str | None = None  # the spec expects to fail, and why: a failure is expected
    detail: str | None = None  # what stopped a failed run: "max_turns", "plan", "steps 1/3"

    @property
    def label(self) -> str:
        """passed, failed, error, upstream error, xfailed or xpassed (pytest's words); an
        error is never an xfail spec's expected failure: the agent was not judged."""
        if self.status == "error":
            return "upstream error" if self.error == "upstream" else "error"
        if self.xfail is not None:
            return "xpassed" if self.status == "passed" else "xfailed"
        return self.status

    @property
    def summary_label(self) -> str:
        """The label with what stopped a failed run: ``failed: max_turns``."""
        if self.detail and self.label in ("failed", "xfailed"):
            return f"{self.label}: {self.detail}"
        return self.label

    @property
    def ok(self) -> bool:
        return self.label in OK_LABELS

    @property
    def exit_status(self) -> int:
        """2 when the machinery failed, 1 when the spec failed, else 0."""
        return 2 if self.status == "error" else 0 if self.ok else 1

    def properties(self) -> dict[str, Any]:
        """As JUnit properties: they carry the outcome across xdist to the summary."""
        given = {"error": self.error, "outcome_detail": self.detail, "xfail": self.xfail}
        props = {f"atom_{key}": value for key, value in given.items() if value is not None}
        return {"atom_outcome": self.label, "atom_why": self.why, **props}

    @classmethod
    def from_properties(cls, props: Mapping[str, Any]) -> Outcome | None:
        """The outcome `properties` gave (None: no spec run wrote them)."""
        label = props.get("atom_outcome")
        if not isinstance(label, str):
            return None
        error = props.get("atom_error") or None
        status: Status = (
            "error" if error else "passed" if label in ("passed", "xpassed") else "failed"
        )
        xfail = props.get("atom_xfail")
        return cls(
            status,
            str(props.get("atom_why") or ""),
            error=error if error in get_args(ErrorKind) else None,
            xfail=None if xfail is None else str(xfail),
            detail=props.get("atom_outcome_detail") or None,
        )

    @classmethod
    def of_label(cls, label: str, why: str = "") -> Outcome:
        """An outcome known by its label alone (a results file from before outcomes)."""
        if label in ("error", "upstream error"):
            return cls("error", why, "upstream" if label == "upstream error" else "harness")
        xfail = "" if label in ("xfailed", "xpassed") else None
        return cls("passed" if label in ("passed", "xpassed") else "failed", why, xfail=xfail)

    def failed_by_pytest(self, why: str) -> Outcome:
        """pytest failed a run the spec passed (a syrupy snapshot, a strict xpass)."""
        return Outcome("failed", why, detail=self.detail)


@dataclass(frozen=True)
class RunFacts:
    """The figures of a spec run that decide its outcome (`SpecResult.facts` builds it), so
    a test states a run in the few figures it cares about."""

    attempts: int
    decision: Decision
    score: float | None
    threshold: float
    completed: bool
    reason: str | None
    checks_failed: int
    checks: int
    xfail: str | None = None  # the spec expects to fail, and why
    divergence: str | None = None  # the replay's first divergence, in a line
    harness_error: str | None = None
    script_error: str | None = None  # the spec's own script could not answer
    upstream: str | None = None  # a recording's upstream failure, or a rejected stream
    limit_exceeded: Crossing | None = None
    plan_failed: bool = False
    steps: str | None = None  # a multi-step spec's "steps 1/3"
    steps_passed: bool = True
    gate: Gate = "score"
    unmet: Sequence[str] = ()  # the final verdict's unmet criteria, with their votes
    advisory_unmet: Sequence[str] = ()  # shown in the why, never failing it


def decide(facts: RunFacts) -> Outcome:
    """The one place a run's figures become its outcome: a replay divergence, a harness
    error, a broken script or a recording's upstream failure is an error, whatever the agent
    did; a pass needs the last attempt's ``proceed``, every step committed, every plan valid."""
    f = facts
    expected = f.xfail or None
    if f.divergence is not None:
        return Outcome("error", f"replay diverged from its cassette: {f.divergence}", "replay")
    if f.harness_error is not None:
        return Outcome("error", f.harness_error.strip().splitlines()[0], "harness")
    if f.script_error is not None:
        return Outcome("error", f"the spec's script is broken: {f.script_error}", "spec")
    passed = f.attempts > 0 and f.decision == "proceed" and f.steps_passed and not f.plan_failed
    verdict = _verdict(f.score, f.threshold, f.gate, f.unmet, f.advisory_unmet)
    if passed:
        return Outcome("passed", verdict or "checks passed", xfail=expected)
    # Stopping at a limit cuts the streams in flight: the limit, not the upstream, is why.
    if f.upstream is not None and f.limit_exceeded is None:
        return Outcome("error", f"the recording's upstream failed: {f.upstream}", "upstream")
    detail, why = _why_failed(f, verdict)
    if detail is None and f.steps is not None:
        detail, why = f.steps, f"{f.steps} committed; {why}"
    return Outcome("failed", why, xfail=expected, detail=detail)


def _why_failed(f: RunFacts, verdict: str) -> tuple[str | None, str]:
    """(detail, why) of a failed run: what stopped it first, in one line."""
    if f.limit_exceeded:
        return f.limit_exceeded.limit, f"stopped: {f.limit_exceeded}"
    if f.plan_failed:
        return "plan", "the planner's plan did not pass"
    if not f.attempts:
        return None, "did not run"
    if not f.completed:
        return None, f"the agent did not finish ({f.reason})"
    if f.checks_failed:
        checks = f.checks
        return None, f"{f.checks_failed} of {checks} check{'s' * (checks != 1)} failed"
    if f.unmet and f.gate == "criteria":
        return None, verdict
    return None, f"{f.decision}, {verdict}" if verdict else f.decision


def _verdict(
    score: float | None,
    threshold: float,
    gate: Gate,
    unmet: Sequence[str],
    advisory: Sequence[str] = (),
) -> str:
    """The reflector's verdict in a few words: its score, or its unmet criteria."""
    if score is None:
        return ""
    if gate != "criteria":
        return f"score {score:g} (passes above {threshold:g})"
    said = "unmet: " + "; ".join(unmet) if unmet else "every gated criterion met"
    if not advisory and not unmet:
        said = "every criterion met"
    return said + (f"; advisory, not gating: {'; '.join(advisory)}" if advisory else "")
