"""A run's figures by name, one key per figure: what the JUnit properties format records,
and what the summary table, the HTML page and `atom run --json` read.

Where to add: a new figure is one more key in `result_properties` (``atom_<name>``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pytest_atom.baseline.triggers import trigger_properties
from pytest_atom.datasets.select import case_properties
from pytest_atom.environment import left_out
from pytest_atom.reports.phrases import drift_line, environment_clue_of, step_line
from pytest_atom.results.verdict import UNFLOORED
from pytest_atom.settings.parsers import format_tolerance
from pytest_atom.spec.arms import arm_properties

if TYPE_CHECKING:
    from pytest_atom.results.spec_result import SpecResult


def result_properties(result: SpecResult) -> dict[str, Any]:
    return {
        "atom_decision": result.decision,
        "atom_score": "" if result.score is None else result.score,
        "atom_attempts": len(result.attempts),  # every attempt: of every step too
        "atom_iterations": result.iterations,
        # A conversation (`user:`): the user's messages, and whether the user was done.
        **(
            {"atom_user_turns": result.user_turns, "atom_user_done": result.user_done}
            if result.user_turns is not None
            else {}
        ),
        "atom_tokens": result.tokens,  # every session: executor, subagents, reflector, planner
        "atom_cost_usd": round(result.cost_usd, 6),  # spent: 0 when scripted or replayed
        **failed_try_properties(result),
        **billed_properties(result),
        "atom_recorded_cost_usd": round(result.recorded_cost_usd, 6),
        # Claude Code's price of every session, paid or not: what recording them costs.
        "atom_list_price_usd": round(result.dollars().list_price, 6),
        "atom_duration_s": round(result.duration, 3),
        "atom_claude_s": round(result.claude_seconds, 3),
        # The agent's own usage (the reflector's aside): what limits and baselines measure.
        "atom_turns": result.usage.turns,
        "atom_tool_calls": result.usage.tool_calls,
        "atom_agent_tokens": result.usage.tokens,
        "atom_agent_cost_usd": round(result.usage.cost_usd, 6),
        **({"atom_limit_exceeded": result.limit_exceeded} if result.limit_exceeded else {}),
        **({"atom_criteria_votes": votes} if (votes := criteria_votes(result)) else {}),
        **criteria_trust(result),
        **role_properties(result),
        **({"atom_recalled": recalled_roles(result)} if result.recalled else {}),
        "atom_source": result.source,
        # --atom-cache: the run whose stored outcome stood in for this one (nothing ran).
        **({"atom_cached": result.cached_from.run_id} if result.cached_from else {}),
        **({"atom_drift": drift} if (drift := drift_line(result.drift)) else {}),
        **({"atom_warnings": " | ".join(result.warnings)} if result.warnings else {}),
        **result.outcome.properties(),
        **({"atom_upstream_error": upstream} if (upstream := result.upstream_failure) else {}),
        "atom_sandbox": "off" if result.spec.sandbox is None else "on",
        # The spec's own tolerances: a later gate (`atom results combine`) reads them here.
        **(
            {"atom_baseline_tolerance": format_tolerance(own)}
            if (own := result.spec.baseline_tolerance)
            else {}
        ),
        **step_properties(result),
        **arm_properties(result.spec),
        **repeat_properties(result),
        **case_properties(result.spec),
        **trigger_properties(result),
        **environment_properties(result),
    }


def repeat_properties(result: SpecResult) -> dict[str, Any]:
    """``atom_repeats`` and ``atom_pass_at_least``, where the spec repeats or sets a count:
    a row carries them across xdist and shards to the exit status (`results.thresholds`)."""
    spec = result.spec
    props: dict[str, Any] = {}
    if (spec.repeats or 1) > 1 or spec.pass_at_least is not None:
        props["atom_repeats"] = spec.repeats or 1
    if spec.pass_at_least is not None:
        props["atom_pass_at_least"] = spec.pass_at_least
    return props


def criteria_votes(result: SpecResult) -> str | None:
    """``1 met 3/3 · 2 unmet 1/3``: each criterion's votes; None when one session judged."""
    verdict = result.verdict
    if verdict is None or not verdict.scores:
        return None
    return " · ".join(
        f"{n} {'met' if c.met else 'unmet'} {sum(c.votes)}/{len(c.votes)}"
        for n, c in enumerate(verdict.criteria, 1)
    )


def criteria_trust(result: SpecResult) -> dict[str, Any]:
    """Whether each criterion of the final verdict gated or was advisory, and why
    (``atom_criteria_trust``: ``1 gated (no calibration floor) · 2 advisory (calibration
    stale: …)``), and the counts the summary adds up across xdist workers."""
    verdict = result.verdict
    if verdict is None or not verdict.criteria:
        return {}
    advisory = verdict.advisory
    return {
        "atom_criteria_trust": " · ".join(
            f"{n} {(c.trust or UNFLOORED).line}" for n, c in enumerate(verdict.criteria, 1)
        ),
        "atom_criteria_gated": len(verdict.criteria) - len(advisory),
        "atom_criteria_unfloored": sum(
            (c.trust or UNFLOORED).reason == "unfloored" for c in verdict.criteria
        ),
        "atom_criteria_advisory": len(advisory),
        "atom_criteria_advisory_reasons": ", ".join(c.trust.reason for c in advisory if c.trust),
    }


def environment_properties(result: SpecResult) -> dict[str, Any]:
    """What points at the environment in a failure, and the caller variables left out."""
    clue = environment_clue_of(result)
    if clue is None:
        return {}
    names = left_out(result.spec.pass_env)
    return {
        "atom_environment": clue.quote,
        **({"atom_left_out_variables": ", ".join(names)} if names else {}),
    }


def billed_properties(result: SpecResult) -> dict[str, Any]:
    """What the streams billed, Claude Code's own figure, and where they differ and why."""
    if not result.billed:
        return {}
    props: dict[str, Any] = {
        "atom_billed_tokens": result.billed_tokens,
        "atom_cli_tokens": result.cli_tokens,
    }
    if note := result.billing_note():
        props["atom_billing_note"] = note
    return props


def failed_try_properties(result: SpecResult) -> dict[str, Any]:
    """CLI calls that failed and were retried, and their tokens and cost (which
    `atom_tokens` and `atom_cost_usd` already include), when there were any."""
    count, used = result.failed_tries()
    if not count:
        return {}
    return {
        "atom_failed_tries": count,
        "atom_failed_tries_tokens": used.tokens,
        "atom_failed_tries_cost_usd": round(used.cost_usd, 6),
    }


def role_properties(result: SpecResult) -> dict[str, Any]:
    """Each role's tokens and Claude Code's price of them (scripted and replayed too)."""
    props: dict[str, Any] = {}
    for role, used in result.usage_by_role().items():
        props[f"atom_{role}_tokens"] = used.tokens
        props[f"atom_{role}_cost_usd"] = round(used.cost_usd, 6)
    return props


def recalled_roles(result: SpecResult) -> str:
    return ", ".join(sorted({r.role.split(":")[0] for r in result.recalled}))


def step_properties(result: SpecResult) -> dict[str, Any]:
    """A multi-step spec's ``atom_step_<id>``; in planner mode ``atom_plan`` too."""
    plan: dict[str, Any] = {}
    current = result.current_plan
    if current is not None:
        replans = len(result.plans) - 1
        again = f" (re-planned after {replans} rollback{'s' * (replans != 1)})" if replans else ""
        passed = all(p.passed for p in result.plans)
        plan = {"atom_plan": current.summary() + again, "atom_plan_passed": passed}
    if not result.steps or not plan.get("atom_plan_passed", True):
        return plan
    return {
        **plan,
        "atom_steps": result.steps_summary,
        "atom_rollbacks": len(result.rollbacks),
        **{f"atom_step_{step.id}": step_line(step).partition(": ")[2] for step in result.steps},
    }
