"""pytest_atom.baseline.stats against known values: scipy's own, and Wilson's by hand."""

from __future__ import annotations

import itertools
import math

import pytest

from pytest_atom.baseline import stats


def test_wilson_matches_hand_computed_values() -> None:
    # 8/10 at 95 %: centre (0.8 + 1.96²/20) / (1 + 1.96²/10), as in Newcombe (1998), table I.
    interval = stats.wilson(8, 10)
    assert (round(interval.low, 4), round(interval.high, 4)) == (0.4902, 0.9433)
    assert stats.wilson(0, 10).low == 0 and round(stats.wilson(0, 10).high, 4) == 0.2775
    assert stats.wilson(10, 10).high == 1 and round(stats.wilson(10, 10).low, 4) == 0.7225
    # Newcombe (1998) table I, example (c): 1/29 -> 0.0061 to 0.1718.
    one = stats.wilson(1, 29)
    assert (round(one.low, 4), round(one.high, 4)) == (0.0061, 0.1718)


def test_wilson_agrees_with_scipy() -> None:
    scipy_stats = pytest.importorskip("scipy.stats")
    for passed, runs in [(3, 7), (19, 20), (50, 100)]:
        ci = scipy_stats.binomtest(passed, runs).proportion_ci(method="wilson")
        ours = stats.wilson(passed, runs)
        assert ours.low == pytest.approx(ci.low) and ours.high == pytest.approx(ci.high)


def test_newcombe_matches_his_paper() -> None:
    # Newcombe (1998) "Interval estimation for the difference between independent
    # proportions", example (a): 56/70 vs 48/80, method 10 gives 0.0524 to 0.3339.
    interval = stats.newcombe((48, 80), (56, 70))
    assert (round(interval.low, 4), round(interval.high, 4)) == (0.0524, 0.3339)


def test_pass_at_k_and_pass_hat_k_are_the_unbiased_estimators() -> None:
    # Chen et al. (2021): 1 - C(n-c, k)/C(n, k); pass^k: C(c, k)/C(n, k).
    assert stats.pass_at_k(10, 3, 1) == pytest.approx(0.3)
    assert stats.pass_at_k(10, 3, 2) == pytest.approx(1 - math.comb(7, 2) / math.comb(10, 2))
    assert stats.pass_hat_k(10, 3, 2) == pytest.approx(3 / 45)
    assert stats.pass_at_k(5, 0, 5) == 0 and stats.pass_hat_k(5, 5, 5) == 1
    with pytest.raises(ValueError, match="k must be between 1 and the number of runs"):
        stats.pass_at_k(3, 1, 4)


def test_t_and_welch_intervals_agree_with_scipy() -> None:
    scipy_stats = pytest.importorskip("scipy.stats")
    values = [3.0, 4.0, 4.0, 6.0, 8.0]
    low, high = scipy_stats.t.interval(
        0.95, len(values) - 1, loc=5.0, scale=scipy_stats.sem(values)
    )
    interval = stats.mean_interval(values)
    assert interval is not None and (interval.low, interval.high) == pytest.approx((low, high))
    before, after = [1.0, 2.0, 3.0, 4.0], [3.0, 5.0, 4.0, 7.0, 6.0]
    welch = stats.welch(before, after)
    result = scipy_stats.ttest_ind(after, before, equal_var=False)
    ci = result.confidence_interval(0.95)
    assert welch is not None and (welch.low, welch.high) == pytest.approx((ci.low, ci.high))
    assert stats.mean_interval([1.0]) is None


def test_fisher_by_exact_sums_gives_scipys_p_values_over_every_small_table() -> None:
    """No scipy needed: `atom history`'s trends and `atom diff` call it in any install."""
    scipy_stats = pytest.importorskip("scipy.stats")
    for c1, n1, c2, n2 in itertools.product(range(9), range(1, 9), range(9), range(1, 9)):
        if c1 <= n1 and c2 <= n2:
            table = [[c1, n1 - c1], [c2, n2 - c2]]
            expected = scipy_stats.fisher_exact(table, alternative="greater").pvalue
            assert stats.fisher_drop((c1, n1), (c2, n2)) == pytest.approx(expected, abs=1e-12)


def test_a_drop_from_all_to_none_over_ten_runs_is_beyond_noise_and_one_failure_is_not() -> None:
    assert stats.fisher_drop((10, 10), (0, 10)) < 1e-4
    assert stats.fisher_drop((10, 10), (9, 10)) == pytest.approx(0.5)
    assert stats.fisher_drop((0, 10), (10, 10)) == 1.0


def test_fisher_and_cmh_against_scipy() -> None:
    scipy_stats = pytest.importorskip("scipy.stats")
    expected = scipy_stats.fisher_exact([[18, 2], [10, 10]], alternative="greater").pvalue
    assert stats.fisher_drop((18, 20), (10, 20)) == pytest.approx(expected)
    assert round(stats.fisher_drop((18, 20), (10, 20)), 4) == 0.0069
    # One stratum: CMH is the continuity-corrected two-proportion z test.
    assert stats.cmh_drop([((18, 20), (10, 20))]) == pytest.approx(0.0085, abs=1e-4)
    assert stats.cmh_drop([((10, 20), (10, 20))]) > 0.5  # no drop


def test_holm_adjusts_step_down() -> None:
    assert stats.holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])


def test_bootstrap_is_seeded() -> None:
    values = [-0.1, 0.0, -0.2, 0.05]
    first, again = stats.bootstrap_mean(values), stats.bootstrap_mean(values)
    assert first == again and first is not None
    assert first.low <= first.estimate <= first.high and first.method.startswith("paired")


def test_exact_power_and_repeats_needed() -> None:
    pytest.importorskip("scipy")
    # Exact power of Fisher's one-sided test at 20 repeats a side, 0.9 -> 0.5.
    assert stats.fisher_power(20, 0.9, 0.5) == pytest.approx(0.8375, abs=1e-4)
    assert stats.fisher_power(18, 0.9, 0.5) < 0.8 <= stats.fisher_power(19, 0.9, 0.5)
    assert stats.repeats_needed(0.9, 0.5) == 19
    assert stats.repeats_needed(0.5, 0.6) is None  # a rise is no drop
    assert (
        stats.suite_repeats_needed(0.9, 0.5, 10) == 3
    )  # matches a simulation: 86 % caught (benchmarks/gate_power.py)
    assert stats.suite_repeats_needed(0.9, 0.5, 1) == 19  # one spec: Fisher's, exact
    needed = stats.suite_repeats_needed(0.7, 0.6999, 10)
    assert needed is not None and needed > 10**6  # tiny drops end too


def test_exact_power_equals_brute_force_over_scipy_fisher() -> None:
    scipy_stats = pytest.importorskip("scipy.stats")
    runs, p, q = 8, 0.8, 0.3
    brute = sum(
        scipy_stats.binom.pmf(a, runs, p) * scipy_stats.binom.pmf(b, runs, q)
        for a in range(runs + 1)
        for b in range(runs + 1)
        if scipy_stats.fisher_exact([[a, runs - a], [b, runs - b]], alternative="greater").pvalue
        <= 0.05
    )
    assert stats.fisher_power(runs, p, q) == pytest.approx(brute)
