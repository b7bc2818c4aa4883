"""Planner mode: a planner session turns a spec's `request:` into steps (docs/how-to/multi-step.md).

The planner is a read-only Claude session, like the reflector, behind the run's gateway
(scripted, recorded and replayed alike). It answers through the CLI's ``--json-schema``;
its steps are saved as ``plan.json`` and checked like hand-written ``steps:``, then
against the spec's `plan_accept:`. A plan that fails either is the agent's failure; a
session that gives no answer is the harness's.

After a rollback the planner is asked again (``plan-2.json``, in ``plan-2/``) with the
failure report: it keeps the committed steps before the target and plans the rest anew.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pytest_atom.agents.protocol import Agent
from pytest_atom.errors import PlannerError, SpecError, StructuredSessionError
from pytest_atom.files import copy_ignore, copy_tree
from pytest_atom.judge.reflector import read_only_options
from pytest_atom.prompts import PromptLoader
from pytest_atom.replay.recall import SessionInput
from pytest_atom.results.spec_result import Plan
from pytest_atom.run.workspace import copy_workspace, fixture_source
from pytest_atom.spec.types import STEP_ID, PlanAccept, Spec, Step
from pytest_atom.spec_loader.build import planned_steps
from pytest_atom.wire.roles import PLAN_TITLE

#: The planner's answer. Loose on purpose: the CLI would argue with the model over a bad
#: id; `planned_steps` checks it instead, with the spec's own messages.
PLAN_SCHEMA: dict[str, Any] = {
    "title": PLAN_TITLE,
    "type": "object",
    "required": ["steps"],
    "properties": {
        "steps": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["id", "prompt"],
                "properties": {
                    "id": {"type": "string", "description": f"matches {STEP_ID}"},
                    "prompt": {"type": "string"},
                    "description": {"type": "string"},
                    "criteria": {"type": "array", "items": {"type": "string"}},
                    "accept": {"type": "array", "items": {"type": "object"}},
                },
            },
        }
    },
}


def plan_failures(accept: PlanAccept | None, ids: Sequence[str]) -> list[str]:
    """The `plan_accept:` assertions the plan's step ids fail, each named with why."""
    if accept is None:
        return []
    failed: list[str] = []
    shown = ", ".join(ids) or "none"
    if accept.has_step is not None and not any(re.search(accept.has_step, i) for i in ids):
        failed.append(f"has_step {accept.has_step!r}: no step id matches (steps: {shown})")
    if accept.min_steps is not None and len(ids) < accept.min_steps:
        failed.append(f"min_steps {accept.min_steps}: the plan has {len(ids)} ({shown})")
    if accept.max_steps is not None and len(ids) > accept.max_steps:
        failed.append(f"max_steps {accept.max_steps}: the plan has {len(ids)} ({shown})")
    return failed


def check_plan(
    spec: Spec,
    answer: Any,
    run_dir: Path,
    check_kinds: Sequence[str] = (),
    *,
    number: int = 1,
    kept: Sequence[Step] = (),
) -> Plan:
    """The planner's answer as a Plan: saved, validated, asserted on (a re-plan's steps
    follow the `kept` ones; `plan_accept:` asserts on the whole)."""
    path = run_dir / ("plan.json" if number == 1 else f"plan-{number}.json")
    text = json.dumps(answer, indent=2, ensure_ascii=False) + "\n"
    path.write_text(text, encoding="utf-8")
    plan = Plan(raw=answer, path=path)
    try:
        planned = planned_steps(text, path, check_kinds=check_kinds)
    except SpecError as exc:
        plan.error = f"the planner's plan is not valid steps: {exc}"
        return plan
    taken = sorted({s.id for s in kept} & {s.id for s in planned})
    if taken:
        plan.error = (
            f"the planner's plan is not valid steps: {', '.join(map(repr, taken))} "
            f"{'is' if len(taken) == 1 else 'are'} already the id of a committed step it was "
            f"told to keep ({', '.join(s.id for s in kept)}); a re-plan gives only the steps "
            "after them, each with an id of its own"
        )
        return plan
    plan.steps = (*kept, *planned)
    plan.failed = plan_failures(spec.plan_accept, [s.id for s in plan.steps])
    return plan


def replan_feedback(steps: Sequence[Step], target: int, report: str) -> str:
    """What the planner hears after a rollback: its plan, what stays, and the report."""
    kept = steps[:target]
    listed = "\n".join(
        f"{n}. `{s.id}`{' (committed: it stays)' if n <= target else ''}: "
        f"{' '.join(s.prompt.split())[:200]}"
        for n, s in enumerate(steps, 1)
    )
    stays = (
        f"The steps before it ({', '.join(f'`{s.id}`' for s in kept)}) stay committed; the "
        "folder you are in holds their work. Answer with the steps that come after them "
        "only, each with an id none of them has."
        if kept
        else "No step stays committed; the folder you are in is where the first step starts. "
        "Answer with a whole new plan."
    )
    return (
        f"Your plan was:\n\n{listed}\n\nThe run was rolled back to step `{steps[target].id}`: "
        f"its work and every later step's were wiped. {stays} Change the strategy (a "
        "different approach, order or decomposition), not just a parameter.\n\n"
        f"The failure report, as the rolled-back step would have heard it:\n\n{report}"
    )


def build_prompt(spec: Spec, prompts: PromptLoader | None = None, feedback: str = "") -> str:
    """PLANNER.md with the request and a re-plan's brief filled in (added at the end of a
    project's own PLANNER.md without a ``{feedback}`` slot)."""
    text = (prompts or PromptLoader()).load("planner")
    extra = f"\n\n## A rollback: plan again\n\n{feedback}" if feedback else ""
    if feedback and "{feedback}" not in text:
        text = text.rstrip("\n") + "{feedback}\n"
    request = (spec.request or spec.prompt).strip()
    values = {"request": request, "feedback": extra}  # one pass: neither fills in the other
    return re.sub(r"\{(request|feedback)\}", lambda m: values[m[1]], text)


def planner_folder(spec: Spec, run_dir: Path, start: Path | None, number: int = 1) -> Path:
    """Where the planner runs, made: a copy of `start` (the spec's workspace, or the work
    committed before a rollback's target)."""
    folder = run_dir / ("plan" if number == 1 else f"plan-{number}")
    if start is not None and start == spec.workspace and not start.is_relative_to(run_dir):
        copy_workspace(fixture_source(spec, run_dir.parent), folder)  # the spec's own, afresh
    elif start is not None:
        copy_tree(start, folder, ignore=copy_ignore)
    else:
        folder.mkdir(parents=True)
    return folder


def planner_input(
    spec: Spec, prompts: PromptLoader | None = None, feedback: str = "", model: str | None = None
) -> SessionInput:
    """The planner's whole request but its folder: what a replay compares to recall it."""
    return SessionInput(
        build_prompt(spec, prompts, feedback), read_only_options(PLAN_SCHEMA), model
    )


def run_planner(
    session: SessionInput, folder: Path, *, agent: Agent, session_id: str, timeout: float | None
) -> tuple[Any, Any]:
    """The planner's JSON answer and its session record; PlannerError without one."""
    try:
        return agent.structured(session.prompt, folder, session_id=session_id, timeout=timeout)
    except StructuredSessionError as exc:
        raise PlannerError(str(exc)) from None
