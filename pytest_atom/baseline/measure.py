"""What repeats and arms measure: per spec its pass rate with an interval, pass@k and
pass^k, mean score and turns; per arm the same, and its difference from the reference.

Read from the session's rows (node id, outcome, properties), so pytest's summary, `atom
run` and the HTML report say the same. The statistics are `pytest_atom.baseline.stats`'.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_atom.baseline import stats, triggers
from pytest_atom.results.rows import SummaryRow, pooled_key, spec_key
from pytest_atom.results.thresholds import RepeatGates, Tally, tallies

Row = SummaryRow
#: Figures measured per run: (name, property); the agent's own usage, as baselines read it.
METRICS = (
    ("score", "atom_score"),
    ("turns", "atom_turns"),
    ("tokens", "atom_agent_tokens"),
    ("cost_usd", "atom_agent_cost_usd"),
)
#: What the arm lines compare: the spec's one figure, as the summary table and HTML show it
#: (every session's tokens); baselines keep the agent's own (`METRICS`), which limits count.
ARM_METRICS = (
    ("score", "atom_score"),
    ("turns", "atom_turns"),
    ("tokens", "atom_tokens"),
    ("cost_usd", "atom_cost_usd"),
)


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


@dataclass(frozen=True)
class Runs:
    """One spec's (or one arm's) runs: outcomes and figures, in repeat order."""

    key: str
    outcomes: tuple[bool, ...]
    figures: Mapping[str, tuple[float, ...]]
    deterministic: bool  # replayed or scripted, every run alike: a fact, not a sample

    @property
    def passed(self) -> int:
        return sum(self.outcomes)

    @property
    def runs(self) -> int:
        return len(self.outcomes)

    def rate(self) -> stats.Interval:
        return stats.wilson(self.passed, self.runs)

    def mean(self, metric: str) -> float | None:
        values = self.figures.get(metric, ())
        return statistics.fmean(values) if values else None

    def pooled(self) -> dict[str, Any]:
        """Passes, runs, the pass rate and each metric's mean: an arm's or a case's data."""
        return {
            "passed": self.passed,
            "runs": self.runs,
            "pass_rate": self.rate().to_dict(),
            **{metric: self.mean(metric) for metric, _ in METRICS},
        }


def groupruns_of(
    rows: Iterable[Row], key: Any = None, metrics: Sequence[tuple[str, str]] = METRICS
) -> dict[str, Runs]:
    """Rows by spec (repeat suffix ``[rN]`` removed), or by `key(nodeid, props)`."""
    grouped: dict[str, list[tuple[bool, Mapping[str, Any]]]] = {}
    for row in rows:
        props = row.properties
        name = key(row.nodeid, props) if key else spec_key(row.nodeid)
        grouped.setdefault(name, []).append((row.outcome.ok, props))
    return {name: runs_of(name, runs, metrics) for name, runs in grouped.items()}


def runs_of(
    name: str,
    runs: list[tuple[bool, Mapping[str, Any]]],
    metrics: Sequence[tuple[str, str]] = METRICS,
) -> Runs:
    figures = {
        metric: tuple(float(p[prop]) for _, p in runs if _number(p.get(prop)))
        for metric, prop in metrics
    }
    alike = len({(ok, *(p.get(prop) for _, prop in metrics)) for ok, p in runs}) == 1
    sources = {p.get("atom_source") for _, p in runs}
    return Runs(
        name,
        tuple(ok for ok, _ in runs),
        figures,
        deterministic=alike and "record" not in sources,
    )


def _ks(runs: int) -> list[int]:
    """The k of pass@k and pass^k shown: half the runs (from 4 runs on), and all of them."""
    return sorted({runs // 2, runs} if runs >= 4 else {runs})


def _repeat_figures_text(r: Runs) -> str:
    """``7/10 passed, pass rate 0.70 [0.40, 0.89], pass@5 1.00, pass^5 0.08, ...``."""
    parts = [f"{r.passed}/{r.runs} passed, pass rate {r.rate().show()}"]
    for k in _ks(r.runs):
        parts.append(
            f"pass@{k} {stats.pass_at_k(r.runs, r.passed, k):.2f}, "
            f"pass^{k} {stats.pass_hat_k(r.runs, r.passed, k):.2f}"
        )
    line = ", ".join(parts)
    for metric, digits in (("score", 2), ("turns", 1)):
        interval = stats.mean_interval(r.figures.get(metric, ()))
        if interval is not None:
            line += f"; {metric} {interval.show(digits)}"
    return line


def repeat_lines(
    rows: Iterable[Row], gate: float | None, pass_at_least: int | None = None
) -> list[str]:
    """The summary's pass rates under --atom-repeat, with intervals and thresholds, met or not."""
    rows = list(rows)
    gates = RepeatGates(pass_at_least, gate)
    counted = {tally.spec: tally for tally in tallies(rows)}
    lines = [
        "pass rates over repeats (95 % intervals: Wilson for pass rates, Student's t for "
        "mean score and turns; pass@k and pass^k unbiased from all runs):"
    ]
    for r in groupruns_of(rows).values():
        line = f"{r.key}: {_repeat_figures_text(r)}"
        if verdict := counted[r.key].verdict(gates):
            line += f" ({verdict})"
        if r.deterministic and r.runs > 1:
            line += (
                " [every repeat alike from one script or cassette: identical by design, "
                "not a measurement]"
            )
        lines.append(line)
    return lines


# --- arms ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ArmFigures:
    """One arm of one spec, and its difference from the reference arm (None: the reference)."""

    spec: str
    arm: str
    reference: bool
    runs: Runs
    differences: Mapping[str, stats.Interval | float] | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "spec": self.spec,
            "arm": self.arm,
            "reference": self.reference,
            **self.runs.pooled(),
            "vs_reference": None
            if self.differences is None
            else {k: stats.plain(v) for k, v in self.differences.items()},
        }


def arm_figures(rows: Iterable[Row]) -> list[ArmFigures]:
    """Each arm of each spec with arms (its reference arm first), with its difference from
    the reference arm: the pass rate's by Newcombe's interval, the means' by Welch's."""
    armed = [row for row in rows if row.properties.get("atom_arm")]
    groups = groupruns_of(armed, None, ARM_METRICS)
    meta = {spec_key(row.nodeid): row.properties for row in armed}
    found: list[ArmFigures] = []
    by_spec: dict[str, list[str]] = {}
    for key in groups:
        arm = str(meta[key]["atom_arm"])
        by_spec.setdefault(key.removesuffix(f"[{arm}]"), []).append(key)
    for spec, keys in by_spec.items():
        ref = next((k for k in keys if meta[k].get("atom_arm_reference")), None)
        # The reference first, whatever order the rows came in, so every front end agrees.
        for key in sorted(keys, key=lambda k: k != ref):
            runs, is_ref = groups[key], key == ref
            diffs = None if ref is None or is_ref else _differences(groups[ref], runs)
            found.append(ArmFigures(spec, str(meta[key]["atom_arm"]), is_ref, runs, diffs))
    return found


def _differences(ref: Runs, arm: Runs) -> dict[str, stats.Interval | float]:
    out: dict[str, stats.Interval | float] = {}
    if ref.deterministic and arm.deterministic:
        out["pass_rate"] = arm.passed / arm.runs - ref.passed / ref.runs
    else:
        out["pass_rate"] = stats.newcombe((ref.passed, ref.runs), (arm.passed, arm.runs))
    for metric, _ in ARM_METRICS:
        before, after = ref.figures.get(metric, ()), arm.figures.get(metric, ())
        if not before or not after:
            continue
        interval = stats.welch(before, after)
        if interval is None or (ref.deterministic and arm.deterministic):
            out[metric] = statistics.fmean(after) - statistics.fmean(before)
        else:
            out[metric] = interval
    return out


def suite_arm_differences(figures: Sequence[ArmFigures]) -> dict[str, stats.Interval]:
    """Per arm name, its mean change in pass rate from the reference over specs (paired by spec)."""
    changes: dict[str, list[float]] = {}
    for f in figures:
        if f.differences is not None:
            diff = f.differences["pass_rate"]
            changes.setdefault(f.arm, []).append(
                diff.estimate if isinstance(diff, stats.Interval) else diff
            )
    out = {}
    for arm, values in changes.items():
        interval = stats.bootstrap_mean(values)
        if interval is not None:
            out[arm] = interval
    return out


def _show(metric: str, value: stats.Interval | float | None) -> str:
    digits = {"pass_rate": 2, "score": 2, "turns": 1, "tokens": 0, "cost_usd": 4}[metric]
    return "-" if value is None else stats.signed(value, digits)


def arm_lines(rows: Iterable[Row]) -> list[str]:
    """The summary's arms: each arm's figures, then its change from the reference arm."""
    figures = arm_figures(rows)
    if not figures:
        return []
    lines = [
        "arms (change vs the reference arm, 95 % intervals: Newcombe for pass rates, Welch "
        "for means; no interval where both arms replayed alike):"
    ]
    for f in figures:
        lines.append(f"{_arm_name(f)}: {_arm_figures_text(f)}")
        if (moved := _vs_reference(f)) is not None:
            lines.append(f"    vs reference: {moved}")
    lines += [f"{name}: {text}" for name, text in _suite_arms(figures)]
    return lines


def _suite_arms(figures: Sequence[ArmFigures]) -> list[tuple[str, str]]:
    """Each arm's pass-rate change over every spec: (``arm x over 3 specs``, the change)."""
    return [
        (
            f"arm {arm} over {len([f for f in figures if f.arm == arm and f.differences])} specs",
            f"pass rate change {_show('pass_rate', interval)} ({interval.method})",
        )
        for arm, interval in suite_arm_differences(figures).items()
    ]


def _arm_name(f: ArmFigures) -> str:
    return f"{f.spec}[{f.arm}]{' (reference)' if f.reference else ''}"


def _arm_figures_text(f: ArmFigures) -> str:
    """``3/4 passed, pass rate 0.75 [...], score 0.80, turns 4.0, tokens 9000, cost $0.0100``."""
    r = f.runs
    shown = {
        m: "-" if r.mean(m) is None else f"{r.mean(m):.{digits}f}"
        for m, digits in (("score", 2), ("turns", 1), ("tokens", 0), ("cost_usd", 4))
    }
    return (
        f"{r.passed}/{r.runs} passed, pass rate {r.rate().show()}, score {shown['score']}, "
        f"turns {shown['turns']}, tokens {shown['tokens']}, cost ${shown['cost_usd']}"
    )


def _vs_reference(f: ArmFigures) -> str | None:
    """An arm's change from the reference arm (None: it is the reference)."""
    if f.differences is None:
        return None
    return ", ".join(f"{m} {_show(m, v)}" for m, v in f.differences.items())


# --- cases ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CaseFigures:
    """One spec's (one arm's) runs pooled over its cases, and an arm's change from the
    reference arm paired by case (with the paired bootstrap's interval from two cases on)."""

    spec: str  # ``file::name`` or ``file::name[arm]``
    cases: int
    runs: Runs
    paired: stats.Interval | float | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "spec": self.spec,
            "cases": self.cases,
            **self.runs.pooled(),
            "vs_reference_by_case": stats.plain(self.paired),
        }


def case_figures(rows: Iterable[Row]) -> list[CaseFigures]:
    """Each spec with cases, pooled over them (per arm, with arms), in the rows' order."""
    cased = [row for row in rows if row.properties.get("atom_case")]
    pooled = groupruns_of(cased, pooled_key, ARM_METRICS)
    per_case = groupruns_of(cased, None, ARM_METRICS)
    meta = {spec_key(row.nodeid): row.properties for row in cased}
    cases: dict[str, dict[str, Runs]] = {}  # pooled key -> case -> its runs
    for key, runs in per_case.items():
        props = meta[key]
        cases.setdefault(pooled_key(key, props), {})[str(props["atom_case"])] = runs
    references = {
        pooled_key(k, p).removesuffix(f"[{p['atom_arm']}]"): pooled_key(k, p)
        for k, p in meta.items()
        if p.get("atom_arm_reference")
    }
    found = []
    for key, runs in pooled.items():
        arm = next((p.get("atom_arm") for k, p in meta.items() if pooled_key(k, p) == key), None)
        ref = references.get(key.removesuffix(f"[{arm}]")) if arm else None
        paired = None if ref is None or ref == key else _paired(cases[ref], cases[key])
        found.append(CaseFigures(key, len(cases[key]), runs, paired))
    return found


def _paired(
    reference: Mapping[str, Runs], arm: Mapping[str, Runs]
) -> stats.Interval | float | None:
    """The arm's change in pass rate from the reference, case by case, then averaged."""
    return _mean_change(
        [
            arm[case].passed / arm[case].runs - ref.passed / ref.runs
            for case, ref in reference.items()
            if case in arm
        ]
    )


def _mean_change(changes: Sequence[float]) -> stats.Interval | float | None:
    """The mean of per-case changes: with the paired bootstrap's interval from two on."""
    if not changes:
        return None
    return stats.bootstrap_mean(changes) or statistics.fmean(changes)


def case_lines(rows: Iterable[Row]) -> list[str]:
    """The summary's cases: each spec's (each arm's) runs pooled over its cases."""
    figures = case_figures(rows)
    if not figures:
        return []
    lines = [
        "cases (each spec's runs pooled over its cases, 95 % Wilson interval; an arm's change "
        "vs the reference arm paired by case, with the paired bootstrap's interval):"
    ]
    for f in figures:
        r = f.runs
        line = f"{f.spec} over {f.cases} cases: {r.passed}/{r.runs} passed, pass rate {r.rate().show()}"
        if f.paired is not None:
            line += f"; vs reference by case: pass rate {_show('pass_rate', f.paired)}"
        lines.append(line)
    return lines


@dataclass(frozen=True)
class ConversationFigures:
    """One conversation spec's (one arm's) turns to success (the user's messages of its
    runs that passed with the user done), pooled over cases and repeats; an arm's change
    in mean turns is paired by case, as `CaseFigures` pairs pass rates."""

    spec: str  # ``file::name`` or ``file::name[arm]``
    runs: int
    turns: tuple[int, ...]  # sorted
    paired: stats.Interval | float | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "spec": self.spec,
            "runs": self.runs,
            "succeeded": len(self.turns),
            "turns_to_success": list(self.turns),
            "median_turns": statistics.median(self.turns) if self.turns else None,
            "vs_reference_by_case": stats.plain(self.paired),
        }


def conversation_figures(rows: Iterable[Row]) -> list[ConversationFigures]:
    """Each spec with `user:` (each arm), in the rows' order."""
    runs: dict[str, int] = {}
    by_case: dict[str, dict[str, list[int]]] = {}  # key -> case ("" without) -> turns
    references: dict[str, str] = {}  # a spec without its arm -> its reference arm's key
    arms: dict[str, str] = {}  # an arm's key -> the spec without its arm
    for row in rows:
        props = row.properties
        if props.get("atom_user_turns") in (None, ""):
            continue
        key = pooled_key(row.nodeid, props) if props.get("atom_case") else spec_key(row.nodeid)
        runs[key] = runs.get(key, 0) + 1
        took = by_case.setdefault(key, {}).setdefault(str(props.get("atom_case") or ""), [])
        if str(props.get("atom_user_done")) == "True" and row.outcome.label == "passed":
            took.append(int(props["atom_user_turns"]))
        if arm := props.get("atom_arm"):
            arms[key] = key.removesuffix(f"[{arm}]")
            if props.get("atom_arm_reference"):
                references[arms[key]] = key
    found = []
    for key, count in runs.items():
        ref = references.get(arms.get(key, ""))
        paired = None if ref is None or ref == key else _paired_turns(by_case[ref], by_case[key])
        pooled = tuple(sorted(n for case in by_case[key].values() for n in case))
        found.append(ConversationFigures(key, count, pooled, paired))
    return found


def _paired_turns(
    reference: Mapping[str, Sequence[int]], arm: Mapping[str, Sequence[int]]
) -> stats.Interval | float | None:
    """`_paired` for mean turns to success, over the cases where both succeeded."""
    return _mean_change(
        [
            statistics.fmean(arm[case]) - statistics.fmean(ref)
            for case, ref in reference.items()
            if ref and arm.get(case)
        ]
    )


def conversation_lines(rows: Iterable[Row]) -> list[str]:
    """The summary's conversations, and an arm's change from the reference arm."""
    figures = conversation_figures(rows)
    if not figures:
        return []
    lines = ["conversations (the user's messages to success, the prompt included):"]
    for f in figures:
        line = f"{f.spec}: {len(f.turns)}/{f.runs} succeeded"
        if f.turns:
            spread = ", ".join(f"{n}: {f.turns.count(n)}" for n in sorted(set(f.turns)))
            line += f", median {statistics.median(f.turns):g} turns ({spread})"
        if f.paired is not None:
            line += f"; vs reference by case: user turns {_show('turns', f.paired)}"
        lines.append(line)
    return lines


def repeat_figures(
    r: Runs, tally: Tally | None = None, gates: RepeatGates | None = None
) -> dict[str, Any]:
    """One spec's repeats as plain data (measured.json), with its threshold: the passes it
    needs of how many runs (None: none applies) and whether it met it."""
    gates = gates or RepeatGates()
    threshold = (
        None
        if tally is None or not tally.gated(gates)
        else {
            "repeats": tally.repeats,
            "pass_at_least": tally.needed(gates),
            "min_pass_rate": gates.min_pass_rate if tally.own is None else None,
            "met": tally.met(gates),
        }
    )
    return {
        "spec": r.key,
        "passed": r.passed,
        "runs": r.runs,
        "deterministic": r.deterministic,
        "pass_rate": r.rate().to_dict(),
        **{f"pass@{k}": round(stats.pass_at_k(r.runs, r.passed, k), 6) for k in _ks(r.runs)},
        **{f"pass^{k}": round(stats.pass_hat_k(r.runs, r.passed, k), 6) for k in _ks(r.runs)},
        **{
            metric: None
            if (i := stats.mean_interval(r.figures.get(metric, ()))) is None
            else i.to_dict()
            for metric in ("score", "turns")
        },
        "threshold": threshold,
    }


def _repeated(rows: Sequence[Row], gates: RepeatGates) -> list[tuple[Runs, Tally]]:
    """The specs whose repeats a report shows: those that ran more than once, or a count holds."""
    counted = {tally.spec: tally for tally in tallies(rows)}
    return [
        (r, counted[r.key])
        for r in groupruns_of(rows).values()
        if r.runs > 1 or counted[r.key].needed(gates) is not None
    ]


def measured(rows: Sequence[Row], gates: RepeatGates | None = None) -> dict[str, Any]:
    """Everything this module measures, as plain data (`gates`: the run's thresholds)."""
    gates = gates or RepeatGates()
    figures = arm_figures(rows)
    return {
        "repeats": [repeat_figures(r, tally, gates) for r, tally in _repeated(rows, gates)],
        "arms": [f.to_dict() for f in figures],
        "arms_over_specs": {
            arm: interval.to_dict() for arm, interval in suite_arm_differences(figures).items()
        },
        "cases": [f.to_dict() for f in case_figures(rows)],
        "conversations": [f.to_dict() for f in conversation_figures(rows)],
        "triggers": triggers.measured(rows),
    }


def junit_properties(
    rows: Sequence[Row], gates: RepeatGates | None = None
) -> list[tuple[str, str]]:
    """The summary's repeat and arm lines as JUnit test-suite properties, one a spec."""
    gates = gates or RepeatGates()
    props = []
    for r, tally in _repeated(rows, gates):
        verdict = tally.verdict(gates)
        props.append(
            (
                f"atom_repeats {r.key}",
                _repeat_figures_text(r) + (f" ({verdict})" if verdict else ""),
            )
        )
    figures = arm_figures(rows)
    for f in figures:
        moved = _vs_reference(f)
        more = f"; vs reference: {moved}" if moved is not None else ""
        props.append((f"atom_arm {_arm_name(f)}", _arm_figures_text(f) + more))
    props += [(f"atom_arm {name}", text) for name, text in _suite_arms(figures)]
    props += [
        (f"atom_cases {f.spec}", line.split(": ", 1)[1])
        for f, line in zip(case_figures(rows), case_lines(rows)[1:], strict=True)
    ]
    props += [
        (f"atom_conversation {f.spec}", line.split(": ", 1)[1])
        for f, line in zip(conversation_figures(rows), conversation_lines(rows)[1:], strict=True)
    ]
    return props + triggers.junit_properties(rows)


def measured_lines(rows: Sequence[Row], gates: RepeatGates | None = None) -> list[str]:
    """The repeat and arm lines for a report; `gates`: the run's own thresholds."""
    gates = gates or RepeatGates()
    shown = bool(_repeated(rows, gates))
    lines = repeat_lines(rows, gates.min_pass_rate, gates.pass_at_least) if shown else []
    return (
        lines
        + arm_lines(rows)
        + case_lines(rows)
        + conversation_lines(rows)
        + triggers.trigger_lines(rows)
    )
