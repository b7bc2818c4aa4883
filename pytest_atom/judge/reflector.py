"""The reflector: a read-only Claude session that judges an attempt (docs/explanation/reflector.md).

It runs through the same gateway as the executor, so its verdict is scripted, recorded
and replayed like every other exchange. It answers through the CLI's ``--json-schema``
(a structured-output tool call), and a missing or malformed answer is an error of the
harness: never a silent pass.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pytest_atom.agents.claude_code import configuration
from pytest_atom.agents.protocol import Agent
from pytest_atom.diffs import workspace_diff
from pytest_atom.errors import ReflectorError, StructuredSessionError
from pytest_atom.prompts import PromptLoader
from pytest_atom.replay.normalize import mask_durations
from pytest_atom.replay.recall import SessionInput
from pytest_atom.replay.scrub import Scrubber
from pytest_atom.results.check_result import CheckResult
from pytest_atom.results.outcome import (
    judge as judge,  # the attempt's decision; execution reads it here
)
from pytest_atom.results.record import IterationRecord
from pytest_atom.results.verdict import CriterionVerdict, Verdict
from pytest_atom.spec.types import ClaudeOptions, Spec
from pytest_atom.wire.verdict_schema import STEP_VERDICT_SCHEMA as STEP_VERDICT_SCHEMA
from pytest_atom.wire.verdict_schema import VERDICT_SCHEMA as VERDICT_SCHEMA
from pytest_atom.words import Scrubbed, clip

#: The most characters the reflector's prompt quotes of each piece of evidence (a longer one
#: is clipped in its middle): some 50,000 tokens in all, a quarter of a 200,000-token window,
#: as a 5 MB final message made the CLI refuse the session. The diff, the work, gets the most.
REFLECTOR_BUDGET = {
    "task": 30_000,
    "checks": 40_000,  # all checks together
    "check_evidence": 10_000,  # each check's evidence
    "diff": 100_000,
    "final_message": 30_000,
}
#: Read-only: the reflector inspects the attempt, it never changes it.
READ_ONLY_TOOLS = ("Read", "Grep", "Glob")


def read_only_options(schema: dict[str, Any]) -> ClaudeOptions:
    """A session that reads and answers as JSON (the reflector, the planner): not ``--bare``,
    read-only tools, only the run's own empty user settings (nothing an agent wrote)."""
    return ClaudeOptions(
        permission_mode="default",
        allowed_tools=READ_ONLY_TOOLS,
        bare=False,
        args=(
            "--tools",
            ",".join(READ_ONLY_TOOLS),
            "--setting-sources",
            "user",
            "--json-schema",
            json.dumps(schema),
        ),
    )


def vote_role(role: str, vote: int) -> str:
    """The role of one vote's session; the first vote keeps the single session's role, so a
    spec that adds votes keeps its first (and its pinned session id)."""
    return role if vote == 1 else f"{role}:v{vote}"


def again_role(role: str) -> str:
    """The role of the session that asks again when a verdict left a criterion out."""
    return f"{role}:again"


def combine_votes(votes: Sequence[Verdict]) -> Verdict:
    """One verdict from the verdicts of independent reflector sessions on one attempt.

    A criterion is met when more than half of the votes say so (as ``claude plugin eval``
    does), votes aligned by the criteria's numbers, a criterion left out counting as not met.
    The score is the median: one wild session cannot move it, and it passes the threshold
    exactly when most votes do. The decision, feedback and rollback target are the median
    vote's, so they explain its score; a flaky note from any vote is kept."""
    if not votes:
        raise ValueError("combine_votes needs at least one verdict")
    if len(votes) == 1:
        return votes[0]
    ranked = sorted(range(len(votes)), key=lambda n: votes[n].score)
    middle = votes[ranked[(len(votes) - 1) // 2]]
    median = (
        middle.score
        if len(votes) % 2
        else (middle.score + votes[ranked[len(votes) // 2]].score) / 2
    )
    criteria = []
    for index in range(max(len(v.criteria) for v in votes)):
        said = [v.criteria[index] if index < len(v.criteria) else None for v in votes]
        ballots = tuple(c is not None and c.met for c in said)
        met = sum(ballots) * 2 > len(ballots)
        named = next(c for c in said if c is not None)
        # the evidence of a vote on the winning side, so it explains the outcome shown
        evidence = next((c.evidence for c in said if c is not None and c.met == met), "")
        missing = all(c is None or c.missing for c in said)
        criteria.append(CriterionVerdict(named.criterion, met, evidence, ballots, missing=missing))
    flaky = tuple(dict.fromkeys(note for v in votes for note in v.flaky))
    return Verdict(
        score=median,
        decision=middle.decision,
        criteria=tuple(criteria),
        feedback=middle.feedback,
        flaky=flaky,
        target=middle.target,
        scores=tuple(v.score for v in votes),
    )


def build_prompt(
    spec: Spec,
    checks: Sequence[CheckResult],
    diff: str,
    final_message: str,
    threshold: float,
    prompts: PromptLoader | None = None,
    earlier_steps: Sequence[str] = (),
) -> str:
    """REFLECTOR.md with the evidence filled in, each part scrubbed before its budget cuts
    it (no cut splits a secret). The rollback rule is added only with `earlier_steps`, so a
    single-prompt spec's prompt (and its cassettes) stays as it was."""
    budget, scrub = REFLECTOR_BUDGET, Scrubber().scrub
    # Check output is tool output: its wall times would make every prompt unique.
    check_lines = [
        f"- {'PASS' if c.passed else 'FAIL'} {c.check.describe()}: {mask_durations(c.summary)}"
        + (f"\n  evidence:\n{_quote(_evidence(scrub(c.evidence)))}" if c.evidence else "")
        for c in checks
    ]
    values = {
        "{task}": clip(
            scrub(spec.prompt.strip()), budget["task"], f"the whole task is in {spec.path.name}"
        ),
        "{criteria}": "\n".join(f"{i}. {c}" for i, c in enumerate(spec.criteria, 1)),
        "{checks}": clip(
            scrub("\n".join(check_lines)), budget["checks"], "the run's report has every check"
        )
        or "(none)",
        "{diff}": "```diff\n"
        + clip(scrub(diff), budget["diff"], "read the changed files themselves for the rest")
        + "\n```",
        "{final_message}": _quote(
            clip(
                scrub(final_message),
                budget["final_message"],
                "the whole message is in the agent's transcript in the run folder",
            )
            or "(none)"
        ),
        "{threshold}": f"{threshold:g}",
        "{rollback}": _rollback_rule(earlier_steps),
    }
    text = (prompts or PromptLoader()).load("reflector")
    for placeholder, value in values.items():
        text = text.replace(placeholder, value)
    return text


def _rollback_rule(earlier_steps: Sequence[str]) -> str:
    if not earlier_steps:
        return ""
    names = ", ".join(f"`{s}`" for s in earlier_steps)
    return (
        "\n- This is one step of several; the earlier steps' work is committed and this "
        "attempt started from it. If the failure comes from an earlier step's work, answer "
        f"`rollback` with `target` set to that step's id (one of {names}): its work and "
        "every later step's is redone, with your feedback. Otherwise leave `target` out."
    )


def _evidence(text: Scrubbed) -> str:
    return clip(
        Scrubbed(mask_durations(text)),  # durations become a placeholder: still scrubbed
        REFLECTOR_BUDGET["check_evidence"],
        "the run's report has it whole",
    )


def _quote(text: str) -> str:
    return "\n".join("    " + line for line in text.rstrip().splitlines()) or "    (empty)"


def verdict_schema(earlier_steps: Sequence[str] = ()) -> dict[str, Any]:
    return STEP_VERDICT_SCHEMA if earlier_steps else VERDICT_SCHEMA


def attempt_diff(
    spec: Spec, attempt_dir: Path, scrub: Callable[[str], Scrubbed] | None = None
) -> Scrubbed:
    """What the agent changed in `attempt_dir`, as the reflector is shown it (the HTML report
    and a calibration sample show the same): against the spec's workspace, without what the
    harness installed (the spec's Claude Code configuration), scrubbed before it is cut."""
    return workspace_diff(
        spec.workspace,
        attempt_dir,
        installed=configuration.installed_paths(spec.claude),
        scrub=scrub or Scrubber().scrub,
    )


def reflector_input(
    spec: Spec,
    attempt_dir: Path,
    checks: Sequence[CheckResult],
    final_message: str,
    threshold: float,
    prompts: PromptLoader | None = None,
    earlier_steps: Sequence[str] = (),
) -> SessionInput:
    """The reflector's whole request but its folder: what a replay compares to recall it."""
    diff = attempt_diff(spec, attempt_dir)
    return SessionInput(
        build_prompt(spec, checks, diff, final_message, threshold, prompts, earlier_steps),
        read_only_options(verdict_schema(earlier_steps)),
        spec.reflector.model or spec.model,
    )


def run_reflector(
    session: SessionInput,
    attempt_dir: Path,
    *,
    agent: Agent,
    session_id: str,
    timeout: float | None,
) -> tuple[Verdict, IterationRecord]:
    """Judge one attempt on `session` (all the judge is told of the spec); ReflectorError
    when no valid verdict comes back. `agent` is the factory's reflector: only the setting
    source ``user`` (the run's own, empty), since the attempt folder's CLAUDE.md and
    .claude/ settings were the agent's to write, and must not instruct the judge."""
    try:
        answer, record = agent.structured(
            session.prompt, attempt_dir, session_id=session_id, timeout=timeout
        )
    except StructuredSessionError as exc:
        raise ReflectorError(str(exc)) from None
    return Verdict.parse(answer), record
