"""The text report format: what a person needs to act on a failed spec run.

The same text serves the pytest failure report, the `atom` command and `SpecResult.report()`;
its parts (`verdict_line`, `agent_line`, `tool_problem`) serve `atom validate` and `atom
run`'s progress.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pytest_atom.agents.protocol import agent_kind
from pytest_atom.environment import network_hint
from pytest_atom.inert import inert
from pytest_atom.paths import display_path
from pytest_atom.replay.scrub import Scrubber
from pytest_atom.replay.transcript import hook_words, permission_denials, refused_by
from pytest_atom.reports.format import ReportFormat
from pytest_atom.reports.phrases import drift_line, environment_clue_of, step_line
from pytest_atom.results.verdict import ADVISORY_WORDS
from pytest_atom.words import plural, shorten

if TYPE_CHECKING:
    from pytest_atom.results.record import ToolCall
    from pytest_atom.results.spec_result import CachedFrom, Plan, Rollback, SpecResult
    from pytest_atom.results.verdict import Verdict

_EVIDENCE_LINES = 20
_TOOL_PROBLEMS_SHOWN = 10
#: A refused tool call the tool itself did not flag as an error (a sandboxed write).
_REFUSAL = re.compile(
    r"Read-only file system|<sandbox_violations>|No such tool available|haven't granted it yet"
)


def _indent(text: str, prefix: str = "      | ", limit: int = _EVIDENCE_LINES) -> list[str]:
    lines = text.rstrip("\n").splitlines() or ["(empty)"]
    if len(lines) > limit:
        lines = [f"... ({len(lines) - limit} earlier lines)"] + lines[-limit:]
    return [prefix + line for line in lines]


def _head(text: str, limit: int, prefix: str = "    ") -> list[str]:
    """The first `limit` lines: a diff is read from its top."""
    lines = text.rstrip("\n").splitlines()
    if len(lines) > limit:
        lines = lines[:limit] + [f"... ({len(lines) - limit} more lines)"]
    return [prefix + line for line in lines]


def agent_line(result: SpecResult) -> str:
    signal = "EXIT_LOOP_NOW"
    if not result.attempts:
        return "did not run"
    if result.script_error:  # the script, not the agent, could not go on
        return f"the spec's script is broken: {result.script_error}"
    n = result.final.iterations
    agent = result.spec.agent
    noun = agent_kind(agent.kind).noun if agent is not None else "the Claude Code CLI"
    turns = result.user_turns
    if turns is not None and result.reason in (None, "max_iterations"):
        said = plural(turns, "message")
        if result.user_done:
            return f"the user was done after {said} (the prompt included)"
        return f"the user was not done after {said} (user: max_turns)"
    if result.completed and agent is not None:
        return f"{noun} finished its task"  # it runs its own loop, once: no signal
    if result.completed:
        return f"signalled {signal} after {n} iteration{'s' * (n != 1)}"
    reasons = {
        "max_iterations": f"did not signal {signal} within "
        f"{plural(result.spec.max_iterations, 'iteration')}",
        "timeout": f"timed out after {result.spec.timeout:g}s",
        "limit": f"stopped: {result.limit_exceeded}",
        "error": f"{noun} failed",
    }
    return reasons.get(result.reason or "", f"did not finish ({result.reason})")


def verdict_line(result: SpecResult) -> str:
    """Decision, score and why: the first thing a person reads about a failed spec."""
    tried = len(result.final_attempts)
    attempts = f"{tried} attempt{'s' * (tried != 1)}"
    verdict = result.verdict
    if verdict is None:
        why = (
            "the reflector gave no verdict"
            if result.spec.criteria
            else "judged by checks; no criteria"
        )
        return f"{result.decision} after {attempts} ({why})"
    scored = _scored(verdict.score, verdict.scores)
    if result.gate == "criteria":
        gated = [c for c in verdict.criteria if c.gates]
        met = sum(c.met for c in gated)
        gate = f"{met}/{len(gated)} criteria met, each must be"
        if verdict.advisory:  # the score weighs them too: the gated criteria decide
            gate = f"{met}/{len(gated)} gated criteria met, each must be; {_advisory(verdict)}"
        line = f"{result.decision}, {scored}; {gate} after {attempts}"
        line += " (attempts used up)" if result.decision == "refine" else ""
    else:
        line = f"{result.decision}, {scored} (passes above {result.threshold:g}) after {attempts}"
        if result.decision == "fail" and verdict.score > result.threshold:
            line += " (forced: a deterministic check failed)"
        elif result.decision == "refine":
            line += " (attempts used up)"
    if result.final.recalled and not result.final.reflectors:
        line += f"; {RECALLED_NOTE}"
    return line


def _scored(score: float, votes: Sequence[float]) -> str:
    """``score 0.9`` or, of several votes, ``score 0.9 (median of 0.2, 0.9, 0.95)``."""
    if not votes:
        return f"score {score:g}"
    return f"score {score:g} (median of {', '.join(f'{v:g}' for v in votes)})"


#: What a report says of a verdict a replay recalled instead of judging anew.
RECALLED_NOTE = (
    "verdict recalled from the cassette: the reflector's request and the attempt folder were "
    "unchanged, so no reflector session ran (--atom-judge=rerun runs it)"
)


def _times(count: int) -> str:
    return {1: "once", 2: "twice"}.get(count, f"{count} times")


def api_line(result: SpecResult) -> str | None:
    """What the CLI saw from the API in the last attempt (its stream-json events): ``the API
    answered 500 (server_error) 10 times (api_retry events), then the run timed out after
    60 s``; without it a run against a failing upstream reads as a mere timeout."""
    if not result.attempts or result.source != "record" or result.divergences:
        return None  # a script or a cassette answered: there was no API to see
    records = result.final.all_records
    seen: Counter[tuple[Any, Any]] = Counter(
        (retry.get("error_status"), retry.get("error"))
        for rec in records
        for retry in rec.api_retries
    )
    last = records[-1] if records else None
    gave_up = last.api_error_status if last is not None else None
    if not seen and gave_up is None:
        return None
    parts = []
    for (status, error), count in seen.items():
        what = f"answered {status}" if status is not None else "could not be reached"
        parts.append(f"{what}{f' ({error})' if error else ''} {_times(count)}")
    line = "the API " + ", ".join(parts) + " (api_retry events)" if parts else ""
    if result.reason == "timeout":
        end = f"the run timed out after {result.spec.timeout:g} s"
    elif gave_up is not None:
        end = f"the CLI gave up on an API error {gave_up}"
    elif result.completed:
        end = "the CLI got through"
    else:
        end = "the CLI stopped"
    return f"{line}, then {end}" if line else end


def failure_report(result: SpecResult) -> str:
    """The report shown when a spec fails: verdict, criteria, checks with evidence, the agent.
    Inert (`pytest_atom.inert`): what it quotes may hold terminal control sequences."""
    spec = result.spec
    if result.cached_from is not None:
        return inert("\n".join(cached_report(result, result.cached_from)))
    lines = [f"atom spec '{spec.name}' failed ({display_path(spec.path)}:{spec.line})"]
    if spec.pass_at_least is not None:  # one failed run need not fail the spec
        lines.append(
            f"  threshold: the spec passes when at least {spec.pass_at_least} of its "
            f"{spec.repeats or 1} repeats pass; the session's summary counts them"
        )
    lines += _cause_lines(result)
    lines += _plan_block(result.plan, "  plan", "no step ran") if result.plan else []
    lines += step_lines(result)
    lines += _upstream_lines(result)
    if drift := drift_line(result.drift):
        lines.append(f"  drift: {drift}")
    # A broken script's error is the agent line already (`agent_line`): said once.
    if (
        result.error
        and not (result.divergences or result.script_error)
        and result.reason != "limit"
    ):
        lines.append("  error:")
        lines += _indent(result.error)
    lines += tool_problem_lines(result)
    left_out = left_out_files_line(result.left_out)
    if left_out:  # a check or criterion that expected one of them fails for this reason
        lines.append(f"  workspace: {left_out}")
    if result.setup_output and not result.harness_error:  # a failed set-up's error quotes it
        lines.append("  set-up output (last lines; all in setup/output.log of the run):")
        lines += _indent("\n".join(result.setup_output.strip().splitlines()[-10:]))
    lines += _verdict_lines(result)
    lines += _check_lines(result)
    lines += _left_out_lines(result)
    if result.cassette is not None and result.cassette.name.endswith(".partial.yaml"):
        kept = result.cassette.with_name(result.cassette.name.replace(".partial.yaml", ".yaml"))
        lines.append(
            f"  recording: failed, so {display_path(kept)} was left as it was; what was "
            f"recorded is in {display_path(result.cassette)}"
        )
    lines.append("  agent's last message:")
    lines += _indent(result.last_message or "(none)")
    lines.append(
        f"  run dir: {display_path(result.final.path if result.attempts else result.run_dir)}"
    )
    return inert("\n".join(lines))


def cached_report(result: SpecResult, cached: CachedFrom) -> list[str]:
    """A run `--atom-cache` did not start: the stored outcome it reported, and the stored
    run's checks and criteria (nothing ran, so there is no agent to quote)."""
    spec = result.spec
    lines = [
        f"atom spec '{spec.name}' {result.outcome.label}, cached ({display_path(spec.path)}:{spec.line})",
        f"  {cached.line}",
        "  no attempt ran: its inputs equal the stored run's (--atom-cache)",
    ]
    for check in cached.checks:
        mark = "passed" if check.passed else "FAILED"
        lines.append(
            f"  check {mark}: {check.name}" + (f": {check.detail}" if check.detail else "")
        )
    for criterion in cached.criteria:
        mark = "met" if criterion.passed else "NOT met"
        lines.append(f"  criterion {mark} ({criterion.score:.2f}): {criterion.text}")
    return lines


def _network_lines(result: SpecResult) -> list[str]:
    """A failed command check the sandbox's proxy kept off the network: the host and the
    allowance (a set-up's own error says it already)."""
    if result.spec.sandbox is None:
        return []
    for check in result.checks:
        if not check.passed and check.check.kind == "command":
            run = str(check.check.params.get("run") or "")
            hint = network_hint(check.evidence, run, "check")
            if hint:
                return [f"  network: {hint}"]
    return []


def _left_out_lines(result: SpecResult) -> list[str]:
    """When the failure could be the environment's doing: what points at it, and the fix
    (the whole list of variables left out is said once, under the summary)."""
    lines = _network_lines(result)
    clue = environment_clue_of(result)
    if clue is None:
        return lines
    if clue.left_out:
        names = ", ".join(clue.left_out)
        one = len(clue.left_out) == 1
        said = (
            f"{names} {'is a caller variable' if one else 'are caller variables'} left out of "
            f"the run's environment; pass {'it' if one else 'them'} with `pass_env: [{names}]` "
            "in the spec or .atom/config.yaml"
        )
    elif clue.unset:
        said = (
            f"{', '.join(clue.unset)} is set neither in the run's environment nor the "
            f"caller's; set it with the spec's `env: {{{clue.unset[0]}: ...}}`"
        )
    else:
        said = (
            "the run's environment is built from parts, so a command the caller's shell "
            "finds may need a variable it left out (`pass_env: [NAME]`); those are listed "
            "once, under the session's summary"
        )
    return [*lines, f"  environment: `{clue.quote}`: {said}"]


def _cause_lines(result: SpecResult) -> list[str]:
    """The verdict; or, when the replay diverged, that (the replay failed, not the agent)."""
    plan = result.current_plan
    if not result.divergences and plan is not None and not plan.passed:
        if plan is result.plan:
            return ["  verdict: fail: the planner's plan did not pass, so no step ran"]
        return ["  verdict: fail: the planner's re-plan after a rollback did not pass"]
    if not result.divergences:
        return [f"  verdict: {verdict_line(result)}", f"  agent: {agent_line(result)}"]
    n = len(result.divergences)
    first = result.divergences[0]
    lines = [
        f"  replay diverged from the cassette ({n} distinct request{'s' * (n != 1)} "
        f"matched nothing recorded); {first.cause or 'cause unknown'}"
    ]
    lines += _head(first.detail, limit=80)
    for divergence in result.divergences[1:]:
        lines += _head(divergence, limit=10)
    lines.append(f"  agent: {agent_line(result)}")
    return lines


def _upstream_lines(result: SpecResult) -> list[str]:
    api = api_line(result)
    if not (api or result.upstream_faults):
        return []
    lines = [f"  upstream: {api or 'faults while recording'}"]
    for fault, count in Counter(f.description for f in result.upstream_faults).items():
        lines.append(f"    {fault}" + (f" ({_times(count)})" if count > 1 else ""))
    return lines


def _verdict_lines(result: SpecResult) -> list[str]:
    verdict, lines = result.verdict, list[str]()
    if verdict is None:
        return lines
    for criterion in verdict.criteria:
        if criterion.met and criterion.gates:
            continue
        tally = f" ({criterion.tally}: {_ballots(criterion.votes)})" if criterion.votes else ""
        said = "met" if criterion.met else "unmet"
        # A criterion with a floor: whether it gated, and why (one without gates, as always).
        if criterion.trust is not None and criterion.trust.reason != "unfloored":
            said += f", {criterion.trust.line}"
        lines.append(f"  {said}: {criterion.criterion}{tally}")
        lines += _indent(criterion.evidence)
    if verdict.feedback:
        lines.append("  feedback:")
        lines += _indent(verdict.feedback)
    lines += [f"  flaky: {note}" for note in verdict.flaky]
    return lines


def _advisory(verdict: Verdict) -> str:
    """``2 advisory, not gating (calibration stale)``."""
    words = sorted({ADVISORY_WORDS[c.trust.reason] for c in verdict.advisory if c.trust})
    count = len(verdict.advisory)
    return f"{count} advisory, not gating ({', '.join(words)})"


def _ballots(votes: Sequence[bool]) -> str:
    return ", ".join("met" if v else "unmet" for v in votes)


def _check_lines(result: SpecResult) -> list[str]:
    """Each check with its line in the spec; a failed one with its evidence. None is judged
    after the agent's own session diverged (its files came of answers nobody recorded)."""
    if not result.checks:
        return []
    if any(d.agents for d in result.divergences):  # not the reflector's alone
        return [
            f"  checks: not judged: the replay diverged ({plural(len(result.checks), 'check')})"
        ]
    passed = sum(c.passed for c in result.checks)
    lines = [f"  checks: {passed}/{len(result.checks)} passed"]
    for check in result.checks:
        mark = "PASS" if check.passed else "FAIL"
        lines.append(
            f"    {mark} {check.check.describe()} (line {check.check.line}): {check.summary}"
        )
        if not check.passed and check.evidence:
            lines += _indent(check.evidence)
    return lines


def _replan_lines(rollback: Rollback) -> list[str]:
    if rollback.replan is None:
        return []
    lines = _plan_block(rollback.replan, "    re-plan", "no step ran after it")
    return lines + [f"      dropped {step_line(step)}" for step in rollback.dropped]


def _plan_block(plan: Plan, label: str, invalid: str) -> list[str]:
    """One plan under `label`: its step ids and file, or why it is invalid (`invalid` says
    what followed), then its failed `plan_accept:` assertions."""
    where = f" ({display_path(plan.path)})" if plan.path else ""
    if plan.error is not None:
        return [f"{label}: invalid, {invalid}{where}", *_indent(plan.error)]
    pad = " " * (len(label) - len(label.lstrip()) + 2)
    return [
        f"{label}: {', '.join(s.id for s in plan.steps)}{where}",
        *(f"{pad}plan_accept failed: {failure}" for failure in plan.failed),
    ]


def step_lines(result: SpecResult) -> list[str]:
    """A multi-step spec's steps and rollbacks; what follows is about the last step run."""
    if not result.steps:
        return []
    lines = [f"  {result.steps_summary} committed"]
    lines += [f"    {step_line(step)}" for step in result.steps]
    for rollback in result.rollbacks:
        then = (
            f"the planner planned the steps from {rollback.target} on anew"
            if rollback.replan is not None
            else f"{rollback.target} and every later step re-ran"
        )
        lines.append(
            f"  rollback: step {rollback.source} (a{rollback.attempt:02d}) rolled back to "
            f"{rollback.target}; {then}"
        )
        lines += _indent(rollback.feedback, limit=8)
        lines += _replan_lines(rollback)
    ran = [s for s in result.steps if s.runs]
    if ran and not ran[-1].passed:
        lines.append(f"  failing step: {ran[-1].id} (below: its last attempt)")
    return lines


def tool_problem(
    name: str, tool_input: Any, output: str | None, is_error: bool, denied: str | None = None
) -> str | None:
    """One line for a tool call the CLI answered with an error or a refusal, else None, as
    the failure report and `atom run`'s progress both say it; `denied` (a `Denial.reason`)
    names who refused it: ``Bash `rm -rf x` refused by a hook: PreToolUse:Bash hook ...``."""
    text = output or ""
    if not is_error and not _REFUSAL.search(text) and denied is None:
        return None
    text = re.sub(r"</?tool_use_error>", "", text).strip()
    if denied == "hook":  # the hook's own words, without the command the CLI quotes first
        text = hook_words(text)
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if len(lines) > 1 and re.fullmatch(r"Exit code \d+", lines[0]):
        lines = lines[1:] + [lines[0].lower()]  # the message first, then the exit status
    detail = shorten(Scrubber().scrub(" | ".join(lines)), 240)
    who = f" refused by {refused_by(denied)}" if denied is not None else ""
    return f"{name} {_call_target(tool_input)}{who}: {detail or '(no output)'}"


def _call_target(tool_input: Any) -> str:
    if not isinstance(tool_input, dict):
        return ""
    for key in ("command", "file_path", "notebook_path", "pattern", "url"):
        value = tool_input.get(key)
        if isinstance(value, str):
            shown = shorten(Scrubber().scrub(" ".join(value.split())), 100)
            return f"`{shown}`" if key == "command" else shown
    return ""


def tool_problems(result: SpecResult) -> list[tuple[int, ToolCall, str]]:
    """The agent's tool calls that failed or were refused, in the attempts the report is
    about (a multi-step spec: the last step run's): (attempt, call, line)."""
    found = []
    for attempt in result.final_attempts:
        for record in attempt.records:
            denied = {d.tool_use_id: d.reason for d in permission_denials(record.events)}
            for call in record.tool_calls:
                refused = denied.get(call.id)
                line = tool_problem(call.name, call.input, call.result, call.is_error, refused)
                if line:
                    found.append((attempt.number, call, line))
    return found


def tool_problem_lines(result: SpecResult) -> list[str]:
    problems = tool_problems(result)
    if not problems:
        return []
    lines = [f"  tool calls that failed or were refused: {len(problems)}"]
    several = len(result.final_attempts) > 1
    for number, _, line in problems[:_TOOL_PROBLEMS_SHOWN]:
        lines.append(f"    {f'a{number:02d} ' if several else ''}{line}")
    if len(problems) > _TOOL_PROBLEMS_SHOWN:
        lines.append(f"    ... and {len(problems) - _TOOL_PROBLEMS_SHOWN} more")
    return lines


def left_out_files_line(left_out: Sequence[str]) -> str | None:
    if not left_out:
        return None
    shown = ", ".join(left_out[:SHOWN]) + (", …" if len(left_out) > SHOWN else "")
    return (
        f"the workspace copy left out {len(left_out)} of pytest-atom's own file(s) (specs, "
        f"scripts, cassettes, .atom/): {shown}; a spec's `include:` brings any back"
    )


#: How many left-out paths a report names.
SHOWN = 5


class TextReport(ReportFormat[str]):
    """`failure_report`: `SpecResult.report()` and the pytest item's longrepr."""

    name = "text"

    def render(self, result: SpecResult, *, repeat: int | None = None) -> str:
        return failure_report(result)


#: The text format, as the ``pytest_atom.report_formats`` entry point names it.
TEXT = TextReport()
