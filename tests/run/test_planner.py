"""Planner mode: `request:` and `plan_accept:` in a spec, the plan's validation and
assertions, how the gateway tells the planner's requests apart, the plan in reports and
traces, the shipped planned fixture's replay, and a real run of a bad plan."""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft202012Validator

from pytest_atom.errors import HarnessError, ScriptError, SpecError
from pytest_atom.gateway.scripted import Script
from pytest_atom.paths import cli_slug
from pytest_atom.prompts import PromptLoader
from pytest_atom.replay.cassette import Cassette, Interaction
from pytest_atom.replay.placeholders import volatile_paths
from pytest_atom.replay.recording import cassette_path
from pytest_atom.replay.staleness import staleness
from pytest_atom.reports.properties import result_properties
from pytest_atom.reports.summary import summary_table
from pytest_atom.reports.text import failure_report
from pytest_atom.reports.trace import TRACE_SCHEMA, build_trace
from pytest_atom.results.rows import SummaryRow
from pytest_atom.results.spec_result import Plan, Rollback, SpecResult, StepResult
from pytest_atom.run.planner import (
    PLAN_SCHEMA,
    build_prompt,
    check_plan,
    plan_failures,
    replan_feedback,
)
from pytest_atom.run.spec_run import run_spec
from pytest_atom.run.steps import StepsRun, resumed_run_dir
from pytest_atom.settings.options import RunSettings
from pytest_atom.spec.types import PlanAccept
from pytest_atom.spec_loader.load import load_spec
from pytest_atom.wire.request import request_kind
from pytest_atom.wire.roles import legacy_role
from tests.helpers import REPO, ShippedRun, write

REQUEST = "request: Build a greeter and its test.\n"
GOOD_PLAN = {
    "steps": [
        {"id": "research", "prompt": "Look around."},
        {"id": "implement", "prompt": "Write greet.py.", "criteria": ["greet works"]},
        {"id": "test_greet", "prompt": "Test it.", "accept": [{"file_exists": "t.py"}]},
    ]
}


# --- the spec format -------------------------------------------------------------------


def test_a_request_spec_loads_with_its_plan_assertions(tmp_path: Path) -> None:
    body = REQUEST + "plan_accept: {has_step: test, min_steps: 2, max_steps: 5}\n"
    spec = load_spec(write(tmp_path / "s.atom.yaml", body))
    assert spec.request == spec.prompt == "Build a greeter and its test."
    assert spec.steps == ()
    assert spec.plan_accept == PlanAccept(has_step="test", min_steps=2, max_steps=5)


@pytest.mark.parametrize(
    ("body", "message", "line"),
    [
        (
            "prompt: p\n" + REQUEST,
            "a spec has exactly one of 'prompt', 'steps' or 'request', not both 'request' "
            "and 'prompt': remove 'prompt' to let a planner write the steps",
            2,
        ),
        (
            REQUEST + "steps:\n  - {id: one, prompt: a}\n",
            "a spec has exactly one of 'prompt', 'steps' or 'request', not both 'request' "
            "and 'steps'",
            1,
        ),
        (
            "prompt: p\nplan_accept: {min_steps: 2}\n",
            "'plan_accept' asserts on a planner's plan, so it needs 'request:'",
            2,
        ),
        (REQUEST + "plan_accept: {has_steps: x}\n", "unknown key 'has_steps'", 2),
        (REQUEST + "plan_accept: {min_steps: 0}\n", "'plan_accept.min_steps' must be", 2),
        (
            REQUEST + "plan_accept: {min_steps: 4, max_steps: 2}\n",
            "'plan_accept' asks for min_steps 4 > max_steps 2: no plan could pass",
            2,
        ),
        (
            REQUEST + "plan_accept: {has_step: '('}\n",
            "'plan_accept.has_step' is not a valid regular expression",
            2,
        ),
        ("request: ''\n", "'request' must be", 1),
    ],
)
def test_request_spec_errors_name_file_line_and_fix(
    tmp_path: Path, body: str, message: str, line: int
) -> None:
    path = write(tmp_path / "s.atom.yaml", body)
    with pytest.raises(SpecError) as caught:
        load_spec(path)
    assert caught.value.message.startswith(message), caught.value.message
    assert (caught.value.path, caught.value.line) == (path, line)


# --- the plan ----------------------------------------------------------------------------


def planned_spec(tmp_path: Path, accept: str = "") -> Any:
    return load_spec(write(tmp_path / "s.atom.yaml", REQUEST + accept))


def test_a_good_plan_becomes_steps_like_hand_written_ones(tmp_path: Path) -> None:
    plan = check_plan(planned_spec(tmp_path), GOOD_PLAN, tmp_path)
    assert plan.passed and plan.error is None
    assert [s.id for s in plan.steps] == ["research", "implement", "test_greet"]
    assert plan.steps[1].criteria == ("greet works",)
    assert plan.steps[2].accept[0].describe() == "file_exists t.py"
    assert json.loads((tmp_path / "plan.json").read_text()) == GOOD_PLAN  # the evidence


@pytest.mark.parametrize(
    ("steps", "message"),
    [
        (
            [{"id": "Research", "prompt": "a"}],
            "'steps[0].id' must be a step id matching ^[a-z][a-z0-9_]{0,47}$ (a lower-case",
        ),
        (
            [{"id": "one", "prompt": "a"}, {"id": "one", "prompt": "b"}],
            "duplicate step id 'one' (first used on line 3)",
        ),
        ([{"id": "one"}], "missing required key 'prompt' in 'steps[0]'"),
        ([{"id": "one", "prompt": "a", "accept": [{"nope": 1}]}], "unknown check 'nope'"),
        ([], "'steps' must be a non-empty list"),
    ],
)
def test_a_bad_plan_is_the_agents_failure_with_the_spec_message(
    tmp_path: Path, steps: list[Any], message: str
) -> None:
    plan = check_plan(planned_spec(tmp_path), {"steps": steps}, tmp_path)
    assert not plan.passed and plan.steps == ()
    assert plan.error is not None
    assert plan.error.startswith("the planner's plan is not valid steps: ")
    assert message in plan.error and "plan.json" in plan.error


def test_a_plan_that_is_not_a_steps_object_is_a_bad_plan(tmp_path: Path) -> None:
    plan = check_plan(planned_spec(tmp_path), {"steps": [], "extra": 1}, tmp_path)
    assert plan.error is not None and "one key, 'steps'" in plan.error


@pytest.mark.parametrize(
    ("accept", "ids", "failed"),
    [
        (PlanAccept(has_step="test"), ["a", "test_it"], []),
        (
            PlanAccept(has_step="^test$"),
            ["a", "test_it"],
            ["has_step '^test$': no step id matches (steps: a, test_it)"],
        ),
        (PlanAccept(min_steps=3), ["a", "b"], ["min_steps 3: the plan has 2 (a, b)"]),
        (PlanAccept(max_steps=1), ["a", "b"], ["max_steps 1: the plan has 2 (a, b)"]),
        (PlanAccept(min_steps=2, max_steps=2), ["a", "b"], []),
        (None, [], []),
    ],
)
def test_plan_accept_names_each_failed_assertion(
    accept: PlanAccept | None, ids: list[str], failed: list[str]
) -> None:
    assert plan_failures(accept, ids) == failed


def test_plan_accept_failure_is_kept_with_the_valid_steps(tmp_path: Path) -> None:
    spec = planned_spec(tmp_path, "plan_accept: {max_steps: 2}\n")
    plan = check_plan(spec, GOOD_PLAN, tmp_path)
    assert len(plan.steps) == 3 and not plan.passed
    assert plan.failed == ["max_steps 2: the plan has 3 (research, implement, test_greet)"]


def test_a_replan_follows_the_kept_steps_with_ids_of_its_own(tmp_path: Path) -> None:
    spec = planned_spec(tmp_path, "plan_accept: {max_steps: 3}\n")
    kept = check_plan(spec, GOOD_PLAN, tmp_path).steps[:1]  # research stays committed
    answer = {"steps": [{"id": "implement", "prompt": "Again."}, {"id": "check", "prompt": "x"}]}
    plan = check_plan(spec, answer, tmp_path, number=2, kept=kept)
    assert plan.passed and [s.id for s in plan.steps] == ["research", "implement", "check"]
    assert plan.path == tmp_path / "plan-2.json"
    assert json.loads(plan.path.read_text()) == answer  # the answer as given, beside plan.json
    reused = {"steps": [{"id": "research", "prompt": "Look again."}]}
    bad = check_plan(spec, reused, tmp_path, number=2, kept=kept)
    assert bad.error is not None and not bad.passed and bad.steps == ()
    assert "'research' is already the id of a committed step it was told to keep" in bad.error
    four = {"steps": [*answer["steps"], {"id": "more", "prompt": "y"}]}  # 1 kept + 3 new
    assert check_plan(spec, four, tmp_path, number=2, kept=kept).failed == [
        "max_steps 3: the plan has 4 (research, implement, check, more)"
    ]


def test_a_replan_keeps_the_results_of_the_steps_it_keeps_or_plans_again(
    tmp_path: Path,
) -> None:
    """What each step's result becomes over two re-plans: kept, dropped, revived."""
    spec = planned_spec(tmp_path)
    run = StepsRun(spec, tmp_path, PromptLoader(), 0.8, None, Path("claude"), None)

    def plan(ids: list[str], number: int, keep: int) -> Plan:
        answer = {"steps": [{"id": i, "prompt": f"Do {i}."} for i in ids]}
        return check_plan(spec, answer, tmp_path, number=number, kept=run.spec.steps[:keep])

    run._adopt(plan(["a", "b", "c"], 1, 0))
    a, b, c = run.results
    run.rollbacks.append(Rollback("c", 1, "b", "b is wrong"))
    run._adopt(plan(["x", "c"], 2, 1), 1)
    assert [s.id for s in run.spec.steps] == ["a", "x", "c"]
    assert run.results[0] is a and run.results[2] is c  # c keeps its attempts
    assert run.rollbacks[0].dropped == [b]
    run.rollbacks.append(Rollback("c", 2, "x", "x is wrong too"))
    run._adopt(plan(["b", "y"], 3, 1), 1)
    x = run.rollbacks[1].dropped[0]
    assert [r.id for r in run.results] == ["a", "b", "y"] and run.results[1] is b  # revived
    assert run.rollbacks[0].dropped == [] and run.rollbacks[1].dropped == [x, c]
    assert run.spec.prompt.startswith("[a] Do a.\n\n[b] Do b.")


def test_the_replan_brief_names_the_plan_what_stays_and_the_report(tmp_path: Path) -> None:
    spec = planned_spec(tmp_path)
    steps = check_plan(spec, GOOD_PLAN, tmp_path).steps
    brief = replan_feedback(steps, 1, "Step `test_greet` found this step's work wrong.")
    assert "1. `research` (committed: it stays): Look around." in brief
    assert "2. `implement`: Write greet.py." in brief and "3. `test_greet`: Test it." in brief
    assert "rolled back to step `implement`" in brief
    assert "The steps before it (`research`) stay committed" in brief
    assert "Change the strategy" in brief and brief.endswith("found this step's work wrong.")
    assert "Answer with a whole new plan" in replan_feedback(steps, 0, "r")
    text = build_prompt(spec, feedback=brief)
    assert (
        text.index("## The request")
        < text.index("## A rollback: plan again")
        < text.index("1. `research`")
    )
    assert build_prompt(spec) == build_prompt(spec, feedback="")  # no rollback, no section
    own = tmp_path / ".atom" / "prompts"
    own.mkdir(parents=True)
    (own / "PLANNER.md").write_text("Plan: {request}\n")  # a project's own, without the slot
    custom = build_prompt(spec, PromptLoader(tmp_path), feedback="the report")
    assert (
        custom == "Plan: Build a greeter and its test.\n\n## A rollback: plan again\n\nthe report\n"
    )


def test_the_planner_prompt_carries_the_contract_and_the_request(tmp_path: Path) -> None:
    text = build_prompt(planned_spec(tmp_path))
    assert "## The request\n\nBuild a greeter and its test." in text
    assert "^[a-z][a-z0-9_]{0,47}$" in text and "research step" in text
    assert "at most 3 attempts" in text and "change the strategy" in text
    assert "{feedback}" not in text and "{request}" not in text


def test_resume_refuses_a_planner_mode_run(tmp_path: Path) -> None:
    spec = planned_spec(tmp_path)
    folder = tmp_path / "s-20260101-000000-abcdef"
    (folder / "steps").mkdir(parents=True)
    with pytest.raises(HarnessError, match=r"planner mode \(request:\).*without --atom-resume"):
        resumed_run_dir(folder, spec)


# --- the gateway ------------------------------------------------------------------------


def body(schema: dict[str, Any] | None) -> dict[str, Any]:
    tools: list[dict[str, Any]] = [{"name": "Read", "input_schema": {}}]
    if schema is not None:
        tools.append({"name": "StructuredOutput", "input_schema": schema})
    return {"model": "m", "messages": [], "tools": tools}


def test_unmarked_recordings_are_told_apart_by_their_answer_schema() -> None:
    """Cassettes recorded before the role marker: the old guess, from the answer schema."""
    from pytest_atom.judge.reflector import STEP_VERDICT_SCHEMA, VERDICT_SCHEMA

    untitled = {k: v for k, v in PLAN_SCHEMA.items() if k != "title"}
    assert legacy_role(body(PLAN_SCHEMA)) == "planner"
    assert legacy_role(body(untitled)) == "planner"  # a CLI that drops the title
    assert legacy_role(body(VERDICT_SCHEMA)) == "reflector"
    assert legacy_role(body(STEP_VERDICT_SCHEMA)) == "reflector"
    assert legacy_role(body(None)) == "executor"
    recorded = [
        Interaction("POST", "http://x/v1/messages", body(s), 200, "") for s in (PLAN_SCHEMA, None)
    ]
    kinds = [request_kind("POST", "/v1/messages", i.body, i.role) for i in recorded]
    assert kinds == ["planner", "turn"]


def test_existing_cassettes_hold_no_planner_requests() -> None:
    """The planner's kind is new: every older cassette's requests keep their kinds."""
    for path in sorted((REPO / "fixtures/specs/cassettes").glob("**/*.yaml")):
        kinds = [
            request_kind(i.method, i.endpoint, i.body, i.role)
            for i in Cassette.load(path).interactions
        ]
        expected = {"planned": 1, "replanned": 2}.get(path.parent.name, 0)
        assert kinds.count("planner") == expected, path


def test_the_planned_steps_folders_are_normalized_once_known() -> None:
    """The CLI names each attempt folder's slug in its prompt: a planned step's too."""
    from pytest_atom.replay.normalize import Normalizer

    slug = "-tmp-r--atom-runs-planned-1"
    normalizer = Normalizer({slug: "<RUN_DIR_SLUG>"})
    text = f"{slug}-steps-test-attempts-a01/x"
    assert normalizer.paths_out(text) == text  # a slug ends where its component ends
    normalizer.add_paths({f"{slug}-steps-test-attempts-a01": "<S>-steps-test-attempts-a01"})
    assert normalizer.paths_out(text) == "<S>-steps-test-attempts-a01/x"
    assert normalizer.paths_out(slug) == "<RUN_DIR_SLUG>"  # the earlier paths stay


def test_a_step_id_with_an_underscore_is_normalized_as_the_cli_spells_it(
    tmp_path: Path,
) -> None:
    """The CLI's slug of `steps/test_first/attempts/a01` has `test-first`: a run folder
    name left in a cassette otherwise (`atom cassette check` flags it)."""
    spec = load_spec(write(tmp_path / "s.atom.yaml", "steps:\n  - {id: test_first, prompt: p}\n"))
    paths = volatile_paths(tmp_path, spec)
    name = "steps-test-first-attempts-a01"
    assert paths[f"{cli_slug(tmp_path.resolve())}-{name}"] == f"<RUN_DIR_SLUG>-{name}"


def test_a_script_plays_the_planner_from_its_plan_shorthand(tmp_path: Path) -> None:
    script = Script.from_data({"turns": [{"text": "x"}], "planner": [{"plan": GOOD_PLAN}]})
    [turn] = script.planner
    assert [(u.name, u.input) for u in turn.tool_use] == [("StructuredOutput", GOOD_PLAN)]
    bad = tmp_path / "bad.yaml"
    bad.write_text("turns: [{text: x}]\nplanner:\n  - plan: [steps]\n")
    with pytest.raises(ScriptError, match=r"'plan' is a mapping.*bad.yaml:3"):
        Script.load(bad)


# --- reports ----------------------------------------------------------------------------


def failed_plan_result(tmp_path: Path, answer: dict[str, Any], accept: str = "") -> SpecResult:
    spec = planned_spec(tmp_path, accept)
    result = SpecResult(spec, tmp_path, [], 1.0, 0.8)
    result.plan = check_plan(spec, answer, tmp_path)
    return result


def test_a_failed_plan_shows_in_the_report_trace_and_summary(tmp_path: Path) -> None:
    result = failed_plan_result(tmp_path, GOOD_PLAN, "plan_accept: {has_step: deploy}\n")
    assert not result.passed
    report = failure_report(result)
    assert "  plan: research, implement, test_greet (" in report
    assert "    plan_accept failed: has_step 'deploy': no step id matches" in report
    props = result_properties(result)
    assert props["atom_plan_passed"] is False
    table = summary_table([SummaryRow.of("s.atom.yaml::s", props)])
    assert "failed: plan" in table[1]
    assert table[-1].startswith("s.atom.yaml::s: plan: research, implement, test_greet - FAILED")
    trace = build_trace(result)
    Draft202012Validator(TRACE_SCHEMA).validate(trace)
    assert [s["id"] for s in trace["atom"]["plan"]["steps"]] == [
        "research",
        "implement",
        "test_greet",
    ]
    assert result.plan is not None
    assert trace["atom"]["plan"]["plan_accept_failed"] == result.plan.failed


def test_an_invalid_plan_shows_why_no_step_ran(tmp_path: Path) -> None:
    result = failed_plan_result(tmp_path, {"steps": [{"id": "Bad", "prompt": "x"}]})
    report = failure_report(result)
    assert "  plan: invalid, no step ran (" in report
    assert "'steps[0].id' must be a step id matching" in report
    assert result_properties(result)["atom_plan"].startswith("plan: invalid (")
    Draft202012Validator(TRACE_SCHEMA).validate(build_trace(result))


def test_a_failed_replan_fails_the_spec_and_shows_under_its_rollback(tmp_path: Path) -> None:
    spec = planned_spec(tmp_path)
    result = SpecResult(spec, tmp_path, [], 1.0, 0.8)
    result.plan = check_plan(spec, GOOD_PLAN, tmp_path)
    replan = check_plan(
        spec,
        {"steps": [{"id": "research", "prompt": "x"}]},
        tmp_path,
        number=2,
        kept=result.plan.steps[:1],
    )
    dropped = StepResult("test_greet", runs=1)
    result.steps = [StepResult("research", runs=1, committed=tmp_path), StepResult("implement")]
    result.rollbacks = [Rollback("test_greet", 1, "implement", "It is wrong.", replan, [dropped])]
    assert not result.passed and result.current_plan is replan
    report = failure_report(result)
    assert "  verdict: fail: the planner's re-plan after a rollback did not pass" in report
    assert (
        "  rollback: step test_greet (a01) rolled back to implement; the planner planned the "
        "steps from implement on anew" in report
    )
    assert "    re-plan: invalid, no step ran after it (" in report
    assert "already the id of a committed step" in report
    props = result_properties(result)
    assert props["atom_plan_passed"] is False
    assert props["atom_plan"].endswith("(re-planned after 1 rollback)")
    assert "failed: plan" in summary_table([SummaryRow.of("s.atom.yaml::s", props)])[1]
    trace = build_trace(result)
    Draft202012Validator(TRACE_SCHEMA).validate(trace)
    assert [(c["step_id"], c["state"]) for c in trace["children"]] == [
        ("research", "succeeded"),
        ("implement", "not_run"),
        ("test_greet", "dropped"),
    ]
    [rollback] = trace["children"][2]["children"]
    assert rollback["replan"]["passed"] is False and rollback["replan"]["file"].endswith(
        "plan-2.json"
    )


# --- real runs --------------------------------------------------------------------------


@pytest.mark.slow
def test_the_planned_fixture_replays_with_its_plan(shipped_run: ShippedRun) -> None:
    """The session's one replay of the shipped fixtures (planner, then two steps)."""
    assert "specs/planned.atom.yaml::planned: plan: implement, test" in shipped_run.output
    [run] = shipped_run.runs.glob("planned-*")
    assert json.loads((run / "plan.json").read_text())["steps"][1]["id"] == "test"
    assert (run / "steps/test/committed/test_greet.py").is_file()
    trace = json.loads((shipped_run.traces / "planned/planned.json").read_text())
    Draft202012Validator(TRACE_SCHEMA).validate(trace)
    assert [c["step_id"] for c in trace["children"]] == ["implement", "test"]
    assert [s["id"] for s in trace["atom"]["plan"]["steps"]] == ["implement", "test"]
    # One session per step: the plan was recalled from the cassette (no planner session ran).
    assert trace["atom"]["plan"]["recalled"] is True
    assert trace["cost"]["dispatched_runs"] == 2
    props = {
        p.get("name"): p.get("value")
        for case in ET.parse(shipped_run.junit).iter("testcase")
        if case.get("name") == "planned"
        for p in case.iter("property")
    }
    assert props["atom_plan"] == "plan: implement, test" and props["atom_steps"] == "steps 2/2"


@pytest.mark.slow
def test_the_replanned_fixture_changes_strategy_after_its_rollback(
    shipped_run: ShippedRun,
) -> None:
    """Rollback recovery, replayed: step `test` rolls back `implement`; the
    planner hears the report and plans test-first from there; `scaffold` is not re-run."""
    assert (
        "specs/replanned.atom.yaml::replanned: plan: scaffold, test_first, make_it_pass "
        "(re-planned after 1 rollback)" in shipped_run.output
    )
    [run] = shipped_run.runs.glob("replanned-*")
    first = json.loads((run / "plan.json").read_text())
    second = json.loads((run / "plan-2.json").read_text())
    assert [s["id"] for s in first["steps"]] == ["scaffold", "implement", "test"]
    assert [s["id"] for s in second["steps"]] == ["test_first", "make_it_pass"]
    assert (run / "plan-2" / "greet.py").is_file()  # the planner read scaffold's commit
    attempts = {
        step.name: sorted(p.name for p in (step / "attempts").iterdir())
        for step in (run / "steps").iterdir()
    }
    assert attempts == {
        "scaffold": ["a01"],
        "implement": ["a01"],
        "test": ["a01"],
        "test_first": ["a01"],
        "make_it_pass": ["a01"],
    }
    committed = {p.parent.name for p in run.glob("steps/*/committed")}
    assert committed == {"scaffold", "test_first", "make_it_pass"}
    assert 'return "hello, " + name' in (run / "committed/greet.py").read_text()
    trace = json.loads((shipped_run.traces / "replanned/replanned.json").read_text())
    Draft202012Validator(TRACE_SCHEMA).validate(trace)
    assert [(c["step_id"], c["state"]) for c in trace["children"]] == [
        ("scaffold", "succeeded"),
        ("test_first", "succeeded"),
        ("make_it_pass", "succeeded"),
        ("implement", "dropped"),
        ("test", "dropped"),
    ]
    rollback = trace["children"][4]["children"][-1]
    assert rollback["target"] == "implement" and rollback["replan"]["passed"] is True
    assert [s["id"] for s in rollback["replan"]["steps"]] == [
        "scaffold",
        "test_first",
        "make_it_pass",
    ]
    # 5 executor runs; both plans and the reflector's verdict were recalled from the cassette.
    assert trace["cost"]["dispatched_runs"] == 5
    cassette = Cassette.load(REPO / "fixtures/specs/cassettes/replanned/replanned.yaml")
    planner = [
        i
        for i in cassette.interactions
        if request_kind(i.method, i.endpoint, i.body, i.role) == "planner"
    ]
    replan = json.dumps(planner[1].body)
    assert "A rollback: plan again" in replan and "greet.py lacks the comma" in replan
    assert "A rollback" not in json.dumps(planner[0].body)


BAD = """\
name: bad-plan
script: bad_plan.yaml
timeout: 120
request: Do something.
"""


@pytest.mark.slow
@pytest.mark.usefixtures("claude_for_pytester")
def test_a_bad_plan_fails_its_spec_readably_before_any_step(pytester: pytest.Pytester) -> None:
    """A scripted planner's bad step id: the spec fails with the spec's own message."""
    pytester.makefile(".atom.yaml", bad_plan=BAD)
    plan = {"steps": [{"id": "Step-1", "prompt": "x"}]}
    script = {"turns": [{"text": "unused"}], "planner": [{"plan": plan}]}
    (pytester.path / "bad_plan.yaml").write_text(yaml.safe_dump(script))
    result = pytester.runpytest("--atom", "bad_plan.atom.yaml")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "  verdict: fail: the planner's plan did not pass, so no step ran",
            "*plan: invalid, no step ran*",
            "*'steps?0?.id' must be a step id matching ^?a-z??a-z0-9_?{0,47}$ *got 'Step-1'*",
            "*bad_plan.atom.yaml::bad-plan*failed: plan*",
        ]
    )
    [run] = (pytester.path / ".atom/runs").glob("bad-plan-*")
    assert not (run / "steps").exists()  # no step ran


@pytest.mark.slow
def test_an_invalid_replan_fails_the_spec_where_it_was_made(
    tmp_path: Path, claude_bin: Path
) -> None:
    """The replanned fixture, scripted, with a second plan that reuses a kept step's id."""
    fixtures = REPO / "fixtures/specs"
    (tmp_path / "scripts").mkdir()
    shutil.copy(fixtures / "replanned.atom.yaml", tmp_path)
    script = yaml.safe_load((fixtures / "scripts/replanned.yaml").read_text())
    script["planner"][1] = {"plan": {"steps": [{"id": "scaffold", "prompt": "Again."}]}}
    (tmp_path / "scripts/replanned.yaml").write_text(yaml.safe_dump(script))
    spec = load_spec(tmp_path / "replanned.atom.yaml")
    settings = RunSettings(record_mode="all")  # recorded from the script
    result = run_spec(spec, runs_dir=tmp_path / "runs", claude_bin=claude_bin, settings=settings)
    assert not result.passed and result.harness_error is None
    [rollback] = result.rollbacks
    assert rollback.replan is not None and rollback.replan.error is not None
    assert [s.id for s in result.steps] == ["scaffold", "implement", "test"]  # the old plan
    assert [s.passed for s in result.steps] == [True, False, False]
    assert (result.run_dir / "plan-2.json").is_file()
    assert sorted(p.name for p in (result.run_dir / "steps").iterdir()) == [
        "implement",
        "scaffold",
        "test",
    ]  # no step ran after the invalid re-plan
    report = result.report()
    assert "  verdict: fail: the planner's re-plan after a rollback did not pass" in report
    assert "    re-plan: invalid, no step ran after it (" in report
    assert "'scaffold' is already the id of a committed step it was told to keep" in report
    # Its cassette fits the spec as written: the hash is of the request, not of the planned
    # steps the run lists as its prompt.
    assert staleness(spec, Cassette.load(cassette_path(spec))) == []
