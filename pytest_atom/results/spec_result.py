"""The typed results of a spec run: its attempts, its outcome, its cost and what broke.
Nothing here imports what runs: their types are named for type checkers only.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_atom.cost.billing import Billed
from pytest_atom.cost.limits import Limits, Usage
from pytest_atom.cost.spend import Crossing
from pytest_atom.cost.usage import ROLES, Dollars, RoleUsage, split_steps
from pytest_atom.results.outcome import (
    NO_VERDICT,
    Decision,
    Gate,
    Outcome,
    RunFacts,
    Status,
    decide,
    effective_gate,
)
from pytest_atom.settings.modes import SourceKind

if TYPE_CHECKING:
    from pytest_atom.results.check_result import CheckResult
    from pytest_atom.results.drift import Drift, ReplayDivergence
    from pytest_atom.results.record import IterationRecord, Recalled, RunOutcome, UpstreamFault
    from pytest_atom.results.verdict import Verdict
    from pytest_atom.spec.types import Spec, Step
    from pytest_atom.wire.request import Exchange


@dataclass(frozen=True)
class CheckRow:
    """One deterministic check of an item as the history store keeps it: its label, whether
    it passed, and its detail (the check's summary, scrubbed)."""

    name: str
    passed: bool
    detail: str = ""


@dataclass(frozen=True)
class CriterionRow:
    """One criterion the reflector judged, as the history store keeps it: its text, its
    score (the share of votes that found it met: 1.0 or 0.0 with one vote), whether it was
    met, and the reflector's reasons (scrubbed)."""

    text: str
    score: float
    passed: bool
    reasons: str = ""


@dataclass(frozen=True)
class CachedFrom:
    """A run that did not happen: the stored passing item `--atom-cache` reported instead
    (`SpecResult.cached_from`, no attempts); its outcome and the figures of the agent's work
    are the stored ones, and nothing was spent."""

    run_id: str
    started: str  # the stored run's start, ISO 8601 (UTC)
    #: passed, xpassed or xfailed: the cache reports only an outcome that passes a session
    outcome: str
    why: str
    score: float | None = None
    wall_seconds: float = 0.0  # what the stored run took: the time this one saved
    tool_calls: tuple[str, ...] = ()
    checks: tuple[CheckRow, ...] = ()
    criteria: tuple[CriterionRow, ...] = ()

    @property
    def passed(self) -> bool:
        """Whether the stored agent succeeded (xfailed: it failed, as expected)."""
        return self.outcome in ("passed", "xpassed")

    @property
    def line(self) -> str:
        """``cached: passed in run 20261129T061502-3f9a1c2b (score 0.90 > 0.80)``."""
        why = f" ({self.why})" if self.why else ""
        return f"cached: {self.outcome} in run {self.run_id}{why}"


@dataclass
class Attempt:
    """One attempt: the executor's iterations, the checks, the reflector's verdict."""

    number: int
    path: Path
    outcome: RunOutcome
    records: list[IterationRecord]
    checks: list[CheckResult] = field(default_factory=list)
    verdict: Verdict | None = None
    #: The reflector's sessions on this attempt: one per vote (`reflector: {votes: N}`).
    reflectors: list[IterationRecord] = field(default_factory=list)
    #: Votes a replay took from the cassette, no session run: their input was unchanged.
    recalled: list[Recalled] = field(default_factory=list)
    decision: Decision = "fail"
    #: A conversation's user messages, the prompt included (None: none), whether it said it
    #: was done, and its model's sessions.
    user_turns: int | None = None
    user_done: bool = False
    users: list[IterationRecord] = field(default_factory=list)
    #: The conversation so far, as the reflector judges it (its criteria are over all of it).
    conversation: str | None = None

    @property
    def completed(self) -> bool:
        return self.outcome.success

    @property
    def iterations(self) -> int:
        return self.outcome.iterations

    @property
    def all_records(self) -> list[IterationRecord]:
        return self.records + self.reflectors + self.users


@dataclass
class Rollback:
    """A later step's reflector found an earlier step's committed work wrong
    (docs/how-to/multi-step.md). In planner mode the planner then plans the steps from the
    target on anew (`replan`); the old plan's steps it did not keep are `dropped`."""

    source: str  # the step whose verdict asked for it
    attempt: int  # that step's attempt number
    target: str  # the step re-run from; its committed work and every later step's were wiped
    feedback: str  # the failure report the target's re-run (or the planner) was given
    replan: Plan | None = None
    dropped: list[StepResult] = field(default_factory=list)

    def to_dict(self) -> dict[str, object]:
        return {k: getattr(self, k) for k in ("source", "attempt", "target", "feedback")}


@dataclass
class StepResult:
    """One step of a multi-step spec: its attempts (re-runs after a rollback continue the
    numbering) and where its work was committed, if it still is."""

    id: str
    attempts: list[Attempt] = field(default_factory=list)
    committed: Path | None = None  # None: never committed, or wiped by a rollback
    runs: int = 0  # 1, plus one for each rollback that re-ran it; 0: never reached

    @property
    def passed(self) -> bool:
        return self.committed is not None and self.committed.is_dir()

    @property
    def decision(self) -> Decision:
        return self.attempts[-1].decision if self.attempts else "fail"


@dataclass
class Plan:
    """Planner mode: the steps a planner session wrote, or why they cannot run."""

    raw: Any = None  # the planner's JSON answer, as given
    path: Path | None = None  # where it was saved (the run folder's plan.json)
    steps: tuple[Step, ...] = ()
    error: str | None = None  # not valid steps: the agent's failure, never a crash
    failed: list[str] = field(default_factory=list)  # `plan_accept:` assertions failed
    record: IterationRecord | None = None  # the planner's session
    recalled: Recalled | None = None  # the plan came from the cassette: no session ran

    @property
    def passed(self) -> bool:
        return self.error is None and not self.failed

    def summary(self) -> str:
        """``plan: research, implement, test`` (or what went wrong with it)."""
        if self.error is not None:
            return f"plan: invalid ({self.error})"
        ids = ", ".join(s.id for s in self.steps) or "no steps"
        failed = "; ".join(f"plan_accept {f}" for f in self.failed)
        return f"plan: {ids}" + (f" - FAILED {failed}" if failed else "")


@dataclass
class SpecResult:
    """Everything a report needs about one spec run."""

    spec: Spec
    run_dir: Path
    #: Every attempt, in the order they ran (of every step); `final` is the last one.
    attempts: list[Attempt]
    duration: float
    threshold: float
    exchanges: list[Exchange] = field(default_factory=list)
    source: SourceKind = "scripted"  # what answered the CLI
    #: Replay requests that matched nothing, the first led by its likely cause.
    divergences: list[ReplayDivergence] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    drift: Drift | None = None  # what Claude Code changed around a replay (None: nothing)
    cassette: Path | None = None  # the cassette written by this run, if any
    trace: Path | None = None  # the JSON trace written for this run, if any
    harness_error: str | None = None  # e.g. a malformed verdict: never a pass
    script_error: str | None = None  # the spec's script could not answer: a spec error
    setup_output: str | None = None  # what the spec's `setup:` commands printed, if any
    #: What the set-up cache did: "restored <key>", "stored <key>", "not stored: <why>".
    setup_cache: str | None = None
    #: pytest-atom's own files the workspace copy left out, workspace-relative.
    left_out: tuple[str, ...] = ()
    upstream_faults: list[UpstreamFault] = field(default_factory=list)  # recording's, not got past
    #: Whose sessions a paid upstream answered, and whose a cassette recorded from a paid
    #: upstream: the CLI prices every session, even scripted or replayed ones, so its figure
    #: is spent only for the paid ones.
    paid: frozenset[str] = frozenset()
    replayed: frozenset[str] = frozenset()
    #: The limits the agent ran under, what it used of them, and the first one it crossed.
    limits: Limits = field(default_factory=Limits)
    usage: Usage = field(default_factory=Usage)
    limit_exceeded: Crossing | None = None
    #: A multi-step spec's steps, in spec order, and its rollbacks, in the order they happened.
    steps: list[StepResult] = field(default_factory=list)
    rollbacks: list[Rollback] = field(default_factory=list)
    plan: Plan | None = None  # planner mode: the first plan (re-plans: in `rollbacks`)
    #: What the answers through the gateway billed, by role: a cross-check (`billing_note`).
    billed: dict[str, Billed] = field(default_factory=dict)
    billed_usd: dict[str, float] = field(default_factory=dict)
    #: Of those, the steps billed on top of the answers: role -> kind -> (tokens, dollars).
    billed_steps: dict[str, dict[str, tuple[int, float]]] = field(default_factory=dict)
    #: What `report` renders with, handed in: reports build on results, never the reverse.
    renderer: Callable[[SpecResult], str] | None = field(default=None, repr=False, compare=False)
    #: The item's input digest and its parts (`outcome_cache.input_digest`), with the
    #: history store on; `cached_from`: the stored item reported instead of running this one.
    digest: str | None = None
    digest_parts: Mapping[str, str] = field(default_factory=dict)
    cached_from: CachedFrom | None = None

    @property
    def billed_tokens(self) -> int:
        return sum(used.tokens for used in self.billed.values())

    @property
    def uncounted(self) -> RoleUsage:
        """What the API billed that Claude Code's totals leave out (`steps_left_out`)."""
        return sum(
            (u for kinds in self.steps_left_out().values() for u in kinds.values()), RoleUsage()
        )

    def billing_note(self) -> str | None:
        """Where the streams billed another figure than Claude Code counted: by how much,
        and why; None when they agree or nothing passed through the gateway."""
        if not self.billed:
            return None
        streams = self.billed_tokens
        cli = sum(r.paid_tokens for r in self.records)  # a recalled session passes no gateway
        if streams == cli:
            return None
        left_out = self.uncounted.tokens
        if left_out and streams - cli == left_out:
            kinds = sorted({kind for kinds in self.steps_left_out().values() for kind in kinds})
            whose = " and ".join(f"{kind}'s" for kind in kinds)
            reason = f": Claude Code leaves {whose} {left_out} tokens out of its totals"
        elif streams > cli:
            reason = " (answers Claude Code did not count: cut-off streams, side requests)"
        else:
            reason = " (Claude Code counted answers the gateway did not pass)"
        return f"the API billed {streams} tokens, Claude Code counted {cli} ({streams - cli:+d}){reason}"

    def report(self) -> str:
        """The failure report a person reads (also handy as an assertion message)."""
        if self.renderer is None:
            raise RuntimeError(
                "this result was made without a renderer: render it with "
                "pytest_atom.reports.text.TEXT.render(result)"
            )
        return self.renderer(self)

    @property
    def final(self) -> Attempt:
        return self.attempts[-1]

    @property
    def final_attempts(self) -> list[Attempt]:
        """The attempts of the final attempt's step (all its runs), else every attempt."""
        if not self.steps or not self.attempts:
            return self.attempts
        final = self.final
        step = next((s for s in self.all_steps if any(a is final for a in s.attempts)), None)
        return step.attempts if step is not None else self.attempts

    @property
    def outcome(self) -> Outcome:
        """Passed, failed or error, and why: what every front end and report reads."""
        cached = self.cached_from
        if cached is not None:
            status: Status = "passed" if cached.passed else "failed"
            return Outcome(status, cached.line, xfail=self.spec.xfail)
        return decide(self.facts)

    @property
    def facts(self) -> RunFacts:
        checks = self.checks
        return RunFacts(
            attempts=len(self.attempts),
            decision=self.decision,
            score=self.score,
            threshold=self.threshold,
            completed=self.completed,
            reason=self.reason,
            checks_failed=sum(not c.passed for c in checks),
            checks=len(checks),
            xfail=self.spec.xfail,
            divergence=self.divergences[0].headline if self.divergences else None,
            harness_error=self.harness_error,
            script_error=self.script_error,
            upstream=self.upstream_failure or self.rejected_stream,
            limit_exceeded=self.limit_exceeded,
            plan_failed=not all(plan.passed for plan in self.plans),
            steps=self.steps_summary,
            steps_passed=all(step.passed for step in self.steps),
            gate=self.gate,
            unmet=tuple(self.unmet),
            advisory_unmet=tuple(self.unmet_of(advisory=True)),
        )

    @property
    def gate(self) -> Gate:
        """What passed or failed the final verdict (`outcome.effective_gate`)."""
        verdict = self.verdict
        gate = self.spec.reflector.gate
        return gate if verdict is None else effective_gate(gate, verdict.criteria)

    @property
    def unmet(self) -> list[str]:
        return self.unmet_of(advisory=False)

    def unmet_of(self, *, advisory: bool) -> list[str]:
        """The final verdict's unmet criteria, the advisory or the gated ones, each named as
        the spec writes it (the verdict's own wording when its count differs) with its
        votes: ``grader warm: … (1/3 votes met)``."""
        verdict = self.verdict
        if verdict is None:
            return []
        written = self.spec.criteria if len(self.spec.criteria) == len(verdict.criteria) else ()
        named = []
        for index, criterion in enumerate(verdict.criteria):
            if criterion.met or criterion.advisory != advisory:
                continue
            text = (written[index] if written else criterion.criterion).strip()
            text = text.splitlines()[0] if text else criterion.criterion
            why = NO_VERDICT if criterion.missing else criterion.tally
            named.append(f"{text} ({why})" if why else text)
        return named

    @property
    def passed(self) -> bool:
        """The agent did the task (whether or not the spec expected it to fail)."""
        return self.outcome.status == "passed"

    @property
    def upstream_failure(self) -> str | None:
        """What broke upstream, in a few words, when that is why a *recording* failed (an
        error, not the agent's failure): the gateway's account first, then the CLI's."""
        if self.source != "record" or not self.attempts or self.divergences:
            return None
        if (
            self.decision == "proceed"
            and all(s.passed for s in self.steps)
            and all(p.passed for p in self.plans)
        ):
            return None  # it got through: whatever the upstream did, it did not stop the run
        if self.rejected_stream:
            return self.rejected_stream
        if self.upstream_faults:
            return self.upstream_faults[0].what
        records = self.final.all_records
        if records and records[-1].api_error_status is not None:
            return f"API {records[-1].api_error_status}"
        statuses = [r.get("error_status") for rec in records for r in rec.api_retries]
        if statuses and self.reason in ("timeout", "error"):
            return f"API {statuses[-1]}" if statuses[-1] is not None else "API unreachable"
        return None

    @property
    def rejected_stream(self) -> str | None:
        """``Claude Code rejected the API's stream: …`` when the CLI gave up on a stream it
        could not read: an error of the stream, never the agent's failure."""
        if not self.attempts or self.divergences:
            return None
        for record in reversed(self.final.records):
            if record.rejected_stream:
                return f"Claude Code rejected the API's stream: {record.rejected_stream}"
        return None

    @property
    def plans(self) -> list[Plan]:
        """Planner mode: the first plan, then each re-plan after a rollback, in order."""
        first = [self.plan] if self.plan is not None else []
        return first + [r.replan for r in self.rollbacks if r.replan is not None]

    @property
    def current_plan(self) -> Plan | None:
        return self.plans[-1] if self.plans else None

    @property
    def steps_summary(self) -> str | None:
        """``steps 3/4``: committed steps of all; None for a single-prompt spec."""
        if not self.steps:
            return None
        return f"steps {sum(s.passed for s in self.steps)}/{len(self.steps)}"

    @property
    def decision(self) -> Decision:
        if self.cached_from is not None:
            return "proceed" if self.cached_from.passed else "fail"
        return self.final.decision if self.attempts else "fail"

    @property
    def verdict(self) -> Verdict | None:
        return self.final.verdict if self.attempts else None

    @property
    def score(self) -> float | None:
        if self.cached_from is not None:
            return self.cached_from.score
        return self.verdict.score if self.verdict else None

    @property
    def workspace(self) -> Path:
        """Where the outcome can be inspected: committed/ after a pass, else the last attempt."""
        committed = self.run_dir / "committed"
        if not self.attempts:  # none ran (--atom-cache reported a stored outcome)
            return committed if committed.is_dir() else self.run_dir
        return committed if self.passed and committed.is_dir() else self.final.path

    @property
    def completed(self) -> bool:
        return bool(self.attempts) and self.final.completed

    @property
    def reason(self) -> str | None:
        return self.final.outcome.reason if self.attempts else "error"

    @property
    def error(self) -> str | None:
        return self.final.outcome.error if self.attempts else None

    @property
    def checks(self) -> list[CheckResult]:
        return self.final.checks if self.attempts else []

    @property
    def all_steps(self) -> list[StepResult]:
        """The plan's steps, then those a re-plan dropped."""
        return [*self.steps, *(s for r in self.rollbacks for s in r.dropped)]

    @property
    def all_attempts(self) -> list[Attempt]:
        """Every attempt of the run, of dropped steps too."""
        if not self.steps:
            return self.attempts
        return [a for s in self.all_steps for a in s.attempts]

    @property
    def iterations(self) -> int:
        return sum(a.iterations for a in self.all_attempts)

    @property
    def user_turns(self) -> int | None:
        """The user's messages over every attempt, the prompt included (None: no conversation)."""
        turns = [a.user_turns for a in self.all_attempts if a.user_turns is not None]
        return sum(turns) if turns else None

    @property
    def user_done(self) -> bool:
        """The conversation's user said it was done (or said its last scripted message)."""
        return bool(self.attempts) and self.final.user_done

    @property
    def records(self) -> list[IterationRecord]:
        """Every CLI session of the run: the planner's, the executor's, the reflector's."""
        planner = [p.record for p in self.plans if p.record is not None]
        return planner + [r for a in self.all_attempts for r in a.all_records]

    @property
    def claude_seconds(self) -> float:
        """Time spent inside `claude` processes: the rest is the harness's overhead."""
        return sum(r.duration for r in self.records)

    @property
    def tokens(self) -> int:
        """Every session's tokens (`usage_by_role` splits them); a recalled one's as recorded."""
        return self.cli_tokens + self.uncounted.tokens

    @property
    def cli_tokens(self) -> int:
        """Every session's tokens as Claude Code counted them, failed tries included."""
        paid = sum(r.paid_tokens for r in self.records)
        return paid + sum(r.tokens for r in self.recalled)

    @property
    def recalled(self) -> list[Recalled]:
        """The sessions a replay took from the cassette: the planner's, then the reflectors'."""
        plans = [p.recalled for p in self.plans if p.recalled is not None]
        return plans + [r for a in self.all_attempts for r in a.recalled]

    @property
    def cost_usd(self) -> float:
        """Dollars spent: 0 for scripted and replayed runs, which call no API."""
        return self.costs()[0]

    @property
    def recorded_cost_usd(self) -> float:
        """What the replayed answers cost when they were recorded (not spent again)."""
        return self.costs()[1]

    def dollars(self) -> Dollars:
        """What the run spent and Claude Code's list price of its sessions."""
        return Dollars.of(self.cost_usd, self.usage_by_role())

    def costs(self, attempts: list[Attempt] | None = None) -> tuple[float, float]:
        """Dollars (spent, recorded) of `attempts` (default: every attempt, and the planner)."""
        spent = recorded = 0.0
        for attempt in self.all_attempts if attempts is None else attempts:
            recalled = sum(r.cost_usd for r in attempt.recalled)
            for role, records, usd in (
                ("executor", attempt.records + attempt.users, 0.0),  # the user's: billed alike
                ("reflector", attempt.reflectors, recalled),  # recalled votes: never spent again
            ):
                usd += sum(r.paid_cost_usd for r in records)  # failed tries included
                spent += usd if role in self.paid else 0.0
                recorded += usd if role in self.replayed else 0.0
        if attempts is None:  # the planner's sessions are billed as the executor's are
            usd = sum(p.record.cost_usd for p in self.plans if p.record is not None)
            usd += sum(p.recalled.cost_usd for p in self.plans if p.recalled is not None)
            spent += usd if "executor" in self.paid else 0.0
            recorded += usd if "executor" in self.replayed else 0.0
            for role, kinds in self.steps_left_out().items():  # what Claude Code leaves out
                usd = sum(u.cost_usd for u in kinds.values())
                payer = "reflector" if role == "reflector" else "executor"
                spent += usd if payer in self.paid else 0.0
                recorded += usd if payer in self.replayed else 0.0
            # A call stopped before Claude Code priced it was paid all the same: the floor.
            spent = max(spent, self.billed_paid_usd)
        return spent, recorded

    @property
    def billed_paid_usd(self) -> float:
        """The streams' price of the answers paid for (the planner's are the executor's)."""
        return sum(
            usd
            for role, usd in self.billed_usd.items()
            if ("reflector" if role == "reflector" else "executor") in self.paid
        )

    def failed_tries(self, attempts: list[Attempt] | None = None) -> tuple[int, RoleUsage]:
        """How many CLI calls failed and were retried, and what they cost, over `attempts`
        (default: every attempt): every other figure includes them; this shows them apart."""
        tries = [
            t
            for attempt in (self.all_attempts if attempts is None else attempts)
            for record in attempt.all_records
            for t in record.failed_tries
        ]
        return len(tries), RoleUsage(sum(t.tokens for t in tries), sum(t.cost_usd for t in tries))

    def usage_by_role(self, attempts: list[Attempt] | None = None) -> dict[str, RoleUsage]:
        """Tokens and Claude Code's price per kind of session (`ROLES`), of `attempts`
        (default: all, the planner, billed steps and `other`): they add up to `tokens` and to
        the dollars spent (or recorded)."""
        roles = self._sessions(attempts)
        if attempts is None:
            split_steps(roles, self.billed_steps)
            roles["other"] = self._unnamed(roles)
        return roles

    def _sessions(self, attempts: list[Attempt] | None = None) -> dict[str, RoleUsage]:
        """Each kind of session's tokens and price as Claude Code counted them."""
        roles = dict.fromkeys(ROLES, RoleUsage())
        for attempt in self.all_attempts if attempts is None else attempts:
            for r in _tries(attempt.records):
                sub = r.subagent_cost_usd  # a failed try's spend is its role's, as the last try's
                roles["executor"] += RoleUsage(r.main_tokens, r.cost_usd - sub)
                roles["subagents"] += RoleUsage(r.subagent_tokens, sub)
            for vote in _tries(attempt.reflectors):
                roles["reflector"] += RoleUsage(vote.tokens, vote.cost_usd)
            for again in attempt.recalled:  # as recorded: the figures a rerun gives
                roles["reflector"] += RoleUsage(again.tokens, again.cost_usd)
            for said in _tries(attempt.users):
                roles["user"] += RoleUsage(said.tokens, said.cost_usd)
        if attempts is None:
            for plan in self.plans:
                for used in (plan.record, plan.recalled):
                    if used is not None:
                        roles["planner"] += RoleUsage(used.tokens, used.cost_usd)
        if self.user_turns is None:  # no conversation: no user to show
            del roles["user"]
        return roles

    def steps_left_out(self) -> dict[str, dict[str, RoleUsage]]:
        """What the streams billed that Claude Code's totals leave out, by the gateway's role
        and the kind of step: compaction, and advisor steps it filed under no session."""
        return split_steps(self._sessions(), self.billed_steps)

    def _unnamed(self, roles: dict[str, RoleUsage]) -> RoleUsage:
        """What the run's figures hold that no role names, so the roles add up; dollars only
        when every session was paid or replayed (Claude Code prices a scripted answer too)."""
        named = sum(used.tokens for used in roles.values())
        spent, recorded = self.costs()
        ran = {"executor"} | ({"reflector"} if roles["reflector"].tokens else set())
        usd = spent + recorded - sum(used.cost_usd for used in roles.values())
        priced = ran <= (self.paid | self.replayed) and usd > 5e-7
        return RoleUsage(max(0, self.tokens - named), usd if priced else 0.0)

    @property
    def last_message(self) -> str:
        records = self.final.records if self.attempts else []
        return next((r.output or r.texts[-1] for r in reversed(records) if r.output or r.texts), "")


def _tries(records: list[IterationRecord]) -> list[IterationRecord]:
    """Each record's failed tries, then the record itself."""
    return [t for record in records for t in (*record.failed_tries, record)]
