"""Statistics of repeated agent runs: intervals, pass@k and pass^k, tests, and power.

A live agent run is a sample, not a fact: these are the tools that tell noise from a
change. The choices follow the published guidance on agent evals (Anthropic's "Adding
error bars to evals"; Chen et al. 2021 for pass@k):

- a pass rate's interval is Wilson's score interval, right at 0/n and n/n where the
  textbook (Wald) interval collapses to a point;
- pass@k and pass^k use the unbiased estimators over n runs with c passes;
- a difference in pass rate between two groups of runs is Newcombe's hybrid score
  interval (built from the two Wilson intervals), a drop is tested with Fisher's exact
  test (one-sided), and a drop over several specs with the Cochran-Mantel-Haenszel test
  (stratified by spec); several tests at once are Holm-adjusted;
- means (score, turns, tokens) get Student's t interval, differences Welch's;
- a suite-wide change gets a paired bootstrap over specs with a fixed seed, so the same
  results give the same interval (`bootstrap`, which the judge's calibration uses too).

All of it is the standard library, so repeats, thresholds, intervals and gates work in any
install (no scipy).
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any, TypeVar

T = TypeVar("T")

CONFIDENCE = 0.95
BOOTSTRAP_SEED = 0
BOOTSTRAP_RESAMPLES = 10_000


@dataclass(frozen=True)
class Interval:
    """An estimate with its interval (`confidence`, 0.95 by default) and how it was made."""

    estimate: float
    low: float
    high: float
    method: str
    confidence: float = CONFIDENCE

    def show(self, digits: int = 2, *, signed: bool = False) -> str:
        """``0.80 [0.49, 0.94]``; `signed` (a change): ``+0.10 [-0.05, +0.25]``."""
        f = f"{'+' if signed else ''}.{digits}f"
        return f"{self.estimate:{f}} [{self.low:{f}}, {self.high:{f}}]"

    def to_dict(self) -> dict[str, Any]:
        return {
            "estimate": round(self.estimate, 6),
            "low": round(self.low, 6),
            "high": round(self.high, 6),
            "method": self.method,
            "confidence": self.confidence,
        }


def plain(value: Interval | float | None) -> dict[str, Any] | float | None:
    """An estimate as plain data: an interval's `to_dict`, a bare figure as it is."""
    return value.to_dict() if isinstance(value, Interval) else value


def signed(value: Interval | float, digits: int = 2) -> str:
    """A change as a report shows it: ``+0.10 [-0.05, +0.25]``, or ``+0.10`` alone."""
    if isinstance(value, Interval):
        return value.show(digits, signed=True)
    return f"{value:+.{digits}f}"


def _z(confidence: float) -> float:
    return NormalDist().inv_cdf(0.5 + confidence / 2)


def wilson(passed: int, runs: int, confidence: float = CONFIDENCE) -> Interval:
    """Wilson's score interval of a pass rate (Wilson 1927)."""
    if runs <= 0 or not 0 <= passed <= runs:
        raise ValueError(f"need 0 <= passed <= runs and runs > 0, got {passed}/{runs}")
    z, p = _z(confidence), passed / runs
    centre = (p + z * z / (2 * runs)) / (1 + z * z / runs)
    half = z / (1 + z * z / runs) * math.sqrt(p * (1 - p) / runs + z * z / (4 * runs * runs))
    low = 0.0 if passed == 0 else max(0.0, centre - half)
    high = 1.0 if passed == runs else min(1.0, centre + half)
    return Interval(p, low, high, "Wilson", confidence)


def t_quantile(probability: float, df: float) -> float:
    """Student's t quantile for `df` degrees of freedom (any real > 0, as Welch's are), by
    bisection on the distribution function to a relative 1e-12."""
    if not 0 < probability < 1 or df <= 0:
        raise ValueError(f"need 0 < probability < 1 and df > 0, got {probability}, {df}")
    if probability < 0.5:
        return -t_quantile(1 - probability, df)
    low, high = 0.0, 1.0
    while _t_cdf(high, df) < probability:
        low, high = high, 2 * high
    while high - low > 1e-12 * high:
        middle = (low + high) / 2
        if _t_cdf(middle, df) < probability:
            low = middle
        else:
            high = middle
    return (low + high) / 2


def _t_cdf(t: float, df: float) -> float:
    """Student's distribution function at t >= 0: 1 - I_x(df/2, 1/2) / 2, x = df/(df+t²)."""
    return 1 - _beta_regularized(df / (df + t * t), df / 2, 0.5) / 2


def _beta_regularized(x: float, a: float, b: float) -> float:
    """The regularized incomplete beta function I_x(a, b), by its continued fraction
    (modified Lentz), taken on the side where it converges fast."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    if x > (a + 1) / (a + b + 2):
        return 1 - _beta_regularized(1 - x, b, a)
    front = math.exp(
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    tiny = 1e-300
    c, d = 1.0, 1 - (a + b) * x / (a + 1)
    d = 1 / (d if abs(d) > tiny else tiny)
    fraction = d
    for m in range(1, 1000):
        for numerator in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1 + numerator * d
            d = 1 / (d if abs(d) > tiny else tiny)
            c = 1 + numerator / c
            c = c if abs(c) > tiny else tiny
            fraction *= c * d
        if abs(c * d - 1) < 1e-15:
            break
    return front * fraction / a


def pass_at_k(runs: int, passed: int, k: int) -> float:
    """The chance that at least one of k runs passes, estimated without bias from n runs
    with c passes (Chen et al. 2021): 1 - C(n-c, k) / C(n, k)."""
    if not 0 < k <= runs:
        raise ValueError(f"k must be between 1 and the number of runs ({runs}), got {k}")
    return 1.0 - math.comb(runs - passed, k) / math.comb(runs, k)


def pass_hat_k(runs: int, passed: int, k: int) -> float:
    """The chance that all of k runs pass, estimated without bias: C(c, k) / C(n, k)."""
    if not 0 < k <= runs:
        raise ValueError(f"k must be between 1 and the number of runs ({runs}), got {k}")
    return math.comb(passed, k) / math.comb(runs, k)


def mean_interval(values: Sequence[float], confidence: float = CONFIDENCE) -> Interval | None:
    """Student's t interval of a mean; None below two values (no spread to measure)."""
    if len(values) < 2:
        return None
    mean = statistics.fmean(values)
    spread = statistics.stdev(values)
    if spread == 0:
        return Interval(mean, mean, mean, "t", confidence)
    t = t_quantile(0.5 + confidence / 2, len(values) - 1)
    half = t * spread / math.sqrt(len(values))
    return Interval(mean, mean - half, mean + half, "t", confidence)


def welch(
    before: Sequence[float], after: Sequence[float], confidence: float = CONFIDENCE
) -> Interval | None:
    """Welch's interval of ``mean(after) - mean(before)``; None below two values a side."""
    if len(before) < 2 or len(after) < 2:
        return None
    diff = statistics.fmean(after) - statistics.fmean(before)
    va, vb = statistics.variance(after) / len(after), statistics.variance(before) / len(before)
    if va + vb == 0:
        return Interval(diff, diff, diff, "Welch", confidence)
    df = (va + vb) ** 2 / (va**2 / (len(after) - 1) + vb**2 / (len(before) - 1))
    t = t_quantile(0.5 + confidence / 2, df)
    half = t * math.sqrt(va + vb)
    return Interval(diff, diff - half, diff + half, "Welch", confidence)


def newcombe(
    before: tuple[int, int], after: tuple[int, int], confidence: float = CONFIDENCE
) -> Interval:
    """Newcombe's hybrid score interval (method 10) of ``after - before``, each (passed, runs)."""
    (c1, n1), (c2, n2) = before, after
    w1, w2 = wilson(c1, n1, confidence), wilson(c2, n2, confidence)
    p1, p2 = c1 / n1, c2 / n2
    d = p2 - p1
    low = d - math.sqrt((p2 - w2.low) ** 2 + (w1.high - p1) ** 2)
    high = d + math.sqrt((w2.high - p2) ** 2 + (p1 - w1.low) ** 2)
    return Interval(d, low, high, "Newcombe", confidence)


def fisher_drop(before: tuple[int, int], after: tuple[int, int]) -> float:
    """One-sided p-value of Fisher's exact test that the pass rate dropped from `before`
    to `after` (each (passed, runs)): P(X >= passed before), X hypergeometric over the 2x2
    table's margins, as scipy's ``fisher_exact(alternative="greater")`` gives it."""
    (c1, n1), (c2, n2) = before, after
    total, passes = n1 + n2, c1 + c2
    tail = sum(
        math.comb(passes, x) * math.comb(total - passes, n1 - x)
        for x in range(c1, min(passes, n1) + 1)
    )
    return min(1.0, tail / math.comb(total, n1))


def cmh_drop(strata: Sequence[tuple[tuple[int, int], tuple[int, int]]]) -> float:
    """One-sided p-value of the Cochran-Mantel-Haenszel test (continuity-corrected) that
    the pass rate dropped, over strata (one a spec) of (before, after) (passed, runs)."""
    excess = variance = 0.0
    for (c1, n1), (c2, n2) in strata:
        total, passes = n1 + n2, c1 + c2
        if total < 2:
            continue
        excess += c1 - n1 * passes / total
        variance += n1 * n2 * passes * (total - passes) / (total * total * (total - 1))
    if variance == 0:
        return 1.0 if excess <= 0 else 0.0
    return 1.0 - NormalDist().cdf((excess - 0.5) / math.sqrt(variance))


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjustment: each p-value as it compares with the family's alpha,
    so that any adjusted p below alpha keeps the chance of a false alarm below alpha."""
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    adjusted = [1.0] * len(p_values)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(p_values) - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


def bootstrap(
    samples: Sequence[T],
    statistic: Callable[[Sequence[T]], float],
    confidence: float = CONFIDENCE,
    *,
    seed: int = BOOTSTRAP_SEED,
    resamples: int = BOOTSTRAP_RESAMPLES,
) -> tuple[float, float]:
    """The percentile bootstrap interval of `statistic` over `samples`, resampled from a
    fixed `seed` (stored figures do not move), NaN statistics left out, the bounds linearly
    interpolated (numpy's default quantile)."""
    draw = random.Random(seed)
    n = len(samples)
    values = sorted(
        v
        for v in (
            statistic([samples[draw.randrange(n)] for _ in range(n)]) for _ in range(resamples)
        )
        if not math.isnan(v)
    )
    tail = (1 - confidence) / 2
    return _quantile(values, tail), _quantile(values, 1 - tail)


def _quantile(values: Sequence[float], q: float) -> float:
    """The q-quantile of sorted `values`, linearly interpolated."""
    position = q * (len(values) - 1)
    low = math.floor(position)
    high = min(low + 1, len(values) - 1)
    return values[low] + (values[high] - values[low]) * (position - low)


def bootstrap_mean(
    values: Sequence[float],
    confidence: float = CONFIDENCE,
    *,
    seed: int = BOOTSTRAP_SEED,
    resamples: int = BOOTSTRAP_RESAMPLES,
) -> Interval | None:
    """Percentile bootstrap interval of a mean (a paired bootstrap over specs); None under two."""
    if len(values) < 2:
        return None
    low, high = bootstrap(values, statistics.fmean, confidence, seed=seed, resamples=resamples)
    return Interval(statistics.fmean(values), low, high, f"paired bootstrap (seed {seed})")


def fisher_power(runs: int, p: float, q: float, alpha: float = 0.05) -> float:
    """The exact chance that `runs` repeats a side let Fisher's one-sided test (at `alpha`) see a
    drop from pass rate `p` to `q`: the binomial chance of the tables in its rejection region,
    summed down from the top of each total's table."""
    factorial = [math.lgamma(n + 1) for n in range(2 * runs + 1)]  # log n!

    def choose(n: int, k: int) -> float:
        return factorial[n] - factorial[k] - factorial[n - k]

    before_chance = [_log_binomial(choose(runs, k), runs, k, p) for k in range(runs + 1)]
    after_chance = [_log_binomial(choose(runs, k), runs, k, q) for k in range(runs + 1)]
    power = 0.0
    for total in range(2 * runs + 1):
        log_both = choose(2 * runs, total)
        tail = 0.0
        for before in range(min(runs, total), max(0, total - runs) - 1, -1):
            after = total - before
            tail += math.exp(choose(runs, before) + choose(runs, after) - log_both)
            if tail > alpha * (1 + 1e-9):
                break
            power += math.exp(before_chance[before] + after_chance[after])
    return min(1.0, power)


def _log_binomial(log_choose: float, n: int, k: int, p: float) -> float:
    """log P(k passes of n) at pass rate p, given log C(n, k); -inf where that chance is 0."""
    if (p == 0 and k > 0) or (p == 1 and k < n):
        return -math.inf
    passes = k * math.log(p) if k else 0.0
    fails = (n - k) * math.log1p(-p) if n - k else 0.0
    return log_choose + passes + fails


#: Above this many repeats the normal approximation answers: it is close there, and the
#: exact power's tables grow with the square of the repeats.
EXACT_LIMIT = 300


def repeats_needed(
    p: float, q: float, alpha: float = 0.05, power: float = 0.8, *, limit: int = EXACT_LIMIT
) -> int | None:
    """The repeats a side at which Fisher's one-sided test (at `alpha`) sees a drop from
    pass rate `p` to `q` with at least `power`, by its exact power; past `limit` repeats,
    the normal approximation's answer. None when `q` is no drop."""
    if not 0 <= q < p <= 1:
        return None
    approximate = _normal_repeats(p, q, alpha, power)
    if approximate > limit:
        return math.ceil(approximate)
    start = min(limit, max(4, math.ceil(1.5 * approximate)))
    found = _fewest(lambda n: fisher_power(n, p, q, alpha) >= power, 1, start, limit)
    return math.ceil(approximate) if found is None else found


def _fewest(enough: Callable[[int], bool], low: int, high: int, limit: int | None) -> int | None:
    """The fewest repeats above `low` that are `enough` (which holds from some number on):
    doubling from `high` until it holds, then bisection; None when not even `limit` is."""
    while not enough(high):
        if limit is not None and high >= limit:
            return None
        low, high = high, 2 * high if limit is None else min(limit, 2 * high)
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if enough(middle) else (middle, high)
    return high


def _normal_repeats(p: float, q: float, alpha: float, power: float) -> float:
    """The textbook two-proportion answer (one-sided), a starting point for the search."""
    za, zb = NormalDist().inv_cdf(1 - alpha), NormalDist().inv_cdf(power)
    bar = (p + q) / 2
    top = za * math.sqrt(2 * bar * (1 - bar)) + zb * math.sqrt(p * (1 - p) + q * (1 - q))
    return (top / (p - q)) ** 2


def suite_repeats_needed(
    p: float, q: float, specs: int, alpha: float = 0.05, power: float = 0.8
) -> int | None:
    """Repeats a spec for the suite's CMH test (at `alpha` / 2, as the gate tests the total) to see
    each of `specs` specs drop from `p` to `q` with `power`, by the normal approximation."""
    if not 0 <= q < p <= 1 or specs < 1:
        return None
    if specs == 1:
        return repeats_needed(p, q, alpha, power)
    return _fewest(lambda n: cmh_power(n, specs, p, q, alpha / 2) >= power, 0, 1, None)


def cmh_power(runs: int, specs: int, p: float, q: float, alpha: float) -> float:
    """The approximate power of the one-sided CMH test: every spec drops from `p` to `q`."""
    if runs < 1:
        return 0.0
    total = 2 * runs
    bar = (p + q) / 2
    excess = specs * runs * (p - q) / 2 - 0.5  # the statistic's mean, corrected
    null_variance = specs * runs * runs * bar * (1 - bar) / (total - 1) if total > 1 else 0.0
    variance = specs * runs * (p * (1 - p) + q * (1 - q)) / 4
    if variance <= 0:
        return 1.0 if excess > 0 else 0.0
    z = NormalDist().inv_cdf(1 - alpha)
    return NormalDist().cdf((excess - z * math.sqrt(null_variance)) / math.sqrt(variance))
