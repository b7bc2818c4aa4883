"""The reflector's verdict becomes the outcome.

A passing run and a refined one go through the real CLI once per session (scenarios of
tests/judge_helpers.py, shared with reports/test_trace.py); a conftest's hooks and a malformed
verdict go through `pytest --atom` (pytester). How a verdict and the checks decide and what
the report then says is shown over typed results with real checks, with no CLI: the
scoring itself is tests/judge/test_judging.py's.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_atom.checks.builtin import run_checks
from pytest_atom.replay.cassette import Cassette
from pytest_atom.reports.properties import result_properties
from pytest_atom.reports.summary import summary_table
from pytest_atom.reports.text import failure_report
from pytest_atom.results.outcome import judge
from pytest_atom.results.record import IterationRecord, RunOutcome
from pytest_atom.results.rows import SummaryRow
from pytest_atom.results.spec_result import Attempt, SpecResult
from pytest_atom.results.verdict import Verdict
from pytest_atom.run.harness import file_layers
from pytest_atom.run.spec_run import RunScope, new_run
from pytest_atom.settings.config import load_config
from pytest_atom.settings.options import RunSettings
from pytest_atom.settings.resolved import resolve
from pytest_atom.spec.types import Spec
from pytest_atom.spec_loader.load import load_spec
from tests.helpers import HOOKS_CONFTEST, verdict, write
from tests.judge_helpers import WRITE, kept

SPEC = """\
name: task
prompt: Create done.txt saying done.
script: script.yaml
criteria:
  - done.txt exists and says done.
accept:
  - file_exists: done.txt
"""

# --- the shared real runs ------------------------------------------------------------------


@pytest.mark.slow
def test_checks_pass_and_a_high_score_passes(passing_run: Path) -> None:
    """A real reflector session's verdict (0.9, its criterion met) with passing checks."""
    result, started = kept(passing_run, "passing")
    assert started == 2  # the executor and the reflector
    props = result_properties(result)
    assert props["atom_decision"] == "proceed" and props["atom_score"] == 0.9
    assert props["atom_attempts"] == 1 and props["atom_iterations"] == 1
    assert props["atom_tokens"] > 0 and props["atom_reflector_tokens"] > 0
    assert props["atom_cost_usd"] == props["atom_recorded_cost_usd"] == 0.0  # scripted: free
    assert props["atom_duration_s"] >= props["atom_claude_s"] > 0
    header, row = summary_table([SummaryRow.of("task.atom.yaml::task", props, result.outcome)])
    assert header.split()[:4] == ["spec", "outcome", "score", "attempts"]
    assert row.split()[:4] == ["task.atom.yaml::task", "passed", "0.90", "1"]
    assert (result.run_dir / "committed" / "done.txt").read_text() == "done\n"


@pytest.mark.slow
def test_refine_starts_a_second_attempt_in_the_same_conversation(refine_run: Path) -> None:
    result, _ = kept(refine_run, "refine")
    assert result_properties(result)["atom_attempts"] == 2
    run = result.run_dir
    # attempt 1 kept as it was
    assert (run / "attempts" / "a01" / "done.txt").read_text() == "done\n"
    assert (run / "attempts" / "a02" / "done.txt").read_text() == "done\ndone\n"
    assert (run / "committed" / "done.txt").read_text() == "done\ndone\n"
    # The recorded traffic shows attempt 2 continuing the conversation with the feedback.
    cassette = Cassette.load(refine_run / "project" / "cassettes" / "task" / "task.yaml")
    bodies = [i.body for i in cassette.interactions if isinstance(i.body, dict)]
    second = [b for b in bodies if "Say it twice." in json.dumps(b.get("messages"))]
    assert second, "the refine attempt never received the reflector's feedback"
    history = json.dumps(second[0]["messages"])
    assert "Writing done.txt." in history
    # where the CLI states its folder (system prompt or first message) depends on its version
    assert "working directory: <RUN_DIR>/attempts/a02" in json.dumps(second[0])


# --- a verdict and the checks decide: typed results, real checks ---------------------------


def spec_in(folder: Path, text: str, name: str = "task") -> Spec:
    """A spec of `text` in `folder`, beside a script (never played: nothing runs here)."""
    write(folder / "script.yaml", "turns:\n  - text: Done. EXIT_LOOP_NOW\n")
    return load_spec(write(folder / f"{name}.atom.yaml", text))


def judged(tmp_path: Path, spec_text: str, answer: dict[str, Any], said: str) -> SpecResult:
    """One completed attempt of the spec `spec_text`: its checks run over a folder holding
    done.txt, the reflector's `answer` parsed and the decision made as a run makes it."""
    spec = spec_in(tmp_path, spec_text)
    folder = tmp_path / "a01"
    write(folder / "done.txt", "done\n")
    checks = run_checks(spec.accept, folder)
    parsed = Verdict.parse(answer["verdict"])
    record = IterationRecord(returncode=0, output=said, texts=[said])
    attempt = Attempt(1, folder, RunOutcome(True, 1, output=said), [record], checks, parsed)
    attempt.decision = judge(attempt.completed, checks, parsed, 0.8)
    return SpecResult(spec, tmp_path, [attempt], 1.0, 0.8)


def test_failing_check_forces_failure_despite_a_high_score(tmp_path: Path) -> None:
    spec = SPEC.replace("  - file_exists: done.txt", "  - file_exists: missing.txt")
    result = judged(tmp_path, spec, verdict(0.95), "Done. EXIT_LOOP_NOW")
    assert result.decision == "fail" and not result.passed
    pytest.LineMatcher(failure_report(result).splitlines()).fnmatch_lines(
        [
            "*verdict: fail, score 0.95 (passes above 0.8) after 1 attempt (forced: a "
            "deterministic check failed)",
            "*FAIL file_exists missing.txt*",
        ]
    )


def test_claimed_success_with_a_failing_command_fails_with_evidence(tmp_path: Path) -> None:
    """A low score with `rollback` fails at once, with the evidence: the unmet criterion,
    the feedback, the failed command's output and what the agent claimed."""
    spec = SPEC.replace(
        "  - file_exists: done.txt",
        "  - command: {run: \"echo 'FAILED test_done'; exit 3\", exit_code: 0}",
    )
    answer = verdict(
        0.2,
        met=False,
        feedback="The command check failed; nothing was written.",
        decision="rollback",
    )
    result = judged(tmp_path, spec, answer, "All tests pass, everything is done. EXIT_LOOP_NOW")
    assert result.decision == "fail" and not result.passed
    pytest.LineMatcher(failure_report(result).splitlines()).fnmatch_lines(
        [
            "*verdict: fail, score 0.2 (passes above 0.8) after 1 attempt",
            "*unmet: done.txt exists and says done.",
            "*| done.txt is empty",
            "*feedback:",
            "*| The command check failed; nothing was written.",
            "*FAIL command *exits 0*exited 3, expected 0",
            "*| FAILED test_done",
            "*| All tests pass, everything is done. EXIT_LOOP_NOW",
        ]
    )


def test_threshold_from_ini_and_from_the_spec(tmp_path: Path) -> None:
    """The ini's threshold is the run's, unless the spec sets its own: 0.85 then refines
    under the ini's 0.9 and passes under the spec's 0.8."""
    settings = resolve(file_layers({"atom_threshold": "0.9"}, load_config(cwd=tmp_path)))
    assert settings == RunSettings(threshold=0.9)
    plain = spec_in(tmp_path, SPEC, "plain")
    own = spec_in(tmp_path, SPEC + "reflector: {threshold: 0.8}\n", "own")
    score = Verdict.parse(verdict(0.85)["verdict"])
    for spec, threshold, decision in ((plain, 0.9, "refine"), (own, 0.8, "proceed")):
        run = new_run(spec, tmp_path / "runs", settings, RunScope(), Path("claude"), None)
        assert run.threshold == threshold
        assert judge(True, [], score, run.threshold) == decision


# --- through `pytest --atom` ---------------------------------------------------------------


def project(
    pytester: pytest.Pytester, turns: list[Any], reflector: list[Any], spec: str = SPEC
) -> None:
    pytester.makefile(".atom.yaml", task=spec)
    (pytester.path / "script.yaml").write_text(
        yaml.safe_dump({"turns": turns, "reflector": reflector})
    )


@pytest.mark.slow
@pytest.mark.usefixtures("claude_for_pytester")
def test_malformed_verdict_is_a_harness_error_even_for_xfail(pytester: pytest.Pytester) -> None:
    spec = SPEC + "xfail: would hide a broken harness\n"
    # The answer spelt as the tool call: a `verdict:` this malformed is refused when the
    # script loads (gateway.scripted), and this is the reflector's answer at run time.
    malformed = {"tool_use": [{"name": "StructuredOutput", "input": {"score": "high"}}]}
    project(pytester, [WRITE, {"text": "EXIT_LOOP_NOW"}], [malformed], spec)
    result = pytester.runpytest("--atom")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*pytest-atom harness error in spec 'task': the reflector*"])


@pytest.mark.slow
@pytest.mark.usefixtures("claude_for_pytester")
def test_check_and_verdict_hooks_from_a_conftest(pytester: pytest.Pytester) -> None:
    """A conftest's check kind runs in a real run (done.txt holds 1 word, not 3), and its
    verdict hook gets the reflector's verdict; the ini's threshold applies, and the run's
    HTML report and traces are written (`pytest --atom`'s own report plugin)."""
    pytester.makeconftest(HOOKS_CONFTEST)
    pytester.makeini("[pytest]\natom_threshold = 0.85\n")
    spec = SPEC.replace("  - file_exists: done.txt", "  - word_count: {path: done.txt, words: 3}")
    project(pytester, [WRITE, {"text": "EXIT_LOOP_NOW"}], [verdict(0.9)], spec)
    args = ["--junitxml=out.xml", "--atom-html", "report.html", "--atom-report", "traces"]
    result = pytester.runpytest("--atom", *args)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*verdict: fail, score 0.9 (passes above 0.85)*",
            '*FAIL word_count {"path":"done.txt","words":3}*: 1 words',
        ]
    )
    assert (pytester.path / "verdicts.log").read_text().splitlines() == ["task fail 0.9"]
    root = ET.fromstring((pytester.path / "out.xml").read_text())
    props = {p.get("name"): p.get("value") for p in root.iter("property")}
    assert props["atom_score"] == "0.9"
    assert "word_count" in (pytester.path / "report.html").read_text()
    assert (pytester.path / "traces" / "task" / "task.json").is_file()


@pytest.mark.usefixtures("claude_for_pytester")
def test_a_check_kind_from_a_conftest_is_known_when_collecting(pytester: pytest.Pytester) -> None:
    """The conftest's `word_count`, registered through the hook: the spec collects."""
    pytester.makeconftest(HOOKS_CONFTEST)
    spec = SPEC.replace("  - file_exists: done.txt", "  - word_count: {path: done.txt, words: 1}")
    project(pytester, [WRITE], [], spec)
    result = pytester.runpytest("--atom", "--collect-only", "-q")
    result.stdout.fnmatch_lines(["task.atom.yaml::task"])
    assert result.ret == 0


@pytest.mark.usefixtures("claude_for_pytester")
def test_unknown_check_without_the_hook_is_a_collection_error(pytester: pytest.Pytester) -> None:
    spec = SPEC.replace("  - file_exists: done.txt", "  - word_count: {path: done.txt, words: 1}")
    project(pytester, [WRITE], [], spec)
    result = pytester.runpytest("--atom")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["unknown check 'word_count' (known checks: file_exists, *) at task.atom.yaml:7:5"]
    )
