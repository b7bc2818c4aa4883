"""Judging without the CLI: scoring, verdict parsing, refine messages, the diff, the summary.

These branches decide pass or fail for every spec; here each one is a millisecond test. The
real-CLI tests (test_reflector.py) show that the same code is what a run goes through.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_atom.diffs import workspace_diff
from pytest_atom.errors import ReflectorError
from pytest_atom.judge.reflector import judge
from pytest_atom.replay.scrub import Scrubber
from pytest_atom.reports.properties import result_properties
from pytest_atom.reports.summary import summary_table
from pytest_atom.results.check_result import CheckResult
from pytest_atom.results.record import IterationRecord, RunOutcome
from pytest_atom.results.spec_result import Attempt, SpecResult
from pytest_atom.results.verdict import CriterionVerdict, Verdict
from pytest_atom.run.execution import refine_message
from pytest_atom.spec.types import Spec
from tests.helpers import built_check
from tests.helpers import summary_row as row

PASS = CheckResult(built_check("file_exists", {"path": "a"}, 3), True, "a exists", "")
FAIL = CheckResult(built_check("file_exists", {"path": "b"}, 4), False, "b is missing", "")


def verdict(score: float, *unmet: str, feedback: str = "") -> Verdict:
    criteria = (CriterionVerdict("met criterion", True, "seen"),) + tuple(
        CriterionVerdict(c, False, f"evidence for {c}") for c in unmet
    )
    return Verdict(score, "refine", criteria, feedback)


# --- judge(): the scoring model (docs/explanation/reflector.md) ---------------------------


@pytest.mark.parametrize(
    ("completed", "checks", "score", "decision"),
    [
        (True, [PASS], 0.95, "proceed"),
        (True, [PASS], 0.81, "proceed"),
        (True, [PASS], 0.8, "refine"),  # passing needs more than the threshold
        (True, [PASS], 0.5, "refine"),  # 0.5 itself still earns another attempt
        (True, [PASS], 0.49, "fail"),
        (True, [PASS, FAIL], 1.0, "fail"),  # a failed check forces failure
        (False, [PASS], 1.0, "fail"),  # no EXIT_LOOP_NOW: never a pass
        (True, [], 0.9, "proceed"),
    ],
)
def test_judge_by_score_checks_and_completion(
    completed: bool, checks: list[CheckResult], score: float, decision: str
) -> None:
    assert judge(completed, checks, verdict(score), threshold=0.8) == decision


def test_judge_without_criteria_lets_the_checks_decide() -> None:
    assert judge(True, [PASS], None, 0.8) == "proceed"
    assert judge(True, [PASS, FAIL], None, 0.8) == "fail"
    assert judge(False, [PASS], None, 0.8) == "fail"


def test_judge_uses_the_given_threshold() -> None:
    assert judge(True, [PASS], verdict(0.85), threshold=0.9) == "refine"
    assert judge(True, [PASS], verdict(0.6), threshold=0.5) == "proceed"


# --- Verdict.parse ---------------------------------------------------------------------------

GOOD: dict[str, Any] = {
    "score": 0.7,
    "decision": "refine",
    "criteria": [
        {"criterion": "tidy", "met": True, "evidence": "short functions"},
        {"criterion": "tested", "met": False, "evidence": "no test file"},
    ],
    "feedback": "Add a test.",
}


def test_verdict_parse_reads_a_valid_answer() -> None:
    parsed = Verdict.parse({**GOOD, "flaky": ["timing"]})
    assert parsed.score == 0.7 and isinstance(parsed.score, float)
    assert parsed.decision == "refine" and parsed.feedback == "Add a test."
    assert parsed.unmet == [CriterionVerdict("tested", False, "no test file")]
    assert parsed.flaky == ("timing",)
    assert Verdict.parse(GOOD).flaky == ()  # optional
    assert parsed.to_dict()["criteria"][0] == {
        "criterion": "tidy",
        "met": True,
        "evidence": "short functions",
    }
    assert Verdict.parse({**GOOD, "score": 1}).score == 1.0


@pytest.mark.parametrize(
    ("data", "where", "problem"),
    [
        ({**GOOD, "score": 1.5}, "score", "1.5 is greater than the maximum of 1"),
        ({**GOOD, "decision": "ship it"}, "decision", "'ship it' is not one of"),
        ({k: v for k, v in GOOD.items() if k != "feedback"}, "(top level)", "'feedback'"),
        ({**GOOD, "mood": "good"}, "(top level)", "'mood' was unexpected"),
        ({**GOOD, "criteria": [{"criterion": "x", "evidence": "y"}]}, "criteria/0", "'met'"),
        ("proceed", "(top level)", "is not of type 'object'"),
        (None, "(top level)", "is not of type 'object'"),
    ],
)
def test_verdict_parse_names_where_a_malformed_answer_is_wrong(
    data: Any, where: str, problem: str
) -> None:
    with pytest.raises(ReflectorError) as info:
        Verdict.parse(data)
    message = str(info.value)
    assert message.startswith(f"the reflector's verdict is malformed at {where}: ")
    assert problem in message and "; got " in message


def test_verdict_parse_caps_the_echoed_answer() -> None:
    with pytest.raises(ReflectorError) as info:
        Verdict.parse({**GOOD, "feedback": 7, "padding": "x" * 2000})
    assert len(str(info.value)) < 700


# --- refine_message --------------------------------------------------------------------------


def test_refine_message_carries_the_score_the_unmet_criteria_and_the_feedback(
    tmp_path: Path,
) -> None:
    attempt = Attempt(
        1, tmp_path, RunOutcome(False, 0), [], verdict=verdict(0.6, "tested", feedback="Add one.")
    )
    message = refine_message(attempt, attempts=3, threshold=0.8)
    assert message.startswith(
        "A reviewer checked your work and asks for another attempt (2 of 3). "
        "Score 0.6; passing needs more than 0.8.\n\nUnmet criteria:\n"
        "- tested: evidence for tested\n\nFeedback: Add one.\n\n"
    )
    assert "met criterion" not in message  # only what is still missing
    assert message.endswith("end your final message with EXIT_LOOP_NOW.")


def test_refine_message_without_unmet_criteria(tmp_path: Path) -> None:
    attempt = Attempt(2, tmp_path, RunOutcome(False, 0), [], verdict=verdict(0.7))
    message = refine_message(attempt, attempts=5, threshold=0.75)
    assert "(3 of 5)" in message and "more than 0.75" in message
    assert "Unmet criteria:\n- (none listed)\n" in message


# --- workspace_diff --------------------------------------------------------------------------


def tree(root: Path, files: dict[str, str | bytes]) -> Path:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
    return root


def test_workspace_diff_shows_added_removed_and_changed_files(tmp_path: Path) -> None:
    before = tree(
        tmp_path / "before",
        {"keep.txt": "same\n", "edit.py": "x = 1\ny = 2\n", "gone.txt": "bye\n"},
    )
    after = tree(
        tmp_path / "after",
        {"keep.txt": "same\n", "edit.py": "x = 1\ny = 3\n", "sub/new.txt": "hi\n"},
    )
    assert workspace_diff(before, after, scrub=Scrubber().scrub).splitlines() == [
        "--- a/edit.py",
        "+++ b/edit.py",
        "@@ -1,2 +1,2 @@",
        " x = 1",
        "-y = 2",
        "+y = 3",
        "--- a/gone.txt",
        "+++ /dev/null",
        "@@ -1 +0,0 @@",
        "-bye",
        "--- /dev/null",
        "+++ b/sub/new.txt",
        "@@ -0,0 +1 @@",
        "+hi",
    ]


def test_workspace_diff_skips_harness_files_and_names_binary_changes(tmp_path: Path) -> None:
    before = tree(tmp_path / "before", {"img.bin": b"\x89PNG\xff\x00"})
    after = tree(
        tmp_path / "after",
        {
            "img.bin": b"\x89PNG\xff\x01",
            "USER_PROMPT.md": "the task",
            "__pycache__/m.pyc": b"\x00",
            "pkg/.pytest_cache/v": "cache",
        },
    )
    assert workspace_diff(before, after, scrub=Scrubber().scrub) == "binary file img.bin changed"
    assert workspace_diff(before, before, scrub=Scrubber().scrub) == "(no changes)"


def test_workspace_diff_without_a_fixture_and_with_a_limit(tmp_path: Path) -> None:
    after = tree(tmp_path / "after", {"big.txt": "".join(f"line {i}\n" for i in range(100))})
    full = workspace_diff(None, after, scrub=Scrubber().scrub)
    assert full.startswith("--- /dev/null\n+++ b/big.txt\n@@ -0,0 +1,100 @@\n+line 0\n")
    cut = workspace_diff(None, after, limit=50, scrub=Scrubber().scrub)
    assert cut == full[:50] + f"\n... ({len(full) - 50} more characters)"


# --- summary_table and the figures behind it -------------------------------------------------


def test_summary_table_aligns_columns_and_marks_missing_figures() -> None:
    rows = [
        row(
            "specs/a.atom.yaml::a",
            "passed",
            {
                "atom_score": 0.95,
                "atom_attempts": 1,
                "atom_iterations": 2,
                "atom_tokens": 6432,
                "atom_cost_usd": 0.0,
                "atom_recorded_cost_usd": 0.0293,
                "atom_list_price_usd": 0.0293,
                "atom_duration_s": 5.31,
            },
        ),
        row(
            "b.atom.yaml::long-name",
            "failed",
            {
                "atom_score": "",
                "atom_attempts": 3,
                "atom_iterations": 10,
                "atom_tokens": 120000,
                "atom_cost_usd": 1.23456,
                "atom_recorded_cost_usd": 0.0,
                "atom_list_price_usd": 0.0,
                "atom_duration_s": 61.0,
            },
        ),
    ]
    assert summary_table(rows) == [
        "spec                    outcome  score  attempts  iter  tokens  cost $  list $  time s",
        "specs/a.atom.yaml::a    passed    0.95         1     2    6432  0.0000  0.0293     5.3",
        "b.atom.yaml::long-name  failed       -         3    10  120000  1.2346       -    61.0",
    ]


def records(*costs: float) -> list[IterationRecord]:
    return [IterationRecord(returncode=0, cost_usd=c, usage={"input_tokens": 10}) for c in costs]


def spec_result(
    tmp_path: Path, paid: frozenset[str] = frozenset(), replayed: frozenset[str] = frozenset()
) -> SpecResult:
    spec = Spec(name="s", path=tmp_path / "s.atom.yaml", line=1, prompt="p")
    first = Attempt(1, tmp_path / "a01", RunOutcome(True, 2), records(0.01, 0.02))
    first.reflectors = records(0.005)
    second = Attempt(2, tmp_path / "a02", RunOutcome(True, 1), records(0.03))
    second.reflectors = records(0.004)
    return SpecResult(spec, tmp_path, [first, second], 1.0, 0.8, paid=paid, replayed=replayed)


BOTH = frozenset({"executor", "reflector"})


@pytest.mark.parametrize(
    ("billing", "spent", "recorded"),
    [
        ({}, 0.0, 0.0),  # scripted: the CLI priced the usage, nobody paid it
        ({"replayed": BOTH}, 0.0, 0.069),  # replay: what the recording cost, not spent again
        ({"paid": BOTH}, 0.069, 0.0),  # recording from an API
        ({"paid": frozenset({"reflector"}), "replayed": frozenset({"executor"})}, 0.009, 0.06),
    ],
)
def test_spent_and_recorded_costs_by_who_answered(
    tmp_path: Path, billing: dict[str, frozenset[str]], spent: float, recorded: float
) -> None:
    result = spec_result(tmp_path, **billing)
    assert result.cost_usd == pytest.approx(spent)
    assert result.recorded_cost_usd == pytest.approx(recorded)
    props = result_properties(result)
    assert props["atom_cost_usd"] == pytest.approx(spent)
    assert props["atom_recorded_cost_usd"] == pytest.approx(recorded)
    assert props["atom_tokens"] == 50  # tokens were used whoever answered
    per_attempt = [result.costs([a]) for a in result.attempts]
    assert sum(s for s, _ in per_attempt) == pytest.approx(spent)
    assert sum(r for _, r in per_attempt) == pytest.approx(recorded)
