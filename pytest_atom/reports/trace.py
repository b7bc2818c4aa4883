"""Invocation traces as data: one document per spec run, in the shape `trace_schema.json` states.

A trace says what ran (``atom_ref``), how it ended (``state``), under which limits, with
which effects and at what cost, with one child per attempt (a multi-step spec's: per step,
each with its attempts and rollbacks; a planner's rollback carries its re-plan).

Not a format itself: the JSON trace format writes it and the HTML page shows it.
"""

from __future__ import annotations

import json
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_atom.diffs import agent_files, changes
from pytest_atom.files import shown_content
from pytest_atom.replay.staleness import spec_hash
from pytest_atom.replay.transcript import permission_denials
from pytest_atom.reports.phrases import drift_line
from pytest_atom.results.record import IterationRecord
from pytest_atom.results.spec_result import Attempt, CachedFrom, Plan, SpecResult, StepResult
from pytest_atom.spec.types import CalibrationFloor, Spec

TRACE_SCHEMA: dict[str, Any] = json.loads(
    Path(__file__).with_name("trace_schema.json").read_text(encoding="utf-8")
)
TRACE_FORMAT = "pytest-atom/trace@1"
IMPLEMENTATION_KIND = "claude_code"
#: Tool calls that change files: what ``writes_files`` falls back on without a workspace.
_WRITING_TOOLS = frozenset({"Bash", "Edit", "MultiEdit", "Write", "NotebookEdit"})
#: An attempt's state in the trace, from its decision.
_CHILD_STATES = {"proceed": "succeeded", "refine": "refined", "fail": "failed"}
_DENIAL_INPUT_LIMIT = 200


@dataclass(frozen=True)
class TraceSession:
    """One CLI session of a run, with the transcript file it gets (None: no output)."""

    attempt: Attempt
    step: str | None  # the step of a multi-step spec
    role: str  # executor or reflector
    iteration: int
    record: IterationRecord
    transcript: str | None  # relative to the trace file


def trace_stem(result: SpecResult, repeat: int | None) -> str:
    """The trace's file name without ``.json``: ``<spec name>[.r<repeat>]``."""
    if repeat is not None and repeat < 0:
        raise ValueError(f"repeat must be 0 or more, got {repeat}")
    return result.spec.name + ("" if repeat is None else f".r{repeat}")


def trace_sessions(result: SpecResult, repeat: int | None) -> Iterator[TraceSession]:
    """Every CLI session of the run, in the order they ran, with its transcript's file."""
    folder = f"{trace_stem(result, repeat)}.transcripts"
    attempts: list[tuple[str | None, Attempt]] = [
        (step.id, a) for step in result.all_steps for a in step.attempts
    ] or [(None, a) for a in result.attempts]
    for step, attempt in attempts:
        roles = [("executor", i, r) for i, r in enumerate(attempt.records, 1)]
        roles += [("reflector", vote, r) for vote, r in enumerate(attempt.reflectors, 1)]
        roles += [("user", turn, r) for turn, r in enumerate(attempt.users, 1)]
        for role, iteration, record in roles:
            name = f"{f'{step}-' if step else ''}a{attempt.number:02d}-{role}-{iteration}.jsonl"
            transcript = f"{folder}/{name}" if record.stdout else None
            yield TraceSession(attempt, step, role, iteration, record, transcript)


def _invocation_id(result: SpecResult, suffix: str = "") -> str:
    """Stable for a run: derived from its folder's name, which is unique per run."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"pytest-atom:run:{result.run_dir.name}{suffix}"))


def atom_ref(result: SpecResult) -> str:
    spec = result.spec
    return f"spec:{spec.path.name}::{spec.name}@{spec_hash(spec)}"


def _ms(seconds: float) -> int:
    return max(0, round(seconds * 1000))


def _cost(
    result: SpecResult, attempts: list[Attempt] | None, wall_seconds: float | None = None
) -> dict[str, Any]:
    """The cost of `attempts` (None: the whole run), over `wall_seconds` (None: its sessions')."""
    if attempts is None:
        records, recalled = result.records, 0
    else:
        records = [r for a in attempts for r in a.all_records]
        recalled = sum(r.tokens for a in attempts for r in a.recalled)
    usd, by_role = result.costs(attempts), result.usage_by_role(attempts)
    claude_seconds = sum(r.duration for r in records)
    return {
        "usd": usd[0],
        "recorded_usd": usd[1],
        # Claude Code's price of every session, paid or not (`cost.usage.Dollars`).
        "list_price_usd": round(sum(used.cost_usd for used in by_role.values()), 6),
        "tokens": sum(r.paid_tokens for r in records) + recalled,  # failed tries included
        "failed_tries": {
            "count": sum(len(r.failed_tries) for r in records),
            "tokens": sum(r.tries_tokens for r in records),
            "usd": round(sum(r.tries_cost_usd for r in records), 6),
        },
        "by_role": {role: used.to_dict() for role, used in by_role.items()},
        "wall_time_ms": _ms(claude_seconds if wall_seconds is None else wall_seconds),
        "claude_time_ms": _ms(claude_seconds),
        "dispatched_runs": len(records),
    }


def _billed(result: SpecResult) -> dict[str, Any]:
    if not result.billed:
        return {}
    return {
        "billed_tokens": result.billed_tokens,
        "cli_tokens": result.cli_tokens,
        "billing_note": result.billing_note(),
    }


def _session_entry(session: TraceSession) -> dict[str, Any]:
    r = session.record
    return {
        "role": session.role,
        "iteration": session.iteration,
        "session_id": r.session_id,
        "transcript": session.transcript,
        "returncode": r.returncode,
        "is_error": r.is_error,
        "timed_out": r.timed_out,
        "num_turns": r.num_turns,
        "duration_s": r.duration,
        "tokens": r.tokens,
        "cost_usd": r.cost_usd,
        "subagent_tokens": r.subagent_tokens,
        "subagent_cost_usd": round(r.subagent_cost_usd, 6),
    }


def _step_child(
    result: SpecResult, step: StepResult, sessions: list[TraceSession], parent_ref: str
) -> dict[str, Any]:
    ref = f"{parent_ref}#step-{step.id}"
    state = "succeeded" if step.passed else ("failed" if step.runs else "not_run")
    if any(step is d for r in result.rollbacks for d in r.dropped):
        state = "dropped"
    rollbacks = [
        {
            "invocation_id": _invocation_id(result, f"#rollback-{n}"),
            "atom_ref": f"{ref}#rollback-{n}",
            "implementation_kind": IMPLEMENTATION_KIND,
            "state": "succeeded",
            "decision": "rollback",
            **rollback.to_dict(),
            "replan": _plan(rollback.replan),
            "children": [],
            "errors": [],
        }
        for n, rollback in enumerate(result.rollbacks, 1)
        if rollback.source == step.id
    ]
    return {
        "invocation_id": _invocation_id(result, f"#step-{step.id}"),
        "atom_ref": ref,
        "implementation_kind": IMPLEMENTATION_KIND,
        "state": state,
        "step_id": step.id,
        "runs": step.runs,
        "committed": str(step.committed) if step.committed else None,
        "cost": _cost(result, list(step.attempts)),
        "children": [_child(result, a, sessions, ref) for a in step.attempts] + rollbacks,
        "errors": [],
    }


def _child(
    result: SpecResult, attempt: Attempt, sessions: list[TraceSession], parent_ref: str
) -> dict[str, Any]:
    harness_failed = result.harness_error is not None and attempt is result.final
    errors = [result.harness_error] if harness_failed and result.harness_error else []
    if attempt.outcome.error:
        errors.append(attempt.outcome.error)
    executor_seconds = attempt.outcome.duration
    if not executor_seconds:  # interrupted before the runtime reported: the CLI's own time
        executor_seconds = sum(r.duration for r in attempt.records)
    reflector_seconds = sum(r.duration for r in attempt.reflectors)
    step = parent_ref.rpartition("#step-")[2] if "#step-" in parent_ref else ""
    return {
        "invocation_id": _invocation_id(result, f"{step}#attempt-{attempt.number}"),
        "atom_ref": f"{parent_ref}#attempt-{attempt.number}",
        "implementation_kind": IMPLEMENTATION_KIND,
        "state": "error" if harness_failed else _CHILD_STATES.get(attempt.decision, "failed"),
        "decision": attempt.decision,
        "completed": attempt.completed,
        "reason": attempt.outcome.reason,
        "iterations": attempt.iterations,
        "workspace": str(attempt.path),
        "checks": [
            {
                "kind": c.check.kind,
                "describe": c.check.describe(),
                "passed": c.passed,
                "summary": c.summary,
                "evidence": c.evidence,
            }
            for c in attempt.checks
        ],
        "verdict": attempt.verdict.to_dict() if attempt.verdict else None,
        "verdict_source": _verdict_source(attempt),
        "cost": _cost(result, [attempt], executor_seconds + reflector_seconds),
        "sessions": [_session_entry(s) for s in sessions if s.attempt is attempt],
        "children": [],
        "errors": errors,
    }


def _verdict_source(attempt: Attempt) -> str | None:
    """``reflector`` (a session judged), ``recalled`` (replayed verdict), None (no verdict)."""
    if attempt.verdict is None:
        return None
    return "recalled" if attempt.recalled and not attempt.reflectors else "reflector"


def _permission_denials(session: TraceSession) -> list[str]:
    found = []
    for denial in permission_denials(session.record.events):
        tool_input = json.dumps(denial.tool_input, ensure_ascii=False)
        if len(tool_input) > _DENIAL_INPUT_LIMIT:
            tool_input = tool_input[: _DENIAL_INPUT_LIMIT - 1] + "…"
        found.append(
            f"attempt {session.attempt.number} {session.role} iteration "
            f"{session.iteration}: permission denied for {denial.tool_name} {tool_input}"
        )
    return found


def _writes_files(result: SpecResult, executor_calls: Counter[str]) -> bool:
    """Whether the agent's work (the last attempt's folder, which holds every attempt's)
    differs from the fixture; once that folder is gone, a file-changing call counts."""
    if not result.attempts or not result.final.path.is_dir():
        return any(executor_calls[name] for name in _WRITING_TOOLS)
    diff = changes(result.final.path)  # a workspace copied from git: its snapshot's diff
    if diff is not None:
        return bool(diff.strip())
    # Links and special files compared as what they are, never followed nor opened.
    before, after = agent_files(result.spec.workspace), agent_files(result.final.path)
    if before.keys() != after.keys():
        return True
    return any(shown_content(before[name]) != shown_content(after[name]) for name in after)


def build_trace(result: SpecResult, *, repeat: int | None = None) -> dict[str, Any]:
    """The invocation trace of one spec run, unscrubbed (`write_report` scrubs it)."""
    spec = result.spec
    ref = atom_ref(result)
    sessions = list(trace_sessions(result, repeat))
    outcome = result.outcome
    state = {"passed": "succeeded", "failed": "failed", "error": "error"}[outcome.status]
    errors = ([result.harness_error] if result.harness_error else []) + [
        f"replay divergence: {d}" for d in result.divergences
    ]
    trace = {
        "invocation_id": _invocation_id(result),
        "atom_ref": ref,
        "implementation_kind": IMPLEMENTATION_KIND,
        "state": state,
        "output_shape": {
            "valid": result.verdict is not None or not spec.criteria,
            "schema_ref": "reflector.verdict" if spec.criteria else None,
            "errors": [result.harness_error] if result.harness_error else [],
        },
        "effective_limits": _effective_limits(result),
        "effects_observed": _effects_observed(result, sessions),
        "cost": {
            **_cost(result, None, result.duration),
            **_billed(result),
            # The spec's one figure, as every report shows it: recalled sessions included.
            "tokens": result.tokens,
        },
        "children": [_step_child(result, s, sessions, ref) for s in result.all_steps]
        or [_child(result, a, sessions, ref) for a in result.attempts],
        "errors": errors,
        "atom": _atom_section(result, sessions, repeat),
    }
    # Tuples (verdict criteria) become lists: exactly what a reader of the file gets back.
    data: dict[str, Any] = json.loads(json.dumps(trace, ensure_ascii=False))
    return data


def _effective_limits(result: SpecResult) -> dict[str, Any]:
    spec = result.spec
    return {
        "max_iterations": spec.max_iterations,
        "attempts": spec.attempts,
        "timeout_s": spec.timeout,
        "threshold": result.threshold,
        "permission_mode": spec.claude.permission_mode,
        "allowed_tools": list(spec.claude.allowed_tools),
        **result.limits.to_dict(),
        "timeout": spec.timeout,
    }


def _effects_observed(result: SpecResult, sessions: list[TraceSession]) -> dict[str, Any]:
    executor_calls: Counter[str] = Counter(
        call.name for s in sessions if s.role == "executor" for call in s.record.tool_calls
    )
    return {
        "writes_files": _writes_files(result, executor_calls),
        "tool_calls": dict(sorted(executor_calls.items())),
        "dispatches_runs": len(sessions),
        "violations": [v for s in sessions for v in _permission_denials(s)]
        + ([result.limit_exceeded] if result.limit_exceeded else []),
        "usage": result.usage.to_dict(),
        "limit_exceeded": result.limit_exceeded,
    }


def _floor(floor: CalibrationFloor) -> dict[str, Any]:
    return {"min_kappa": floor.min_kappa, "min_samples": floor.min_samples}


def _atom_section(
    result: SpecResult, sessions: list[TraceSession], repeat: int | None
) -> dict[str, Any]:
    spec = result.spec
    return {
        "format": TRACE_FORMAT,
        "spec": {
            "name": spec.name,
            "file": spec.path.name,
            "path": str(spec.path),
            "hash": spec_hash(spec),
            "description": spec.description,
            "model": spec.model,
            "criteria": list(spec.criteria),
            **(
                {"criteria_floors": {t: _floor(f) for t, f in spec.criteria_floors.items()}}
                if spec.criteria_floors
                else {}
            ),
            **({"arm": spec.arm, "arm_reference": spec.arm_reference} if spec.arm else {}),
            **_repeats(spec),
            **({"case": spec.case, "case_vars": dict(spec.case_vars)} if spec.case else {}),
        },
        "source": result.source,
        "run_dir": str(result.run_dir),
        "workspace": str(result.workspace) if result.attempts else None,
        "cassette": str(result.cassette) if result.cassette else None,
        "claude_code_version": next(
            (s.record.cli_version for s in sessions if s.record.cli_version), None
        ),
        "passed": result.passed,
        "outcome": {"label": result.outcome.label, "why": result.outcome.why},
        "decision": result.decision,
        "score": result.score,
        "iterations": result.iterations,
        "warnings": list(result.warnings),
        "drift": drift_line(result.drift),
        "setup_output": result.setup_output,
        "setup_cache": result.setup_cache,
        "left_out": list(result.left_out),
        "repeat": repeat,
        "steps": result.steps_summary,
        "plan": _plan(result.plan),
        **({"cached": _cached(result.cached_from)} if result.cached_from is not None else {}),
    }


def _cached(cached: CachedFrom) -> dict[str, Any]:
    return {
        "run_id": cached.run_id,
        "started": cached.started,
        "outcome": cached.outcome,
        "why": cached.why,
        "wall_seconds": cached.wall_seconds,
        "tool_calls": list(cached.tool_calls),
    }


def _repeats(spec: Spec) -> dict[str, Any]:
    """How many runs the spec has and must pass, where it repeats or sets a count."""
    if (spec.repeats or 1) == 1 and spec.pass_at_least is None:
        return {}
    return {"repeats": spec.repeats or 1, "pass_at_least": spec.pass_at_least}


def _plan(plan: Plan | None) -> dict[str, Any] | None:
    """Planner mode: the spec's first plan, or a rollback's re-plan."""
    if plan is None:
        return None
    return {
        "steps": [{"id": s.id, "prompt": s.prompt} for s in plan.steps],
        "passed": plan.passed,
        "error": plan.error,
        "plan_accept_failed": list(plan.failed),
        "file": str(plan.path) if plan.path else None,
        # The replay took the recorded plan: no planner session ran (pytest_atom.replay.recall).
        "recalled": plan.recalled is not None,
    }
