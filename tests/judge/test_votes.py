"""Reflector votes (`reflector: {votes: N}`) and the criteria gate (`gate: criteria`).

The unit layer combines verdicts, decides and reports; the real CLI, through the scripted
gateway, records three votes once per session and replays them
(tests/judge_helpers.py's votes scenario, which test_recall.py reads too).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_atom.errors import SpecError
from pytest_atom.evalsuite.specs import case_specs
from pytest_atom.evalsuite.suites import load_case
from pytest_atom.judge.reflector import combine_votes
from pytest_atom.replay.cassette import Cassette
from pytest_atom.reports.html import render_html, report_row, spec_view
from pytest_atom.reports.properties import result_properties
from pytest_atom.reports.text import failure_report
from pytest_atom.results.outcome import RunFacts, decide, judge
from pytest_atom.results.record import IterationRecord, RunOutcome
from pytest_atom.results.spec_result import Attempt, SpecResult
from pytest_atom.results.verdict import CriterionVerdict, Verdict
from pytest_atom.spec_loader.load import load_spec
from tests.helpers import kinds, write
from tests.judge_helpers import VOTES_SPEC, ballot, kept

REPO = Path(__file__).resolve().parents[2]


def vote(score: float, *met: bool, decision: str = "proceed", note: str = "") -> Verdict:
    return Verdict(
        score,
        decision,
        tuple(
            CriterionVerdict(f"criterion {n}", m, f"vote {score} says {m}")
            for n, m in enumerate(met, 1)
        ),
        feedback=f"feedback of {score}",
        flaky=(note,) if note else (),
    )


def test_a_criterion_is_met_on_a_majority_and_the_score_is_the_median() -> None:
    combined = combine_votes(
        [
            vote(0.9, True, False, note="slow disk"),
            vote(0.2, True, False, decision="refine"),
            vote(0.85, False, True, note="slow disk"),
        ]
    )
    assert combined.score == 0.85  # the median: 0.2 is one judge's outlier
    assert combined.scores == (0.9, 0.2, 0.85)
    assert combined.decision == "proceed" and combined.feedback == "feedback of 0.85"
    first, second = combined.criteria
    assert (first.met, first.votes, first.tally) == (True, (True, True, False), "2/3 votes met")
    assert (second.met, second.votes) == (False, (False, False, True))
    # the evidence shown is a vote on the winning side
    assert first.evidence == "vote 0.9 says True" and second.evidence == "vote 0.9 says False"
    assert combined.flaky == ("slow disk",)
    assert combined.unmet == [second]


def test_a_vote_that_leaves_a_criterion_out_counts_as_unmet() -> None:
    combined = combine_votes([vote(0.9, True, True), vote(0.9, True), vote(0.9, True)])
    assert [c.votes for c in combined.criteria] == [(True, True, True), (True, False, False)]
    assert [c.met for c in combined.criteria] == [True, False]


def test_an_even_count_ties_to_unmet_and_averages_the_middle_scores() -> None:
    combined = combine_votes([vote(0.6, True), vote(1.0, False)])
    assert combined.score == 0.8 and not combined.criteria[0].met


def test_one_vote_is_the_verdict_as_it_always_was() -> None:
    single = vote(0.9, True)
    assert combine_votes([single]) is single
    assert "scores" not in single.to_dict()
    assert "votes" not in single.to_dict()["criteria"][0]
    voted = combine_votes([single, single, single]).to_dict()
    assert voted["criteria"][0]["votes"] == (True, True, True)
    assert voted["scores"] == (0.9, 0.9, 0.9)


class _Check:
    passed = True


def test_the_criteria_gate_reads_each_criterion_not_the_score() -> None:
    high_but_unmet = combine_votes([vote(0.95, True, False)] * 3)
    low_but_met = vote(0.3, True, True)
    assert judge(True, [_Check()], high_but_unmet, 0.8) == "proceed"  # the score gate
    assert judge(True, [_Check()], high_but_unmet, 0.8, "criteria") == "refine"
    assert judge(True, [_Check()], low_but_met, 0.8, "criteria") == "proceed"
    assert judge(True, [_Check()], None, 0.8, "criteria") == "proceed"  # no criteria


def test_the_outcome_names_each_unmet_criterion_with_its_votes() -> None:
    figures: dict[str, Any] = dict(
        attempts=1, score=0.9, threshold=0.8, completed=True, reason=None, checks=2
    )
    failed = decide(
        RunFacts(
            decision="refine",
            checks_failed=0,
            gate="criteria",
            unmet=["grader warm: … (1/3 votes met)"],
            **figures,
        )
    )
    assert failed.status == "failed"
    assert failed.why == "unmet: grader warm: … (1/3 votes met)"
    passed = decide(RunFacts(decision="proceed", checks_failed=0, gate="criteria", **figures))
    assert passed.why == "every criterion met"
    # a failed check still says so first
    broken = decide(
        RunFacts(decision="fail", checks_failed=1, gate="criteria", unmet=["x"], **figures)
    )
    assert broken.why == "1 of 2 checks failed"


SPEC_HEAD = "name: t\ndescription: d\nprompt: do it\ncriteria: [ok]\nreflector:\n"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("2", "'reflector.votes' must be odd so a majority always exists"),
        ("0", "'reflector.votes' must be an integer >= 1 and <= 9, got 0"),
        ("three", "'reflector.votes' must be an integer"),
    ],
)
def test_a_bad_vote_count_names_the_file_and_line(tmp_path: Path, value: str, message: str) -> None:
    path = tmp_path / "t.atom.yaml"
    path.write_text(SPEC_HEAD + f"  votes: {value}\n")
    with pytest.raises(SpecError) as err:
        load_spec(path)
    assert message in str(err.value) and "t.atom.yaml:6" in str(err.value)


def test_votes_and_gate_are_read(tmp_path: Path) -> None:
    path = tmp_path / "t.atom.yaml"
    path.write_text(SPEC_HEAD + "  votes: 3\n  gate: criteria\n")
    options = load_spec(path).reflector
    assert (options.votes, options.gate) == (3, "criteria")
    path.write_text(SPEC_HEAD + "  gate: majority\n")
    with pytest.raises(SpecError, match=r"reflector\.gate"):
        load_spec(path)


def test_an_eval_case_judges_llm_graders_with_three_votes_one_by_one() -> None:
    case = load_case(REPO / "fixtures/plugins/greeter/evals/greet-card/prompt.md")
    for spec in case_specs(case, kinds()):
        assert (spec.reflector.votes, spec.reflector.gate) == (3, "criteria")
        assert [c.split(":")[0] for c in spec.criteria] == ["grader as-good", "grader warm"]


# --- a failed vote, reported ----------------------------------------------------------------


def test_one_of_three_votes_fails_naming_the_criterion_and_its_votes(tmp_path: Path) -> None:
    """One vote of three finds the second criterion met: the criterion decides (the score,
    0.9, is above the threshold), and the report, JUnit's figures and the page say so."""
    (tmp_path / "script.yaml").write_text("turns:\n  - text: Done. EXIT_LOOP_NOW\n")
    spec = load_spec(write(tmp_path / "task.atom.yaml", VOTES_SPEC))
    combined = combine_votes(
        [Verdict.parse(ballot(0.9, w)["verdict"]) for w in (False, True, False)]
    )
    said = "Done. EXIT_LOOP_NOW"
    record = IterationRecord(returncode=0, output=said, texts=[said])
    attempt = Attempt(1, tmp_path, RunOutcome(True, 1, output=said), [record], [], combined)
    attempt.decision = judge(True, [], combined, 0.8, spec.reflector.gate)
    result = SpecResult(spec, tmp_path, [attempt], 1.0, 0.8)
    assert result.outcome.status == "failed"
    pytest.LineMatcher(failure_report(result).splitlines()).fnmatch_lines(
        [
            "*unmet: done.txt says done, warmly. (1/3 votes met: unmet, met, unmet)*",
            "*curt*",
        ]
    )
    props = result_properties(result)
    assert props["atom_score"] == 0.9
    assert props["atom_why"] == "unmet: done.txt says done, warmly. (1/3 votes met)"
    assert props["atom_criteria_votes"] == "1 met 3/3 · 2 unmet 1/3"


# --- the real CLI, through the scripted gateway: recorded once, replayed ------------------


@pytest.mark.slow
def test_votes_are_recorded_vote_by_vote(votes_run: Path, tmp_path: Path) -> None:
    """Two of three votes pass a criterion: each vote is its own recorded session, with
    the hashes a replay recalls it by."""
    result, started = kept(votes_run, "recorded")
    assert started == 4  # the executor, then one reflector session per vote
    props = result_properties(result)
    assert props["atom_criteria_votes"] == "1 met 3/3 · 2 met 2/3"
    assert props["atom_why"] == "every criterion met"
    assert props["atom_reflector_tokens"] > 0
    cassette = Cassette.load(votes_run / "project" / "cassettes" / "task" / "task.yaml")
    answers = [i.response for i in cassette.interactions if "msg_atom_reflector" in str(i.response)]
    assert len(answers) == 3  # one recorded session per vote
    recall = cassette.metadata["recall"]
    assert sorted(recall) == ["reflector:1", "reflector:1:v2", "reflector:1:v3"]
    assert all(
        set(entry) == {"inputs", "folder", "tokens", "cost_usd"} for entry in recall.values()
    )
    page = render_html([report_row("task.atom.yaml::task", "passed", spec_view(result))])
    assert "(median of 3 votes: 0.9, 0.9, 0.9)" in page
    assert '<span class="votes"' in page and "2/3 votes</span>" in page


@pytest.mark.slow
def test_votes_are_replayed_and_recalled_vote_by_vote(votes_run: Path) -> None:
    """A replay with unchanged inputs recalls all three votes, each its own recorded
    verdict, without starting the reflector."""
    result, started = kept(votes_run, "recalled")
    assert started == 1  # the executor alone
    assert [r.role for r in result.final.recalled] == [
        "reflector:1",
        "reflector:1:v2",
        "reflector:1:v3",
    ]
    assert result.final.reflectors == []
    props = result_properties(result)
    assert props["atom_source"] == "replay" and props["atom_recalled"] == "reflector"
    assert props["atom_criteria_votes"] == "1 met 3/3 · 2 met 2/3"  # vote for vote
    assert props["atom_reflector_tokens"] > 0  # recalled: as recorded
