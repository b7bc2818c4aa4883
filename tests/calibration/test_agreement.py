"""Cohen's kappa, its bootstrap interval and McNemar's exact test, against figures worked by
hand and by scipy (no CLI)."""

from __future__ import annotations

import math

import pytest

from pytest_atom.calibration.agreement import (
    agreement,
    confusion,
    kappa,
    kappa_interval,
    mcnemar,
)

#: 20 samples: 8 both pass, 2 human pass / judge fail, 1 human fail / judge pass, 9 both fail.
PAIRS = [(True, True)] * 8 + [(True, False)] * 2 + [(False, True)] * 1 + [(False, False)] * 9


def test_kappa_is_the_agreement_beyond_chance_worked_by_hand() -> None:
    # p_o = 17/20; human pass 10/20, judge pass 9/20: p_e = .5*.45 + .5*.55 = .5
    assert kappa(PAIRS) == pytest.approx((0.85 - 0.5) / 0.5)


def test_kappa_is_undefined_when_both_raters_give_one_verdict_to_every_sample() -> None:
    assert math.isnan(kappa([(True, True)] * 5))
    assert math.isnan(kappa([]))
    assert all(math.isnan(bound) for bound in kappa_interval([(True, True)] * 5))


def test_a_judge_that_always_disagrees_has_kappa_minus_one() -> None:
    assert kappa([(True, False), (False, True)] * 5) == pytest.approx(-1.0)


def test_the_interval_holds_kappa_and_is_the_same_on_every_run() -> None:
    low, high = kappa_interval(PAIRS)
    assert low < kappa(PAIRS) < high <= 1.0
    assert (low, high) == kappa_interval(PAIRS)  # a fixed seed: calibration.json is stable
    assert high - low > 0.3  # 20 samples: wide, honestly


def test_the_confusion_matrix_counts_human_then_judge() -> None:
    figures = agreement(PAIRS)
    assert (
        confusion(PAIRS)
        == figures.confusion
        == {
            "human_pass_judge_pass": 8,
            "human_pass_judge_fail": 2,
            "human_fail_judge_pass": 1,
            "human_fail_judge_fail": 9,
        }
    )
    assert figures.samples == 20 and figures.agreement == pytest.approx(0.85)


@pytest.mark.parametrize(
    ("only_a", "only_b", "p"),
    [(0, 2, 0.5), (0, 6, 0.03125), (1, 5, 0.21875), (3, 3, 1.0), (0, 0, 1.0)],
)
def test_mcnemar_is_the_exact_binomial_test_of_the_discordant_pairs(
    only_a: int, only_b: int, p: float
) -> None:
    a = [True] * only_a + [False] * only_b + [True] * 4
    b = [False] * only_a + [True] * only_b + [True] * 4
    test = mcnemar(a, b)
    assert (test.only_a, test.only_b) == (only_a, only_b)
    assert test.p == pytest.approx(p)


def test_mcnemar_agrees_with_scipys_binomial_test() -> None:
    stats = pytest.importorskip("scipy.stats")
    for only_a, only_b in [(2, 9), (7, 1), (4, 12)]:
        expected = stats.binomtest(only_a, only_a + only_b, 0.5).pvalue
        a = [True] * only_a + [False] * only_b
        b = [False] * only_a + [True] * only_b
        assert mcnemar(a, b).p == pytest.approx(expected)
