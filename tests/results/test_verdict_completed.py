"""A verdict that leaves criteria out, made whole: each of the spec's criteria gets its
answer (by its words, else in order), and one left without is unmet, `NO_VERDICT`."""

from __future__ import annotations

from pytest_atom.results.outcome import NO_VERDICT, effective_gate, judge
from pytest_atom.results.verdict import UNFLOORED, CriterionVerdict, Trust, Verdict

SPEC = ("done.txt exists.", "done.txt says done.", "done.txt ends with a newline.")


def _verdict(*answers: tuple[str, bool]) -> Verdict:
    criteria = tuple(CriterionVerdict(text, met, f"on {text}") for text, met in answers)
    return Verdict(0.9, "proceed", criteria, "")


def test_a_whole_verdict_is_kept_as_it_is() -> None:
    whole = _verdict(*((text, True) for text in SPEC))
    assert not whole.omits(SPEC) and whole.completed(SPEC) is whole


def test_answers_are_placed_by_their_words_and_the_one_left_out_is_unmet() -> None:
    short = _verdict((SPEC[2], True), (SPEC[0], True))
    assert short.omits(SPEC)
    first, second, third = short.completed(SPEC).criteria
    assert (first.criterion, first.met, first.missing) == (SPEC[0], True, False)
    assert (second.criterion, second.met, second.evidence) == (SPEC[1], False, NO_VERDICT)
    assert second.missing and (third.criterion, third.met) == (SPEC[2], True)


def test_reworded_answers_are_taken_in_order_and_the_rest_is_missing() -> None:
    reworded = _verdict(("The file exists.", True))
    first, second, third = reworded.completed(SPEC).criteria
    assert first.criterion == "The file exists." and first.met and not first.missing
    assert second.missing and third.missing


def test_a_missing_gated_criterion_fails_a_score_that_would_pass() -> None:
    """The score cannot have weighed a criterion it gave no verdict on: the gated criteria
    decide, and the one without a verdict is unmet; advisory, it fails nothing."""
    done = _verdict((SPEC[0], True)).completed(SPEC[:2]).with_trust((UNFLOORED, UNFLOORED))
    assert effective_gate("score", done.criteria) == "criteria"
    assert judge(True, [], done, 0.8) == "refine"
    advisory = Trust("uncalibrated", "no calibration")
    lenient = _verdict((SPEC[0], True)).completed(SPEC[:2]).with_trust((UNFLOORED, advisory))
    assert judge(True, [], lenient, 0.8) == "proceed"
    assert lenient.to_dict()["criteria"][1]["missing"] is True
    assert "missing" not in lenient.to_dict()["criteria"][0]
