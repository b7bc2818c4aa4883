"""Trajectory checks: what the agent did, read from its calls' stream-json.

The unit layer reads captures of the real CLI (tests/data/stream_json):

- ``subagents-2.1.330``: two concurrent ``Agent`` subagents, each running ``echo``
  (see tests/cost/test_usage.py); ``resumed-2.1.330`` is the same session's next call.
- ``configured-2.1.330``: a scripted run of Claude Code 2.1.330 (non-bare, sandboxed, through
  `run_spec`) in a workspace with a skill ``greet``, a stdio MCP server ``tickets`` (tool
  ``create``), a ``permissions.deny`` rule ``Bash(rm:*)`` and a PreToolUse hook that denies
  ``curl`` with a JSON decision. The main agent invokes the skill, starts a foreground
  general-purpose subagent "cleanup" (which runs ``rm -f x.txt``, refused by the rule, and
  ``curl``, refused by the hook), calls ``mcp__tickets__create``, then in one turn a Write
  outside the attempt folder (refused: workingDir) and ``echo hello > hello.txt``, and ends
  with "Hello! Ticket T-1 filed." Paths are replaced by placeholders.

The slow layer drives the real CLI with scripts: a multi-step spec through `run_spec`, and
`atom validate` in a scenario shared with tests/run/test_harness.py; tests/agents/test_configuration.py's
configured run passes trajectory checks on a real run's calls.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from pytest_atom.checks.builtin import run_checks
from pytest_atom.checks.kinds import BUILTIN_KINDS
from pytest_atom.checks.trajectory import Trajectory
from pytest_atom.errors import SpecError
from pytest_atom.events import parse
from pytest_atom.replay.transcript import permission_denials, stream_turns
from pytest_atom.results.check_result import CheckResult
from pytest_atom.results.record import IterationRecord
from pytest_atom.run.spec_run import run_spec
from pytest_atom.spec.types import Check
from pytest_atom.spec_loader.load import load_spec
from tests.api_helpers import run_and_validate_once
from tests.helpers import capture

SUBAGENT = 'iteration 1 turn 2 > subagent general-purpose "cleanup"'


def record(name: str) -> IterationRecord:
    return IterationRecord(returncode=0, stdout=capture(name))


CONFIGURED = [record("configured-2.1.330.jsonl")]


def checked(tmp_path: Path, accept: str, records: list[IterationRecord]) -> list[CheckResult]:
    """The results of `accept` (YAML list items), loaded as a spec file loads them."""
    spec = tmp_path / "t.atom.yaml"
    spec.write_text(f"prompt: p\naccept:\n{accept}", encoding="utf-8")
    return run_checks(load_spec(spec).accept, tmp_path, records=records)


def one(tmp_path: Path, entry: str, records: list[IterationRecord] = CONFIGURED) -> CheckResult:
    [result] = checked(tmp_path, f"  - {entry}\n", records)
    return result


def test_the_kinds_that_read_the_agents_run_are_the_trajectory_kinds() -> None:
    assert tuple(k.name for k in BUILTIN_KINDS if k.reads_run) == (
        "tool_used",
        "tool_order",
        "skill_invoked",
        "subagent_used",
        "mcp_called",
        "final_message",
        "permission_denied",
        "tool_results",
        "asked_user",
        "user_turns",
    )


def test_the_calls_come_in_the_order_made_each_with_its_place() -> None:
    run = Trajectory.from_records(CONFIGURED)
    assert [c.line() for c in run.calls] == [
        "iteration 1 turn 1: Skill greet",
        'iteration 1 turn 2: Agent general-purpose "cleanup"',
        f"{SUBAGENT} > turn 1: Bash rm -f x.txt (refused: rule): "
        "Permission to use Bash with command rm -f x.txt has been denied.",
        f"{SUBAGENT} > turn 2: Bash curl -s http://example.com (refused: hook): "
        "PreToolUse:Bash hook error: no network tools",
        'iteration 1 turn 3: mcp__tickets__create {"title": "cleanup blocked"}',
        "iteration 1 turn 4: Write <SPEC_DIR>/outside.txt (refused: workingDir): Claude requested "
        "permissions to write to <SPEC_DIR>/outside.txt, but you haven't granted it yet.",
        "iteration 1 turn 4: Bash echo hello > hello.txt",
    ]
    assert run.final_message == "Hello! Ticket T-1 filed.\n\nEXIT_LOOP_NOW"


def test_concurrent_subagents_calls_are_ordered_as_they_happened() -> None:
    """The alpha subagent's echo came first in the capture, though beta was started second."""
    [resumed] = [record("resumed-2.1.330.jsonl")]
    run = Trajectory.from_records([record("subagents-2.1.330.jsonl"), resumed])
    assert [c.line() for c in run.calls] == [
        'iteration 1 turn 1: Agent general-purpose "alpha helper"',
        'iteration 1 turn 1: Agent general-purpose "beta helper"',
        'iteration 1 turn 1 > subagent general-purpose "alpha helper" > turn 1: Bash echo alpha',
        'iteration 1 turn 1 > subagent general-purpose "beta helper" > turn 1: Bash echo beta',
    ]
    assert run.final_message == "Both helpers finished. EXIT_LOOP_NOW"  # iteration 2's


def test_refusals_are_read_with_who_refused_them() -> None:
    stdout = CONFIGURED[0].stdout
    assert [(d.tool_name, d.reason) for d in permission_denials(parse(stdout))] == [
        ("Bash", "rule"),
        ("Bash", "hook"),
        ("Write", "workingDir"),
    ]
    [agent] = stream_turns(parse(stdout))[1].tool_uses
    assert [c.denied for t in agent.subagent for c in t.tool_uses] == ["rule", "hook"]


# --- each kind on the captures ---------------------------------------------------------------


def test_tool_used_counts_calls_whose_input_matches(tmp_path: Path) -> None:
    passed = one(tmp_path, "tool_used: Bash")
    assert (passed.passed, passed.summary) == (True, "Bash was called 3 times")
    assert passed.check.describe() == "tool_used Bash at least once"
    exact = one(tmp_path, "tool_used: {name: Bash, input: '^echo hello', min: 2}")
    assert (exact.passed, exact.summary) == (
        False,
        "Bash /^echo hello/ was called once, expected at least 2 times",
    )
    assert exact.evidence == "iteration 1 turn 4: Bash echo hello > hello.txt"
    # The input's JSON matches too, not only its main field.
    described = one(tmp_path, 'tool_used: {name: Bash, input: \'"description": "fetch"\'}')
    assert described.passed and "curl -s" in described.evidence


def test_tool_used_max_0_fails_a_run_that_called_the_tool_naming_the_call(tmp_path: Path) -> None:
    never = one(tmp_path, "tool_used: {name: Bash, input: 'rm ', max: 0}")
    assert never.check.describe() == "tool_used Bash /rm / never"
    assert (never.passed, never.summary) == (False, "Bash /rm / was called once, expected never")
    assert never.evidence.startswith(f"{SUBAGENT} > turn 1: Bash rm -f x.txt (refused: rule)")
    clean = one(tmp_path, "tool_used: {name: WebFetch, max: 0}")
    assert (clean.passed, clean.summary) == (True, "WebFetch was never called")
    assert clean.evidence == "calls made: Skill, Agent, Bash x3, mcp__tickets__create, Write"


def test_a_subagents_call_counts_for_subagents_and_any_not_for_main(tmp_path: Path) -> None:
    results = checked(
        tmp_path,
        "".join(
            f"  - tool_used: {{name: Bash, input: curl, in: {where}}}\n"
            for where in ("main", "subagents", "any")
        ),
        CONFIGURED,
    )
    assert [(r.passed, r.summary) for r in results] == [
        (False, "Bash /curl/ was never called by the main agent, expected at least once"),
        (True, "Bash /curl/ was called once by subagents"),
        (True, "Bash /curl/ was called once"),
    ]
    assert results[0].evidence.startswith(f"its other calls:\n{SUBAGENT} > turn 1: Bash rm")
    assert results[1].check.describe() == "tool_used Bash /curl/ at least once by subagents"
    concurrent = [record("subagents-2.1.330.jsonl")]
    main = one(tmp_path, "tool_used: {name: Bash, in: main, max: 0}", concurrent)
    assert (main.passed, main.summary) == (True, "Bash was never called by the main agent")


def test_tool_order_compares_first_calls(tmp_path: Path) -> None:
    good = one(tmp_path, "tool_order: [Skill, Agent, Bash, mcp__tickets__create]")
    assert good.passed and good.check.describe() == (
        "tool_order Skill → Agent → Bash → mcp__tickets__create"
    )
    bad = one(tmp_path, "tool_order: [Write, Skill]")
    assert (bad.passed, bad.summary) == (
        False,
        "Skill was first called before Write (iteration 1 turn 1, then iteration 1 turn 4)",
    )
    assert bad.evidence.splitlines()[1:] == [
        "iteration 1 turn 1: Skill greet",
        "iteration 1 turn 4: Write <SPEC_DIR>/outside.txt (refused: workingDir): Claude "
        "requested permissions to write to <SPEC_DIR>/outside.txt, but you haven't granted it yet.",
    ]
    missing = one(tmp_path, "tool_order: [Read, Bash]")
    assert (missing.passed, missing.summary) == (
        False,
        "Read never called (calls made: Skill, Agent, Bash x3, mcp__tickets__create, Write)",
    )


def test_skill_invoked(tmp_path: Path) -> None:
    found = one(tmp_path, "skill_invoked: greet")
    assert (found.passed, found.summary, found.evidence) == (
        True,
        "skill greet invoked once",
        "iteration 1 turn 1: Skill greet",
    )
    other = one(tmp_path, "skill_invoked: release-notes")
    assert (other.passed, other.summary) == (False, "skill release-notes was not invoked")
    assert other.evidence == "Skill calls:\niteration 1 turn 1: Skill greet"
    none = one(tmp_path, "skill_invoked: greet", [record("subagents-2.1.330.jsonl")])
    assert (none.passed, none.evidence) == (False, "calls made: Agent x2, Bash x2")


def test_subagent_used_names_the_type_or_general_purpose(tmp_path: Path) -> None:
    found = one(tmp_path, "subagent_used: general-purpose")
    assert (found.passed, found.summary) == (True, "a general-purpose subagent was started once")
    reviewer = one(tmp_path, "subagent_used: reviewer")
    assert (reviewer.passed, reviewer.summary, reviewer.evidence) == (
        False,
        "no reviewer subagent was started",
        'subagents started:\niteration 1 turn 2: Agent general-purpose "cleanup"',
    )


def test_a_trigger_suites_negated_check_passes_when_nothing_fired(tmp_path: Path) -> None:
    """A prompt that should not fire the skill (or subagent) carries its kind's check with
    ``negated: true`` (the loader's, for `triggers:`): any call naming it fails it."""

    def negated(kind: str, name: str, records: list[IterationRecord] = CONFIGURED) -> CheckResult:
        check = Check(kind, {"name": name, "negated": True}, 1)
        (result,) = run_checks((check,), tmp_path, records=records)
        return result

    fired = negated("skill_invoked", "greet")
    assert (fired.passed, fired.summary, fired.evidence) == (
        False,
        "skill greet was called once",
        "iteration 1 turn 1: Skill greet",
    )
    silent = negated("skill_invoked", "release-notes")
    assert (silent.passed, silent.summary) == (True, "skill release-notes was not called")
    started = negated("subagent_used", "general-purpose")
    assert (started.passed, started.summary) == (
        False,
        "a general-purpose subagent was started once",
    )
    assert negated("subagent_used", "reviewer").passed


def test_mcp_called_by_server_and_tool(tmp_path: Path) -> None:
    assert one(tmp_path, "mcp_called: {server: tickets}").passed
    create = one(tmp_path, "mcp_called: {server: tickets, tool: create}")
    assert (create.passed, create.summary) == (
        True,
        "tool create of MCP server tickets was called once",
    )
    close = one(tmp_path, "mcp_called: {server: tickets, tool: close}")
    assert (close.passed, close.evidence) == (
        False,
        'MCP calls:\niteration 1 turn 3: mcp__tickets__create {"title": "cleanup blocked"}',
    )
    assert close.check.describe() == "mcp_called tickets/close"


def test_final_message_is_the_main_agents_last_text(tmp_path: Path) -> None:
    assert one(tmp_path, "final_message: 'Ticket T-\\d+ filed'").passed
    bad = one(tmp_path, "final_message: '^Goodbye'")
    assert (bad.passed, bad.summary) == (False, "the last message does not match /^Goodbye/")
    assert bad.evidence == "Hello! Ticket T-1 filed.\n\nEXIT_LOOP_NOW"


def test_permission_denied_by_a_rule_a_hook_and_the_folder_boundary(tmp_path: Path) -> None:
    results = checked(
        tmp_path,
        "  - permission_denied: {name: Bash, input: '^rm '}\n"
        "  - permission_denied: {name: Bash, input: curl}\n"
        "  - permission_denied: Write\n"
        "  - permission_denied: {name: Bash, input: echo}\n",
        CONFIGURED,
    )
    assert [(r.passed, r.summary) for r in results] == [
        (True, "Bash /^rm / was refused once"),
        (True, "Bash /curl/ was refused once"),
        (True, "Write was refused once"),
        (False, "Bash /echo/ was not refused"),
    ]
    assert "(refused: hook): PreToolUse:Bash hook error: no network tools" in results[1].evidence
    assert results[3].evidence.endswith(
        "calls that ran:\niteration 1 turn 4: Bash echo hello > hello.txt"
    )
    clean = one(tmp_path, "permission_denied: {}", [record("subagents-2.1.330.jsonl")])
    assert (clean.passed, clean.summary) == (False, "no tool call was refused")


def test_a_trajectory_check_without_an_agent_run_fails_saying_why(tmp_path: Path) -> None:
    [result] = run_checks([Check("skill_invoked", {"name": "greet"}, 3)], tmp_path)
    assert (result.passed, result.summary) == (False, "skill_invoked greet: could not be evaluated")
    assert "no agent ran here" in result.evidence


# --- spec errors ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (
            "tool_used: {name: Bash, min: 2, max: 1}",
            "'accept[0].tool_used' asks for min 2 > max 1 calls, which no run can satisfy: "
            "lower min or raise max at t.atom.yaml:3:34",
        ),
        (
            "tool_used: {name: Bash, min: 1, max: 0}",
            "'accept[0].tool_used' asks for min 1 > max 0 calls, which no run can satisfy: "
            "lower min or raise max (max 0 means never) at t.atom.yaml:3:34",
        ),
        (
            "tool_used: {name: Bash, in: both}",
            "'accept[0].tool_used.in' must be 'main', 'subagents' or 'any', got 'both' "
            "at t.atom.yaml:3:33",
        ),
        (
            "tool_used: {name: Bash, inputs: rm}",
            "unknown key 'inputs' at t.atom.yaml:3:29 — did you mean 'input'?",
        ),
        (
            "tool_used: {name: Bash, input: '(rm'}",
            "'accept[0].tool_used.input' is not a valid regular expression: missing ), "
            "unterminated subpattern (position 0) at t.atom.yaml:3:36",
        ),
        (
            "tool_order: [Read]",
            "'accept[0].tool_order' must be a list of at least two tool names, got a list "
            "at t.atom.yaml:3:17",
        ),
        (
            "tool_order: [Read, Edit, Read]",
            "'accept[0].tool_order[2]' names Read again (first at position 1): tool_order "
            "compares each tool's first call, so name each tool once at t.atom.yaml:3:30",
        ),
        (
            "mcp_called: {tool: create}",
            "missing required key 'server' in 'accept[0].mcp_called' at t.atom.yaml:3:17",
        ),
        (
            "skill_invoked: ''",
            "'accept[0].skill_invoked' must be a non-empty string, got '' at t.atom.yaml:3:20",
        ),
    ],
)
def test_malformed_trajectory_checks_name_file_line_and_fix(
    tmp_path: Path, entry: str, message: str
) -> None:
    spec = tmp_path / "t.atom.yaml"
    spec.write_text(f"prompt: p\naccept:\n  - {entry}\n", encoding="utf-8")
    with pytest.raises(SpecError) as err:
        load_spec(spec)
    shown = str(err.value)
    assert shown.replace(str(tmp_path) + "/", "") == message


# --- the real CLI -----------------------------------------------------------------------------


WRITE = {"tool_use": [{"name": "Bash", "input": {"command": "echo hi > hi.txt"}}]}
READ = {"tool_use": [{"name": "Read", "input": {"file_path": "hi.txt"}}]}


@pytest.mark.slow
def test_atom_validate_runs_trajectory_checks_on_the_script_not_the_oracle(
    tmp_path_factory: pytest.TempPathFactory, claude_bin: Path
) -> None:
    """The `words` spec (tests/api_helpers.py) has an oracle and a `tool_used` check: the
    oracle is judged on its other checks, the script on all of them."""
    folder = run_and_validate_once(tmp_path_factory, claude_bin)
    done = json.loads((folder / "runs.json").read_text())["validate"]
    assert done["exit_code"] == 0, done["output"]
    lines = done["output"].splitlines()
    at = lines.index("  oracle: passed")
    assert lines[at + 1 : at + 3] == [
        '    PASS word_count {"path":"done.txt","words":1} (line 6): 1 words',
        "    1 trajectory check not run: an oracle makes no tool calls",
    ]
    assert "    PASS tool_used Bash at least once (line 7): Bash was called once" in lines
    assert lines[-1] == "1 spec: 1 ok, 0 failed"


@pytest.mark.slow
def test_each_step_is_judged_on_its_own_calls(tmp_path: Path, claude_bin: Path) -> None:
    turns = [WRITE, {"text": "EXIT_LOOP_NOW"}, READ, {"text": "It says hi.\n\nEXIT_LOOP_NOW"}]
    (tmp_path / "script.yaml").write_text(yaml.safe_dump({"turns": turns}), encoding="utf-8")
    spec = tmp_path / "steps.atom.yaml"
    spec.write_text(
        """\
name: steps
script: script.yaml
timeout: 120
attempts: 1
steps:
  - id: write
    prompt: Write hi.txt.
    accept:
      - tool_used: Bash
      - tool_used: {name: Read, max: 0}
  - id: read
    prompt: Read hi.txt.
    accept:
      - tool_used: {name: Bash, max: 0}
      - final_message: says hi
""",
        encoding="utf-8",
    )
    result = run_spec(load_spec(spec), runs_dir=tmp_path / "runs", claude_bin=claude_bin)
    assert result.passed, result.report()
    by_step = {s.id: [(c.summary, c.passed) for c in s.attempts[-1].checks] for s in result.steps}
    assert by_step == {
        "write": [("Bash was called once", True), ("Read was never called", True)],
        "read": [("Bash was never called", True), ("the last message matches /says hi/", True)],
    }
