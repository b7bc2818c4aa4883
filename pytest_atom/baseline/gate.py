"""The baseline gate for sampled runs: PASS, REGRESSION or INCONCLUSIVE, by a named test.

A spec whose runs differ from one another (a live recording, a stochastic script), or
whose baseline's did, is a sample: a lower pass rate may be noise. Such specs are judged
here, on their per-repeat outcomes:

- per spec, Fisher's exact test, one-sided (did the pass rate drop?), with Newcombe's
  95 % interval of the change;
- in total, from two such specs on, the Cochran-Mantel-Haenszel test stratified by spec
  (each spec compared with its own baseline, so easy and hard specs do not mix), with a
  paired bootstrap over specs (fixed seed) for the interval of the mean change;
- the specs' tests are Holm-adjusted among themselves at `ALPHA` / 2 and the total is
  tested at `ALPHA` / 2, so a run with any number of specs and no change fails in at most
  `ALPHA` of runs, and the total keeps its power however many specs there are.

A spec REGRESSED when its adjusted p-value is below `ALPHA`; it PASSES when its pass rate
did not drop; otherwise it is INCONCLUSIVE, and the power calculation says how many
repeats would tell a drop of the size seen from noise. Specs whose every run, then and
now, was alike (replays) keep the fixed tolerances of `pytest_atom.baseline.compare`:
there a difference is a fact.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_atom.baseline import stats

ALPHA = 0.05
POWER = 0.8

Counts = tuple[int, int]  # (passed, runs)


@dataclass(frozen=True)
class SpecGate:
    """One sampled spec against its baseline."""

    spec: str
    answer: str  # PASS, REGRESSION or INCONCLUSIVE
    before: Counts
    after: Counts
    change: stats.Interval
    p_value: float
    adjusted: float
    repeats: int | None  # repeats a side that would settle an INCONCLUSIVE

    def line(self) -> str:
        (c1, n1), (c2, n2) = self.before, self.after
        text = (
            f"{self.spec}: {self.answer}: pass rate {c1}/{n1} -> {c2}/{n2}, change "
            f"{self.change.show(signed=True)} (Newcombe 95 %); Fisher's exact test, one-sided: "
            f"p = {self.p_value:.3g} (adjusted {self.adjusted:.3g})"
        )
        if self.answer == "INCONCLUSIVE":
            text += "; " + _settle(self.repeats, c1 / n1, c2 / n2)
        return text

    def to_dict(self) -> dict[str, Any]:
        return {
            "spec": self.spec,
            "answer": self.answer,
            "before": list(self.before),
            "after": list(self.after),
            "change": self.change.to_dict(),
            "test": "Fisher's exact test, one-sided",
            "p_value": self.p_value,
            "adjusted_p_value": self.adjusted,
            "repeats_to_settle": self.repeats,
        }


@dataclass(frozen=True)
class TotalGate:
    """Every sampled spec together."""

    answer: str
    specs: int
    change: stats.Interval | None  # the paired bootstrap's, from two specs on
    p_value: float
    adjusted: float
    repeats: int | None
    before: float
    after: float

    def line(self) -> str:
        interval = f" {self.change.show(signed=True)} ({self.change.method})" if self.change else ""
        text = (
            f"total over {self.specs} specs: {self.answer}: mean pass rate {self.before:.2f} -> "
            f"{self.after:.2f}, change{interval}; Cochran-Mantel-Haenszel test stratified by "
            f"spec, one-sided: p = {self.p_value:.3g} (adjusted {self.adjusted:.3g})"
        )
        if self.answer == "INCONCLUSIVE":
            text += "; " + _settle(self.repeats, self.before, self.after, each=True)
        return text

    def to_dict(self) -> dict[str, Any]:
        return {
            "answer": self.answer,
            "specs": self.specs,
            "change": self.change.to_dict() if self.change else None,
            "test": "Cochran-Mantel-Haenszel, stratified by spec, one-sided",
            "p_value": self.p_value,
            "adjusted_p_value": self.adjusted,
            "repeats_to_settle": self.repeats,
        }


@dataclass(frozen=True)
class GateResult:
    """The sampled specs' answers, and the total's."""

    specs: tuple[SpecGate, ...]
    total: TotalGate | None

    @property
    def answer(self) -> str:
        answers = [s.answer for s in self.specs] + ([self.total.answer] if self.total else [])
        for answer in ("REGRESSION", "INCONCLUSIVE"):
            if answer in answers:
                return answer
        return "PASS"

    def flagged_lines(self) -> list[tuple[str, bool]]:
        """The gate's, each spec's and the total's lines, each with whether it is a regression."""
        n = len(self.specs)
        how = (
            f"Fisher's exact test per spec, Holm-adjusted over {n} specs, at alpha "
            f"{ALPHA / 2:g}; Cochran-Mantel-Haenszel in total, at alpha {ALPHA / 2:g}"
            if self.total
            else f"Fisher's exact test, alpha {ALPHA:g}"
        )
        head = f"baseline gate: {self.answer} for {n} sampled spec{'s' * (n != 1)} ({how})"
        regression = "REGRESSION"
        return [
            (head, self.answer == regression),
            *(("  " + s.line(), s.answer == regression) for s in self.specs),
            *([("  " + self.total.line(), self.total.answer == regression)] if self.total else []),
        ]

    def to_dict(self) -> dict[str, Any]:
        return {
            "answer": self.answer,
            "alpha": ALPHA,
            "specs": [s.to_dict() for s in self.specs],
            "total": self.total.to_dict() if self.total else None,
        }


def _settle(repeats: int | None, before: float, after: float, each: bool = False) -> str:
    if repeats is None:
        return "no drop to settle"
    per = " per spec" if each else ""
    return (
        f"about {repeats} repeats{per} on each side would tell a drop from {before:.2f} to "
        f"{after:.2f} from noise (alpha {ALPHA:g}, power {POWER:g}): atom trials --p "
        f"{before:.2f} --q {after:.2f}"
    )


def _answer(before: float, after: float, adjusted: float) -> str:
    """REGRESSION below `ALPHA`; else PASS when the pass rate did not drop."""
    if adjusted < ALPHA:
        return "REGRESSION"
    return "PASS" if after >= before else "INCONCLUSIVE"


def gate(samples: Mapping[str, tuple[Counts, Counts]]) -> GateResult:
    """The gate over sampled specs, each (before, after) as (passed, runs)."""
    keys = [k for k, (b, a) in samples.items() if b[1] and a[1]]
    if not keys:
        return GateResult((), None)
    strata = [samples[k] for k in keys]
    p_values = [stats.fisher_drop(b, a) for b, a in strata]
    adjusted = stats.holm(p_values)
    if len(keys) > 1:  # two families, the specs and the total, each at alpha / 2
        p_values.append(stats.cmh_drop(strata))
        adjusted = [min(1.0, 2 * a) for a in adjusted] + [min(1.0, 2 * p_values[-1])]
    specs = []
    for key, (before, after), p, adj in zip(keys, strata, p_values, adjusted, strict=False):
        rates = before[0] / before[1], after[0] / after[1]
        answer = _answer(*rates, adj)
        repeats = stats.repeats_needed(*rates, ALPHA, POWER) if answer == "INCONCLUSIVE" else None
        change = stats.newcombe(before, after)
        specs.append(SpecGate(key, answer, before, after, change, p, adj, repeats))
    total = _total(strata, p_values[-1], adjusted[-1]) if len(keys) > 1 else None
    return GateResult(tuple(specs), total)


def _total(strata: Sequence[tuple[Counts, Counts]], p: float, adjusted: float) -> TotalGate:
    rates = [(b[0] / b[1], a[0] / a[1]) for b, a in strata]
    before = sum(r for r, _ in rates) / len(rates)
    after = sum(r for _, r in rates) / len(rates)
    change = stats.bootstrap_mean([a - b for b, a in rates])
    answer = _answer(before, after, adjusted)
    repeats = (
        stats.suite_repeats_needed(before, after, len(strata), ALPHA, POWER)
        if answer == "INCONCLUSIVE"
        else None
    )
    return TotalGate(answer, len(strata), change, p, adjusted, repeats, before, after)
