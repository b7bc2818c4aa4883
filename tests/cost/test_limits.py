"""Budgets: counting the agent's usage from stream-json events, limits from specs and config."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import pytest

from pytest_atom.cost.limits import Budget, Limits, parse_limits
from pytest_atom.errors import ConfigError, SpecError
from pytest_atom.events import Event, parse_event
from pytest_atom.settings.config import load_config
from pytest_atom.spec_loader.load import load_specs


def assistant(msg_id: str, *blocks: dict[str, Any], tokens: int = 10) -> list[Event]:
    """The events of one stream-json assistant line, as the CLI emits one per content block."""
    usage = {"input_tokens": tokens, "output_tokens": 1}
    message = {"id": msg_id, "content": list(blocks), "usage": usage}
    return parse_event({"type": "assistant", "message": message})


TEXT = {"type": "text", "text": "thinking aloud"}
BASH = {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}


def result(tokens: int, cost: float) -> list[Event]:
    return parse_event(
        {"type": "result", "usage": {"input_tokens": tokens}, "total_cost_usd": cost}
    )


def test_a_message_split_into_events_is_one_turn() -> None:
    budget = Budget(Limits(max_turns=2))
    events = [
        parse_event({"type": "system", "subtype": "init"}),
        assistant("m1", TEXT),
        assistant("m1", BASH),  # the same message's second block
        parse_event({"type": "user", "message": {"content": []}}),
        assistant("m2", TEXT),
    ]
    assert [budget.observe(e) for e in events] == [None] * 5
    assert (budget.usage.turns, budget.usage.tool_calls) == (2, 1)
    assert budget.observe(assistant("m3", TEXT)) == "exceeded max_turns: 3 > 2"
    assert budget.exceeded == "exceeded max_turns: 3 > 2"
    assert budget.observe(assistant("m4", TEXT)) is None  # reported once, still counted
    assert budget.usage.turns == 4


def test_limits_sum_over_calls_and_tokens_settle_on_the_result_event() -> None:
    budget = Budget(Limits(max_tokens=100, max_tool_calls=5))
    budget.observe(assistant("m1", BASH, tokens=30))
    budget.observe(assistant("m1", BASH, tokens=30))  # the same message: counted once
    assert budget.usage.tokens == 31 and budget.usage.tool_calls == 2
    budget.observe(result(tokens=40, cost=0.01))  # the call's exact figure replaces it
    assert budget.usage.tokens == 40
    # The next iteration's call (ids restart with every call): its provisional usage adds.
    assert budget.observe(assistant("m1", TEXT, tokens=59)) is None
    assert budget.usage.tokens == 100
    assert budget.observe(assistant("m2", TEXT, tokens=1)) == "exceeded max_tokens: 102 > 100"


def test_cost_is_checked_when_a_call_ends() -> None:
    budget = Budget(Limits(max_cost_usd=0.05))
    assert budget.observe(result(10, 0.03)) is None
    assert budget.observe(result(10, 0.03)) == "exceeded max_cost_usd: 0.06 > 0.05"


def test_no_limits_never_stop_anything() -> None:
    budget = Budget(Limits())
    for n in range(50):
        assert budget.observe(assistant(f"m{n}", BASH, tokens=10_000)) is None
    assert budget.usage.turns == 50 and budget.exceeded is None


def test_spec_limits_win_per_key_over_the_project_defaults() -> None:
    spec = Limits(max_turns=3, timeout=None)
    merged = spec.over(Limits(max_turns=10, max_cost_usd=1.0, timeout=60))
    assert merged == Limits(max_turns=3, max_cost_usd=1.0, timeout=60)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"max_turn": 3}, "unknown limit 'max_turn'"),
        ({"max_turns": 2.5}, "'max_turns' must be a whole number >= 0"),
        ({"max_turns": True}, "'max_turns' must be a whole number >= 0"),
        ({"max_cost_usd": -1}, "'max_cost_usd' must be a number >= 0"),
        ({"timeout": 0}, "'timeout' must be a number of seconds > 0"),
        ({"max_cost_usd": float("nan")}, "'max_cost_usd' must be a number >= 0"),
    ],
)
def test_bad_limits_are_named(data: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_limits(data)


def spec_file(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "task.atom.yaml"
    path.write_text("name: task\nprompt: Do it.\n" + body, encoding="utf-8")
    return path


def test_spec_limits_and_the_older_timeout_key(tmp_path: Path) -> None:
    (spec,) = load_specs(spec_file(tmp_path, "limits: {max_turns: 2, max_cost_usd: 0.5}\n"))
    assert spec.limits == Limits(max_turns=2, max_cost_usd=0.5) and spec.timeout == 600
    (old,) = load_specs(spec_file(tmp_path, "timeout: 90\n"))
    assert old.limits == Limits(timeout=90) and old.timeout == 90
    (both,) = load_specs(spec_file(tmp_path, "timeout: 90\nlimits: {timeout: 30}\n"))
    assert both.limits.timeout == 30 and both.timeout == 30  # limits.timeout wins


def test_a_bad_spec_limit_points_at_its_line(tmp_path: Path) -> None:
    path = spec_file(tmp_path, "limits:\n  max_turns: -1\n")
    with pytest.raises(SpecError) as err:
        load_specs(path)
    assert err.value.line == 4 and "max_turns" in str(err.value)
    with pytest.raises(SpecError, match="max_turn"):
        load_specs(spec_file(tmp_path, "limits: {max_turn: 2}\n"))


def test_config_limits_are_the_defaults_and_the_spec_wins(tmp_path: Path) -> None:
    (tmp_path / ".atom").mkdir()
    config_file = tmp_path / ".atom" / "config.yaml"
    config_file.write_text("limits: {max_turns: 10, timeout: 45, max_tokens: 1000}\n")
    config = load_config(cwd=tmp_path)
    (spec,) = load_specs(spec_file(tmp_path, "limits: {max_turns: 3}\n"))
    effective = spec.with_limits(config)
    assert effective.limits == Limits(max_turns=3, max_tokens=1000, timeout=45)
    assert effective.timeout == 45  # reports name the timeout that applied
    (own,) = load_specs(spec_file(tmp_path, "timeout: 90\n"))
    assert own.with_limits(config).timeout == 90  # the spec's old key beats the project's
    (plain,) = load_specs(spec_file(tmp_path, ""))
    assert plain.with_limits(None).limits == Limits(timeout=600)
    config_file.write_text("limits: {max_turns: many}\n")
    with pytest.raises(ConfigError, match=r"'max_turns' must be a whole number.*config.yaml:1"):
        load_config(cwd=tmp_path)


def test_the_spec_schema_documents_every_limit() -> None:
    schema = json.loads(
        (Path(__file__).parents[2] / "pytest_atom" / "spec" / "spec_schema.json").read_text()
    )
    assert set(schema["$defs"]["limits"]["properties"]) == set(Limits().to_dict())


OVER_BUDGET = """\
specs:
  - name: over-budget
    prompt: Create hello.txt saying hello, world.
    script: scripts/create_file.yaml
    limits: {max_turns: 2}
    accept: [{file_exists: hello.txt}]
"""


@pytest.mark.slow
@pytest.mark.usefixtures("claude_for_pytester")
def test_limits_stop_a_scripted_agent(pytester: pytest.Pytester) -> None:
    """The shipped create_file script takes 3 turns: under max_turns 2 the CLI is stopped at
    its third and the spec fails naming the limit (that a limit not reached stops nothing
    is Budget's, above). A replayed spec is stopped the same way: Budget reads the same
    stream-json events whichever model source answers the CLI."""
    import shutil

    from tests.helpers import REPO

    specs = pytester.path / "specs"
    shutil.copytree(REPO / "fixtures" / "specs" / "scripts", specs / "scripts")
    (specs / "budget.atom.yaml").write_text(OVER_BUDGET, encoding="utf-8")
    result = pytester.runpytest("--atom", "specs", "--junitxml=out.xml", "--atom-report=rep")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*atom spec 'over-budget' failed*",
            "*agent: stopped: exceeded max_turns: 3 > 2",
            "*budget.atom.yaml::over-budget*failed: exceeded max_turns*",
            "limit_exceeded: specs/budget.atom.yaml::over-budget: exceeded max_turns: 3 > 2",
        ]
    )
    xml = (pytester.path / "out.xml").read_text()
    assert 'name="atom_limit_exceeded" value="exceeded max_turns: 3 &gt; 2"' in xml
    # A stopped spec shows what it used (the streamed usage of the call that was stopped)
    # and its checks, in the failure report, the table and JUnit alike.
    [case] = ElementTree.fromstring(xml).iterfind(".//testcase[@name='over-budget']")
    props = {p.get("name"): p.get("value") for p in case.iterfind(".//property")}
    tokens = props["atom_tokens"]
    assert tokens is not None and int(tokens) > 0 and props["atom_agent_tokens"] == tokens
    result.stdout.fnmatch_lines(
        [
            "*atom spec 'over-budget' failed*",
            "*checks:*",
            "*file_exists hello.txt*",
            f"*budget.atom.yaml::over-budget*failed: exceeded max_turns*{tokens}*",
        ]
    )
    trace = json.loads((pytester.path / "rep" / "budget" / "over-budget.json").read_text())
    assert trace["effective_limits"]["max_turns"] == 2
    assert trace["effects_observed"]["limit_exceeded"] == "exceeded max_turns: 3 > 2"
    assert trace["effects_observed"]["usage"]["turns"] == 3
    assert trace["state"] == "failed"
    # Stopped at the third message: its tool call (`cat hello.txt`) never ran to the end.
    assert trace["children"][0]["reason"] == "limit"
