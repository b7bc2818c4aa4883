"""Planner mode: a planner session turns a spec's `request:` into steps (seed 002).

The planner is a read-only Claude session, like the reflector, behind the run's one
gateway: its answer is scripted (a script's `planner:` turns), recorded into the cassette
and replayed. It answers through the CLI's ``--json-schema``; the steps it returns are
saved as ``plan.json`` in the run folder and checked exactly like hand-written ``steps:``
(`pytest_atom.spec.planned_steps`), then against the spec's `plan_accept:`. A plan that
fails either is the agent's failure, reported with the plan; a session that gives no
answer at all is the harness's.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_atom.core.prompts import PromptLoader
from pytest_atom.core.runner import ClaudeRunner
from pytest_atom.core.sandbox import Confinement
from pytest_atom.files import copy_ignore
from pytest_atom.judge.reflector import read_only_options
from pytest_atom.replay.gateway.scripted import PLAN_TITLE
from pytest_atom.result import Plan
from pytest_atom.spec import (
    STEP_ID,
    PlanAccept,
    Spec,
    SpecError,
    planned_steps,
)

#: The planner's structured answer. Loose on purpose: the CLI checks an answer against it
#: and would argue with the model over a bad id; `planned_steps` checks it instead, with
#: the spec's own messages. Its title tells planner requests from the reflector's.
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


class PlannerError(Exception):
    """The planner session gave no answer at all: a harness error, not a bad plan."""


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


def check_plan(spec: Spec, answer: Any, run_dir: Path, check_kinds: Sequence[str] = ()) -> Plan:
    """The planner's answer as a Plan: saved to ``plan.json``, validated, asserted on."""
    path = run_dir / "plan.json"
    text = json.dumps(answer, indent=2, ensure_ascii=False) + "\n"
    path.write_text(text, encoding="utf-8")
    plan = Plan(raw=answer, path=path)
    try:
        plan.steps = planned_steps(text, path, check_kinds=check_kinds)
    except SpecError as exc:
        plan.error = f"the planner's plan is not valid steps: {exc}"
        return plan
    plan.failed = plan_failures(spec.plan_accept, [s.id for s in plan.steps])
    return plan


def build_prompt(spec: Spec, prompts: PromptLoader | None = None, feedback: str = "") -> str:
    """PLANNER.md with the request (and a rollback's failure report, if any) filled in."""
    text = (prompts or PromptLoader()).load("planner")
    extra = f"\n\n## The failure report of the last plan\n\n{feedback}" if feedback else ""
    request = (spec.request or spec.prompt).strip()
    return text.replace("{feedback}", extra).replace("{request}", request)


def run_planner(
    spec: Spec,
    run_dir: Path,
    *,
    env: Mapping[str, str],
    claude_bin: Path,
    session_id: str,
    prompts: PromptLoader | None = None,
    model: str | None = None,
) -> tuple[Any, Any]:
    """The planner's JSON answer and its session record; raises PlannerError without one.

    It runs in ``plan/``, a copy of the spec's workspace it may read (research) but not
    change, with only the run's own empty Claude config (as the reflector).
    """
    folder = run_dir / "plan"
    if spec.workspace is not None:
        shutil.copytree(spec.workspace, folder, symlinks=True, ignore=copy_ignore)
    else:
        folder.mkdir(parents=True)
    runner = ClaudeRunner(
        env=env,
        options=read_only_options(PLAN_SCHEMA),
        model=model,
        claude_bin=claude_bin,
        confinement=Confinement(run_dir, sandbox=None),  # runs no commands
    )
    record = runner.run(
        build_prompt(spec, prompts),
        folder,
        session_id=session_id,
        use_context=False,
        timeout=spec.timeout,
    )
    if record.returncode != 0 or record.timed_out:
        detail = (record.output or record.stderr).strip()[-1000:] or f"exit {record.returncode}"
        raise PlannerError(f"the planner session failed: {detail}")
    if record.structured_output is None:
        raise PlannerError(
            "the planner gave no plan (no structured output); its last message: "
            f"{record.output.strip()[-500:] or '(none)'}"
        )
    return record.structured_output, record
