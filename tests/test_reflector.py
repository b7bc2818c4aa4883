"""The reflector's verdict becomes the outcome: scripted executor and reflector, real CLI."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from pytest_atom.cassettes.cassette import Cassette
from tests.helpers import HOOKS_CONFTEST, bash, verdict

SPEC = """\
name: task
prompt: Create done.txt saying done.
script: script.yaml
criteria:
  - done.txt exists and says done.
accept:
  - file_exists: done.txt
"""
WRITE = bash("echo done > done.txt", "Writing done.txt.")


pytestmark = pytest.mark.usefixtures("claude_for_pytester")


def project(
    pytester: pytest.Pytester, turns: list[Any], reflector: list[Any], spec: str = SPEC
) -> None:
    pytester.makefile(".atom.yaml", task=spec)
    (pytester.path / "script.yaml").write_text(
        yaml.safe_dump({"turns": turns, "reflector": reflector})
    )


def junit_props(pytester: pytest.Pytester) -> dict[str, str]:
    xml = (pytester.path / "out.xml").read_text()
    import xml.etree.ElementTree as ET

    return {p.get("name", ""): p.get("value", "") for p in ET.fromstring(xml).iter("property")}


@pytest.mark.slow
def test_checks_pass_and_a_high_score_passes(pytester: pytest.Pytester) -> None:
    project(pytester, [WRITE, {"text": "Done. EXIT_LOOP_NOW"}], [verdict(0.9)])
    result = pytester.runpytest("--atom", "--junitxml=out.xml")
    result.assert_outcomes(passed=1)
    props = junit_props(pytester)
    assert props["atom_decision"] == "proceed" and props["atom_score"] == "0.9"
    assert props["atom_attempts"] == "1" and props["atom_iterations"] == "1"
    assert int(props["atom_tokens"]) > 0
    assert props["atom_cost_usd"] == props["atom_recorded_cost_usd"] == "0.0"  # scripted: free
    assert float(props["atom_duration_s"]) >= float(props["atom_claude_s"]) > 0
    result.stdout.fnmatch_lines(
        ["*pytest-atom*", "spec *outcome*score*attempts*", "task.atom.yaml::task*passed*0.90*1*"]
    )
    [run] = (pytester.path / ".atom" / "runs").iterdir()
    assert (run / "committed" / "done.txt").read_text() == "done\n"


@pytest.mark.slow
def test_refine_starts_a_second_attempt_in_the_same_conversation(pytester: pytest.Pytester) -> None:
    project(
        pytester,
        [
            WRITE,
            {"text": "Done. EXIT_LOOP_NOW"},
            bash("echo done >> done.txt"),
            {"text": "Better. EXIT_LOOP_NOW"},
        ],
        [verdict(0.6, met=False, feedback="Say it twice.", decision="refine"), verdict(0.9)],
    )
    result = pytester.runpytest("--atom", "--junitxml=out.xml", "--atom-record-mode=all")
    result.assert_outcomes(passed=1)
    assert junit_props(pytester)["atom_attempts"] == "2"
    [run] = (pytester.path / ".atom" / "runs").iterdir()
    assert (
        run / "attempts" / "a01" / "done.txt"
    ).read_text() == "done\n"  # attempt 1 kept as it was
    assert (run / "attempts" / "a02" / "done.txt").read_text() == "done\ndone\n"
    assert (run / "committed" / "done.txt").read_text() == "done\ndone\n"
    # The recorded traffic shows attempt 2 continuing the conversation with the feedback.
    cassette = Cassette.load(pytester.path / "cassettes" / "task" / "task.yaml")
    bodies = [i.body for i in cassette.interactions if isinstance(i.body, dict)]
    second = [b for b in bodies if "Say it twice." in json.dumps(b.get("messages"))]
    assert second, "the refine attempt never received the reflector's feedback"
    history = json.dumps(second[0]["messages"])
    assert "Writing done.txt." in history
    # where the CLI states its folder (system prompt or first message) depends on its version
    assert "working directory: <RUN_DIR>/attempts/a02" in json.dumps(second[0])


@pytest.mark.slow
def test_failing_check_forces_failure_despite_a_high_score(pytester: pytest.Pytester) -> None:
    spec = SPEC.replace("  - file_exists: done.txt", "  - file_exists: missing.txt")
    project(pytester, [WRITE, {"text": "Done. EXIT_LOOP_NOW"}], [verdict(0.95)], spec)
    result = pytester.runpytest("--atom")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*verdict: fail, score 0.95 (passes above 0.8) after 1 attempt (forced: a deterministic check failed)",
            "*FAIL file_exists missing.txt*",
        ]
    )


@pytest.mark.slow
def test_claimed_success_with_a_failing_command_fails_with_evidence(
    pytester: pytest.Pytester,
) -> None:
    """A low score with `rollback` fails at once: no second attempt, with the evidence."""
    spec = SPEC.replace(
        "  - file_exists: done.txt",
        "  - command: {run: \"echo 'FAILED test_done'; exit 3\", exit_code: 0}",
    )
    project(
        pytester,
        [{"text": "All tests pass, everything is done. EXIT_LOOP_NOW"}],
        [
            verdict(
                0.2,
                met=False,
                feedback="The command check failed; nothing was written.",
                decision="rollback",
            )
        ],
        spec,
    )
    result = pytester.runpytest("--atom")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
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


@pytest.mark.slow
def test_malformed_verdict_is_a_harness_error_even_for_xfail(pytester: pytest.Pytester) -> None:
    spec = SPEC + "xfail: would hide a broken harness\n"
    project(pytester, [WRITE, {"text": "EXIT_LOOP_NOW"}], [{"verdict": {"score": "high"}}], spec)
    result = pytester.runpytest("--atom")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*pytest-atom harness error in spec 'task': the reflector*"])


@pytest.mark.slow
def test_threshold_from_ini_and_from_the_spec(pytester: pytest.Pytester) -> None:
    project(pytester, [WRITE, {"text": "EXIT_LOOP_NOW"}], [verdict(0.85)])
    pytester.makeini("[pytest]\natom_threshold = 0.9\n")
    pytester.runpytest("--atom").assert_outcomes(failed=1)  # 0.85 is not above 0.9: refine, out of
    spec = SPEC + "attempts: 1\nreflector: {threshold: 0.8}\n"
    project(pytester, [WRITE, {"text": "EXIT_LOOP_NOW"}], [verdict(0.85)], spec)
    pytester.runpytest("--atom").assert_outcomes(passed=1)  # the spec's own threshold wins


@pytest.mark.slow
def test_check_and_verdict_hooks_from_a_conftest(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(HOOKS_CONFTEST)
    spec = SPEC.replace("  - file_exists: done.txt", "  - word_count: {path: done.txt, words: 1}")
    project(pytester, [WRITE, {"text": "EXIT_LOOP_NOW"}], [verdict(0.9)], spec)
    pytester.runpytest("--atom").assert_outcomes(passed=1)
    project(
        pytester,
        [WRITE, {"text": "EXIT_LOOP_NOW"}],
        [verdict(0.9)],
        spec.replace("words: 1", "words: 3"),
    )
    result = pytester.runpytest("--atom")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(['*FAIL word_count {"path":"done.txt","words":3}*: 1 words'])
    assert (pytester.path / "verdicts.log").read_text().splitlines() == [
        "task proceed 0.9",
        "task fail 0.9",
    ]


def test_unknown_check_without_the_hook_is_a_collection_error(pytester: pytest.Pytester) -> None:
    spec = SPEC.replace("  - file_exists: done.txt", "  - word_count: {path: done.txt, words: 1}")
    project(pytester, [WRITE], [], spec)
    result = pytester.runpytest("--atom")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["unknown check 'word_count' (known checks: file_exists, *) at task.atom.yaml:7:5"]
    )
