"""pytest_atom.baseline.stats against known values: scipy's own, and Wilson's by hand;
and the figures it makes in an install without scipy."""

from __future__ import annotations

import itertools
import math
import os
import statistics
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from pytest_atom.baseline import stats
from pytest_atom.suite.shards import SHARD_RESULTS, write_shard
from tests.helpers import summary_row, write


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


def test_the_bootstrap_leaves_out_undefined_resamples_and_interpolates() -> None:
    """One bootstrap for a mean and for κ: a resample whose statistic is undefined (NaN) is
    left out, and the bounds fall between resampled values."""

    def mean_unless_all_alike(sample: Sequence[float]) -> float:
        return math.nan if len(set(sample)) == 1 else statistics.fmean(sample)

    low, high = stats.bootstrap([0.0, 1.0, 2.0], mean_unless_all_alike, resamples=500)
    assert 0.0 < low < high < 2.0  # the all-0 and all-2 resamples are left out
    # seed 4's five resample means, sorted: 0, 0.5, 0.5, 0.5, 0.5; the 2.5 % point lies a
    # tenth of the way from the first to the second
    interval = stats.bootstrap([0.0, 1.0], statistics.fmean, resamples=5, seed=4)
    assert interval == pytest.approx((0.05, 0.5))


def test_exact_power_and_repeats_needed() -> None:
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


@pytest.mark.parametrize("df", [1, 2, 3, 5, 9.37, 30, 1000])
def test_t_quantiles_agree_with_scipy(df: float) -> None:
    """Student's t by its own distribution function, integer and Welch's fractional
    degrees of freedom alike: the intervals need no scipy."""
    scipy_stats = pytest.importorskip("scipy.stats")
    for probability in (0.6, 0.975, 0.995, 0.025):
        expected = float(scipy_stats.t.ppf(probability, df))
        assert stats.t_quantile(probability, df) == pytest.approx(expected, rel=1e-9)


#: Put first on the path of a child Python, this makes scipy and numpy absent, as in an
#: install without them: every ``import scipy`` raises ModuleNotFoundError.
_ABSENT = """\
import sys


class Absent:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("scipy", "numpy"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, Absent())
"""


def test_repeats_figures_gates_and_trials_need_no_scipy(tmp_path: Path) -> None:
    """Six repeats whose scores and turns differ (Student's t intervals) and their summary,
    the baseline gate's INCONCLUSIVE with the repeats that would settle it, and `atom
    trials` (exact power), all in an install without scipy: figures, no traceback."""
    write(tmp_path / "absent" / "sitecustomize.py", _ABSENT)
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "absent")}
    atom = str(Path(sys.executable).parent / "atom")
    absent = subprocess.run(
        [sys.executable, "-c", "import scipy"], env=env, capture_output=True, text=True
    )
    assert "No module named 'scipy'" in absent.stderr  # the condition is real
    rows = [
        summary_row(
            f"s.atom.yaml::s[r{n}]",
            "failed" if n == 3 else "passed",
            {"atom_score": 0.5 + n / 20, "atom_turns": n},
        )
        for n in range(1, 7)
    ]
    write_shard(tmp_path / "one" / SHARD_RESULTS, rows, {}, failures={}, other_failures=0)
    combined = subprocess.run(
        [atom, "results", "combine", "one"], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert "Traceback" not in combined.stderr, combined.stderr
    assert combined.returncode == 1  # r3 failed, and nothing else
    assert (
        "s.atom.yaml::s: 5/6 passed, pass rate 0.83 [0.44, 0.97], pass@3 1.00, pass^3 0.50, "
        "pass@6 1.00, pass^6 0.00; score 0.67 [0.58, 0.77]; turns 3.5 [1.5, 5.5]"
    ) in combined.stdout
    inconclusive = (
        "from pytest_atom.baseline.gate import gate; "
        "print(gate({'s': ((9, 10), (7, 10))}).specs[0].line())"
    )
    gated = subprocess.run(
        [sys.executable, "-c", inconclusive], env=env, capture_output=True, text=True
    )
    assert gated.returncode == 0, gated.stderr
    assert "s: INCONCLUSIVE: pass rate 9/10 -> 7/10" in gated.stdout
    assert "about 56 repeats on each side would tell a drop" in gated.stdout  # exact power
    trials = subprocess.run(
        [atom, "trials", "--p", "0.9", "--q", "0.5"], env=env, capture_output=True, text=True
    )
    assert trials.returncode == 0, trials.stderr
    assert (
        "one spec: 19 repeats (Fisher's exact test, one-sided; exact power 0.814)" in trials.stdout
    )
