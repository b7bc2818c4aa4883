"""Usage of every session, from stream-json the real CLI printed (tests/data/stream_json).

The transcripts were captured from Claude Code 2.1.330, 2.1.331 and 2.1.197 (non-bare)
against an upstream that scripted each conversation by its first user message: the main
agent launches two foreground `Agent` subagents in one turn, each runs `echo` and answers,
then the main agent ends (``subagents-*``); the same session is then resumed for one more
turn (``resumed-*``). The upstream sent, per conversation, input + output + cache tokens:
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from pytest_atom.cost.limits import Budget, Limits
from pytest_atom.events import parse_event
from pytest_atom.reports.summary import summary_table
from pytest_atom.results.record import IterationRecord
from pytest_atom.results.rows import SummaryRow
from pytest_atom.results.spec_result import SpecResult
from pytest_atom.spec_loader.load import load_specs
from tests.helpers import capture, once_per_session, record_through_upstream
from tests.upstream import RealisticUpstream

#: What the upstream sent for the first call: the main agent, then each subagent.
MAIN, SUBAGENT = 5339, 3581
#: And for the resumed call (the main agent's one more turn).
RESUMED = 3981
#: The CLI's price of the first call, and of the resumed call alone (2.1.330 and 2.1.331).
FIRST_USD, RESUMED_USD = 0.035431, 0.0078506
#: What the subagents' usage costs at the default model's prices (claude-opus-5-5: $4 input,
#: $20 output, $5 cache writes, $0.20 cache reads per million, probed from the CLI itself).
SUBAGENTS_USD = (2 * 171 * 4 + 2 * 44 * 20 + 2 * 1658 * 5 + 2 * 1708 * 0.2) / 1e6

VERSIONS = ("2.1.330", "2.1.331")


def events(name: str) -> list[dict[str, Any]]:
    lines = capture(name).splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def record_of(evs: list[dict[str, Any]]) -> IterationRecord:
    record = IterationRecord(returncode=0)
    for event in evs:
        for parsed in parse_event(event):
            record.apply(parsed)
    return record


def test_the_captured_subagents_are_told_apart_by_their_parent_tool_use_id() -> None:
    """What the counting relies on, as the pinned CLI prints it."""
    evs = events("subagents-2.1.330.jsonl")
    agent_calls = {
        block["id"]
        for e in evs
        if e["type"] == "assistant" and not e.get("parent_tool_use_id")
        for block in e["message"]["content"]
        if block.get("type") == "tool_use" and block["name"] == "Agent"
    }
    parents = {e["parent_tool_use_id"] for e in evs if e["type"] == "assistant"} - {None}
    assert len(agent_calls) == 2 and parents == agent_calls


@pytest.mark.parametrize("version", VERSIONS)
def test_a_call_counts_its_subagents(version: str) -> None:
    record = record_of(events(f"subagents-{version}.jsonl"))
    assert record.cli_version == version and record.model == "claude-opus-5-5"
    assert record.main_tokens == MAIN
    assert record.tokens == MAIN + 2 * SUBAGENT  # what the upstream sent
    assert record.subagent_tokens == 2 * SUBAGENT
    assert record.cost_usd == pytest.approx(FIRST_USD)
    # The CLI prices per model, not per session: the split is an estimate, the sum exact.
    assert record.subagent_cost_usd == pytest.approx(SUBAGENTS_USD, rel=0.01)
    assert 0 < record.subagent_cost_usd < record.cost_usd


@pytest.mark.parametrize("version", VERSIONS)
def test_a_resumed_call_counts_its_own_share_not_the_sessions_totals(version: str) -> None:
    """On --resume the CLI's modelUsage and total_cost_usd include the earlier calls."""
    evs = events(f"resumed-{version}.jsonl")
    (result,) = [e for e in evs if e["type"] == "result"]
    assert result["total_cost_usd"] == pytest.approx(FIRST_USD + RESUMED_USD)  # the session's
    record = record_of(evs)
    assert record.tokens == record.main_tokens == RESUMED
    assert record.cost_usd == pytest.approx(RESUMED_USD)
    assert record.subagent_tokens == 0 and record.subagent_cost_usd == 0


def test_an_older_cli_reports_per_call_figures() -> None:
    """2.1.197 has no model_usage_since_last_result; its modelUsage is the call's own."""
    first = record_of(events("subagents-2.1.197.jsonl"))
    assert first.main_tokens == 395 + 54 + 3931 + 3898
    assert first.tokens == 873 + 142 + 8695 + 8567 > first.main_tokens
    # Its main model is "claude-opus-4-8[1m]" in init and modelUsage alike.
    assert 0 < first.subagent_cost_usd < first.cost_usd == pytest.approx(0.06580625)
    resumed = record_of(events("resumed-2.1.197.jsonl"))
    assert resumed.cost_usd == pytest.approx(0.01582075)
    assert resumed.tokens == resumed.main_tokens


def test_a_call_stopped_before_its_result_keeps_its_provisional_tokens() -> None:
    """A limit kills the CLI before its result event: the tokens streamed so far stay."""
    evs = [e for e in events("subagents-2.1.330.jsonl") if e["type"] != "result"]
    record = record_of(evs)
    # message_start usage (output 1): the main agent's two messages, each subagent's first.
    main = (124 + 1215 + 1) + (130 + 1272 + 2544 + 1)
    assert record.main_tokens == main
    assert record.subagent_tokens == 2 * (83 + 804 + 1)
    assert record.summary()["tokens"] == record.tokens == main + 2 * (83 + 804 + 1)


@pytest.mark.parametrize("version", VERSIONS)
def test_the_budget_counts_what_the_record_counts(version: str) -> None:
    budget = Budget(Limits())
    calls = [events(f"subagents-{version}.jsonl"), events(f"resumed-{version}.jsonl")]
    for evs in calls:
        for event in evs:
            assert budget.observe(parse_event(event)) is None
    assert budget.usage.tokens == sum(record_of(evs).tokens for evs in calls)
    assert budget.usage.tokens == MAIN + 2 * SUBAGENT + RESUMED
    # Per call, not the session's running total twice over.
    assert budget.usage.cost_usd == pytest.approx(FIRST_USD + RESUMED_USD)


@pytest.mark.parametrize("version", VERSIONS)
def test_a_limit_between_the_main_agents_usage_and_the_total_stops_the_run(version: str) -> None:
    """Crossed by the exact figure of the result event: the run stops with that figure."""
    budget = Budget(Limits(max_tokens=10_000))
    crossed = [budget.observe(parse_event(e)) for e in events(f"subagents-{version}.jsonl")]
    assert crossed[-1] == f"exceeded max_tokens: {MAIN + 2 * SUBAGENT} > 10000"
    assert crossed[:-1] == [None] * (len(crossed) - 1)  # provisional figures stayed below


def test_a_subagents_streamed_usage_crosses_a_limit_while_the_call_runs() -> None:
    budget = Budget(Limits(max_tokens=2000))
    evs = events("subagents-2.1.330.jsonl")
    crossed = [(e, budget.observe(parse_event(e))) for e in evs]
    (event, message), *_ = [(e, m) for e, m in crossed if m]
    assert event["type"] == "assistant" and event["parent_tool_use_id"]  # a subagent's
    assert message == f"exceeded max_tokens: {(124 + 1215 + 1) + (83 + 804 + 1)} > 2000"


def test_a_cost_limit_counts_the_resumed_call_once() -> None:
    """The old count added the session's running total: 0.0354 + 0.0433 > 0.05."""
    budget = Budget(Limits(max_cost_usd=0.05))
    for evs in (events("subagents-2.1.331.jsonl"), events("resumed-2.1.331.jsonl")):
        assert all(budget.observe(parse_event(e)) is None for e in evs)
    assert budget.usage.cost_usd == pytest.approx(0.0432816)


def test_roles_add_up_to_every_session_of_a_run(tmp_path: Path) -> None:
    """Executor calls split into the main session and its subagents; a reflector's and a
    planner's sessions are their own roles; together they are atom_tokens and its price."""
    from pytest_atom.reports.properties import result_properties
    from pytest_atom.results.record import RunOutcome
    from pytest_atom.results.spec_result import Attempt, Plan
    from pytest_atom.spec.types import Spec

    calls = [record_of(events(f"{name}-2.1.330.jsonl")) for name in ("subagents", "resumed")]
    judge = IterationRecord(returncode=0, usage={"input_tokens": 700}, cost_usd=0.002)
    planner = IterationRecord(returncode=0, usage={"output_tokens": 300}, cost_usd=0.001)
    attempt = Attempt(1, tmp_path / "a01", RunOutcome(True, 2), calls, reflectors=[judge])
    spec = Spec(name="s", path=tmp_path / "s.atom.yaml", line=1, prompt="p")
    everyone = frozenset({"executor", "reflector"})
    result = SpecResult(spec, tmp_path, [attempt], 1.0, 0.8, paid=everyone)
    result.plan = Plan(record=planner)
    roles = result.usage_by_role()
    assert {role: used.tokens for role, used in roles.items()} == {
        "executor": MAIN + RESUMED,
        "subagents": 2 * SUBAGENT,
        "reflector": 700,
        "planner": 300,
        "advisor": 0,  # steps billed on top of answers: none here (tests/cost/test_billing.py)
        "compaction": 0,
        "other": 0,  # every token has its role
    }
    assert sum(u.tokens for u in roles.values()) == result.tokens
    assert sum(u.cost_usd for u in roles.values()) == pytest.approx(result.cost_usd)
    assert roles["subagents"].cost_usd == pytest.approx(SUBAGENTS_USD, rel=0.01)
    props = result_properties(result)
    assert props["atom_tokens"] == MAIN + RESUMED + 2 * SUBAGENT + 1000
    assert props["atom_planner_tokens"] == 300 and props["atom_planner_cost_usd"] == 0.001


# ---------------------------------------------------------------- a real run, recorded

#: The conversations the realistic upstream plays, by a key in each first user message: the
#: main agent launches two foreground subagents in one turn; each runs a command and answers.
MAIN_KEY, ALPHA_KEY, BETA_KEY = "USAGE-MAIN-TASK", "USAGE-HELPER-ALPHA", "USAGE-HELPER-BETA"
JUDGE_KEY = "You are a clinical auditor"  # the reflector's prompt (prompts/REFLECTOR.md)


def _helper(key: str, word: str) -> dict[str, Any]:
    return {
        "name": "Agent",
        "input": {
            "description": f"{word} helper",
            "prompt": f"{key}: write {word}.txt with Bash, then report.",
            "subagent_type": "general-purpose",
            "run_in_background": False,
        },
    }


def _bash(command: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "Bash", "input": {"command": command, "description": "Write"}}]}


CONVERSATIONS: dict[str, list[dict[str, Any]]] = {
    MAIN_KEY: [
        {
            "text": "Two helpers will do it.",
            "tool_calls": [_helper(ALPHA_KEY, "alpha"), _helper(BETA_KEY, "beta")],
        },
        {"text": "Both helpers wrote their files.\nEXIT_LOOP_NOW"},
    ],
    ALPHA_KEY: [_bash("echo alpha > alpha.txt"), {"text": "alpha.txt written."}],
    BETA_KEY: [_bash("echo beta > beta.txt"), {"text": "beta.txt written."}],
    JUDGE_KEY: [
        {
            "tool_calls": [
                {
                    "name": "StructuredOutput",
                    "input": {
                        "score": 0.95,
                        "decision": "proceed",
                        "criteria": [
                            {"criterion": "Both files exist.", "met": True, "evidence": "ok"}
                        ],
                        "feedback": "",
                        "flaky": [],
                    },
                }
            ]
        },
        {"text": "Judged."},
    ],
}
DELEGATE = f"""\
name: delegate
prompt: "{MAIN_KEY}: have two helpers each write a file."
timeout: 120
claude:
  allowed_tools: [Bash, Agent, Read, Grep, Glob]
accept:
  - file_contains: {{path: alpha.txt, pattern: "^alpha$"}}
  - file_contains: {{path: beta.txt, pattern: "^beta$"}}
criteria: [Both files exist.]
"""


def _record(
    tmp_path: Path, claude_bin: Path, limits: str = ""
) -> tuple[SpecResult, RealisticUpstream]:
    (tmp_path / "delegate.atom.yaml").write_text(DELEGATE + limits, encoding="utf-8")
    [spec] = load_specs(tmp_path / "delegate.atom.yaml")
    result: SpecResult
    upstream: RealisticUpstream
    result, upstream = record_through_upstream(spec, CONVERSATIONS, claude_bin)
    return result, upstream


@dataclass
class Recorded:
    """What the one recording of the delegate spec left: its JUnit properties, its trace,
    and the tokens the upstream sent per conversation ("": side calls) and in all."""

    props: dict[str, Any]
    trace: dict[str, Any]
    sent: dict[str, int]
    total: int


def _record_delegate(folder: Path, claude_bin: Path) -> None:
    from pytest_atom.reports.properties import result_properties
    from pytest_atom.reports.trace import build_trace

    result, upstream = _record(folder, claude_bin)
    assert result.passed, result.report()
    sent = {key or "": used.total for key, used in upstream.tokens_by_conversation().items()}
    scenario = {
        "props": result_properties(result),
        "trace": build_trace(result),
        "sent": sent,
        "total": upstream.tokens_sent(),
    }
    (folder / "recorded.json").write_text(json.dumps(scenario, default=str), encoding="utf-8")


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory, claude_bin: Path) -> Recorded:
    """The spec recorded once per test session (whichever xdist worker asks first), with
    its reflector."""
    folder = once_per_session(
        tmp_path_factory, "usage-delegate", partial(_record_delegate, claude_bin=claude_bin)
    )
    return Recorded(**json.loads((folder / "recorded.json").read_text(encoding="utf-8")))


@pytest.mark.slow
def test_a_recorded_run_counts_what_the_upstream_sent_per_role(recorded: Recorded) -> None:
    from jsonschema import Draft202012Validator

    sent = recorded.sent
    assert set(sent) <= {MAIN_KEY, ALPHA_KEY, BETA_KEY, JUDGE_KEY, ""}
    props = recorded.props
    assert props["atom_tokens"] == recorded.total
    assert props["atom_executor_tokens"] == sent[MAIN_KEY]
    # The CLI's side requests (a title, say) run beside the main session: they count with
    # the subagents, as every session of the call that is not the main one.
    subagents = sent[ALPHA_KEY] + sent[BETA_KEY] + sent.get("", 0)
    assert props["atom_subagents_tokens"] == subagents
    assert props["atom_reflector_tokens"] == sent[JUDGE_KEY]
    assert props["atom_planner_tokens"] == 0
    # Limits and baselines measure the agent: its main session and its subagents.
    assert props["atom_agent_tokens"] == sent[MAIN_KEY] + subagents
    costs = [props[f"atom_{role}_cost_usd"] for role in ("executor", "subagents", "reflector")]
    assert all(c > 0 for c in costs)
    assert sum(costs) == pytest.approx(props["atom_cost_usd"], abs=1e-5)  # recorded: paid

    trace = recorded.trace
    schema = json.loads(
        (Path(__file__).parents[2] / "pytest_atom" / "reports" / "trace_schema.json").read_text()
    )
    Draft202012Validator(schema).validate(trace)
    by_role = trace["cost"]["by_role"]
    assert by_role["subagents"]["tokens"] == subagents
    assert trace["cost"]["tokens"] == sum(r["tokens"] for r in by_role.values())
    executor, judge = trace["children"][0]["sessions"]
    assert executor["subagent_tokens"] == subagents and judge["role"] == "reflector"

    header, row = summary_table([SummaryRow.of("specs/delegate.atom.yaml::delegate", props)])
    assert header.split()[5:10] == ["tokens", "executor", "subagents", "reflector", "cost"]
    assert f" {subagents} " in row  # tokens: a price the table would show was not spent


@pytest.mark.slow
def test_a_token_limit_crossed_by_subagents_stops_the_run_with_its_tokens_and_checks(
    tmp_path: Path, claude_bin: Path, recorded: Recorded
) -> None:
    """A limit between the main agent's usage and the agent's total (the recording's,
    give or take the few tokens that differ per run): only the subagents cross it."""
    from pytest_atom.reports.properties import result_properties

    main = recorded.sent[MAIN_KEY]
    limit = (main + recorded.total - recorded.sent[JUDGE_KEY]) // 2
    result, upstream = _record(tmp_path, claude_bin, f"limits: {{max_tokens: {limit}}}\n")
    assert upstream.tokens_sent(MAIN_KEY) < limit < upstream.tokens_sent()  # the premise
    assert not result.passed and result.reason == "limit"
    assert result.limit_exceeded is not None
    used = int(result.limit_exceeded.split(": ")[1].split(" > ")[0])
    assert result.limit_exceeded == f"exceeded max_tokens: {used} > {limit}"
    props = result_properties(result)
    # A stopped spec shows its tokens, and the checks it was stopped with.
    assert props["atom_tokens"] == props["atom_agent_tokens"] == used
    assert props["atom_subagents_tokens"] > 0 and props["atom_reflector_tokens"] == 0
    assert [c.passed for c in result.checks] == [True, True]
    _, row = summary_table([SummaryRow.of("d::delegate", props)])
    assert f" {used} " in row and "failed: exceeded max_tokens" in row
