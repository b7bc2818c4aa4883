"""How far a judge agrees with the humans: Cohen's κ, its interval, and McNemar's test.

Pure Python on purpose: a project that calibrates its judge in CI needs no scipy (the
`stats` extra). docs/explanation/calibration-statistics.md says why each method was chosen.

* κ = (p_o - p_e) / (1 - p_e): the agreement beyond what two raters with these pass rates
  would reach by chance; NaN when chance agreement is 1 (both gave every sample one verdict).
* Its 95 % interval is a percentile bootstrap (`baseline.stats.bootstrap`) from a fixed seed,
  so calibration.json does not change from one run to the next: with 20 to 50 samples κ's
  distribution is skewed and bounded by 1, where the asymptotic standard error gives
  intervals past 1 or too narrow.
* Two judge variants on the same samples are paired: McNemar's exact test asks whether the
  split of the samples only one of them got right could be a fair coin's.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from pytest_atom.baseline.stats import bootstrap
from pytest_atom.judge.calibration import CELLS

#: Resamples of the bootstrap interval, and its fixed seed.
BOOTSTRAP = 2000
SEED = 20261129
INTERVAL = f"95 % percentile bootstrap, {BOOTSTRAP} resamples (fixed seed)"

#: (human met, judge met), one per sample.
Pair = tuple[bool, bool]


@dataclass(frozen=True)
class Agreement:
    """How often the judge agreed with the humans over `samples`: the share, Cohen's κ with
    its interval, and the confusion counts (the fields calibration.json stores)."""

    samples: int
    agreement: float
    kappa: float
    kappa_low: float
    kappa_high: float
    confusion: dict[str, int]


def confusion(pairs: Sequence[Pair]) -> dict[str, int]:
    """The 2x2 table, human's verdict first: `record.CELLS` as keys."""
    counts = dict.fromkeys(CELLS, 0)
    for human, judge in pairs:
        counts[f"human_{_word(human)}_judge_{_word(judge)}"] += 1
    return counts


def _word(met: bool) -> str:
    return "pass" if met else "fail"


def kappa(pairs: Sequence[Pair]) -> float:
    """Cohen's κ of the pairs; NaN when there are none or chance agreement is 1."""
    n = len(pairs)
    if n == 0:
        return math.nan
    observed = sum(h == j for h, j in pairs) / n
    human = sum(h for h, _ in pairs) / n
    judge = sum(j for _, j in pairs) / n
    chance = human * judge + (1 - human) * (1 - judge)
    if chance >= 1:
        return math.nan
    return (observed - chance) / (1 - chance)


def kappa_interval(pairs: Sequence[Pair], level: float = 0.95) -> tuple[float, float]:
    """κ's percentile bootstrap interval, undefined resamples left out; NaNs when κ is undefined."""
    if math.isnan(kappa(pairs)):
        return math.nan, math.nan
    return bootstrap(pairs, kappa, level, seed=SEED, resamples=BOOTSTRAP)


def share(pairs: Sequence[Pair]) -> float:
    """How often the judge agreed with the humans; NaN without pairs."""
    return sum(h == j for h, j in pairs) / len(pairs) if pairs else math.nan


def agreement(pairs: Sequence[Pair]) -> Agreement:
    """Every figure of one criterion's calibration."""
    low, high = kappa_interval(pairs)
    return Agreement(
        samples=len(pairs),
        agreement=share(pairs),
        kappa=kappa(pairs),
        kappa_low=low,
        kappa_high=high,
        confusion=confusion(pairs),
    )


@dataclass(frozen=True)
class McNemar:
    """Two variants on the same samples: `only_a` samples only variant A judged as the
    human did, `only_b` only B; `p` the exact two-sided p-value of that split."""

    only_a: int
    only_b: int
    p: float


def mcnemar(a_right: Sequence[bool], b_right: Sequence[bool]) -> McNemar:
    """McNemar's exact test: the discordant pairs as a binomial(b + c, 1/2)."""
    if len(a_right) != len(b_right):
        raise ValueError("McNemar's test pairs each sample's two verdicts: lengths differ")
    only_a = sum(a and not b for a, b in zip(a_right, b_right, strict=True))
    only_b = sum(b and not a for a, b in zip(a_right, b_right, strict=True))
    n = only_a + only_b
    if n == 0:
        return McNemar(0, 0, 1.0)
    tail = sum(math.comb(n, k) for k in range(min(only_a, only_b) + 1)) / 2**n
    return McNemar(only_a, only_b, min(1.0, 2 * tail))
