"""Multi-step specs: the spec format, rollback rules, reports and traces, and real runs
of the shipped step fixtures (replayed) and of inline scripted specs."""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from jsonschema import Draft202012Validator

from atom_cli.main import main
from pytest_atom.errors import HarnessError, SpecError
from pytest_atom.judge.reflector import build_prompt
from pytest_atom.prompts import PromptLoader
from pytest_atom.reports.html import render_html, report_row, spec_view
from pytest_atom.reports.properties import result_properties
from pytest_atom.reports.summary import summary_table
from pytest_atom.reports.text import failure_report
from pytest_atom.reports.trace import TRACE_SCHEMA, build_trace
from pytest_atom.results.harness_events import AnyEvent, ChecksRan, StepCommitted
from pytest_atom.results.record import RunOutcome
from pytest_atom.results.rows import SummaryRow
from pytest_atom.results.spec_result import Attempt, Rollback, SpecResult, StepResult
from pytest_atom.results.verdict import CriterionVerdict, Verdict
from pytest_atom.run.spec_run import run_spec
from pytest_atom.run.steps import StepsRun, resumed_run_dir, step_spec, step_task
from pytest_atom.settings.options import CONFIG_SETTINGS, INI_SETTINGS
from pytest_atom.settings.resolved import Layer, resolve
from pytest_atom.spec_loader.load import load_spec
from tests.helpers import REPO, ShippedRun, bash, write
from tests.recording_helpers import KEEP_RESULTS, RESULTS

THREE = """\
name: three
attempts: 2
max_rollbacks: {max_rollbacks}
limits: {{max_turns: 9}}
steps:
  - id: scaffold
    prompt: Create a.
  - id: implement
    prompt: Create b.
    attempts: 4
    limits: {{max_turns: 3}}
  - id: test
    prompt: Create c.
    criteria: [c exists]
"""


# --- the spec format -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "message", "line"),
    [
        (
            "steps:\n  - {id: ok, prompt: a}\n  - {id: Bad-Id, prompt: b}\n",
            "'steps[1].id' must be a step id matching ^[a-z][a-z0-9_]{0,47}$",
            3,
        ),
        (
            "steps:\n  - {id: same, prompt: a}\n  - {id: same, prompt: b}\n",
            "duplicate step id 'same' (first used on line 2): step ids must be unique "
            "within a spec, rename one",
            3,
        ),
        (
            "prompt: p\nsteps:\n  - {id: one, prompt: a}\n",
            "a spec has either 'prompt' or 'steps', not both: move the prompt into a step "
            "(steps[0].prompt) or remove 'steps'",
            2,
        ),
        ("description: d\n", "missing required key 'prompt'", 1),
        ("steps: []\n", "'steps' must be a non-empty list", 1),
        (
            "session: later\nsteps:\n  - {id: one, prompt: a}\n",
            "'session' must be 'continue' or 'fresh', got 'later'",
            1,
        ),
        ("steps:\n  - {id: one}\n", "missing required key 'prompt' in 'steps[0]'", 2),
    ],
)
def test_spec_errors_name_file_line_and_fix(
    tmp_path: Path, body: str, message: str, line: int
) -> None:
    path = write(tmp_path / "s.atom.yaml", body)
    with pytest.raises(SpecError) as caught:
        load_spec(path)
    assert caught.value.message.startswith(message)
    assert (caught.value.path, caught.value.line) == (path, line)


def test_a_step_inherits_what_it_does_not_set(tmp_path: Path) -> None:
    spec = load_spec(write(tmp_path / "s.atom.yaml", THREE.format(max_rollbacks=2)))
    assert [s.id for s in spec.steps] == ["scaffold", "implement", "test"]
    assert (spec.session, spec.max_rollbacks) == ("continue", 2)
    first = step_spec(spec, spec.steps[0], 0, None)
    assert (first.attempts, first.limits.max_turns, first.steps) == (2, 9, ())
    second = step_spec(spec, spec.steps[1], 1, tmp_path)
    assert (second.attempts, second.limits.max_turns, second.workspace) == (4, 3, tmp_path)
    third = step_spec(spec, spec.steps[2], 2, None)
    assert third.criteria == ("c exists",) and "Your step id is `test`" in third.prompt
    assert third.prompt.startswith("# Step `test` (3 of 3)")
    assert "[implement] Create b." in spec.prompt  # reports show every step's prompt


def test_the_step_task_carries_the_rollback_report() -> None:
    spec_step = load_spec(REPO / "fixtures/specs/rollback_steps.atom.yaml").steps[1]
    task = step_task(spec_step, 1, 3, "Step `test` found this step's work wrong.")
    assert task.index("`implement`") < task.index("## Redo this step") < task.index("wrong.")


# --- rollback rules and the reflector's contract --------------------------------------


def rollback_verdict(target: str, score: float = 0.2) -> Verdict:
    return Verdict(
        score, "rollback", (CriterionVerdict("c exists", False, "b is wrong"),), "fix b", (), target
    )


def attempt(number: int, verdict: Verdict | None, path: Path = Path("/nowhere")) -> Attempt:
    return Attempt(number, path, RunOutcome(True, 1, "done"), [], verdict=verdict)


def steps_run(tmp_path: Path, max_rollbacks: int) -> StepsRun:
    spec = load_spec(write(tmp_path / "s.atom.yaml", THREE.format(max_rollbacks=max_rollbacks)))
    return StepsRun(spec, tmp_path, PromptLoader(), 0.8, None, Path("claude"), None)


def test_rollback_goes_to_an_earlier_step_once_per_target_within_the_total(
    tmp_path: Path,
) -> None:
    run = steps_run(tmp_path, max_rollbacks=2)
    assert run._rollback_target(2, [attempt(1, rollback_verdict("implement"))]) == 1
    assert run._rollback_target(2, [attempt(1, rollback_verdict("scaffold"))]) == 0
    assert run._rollback_target(1, [attempt(1, rollback_verdict("test"))]) is None
    assert run._rollback_target(2, [attempt(1, rollback_verdict("nope"))]) is None
    assert "not an earlier step (scaffold, implement)" in run.notes[-1]
    run.rollbacks.append(Rollback("test", 1, "implement", "r"))
    assert run._rollback_target(2, [attempt(2, rollback_verdict("implement"))]) is None
    assert "one per target" in run.notes[-1]
    assert run._rollback_target(2, [attempt(2, rollback_verdict("scaffold"))]) == 0
    run = steps_run(tmp_path, max_rollbacks=1)
    run.rollbacks.append(Rollback("test", 1, "implement", "r"))
    assert run._rollback_target(2, [attempt(2, rollback_verdict("scaffold"))]) is None
    assert "max_rollbacks (1) were used" in run.notes[-1]
    proceed = Verdict(0.9, "proceed", (), "")
    assert run._rollback_target(2, [attempt(1, proceed)]) is None


def test_roll_back_wipes_the_target_and_later_commits_and_keeps_attempts(
    tmp_path: Path,
) -> None:
    run = steps_run(tmp_path, max_rollbacks=2)
    for step in ("scaffold", "implement", "test"):
        (tmp_path / "steps" / step / "committed").mkdir(parents=True)
        (tmp_path / "steps" / step / "attempts" / "a01").mkdir(parents=True)
    for result in run.results:
        result.committed = tmp_path / "steps" / result.id / "committed"
    feedback: dict[str, str] = {}
    assert run._roll_back(2, 1, attempt(1, rollback_verdict("implement")), feedback) == 1
    assert [r.committed is not None for r in run.results] == [True, False, False]
    assert [
        (tmp_path / "steps" / s / "committed").exists() for s in ("scaffold", "implement", "test")
    ] == [True, False, False]
    assert (tmp_path / "steps" / "implement" / "attempts" / "a01").is_dir()
    assert run.rollbacks == [Rollback("test", 1, "implement", feedback["implement"])]
    assert "Step `test` (attempt 1) found this step's committed work wrong" in feedback["implement"]
    assert "- c exists: b is wrong" in feedback["implement"] and "fix b" in feedback["implement"]
    message = run._first_message(1, feedback["implement"])
    assert message is not None and message.startswith("The work of this step and every later")
    assert "## Redo this step" in message


def test_a_fresh_session_hears_the_rollback_report_in_its_task(tmp_path: Path) -> None:
    """A fresh session has no first message: the report goes into the step's task."""
    spec = load_spec(
        write(tmp_path / "s.atom.yaml", THREE.format(max_rollbacks=1) + "session: fresh\n")
    )
    run = StepsRun(spec, tmp_path, PromptLoader(), 0.8, None, Path("claude"), None)
    assert run._first_message(1, "fix b") is None
    rerun = run._step_run(spec.steps[1], 1, run.results[1], "fix b")
    assert rerun.spec.prompt.endswith("## Redo this step\n\nfix b")
    assert "Redo" not in run._step_run(spec.steps[2], 2, run.results[2], None).spec.prompt


def test_the_reflector_hears_of_rollback_only_in_a_later_step() -> None:
    spec = load_spec(REPO / "fixtures/specs/create_file.atom.yaml")
    plain = build_prompt(spec, [], "(no changes)", "done", 0.8)
    assert "{rollback}" not in plain and "`target`" not in plain
    stepped = build_prompt(spec, [], "(no changes)", "done", 0.8, earlier_steps=["scaffold"])
    assert "answer `rollback` with `target` set to that step's id (one of `scaffold`)" in stepped
    assert stepped.replace(stepped[stepped.index("\n- This is one step") :], "") in plain
    verdict = Verdict.parse(
        {"score": 0.1, "decision": "rollback", "target": "scaffold", "criteria": [], "feedback": ""}
    )
    assert verdict.target == "scaffold" and verdict.to_dict()["target"] == "scaffold"
    assert (
        "target"
        not in Verdict.parse({**json.loads(json.dumps(verdict.to_dict())), "target": ""}).to_dict()
    )


# --- reports and traces of a steps result, without running anything -------------------


def steps_result(tmp_path: Path) -> SpecResult:
    """A three-step run: test rolled back to implement, then test failed again."""
    spec = load_spec(write(tmp_path / "s.atom.yaml", THREE.format(max_rollbacks=1)))
    failed = attempt(2, rollback_verdict("implement", 0.3), tmp_path / "a")
    failed.decision = "fail"
    ok = Verdict(0.9, "proceed", (), "")
    steps = [
        StepResult("scaffold", [attempt(1, None)], tmp_path, runs=1),
        StepResult("implement", [attempt(1, None), attempt(2, None)], tmp_path, runs=2),
        StepResult("test", [attempt(1, rollback_verdict("implement")), failed], None, runs=2),
    ]
    for step in steps[:2]:
        for a in step.attempts:
            a.decision, a.verdict = "proceed", ok
    steps[2].attempts[0].decision = "fail"
    return SpecResult(
        spec,
        tmp_path,
        [failed],
        1.0,
        0.8,
        steps=steps,
        rollbacks=[Rollback("test", 1, "implement", "Step `test` found it wrong.")],
    )


def test_the_failure_report_shows_each_step_and_the_rollback(tmp_path: Path) -> None:
    result = steps_result(tmp_path)
    assert not result.passed and result.steps_summary == "steps 2/3"
    report = failure_report(result)
    assert "  steps 2/3 committed" in report
    assert "    implement: committed after a01, a02 (2 runs)" in report
    assert "    test: fail after a01, a02 (2 runs), score 0.3" in report
    assert "  rollback: step test (a01) rolled back to implement;" in report
    assert "  failing step: test (below: its last attempt)" in report
    props = result_properties(result)
    assert props["atom_steps"] == "steps 2/3" and props["atom_rollbacks"] == 1
    assert props["atom_step_scaffold"] == "committed after a01"
    [_, row] = summary_table([SummaryRow.of("s.atom.yaml::three", props)])
    assert "failed: steps 2/3" in row


def test_the_trace_nests_steps_with_their_attempts_and_rollbacks(tmp_path: Path) -> None:
    trace = build_trace(steps_result(tmp_path))
    Draft202012Validator(TRACE_SCHEMA).validate(trace)
    assert [c["step_id"] for c in trace["children"]] == ["scaffold", "implement", "test"]
    test = trace["children"][2]
    assert test["atom_ref"] == trace["atom_ref"] + "#step-test" and test["runs"] == 2
    assert [c["atom_ref"].rsplit("#", 1)[1] for c in test["children"]] == [
        "attempt-1",
        "attempt-2",
        "rollback-1",
    ]
    assert test["children"][2]["target"] == "implement" and test["state"] == "failed"
    assert trace["atom"]["steps"] == "steps 2/3"
    ids = [c["invocation_id"] for s in trace["children"] for c in s["children"]]
    assert len(set(ids)) == len(ids)


# --- real runs ----------------------------------------------------------------------------


@pytest.mark.slow
def test_shipped_step_fixtures_replay_and_the_rollback_reruns_step_two(
    shipped_run: ShippedRun,
) -> None:
    assert "12 passed, 1 xfailed" in shipped_run.output  # the step fixtures among them
    [run] = shipped_run.runs.glob("rollback-steps-*")
    steps = run / "steps"
    attempts = {
        s: sorted(p.name for p in (steps / s / "attempts").iterdir())
        for s in ("scaffold", "implement", "test")
    }
    assert attempts == {"scaffold": ["a01"], "implement": ["a01", "a02"], "test": ["a01", "a02"]}
    # step 3 committed once, after the rollback: its a02 on implement's fixed greet
    assert (steps / "test" / "committed" / "test_greet.py").read_bytes() == (
        steps / "test" / "attempts" / "a02" / "test_greet.py"
    ).read_bytes()
    assert '"hello, "' in (steps / "implement" / "committed" / "greet.py").read_text()
    assert '"hello "' in (steps / "implement" / "attempts" / "a01" / "greet.py").read_text()
    trace = json.loads((shipped_run.traces / "rollback_steps/rollback-steps.json").read_text())
    Draft202012Validator(TRACE_SCHEMA).validate(trace)
    [rollback] = [c for c in trace["children"][2]["children"] if "#rollback-" in c["atom_ref"]]
    assert (rollback["source"], rollback["attempt"], rollback["target"]) == ("test", 1, "implement")
    props = {
        p.get("name"): p.get("value")
        for case in ET.parse(shipped_run.junit).iter("testcase")
        if case.get("name") == "rollback-steps"
        for p in case.iter("property")
    }
    assert props["atom_steps"] == "steps 3/3" and props["atom_rollbacks"] == "1"
    assert props["atom_step_implement"] == "committed after a01, a02 (2 runs)"


FAILING = """\
name: pair
script: script.yaml
max_iterations: 2
timeout: 120
session: {session}
steps:
  - id: first
    prompt: Create a.txt.
    accept: [file_exists: a.txt]
  - id: second
    prompt: Create b.txt.
    accept: [file_exists: b.txt, file_exists: a.txt]
"""


@pytest.mark.slow
@pytest.mark.usefixtures("claude_for_pytester")
def test_without_the_sandbox_a_second_step_writing_outside_fails_its_subtest_and_the_spec(
    pytester: pytest.Pytester,
) -> None:
    """One pytest run of a two-step spec without the sandbox whose second step writes into
    the first one's commit: caught after the fact, that fails the step though its own
    checks pass. Each step is a subtest; the failed one's and the spec's failures are
    reported, and the result (kept by a pytest_atom_verdict hook) shows the second step
    worked from the first one's commit."""
    turns: list[Any] = [
        bash("touch a.txt", "Creating a.txt."),
        {"text": "Done. EXIT_LOOP_NOW"},
        bash("echo tampered > ../../../first/committed/a.txt; touch b.txt", "Both files."),
        {"text": "Done. EXIT_LOOP_NOW"},
    ]
    pytester.makefile(".atom.yaml", pair=FAILING.format(session="fresh") + "sandbox: false\n")
    (pytester.path / "script.yaml").write_text(yaml.safe_dump({"turns": turns}))
    pytester.makeconftest(KEEP_RESULTS)
    RESULTS.clear()
    outcome = pytester.runpytest("--atom", "-rA")
    outcome.assert_outcomes(failed=2)  # the failed step's subtest, and the spec itself
    outcome.stdout.fnmatch_lines(
        [
            "SUBFAILED[[]second[]] pair.atom.yaml::pair - Failed: second: fail after a01",
            "FAILED pair.atom.yaml::pair - atom spec 'pair' failed *",
        ],
        consecutive=False,
    )
    # the summary table has the spec once, not once per subtest
    assert len([line for line in outcome.outlines if line.startswith("pair.atom.yaml::pair ")]) == 1
    [result] = RESULTS
    assert not result.passed and result.steps_summary == "steps 1/2"
    first, second = result.steps
    assert first.passed and not second.passed and second.decision == "fail"
    assert all(c.passed for c in result.checks)  # its own checks pass: the contract fails it
    assert "step 'second' wrote outside its attempt folder" in result.report()
    assert "steps/first/committed/a.txt" in result.report()
    assert (result.run_dir / "steps/second/attempts/a01/a.txt").exists()  # from first's commit
    assert not (result.run_dir / "committed").exists()
    assert result.final_attempts == second.attempts and result.iterations == 2
    assert result.attempts == first.attempts + second.attempts  # every attempt, as they ran
    # fresh sessions: one conversation per step, each told its step id
    assert len({r.session_id for a in result.all_attempts for r in a.records}) == 2
    prompt = (result.run_dir / "steps/second/attempts/a01/USER_PROMPT.md").read_text()
    assert prompt.startswith("# Step `second` (2 of 2)")


class Interrupt(KeyboardInterrupt):
    """Ctrl-C, the moment the first step is committed."""


@pytest.mark.slow
def test_a_run_interrupted_in_step_two_resumes_there_without_rerunning_step_one(
    tmp_path: Path, claude_bin: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C after step two's checks ran (step one committed): `atom run --resume` shows
    and runs step two alone, as a02, beside the interrupted a01 and its conversation, set
    aside. Interrupted the moment step one committed, a run resumes the same way (nothing
    of step two to set aside): the same code, so one moment is run here."""
    spec = load_spec(copy_two_steps(tmp_path))
    committed = False

    def on_event(event: AnyEvent) -> None:
        nonlocal committed
        committed = committed or isinstance(event, StepCommitted)
        if committed and isinstance(event, ChecksRan):
            raise Interrupt

    with pytest.raises(Interrupt):
        run_spec(spec, runs_dir=tmp_path / "runs", claude_bin=claude_bin, on_event=on_event)
    [run_dir] = (tmp_path / "runs").iterdir()
    assert (run_dir / "steps/implement/committed/greet.py").is_file()
    assert (run_dir / "steps/test/attempts/a01").is_dir()  # partial work stays in its folder
    monkeypatch.setenv("ATOM_CLAUDE_BIN", str(claude_bin))
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(
        main, ["run", "two_steps.atom.yaml", "--runs-dir", "runs", "--resume", str(run_dir)]
    )
    assert result.exit_code == 0, result.output
    assert "step test (2/2)" in result.output and "committed step test (a02)" in result.output
    assert "step implement" not in result.output  # committed before: not run again
    # no second run folder (beside it, the session's results file, `last-run.json`)
    assert [p for p in (tmp_path / "runs").iterdir() if p.is_dir()] == [run_dir]
    assert sorted(p.name for p in (run_dir / "steps/implement/attempts").iterdir()) == ["a01"]
    assert sorted(p.name for p in (run_dir / "steps/test/attempts").iterdir()) == ["a01", "a02"]
    assert (run_dir / "committed/test_greet.py").is_file()
    set_aside = list((run_dir / "claude-config/projects").glob("*/*.jsonl.interrupted"))
    assert len(set_aside) == 1  # the interrupted conversation
    # only step 2 ran; its reflector's verdict was recalled from the cassette (the same
    # request over the same folder: pytest_atom.replay.recall)
    [row] = [line for line in result.output.splitlines() if line.startswith("two_steps.atom")]
    assert " passed " in row and " recalled " in row, row


def copy_two_steps(folder: Path) -> Path:
    for part in ("two_steps.atom.yaml", "scripts", "cassettes/two_steps"):
        source = REPO / "fixtures/specs" / part
        copy = shutil.copytree if source.is_dir() else shutil.copy2
        copy(source, folder / part)
    return folder / "two_steps.atom.yaml"


def test_resume_refuses_what_it_cannot_continue(tmp_path: Path) -> None:
    single = load_spec(REPO / "fixtures/specs/create_file.atom.yaml")
    stepped = load_spec(REPO / "fixtures/specs/two_steps.atom.yaml")
    run = tmp_path / "two-steps-20260101-120000-abc123"
    run.mkdir()
    with pytest.raises(HarnessError, match="holds no steps/ folder"):
        resumed_run_dir(run, stepped)
    (run / "steps").mkdir()
    assert resumed_run_dir(run, stepped) == run.resolve()
    assert resumed_run_dir(run, single) is None  # another spec's run: that one runs afresh
    other = tmp_path / "create-file-20260101-120000-abc123"
    other.mkdir()
    with pytest.raises(HarnessError, match="has no steps; only a multi-step spec"):
        resumed_run_dir(other, single)


def test_resume_is_a_command_line_setting_only(pytester: pytest.Pytester) -> None:
    assert "resume" not in (*INI_SETTINGS, *CONFIG_SETTINGS)
    assert resolve([Layer("the command line", {"resume": "runs/x"})]).resume == Path("runs/x")
    pytester.runpytest("--help").stdout.fnmatch_lines(["*--atom-resume=RUN_DIR*"])
    help_text = CliRunner().invoke(main, ["run", "--help"]).output
    assert "--resume DIRECTORY" in help_text


def test_the_html_view_lists_every_step_attempt_by_step(tmp_path: Path) -> None:
    view = spec_view(steps_result(tmp_path))
    labels = [a["label"] for a in view["attempts"]]
    assert labels == ["scaffold a01", "implement a01", "implement a02", "test a01", "test a02"]
    html = render_html([report_row("s.atom.yaml::three", "failed", view)])
    assert "<strong>Steps</strong> steps 2/3 committed" in html
    assert ">implement a02</a>" in html and "<summary>test a02 <span" in html  # as written
