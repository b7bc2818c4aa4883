"""Baseline files: written from a run's results, read, and compared with a run.

Every ``pytest --atom`` session writes its rows to ``last-run.json`` in the runs folder
(`write_results`); ``atom baseline save`` turns them into a baseline (`build_baseline`): per
spec (its node id without the repeat suffix) its figures, sorted and without a timestamp, so
saving an unchanged run changes nothing and a diff shows only what moved.

``--atom-baseline PATH`` compares a run with it (`compare`): a pass turned failure, a score
drop or a rise in turns, tokens or cost beyond its tolerance is a regression and fails the
session; an improvement is reported, never failed. Those fixed tolerances judge specs whose
runs, then and now, were all alike (replays); a spec whose runs differ is a sample, judged by
the statistical gate (`pytest_atom.baseline.gate`) on the per-repeat outcomes kept. Turns,
tokens and cost are the agent's own (the reflector aside), priced whatever answered it, so a
replay measures them too.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_atom.baseline.gate import GateResult, gate
from pytest_atom.baseline.measure import METRICS, runs_of
from pytest_atom.errors import BaselineError
from pytest_atom.results.outcome import OK_LABELS, Outcome
from pytest_atom.results.rows import SummaryRow, spec_key
from pytest_atom.settings.parsers import DEFAULT_TOLERANCE, format_tolerance, parse_tolerance

BASELINE_FORMAT = "pytest-atom/baseline@1"
RESULTS_FORMAT = "pytest-atom/results@1"
RESULTS_NAME = "last-run.json"


def results_file(runs_dir: Path) -> Path:
    """Where a session's results go and `atom baseline save` reads them: in the runs folder."""
    return runs_dir / RESULTS_NAME


DEFAULT_BASELINE = Path(".atom") / "baseline.json"

#: Metrics compared, in the order reports list them; True: higher is better.
_METRICS: tuple[tuple[str, bool], ...] = (
    ("pass_rate", True),
    ("score", True),
    ("turns", False),
    ("tokens", False),
    ("cost_usd", False),
    ("duration_s", False),
)
#: Result properties each metric is read from (the agent's own usage; see report.py).
_PROPERTY = {
    "turns": "atom_turns",
    "tool_calls": "atom_tool_calls",
    "tokens": "atom_agent_tokens",
    "cost_usd": "atom_agent_cost_usd",
    "duration_s": "atom_duration_s",
}


# --- results of a run ----------------------------------------------------------------------


def write_results(
    rows: Iterable[SummaryRow],
    path: Path,
    *,
    views: Mapping[str, Any] | None = None,
    extra: Mapping[str, Any] | None = None,
) -> Path:
    """Write a session's rows (scrubbed) where ``atom baseline save`` finds them; a
    shard's file (`suite.shards`) adds each run's HTML view and `extra` keys."""
    from pytest_atom.replay.scrub import Scrubber

    data = {
        "format": RESULTS_FORMAT,
        "results": [
            {"nodeid": row.nodeid, "outcome": row.outcome.label, "properties": dict(row.properties)}
            | ({"view": views.get(row.nodeid)} if views is not None else {})
            for row in rows
        ],
        **(extra or {}),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(Scrubber().scrub_obj(data), indent=2) + "\n", encoding="utf-8")
    return path


def read_results(path: Path) -> list[SummaryRow]:
    """The rows a session wrote with `write_results`."""
    data = _read_json(path, "results", "run pytest --atom first: it writes this file")
    if not isinstance(data, dict) or data.get("format") != RESULTS_FORMAT:
        raise BaselineError(f"{path} is not a pytest-atom results file ({RESULTS_FORMAT})")
    rows = []
    for r in data["results"]:
        props = r.get("properties") or {}
        # The session's last word on the outcome (pytest may fail a passed spec on a snapshot).
        outcome = Outcome.from_properties(props)
        if outcome is None or outcome.label != r["outcome"]:
            outcome = Outcome.of_label(r["outcome"])
        rows.append(SummaryRow.of(r["nodeid"], props, outcome))
    return rows


def _read_json(path: Path, what: str, hint: str) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BaselineError(f"no {what} file at {path} ({hint})") from None
    except (OSError, ValueError) as exc:
        raise BaselineError(f"cannot read the {what} file {path}: {exc}") from None


# --- baselines -----------------------------------------------------------------------------


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _entry(runs: list[tuple[str, Mapping[str, Any]]]) -> dict[str, Any]:
    """One spec's outcomes and means over its runs, then each run's figures (a later gate
    tests against them) and whether they were all alike (then a difference is a fact)."""
    outcomes = sorted({outcome for outcome, _ in runs})
    scores = [float(p["atom_score"]) for _, p in runs if _number(p.get("atom_score"))]
    entry: dict[str, Any] = {
        "outcome": outcomes[0] if len(outcomes) == 1 else "mixed",
        "runs": len(runs),
        "pass_rate": round(sum(o in OK_LABELS for o, _ in runs) / len(runs), 4),
        "score": None if not scores else round(sum(scores) / len(scores), 4),
    }
    for metric, prop in _PROPERTY.items():
        mean = _mean([float(p[prop]) for _, p in runs if _number(p.get(prop))])
        digits = 6 if metric == "cost_usd" else 1 if metric == "duration_s" else 2
        value = None if mean is None else round(mean, digits)
        entry[metric] = int(value) if value is not None and value.is_integer() else value
    entry["repeats"] = [
        {"outcome": o, **{m: p[prop] for m, prop in METRICS if _number(p.get(prop))}}
        for o, p in runs
    ]
    entry["deterministic"] = runs_of("spec", [(o in OK_LABELS, p) for o, p in runs]).deterministic
    return entry


def entries(rows: Iterable[SummaryRow]) -> dict[str, dict[str, Any]]:
    """Per spec key, its figures over the rows of its runs."""
    grouped: dict[str, list[tuple[str, Mapping[str, Any]]]] = {}
    for row in rows:
        grouped.setdefault(spec_key(row.nodeid), []).append((row.outcome.label, row.properties))
    return {key: _entry(runs) for key, runs in sorted(grouped.items())}


def build_baseline(
    rows: Iterable[SummaryRow], keep: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The baseline document of a run: stable and diff-friendly (no dates, sorted keys). `keep`:
    an earlier baseline's entries, whose specs this run did not run stay (``--lf``, ``-k``)."""
    specs = {**(keep or {}), **entries(rows)}
    return {"format": BASELINE_FORMAT, "specs": dict(sorted(specs.items()))}


def dump_baseline(baseline: Mapping[str, Any], path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(baseline, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    path.write_text(text, encoding="utf-8")
    return path


def load_baseline(path: Path) -> dict[str, dict[str, Any]]:
    """A baseline's spec entries; BaselineError names the file and the fix."""
    data = _read_json(path, "baseline", "write one with: atom baseline save")
    if not isinstance(data, dict) or data.get("format") != BASELINE_FORMAT:
        raise BaselineError(
            f"{path} is not a pytest-atom baseline (expected format {BASELINE_FORMAT!r}); "
            "write one with: atom baseline save"
        )
    specs = data.get("specs")
    if not isinstance(specs, dict) or not all(isinstance(v, dict) for v in specs.values()):
        raise BaselineError(f"{path}: 'specs' must map node ids to their figures")
    return specs


# --- comparison ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Delta:
    """One metric of one spec: before (baseline), after (this run) and how to read it."""

    metric: str
    before: float | None
    after: float | None
    status: str  # "regression", "improved", "changed" (within tolerance) or "same"
    tolerance: float | None = None

    @property
    def change(self) -> float | None:
        if self.before is None or self.after is None:
            return None
        return self.after - self.before

    def to_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "before": self.before,
            "after": self.after,
            "change": None if self.change is None else round(self.change, 6),
            "status": self.status,
            "tolerance": self.tolerance,
        }


@dataclass(frozen=True)
class Comparison:
    """One spec against its baseline entry; `status` is new, regression, improved or same."""

    spec: str
    status: str
    deltas: tuple[Delta, ...] = ()
    before_outcome: str | None = None
    after_outcome: str | None = None
    messages: tuple[str, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        """Plain data (the HTML report's `deltas` per spec)."""
        return {
            "spec": self.spec,
            "status": self.status,
            "outcome": {"before": self.before_outcome, "after": self.after_outcome},
            "deltas": {d.metric: d.to_dict() for d in self.deltas},
            "messages": list(self.messages),
        }


def _show(metric: str, value: float | None) -> str:
    if value is None:
        return "-"
    if metric == "cost_usd":
        return f"${value:.4f}"
    if metric == "duration_s":
        return f"{value:.1f}s"
    return f"{value:g}"


def _delta(metric: str, higher_better: bool, before: Any, after: Any, tol: float | None) -> Delta:
    if not isinstance(before, (int, float)) or not isinstance(after, (int, float)):
        return Delta(metric, _num(before), _num(after), "same", tol)
    worse = (before - after) if higher_better else (after - before)
    if worse == 0:
        return Delta(metric, before, after, "same", tol)
    # score and pass rate move in absolute points; usage in fractions of the baseline's
    allowed = None if tol is None else tol if higher_better else tol * before
    if worse > 0 and allowed is not None and worse > allowed + 1e-9:
        return Delta(metric, before, after, "regression", tol)
    if worse < 0 and (tol is not None or higher_better):
        return Delta(metric, before, after, "improved", tol)
    return Delta(metric, before, after, "changed", tol)


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) else None


def _message(spec: str, d: Delta, outcomes: tuple[str | None, str | None]) -> str:
    if d.metric == "pass_rate" and outcomes[0] in OK_LABELS and d.after == 0:
        return f"{spec}: outcome went from {outcomes[0]} to {outcomes[1]}"
    verb = "dropped" if d.metric in ("score", "pass_rate") else "rose"
    limit = ""
    if d.tolerance is not None:
        relative = d.metric not in ("score", "pass_rate")
        limit = f" (tolerance {d.tolerance:.0%})" if relative else f" (tolerance {d.tolerance:g})"
    return (
        f"{spec}: {d.metric} {verb} from {_show(d.metric, d.before)} "
        f"to {_show(d.metric, d.after)}{limit}"
    )


def compare(
    spec: str,
    before: Mapping[str, Any] | None,
    after: Mapping[str, Any],
    tolerance: Mapping[str, float | None] | None = None,
) -> Comparison:
    """Compare one spec's figures with its baseline entry (None: the baseline lacks it)."""
    if before is None:
        return Comparison(spec, "new", after_outcome=after.get("outcome"))
    tol = {**DEFAULT_TOLERANCE, **(tolerance or {})}
    deltas = tuple(_delta(m, better, before.get(m), after.get(m), tol[m]) for m, better in _METRICS)
    outcomes = (before.get("outcome"), after.get("outcome"))
    regressions = [d for d in deltas if d.status == "regression"]
    messages = tuple(_message(spec, d, outcomes) for d in regressions)
    status = (
        "regression"
        if regressions
        else "improved"
        if any(d.status == "improved" for d in deltas)
        else "same"
    )
    return Comparison(spec, status, deltas, outcomes[0], outcomes[1], messages)


def deterministic(entry: Mapping[str, Any]) -> bool:
    """Whether an entry's runs were all alike (an old baseline's: unless its outcomes mixed)."""
    return bool(entry.get("deterministic", entry.get("outcome") != "mixed"))


def counts(entry: Mapping[str, Any]) -> tuple[int, int]:
    """(passed, runs) of an entry, from its repeats or, in an old baseline, its rate."""
    repeats = entry.get("repeats")
    if isinstance(repeats, list) and repeats:
        return sum(r.get("outcome") in OK_LABELS for r in repeats), len(repeats)
    runs = int(entry.get("runs") or 1)
    return round(float(entry.get("pass_rate") or 0) * runs), runs


def gate_run(
    baseline: Mapping[str, Mapping[str, Any]],
    rows: Iterable[SummaryRow],
    tolerance: Mapping[str, float | None] | None = None,
    *,
    statistical: bool = True,
) -> tuple[list[Comparison], GateResult | None]:
    """Every spec of a run against the baseline (a spec's own tolerances, the property
    ``atom_baseline_tolerance``, win over `tolerance`, the ini's, which wins over the
    defaults), and the statistical gate (`pytest_atom.baseline.gate`) of the specs
    that are samples: their runs, now or in the baseline, were not all alike. Those are
    judged by the gate's test, not the fixed tolerances; without `statistical` (one run
    as it ends) their changes are shown, marked "sampled", and judged at the end."""
    rows = list(rows)
    own = {
        spec_key(row.nodeid): parse_tolerance(str(row.properties["atom_baseline_tolerance"]))
        for row in rows
        if row.properties.get("atom_baseline_tolerance")
    }
    now = entries(rows)
    sampled = {
        key: (counts(baseline[key]), counts(entry))
        for key, entry in now.items()
        if key in baseline and not (deterministic(entry) and deterministic(baseline[key]))
    }
    result = None
    if sampled and statistical:
        result = gate(sampled)
    answers = {s.spec: s for s in result.specs} if result else {}
    comparisons = []
    for key, entry in now.items():
        if key not in sampled:
            tol = {**(tolerance or {}), **own.get(key, {})}
            comparisons.append(compare(key, baseline.get(key), entry, tol))
            continue
        shown = compare(key, baseline[key], entry, dict.fromkeys(DEFAULT_TOLERANCE))
        answer = answers.get(key)
        status = {"REGRESSION": "regression", "INCONCLUSIVE": "inconclusive"}.get(
            answer.answer if answer else "", "sampled" if answer is None else shown.status
        )
        messages = (answer.line(),) if answer and answer.answer == "REGRESSION" else ()
        comparisons.append(dataclasses.replace(shown, status=status, messages=messages))
    return comparisons, result


def delta_properties(comparison: Comparison) -> dict[str, Any]:
    """JUnit properties of one run's comparison: ``atom_baseline`` and one per metric."""
    props: dict[str, Any] = {"atom_baseline": comparison.status}
    for d in comparison.deltas:
        if d.change is not None:
            props[f"atom_baseline_{d.metric}"] = round(d.change, 6)
    return props


def _signed(metric: str, change: float) -> str:
    """A change as a person reads it: ``tokens +16,522``, ``cost_usd +$0.0123``."""
    if metric == "cost_usd":
        return f"{'+' if change > 0 else '-'}${abs(change):.4f}"
    if metric in ("turns", "tokens") and float(change).is_integer():
        return f"{int(change):+,}"
    return f"{change:+,.2f}".rstrip("0").rstrip(".")


def summary_cell(props: Mapping[str, Any]) -> str:
    """The summary table's baseline column: status, then the metrics that moved."""
    status = str(props.get("atom_baseline", ""))
    moved = []
    for metric, _ in _METRICS:
        change = props.get(f"atom_baseline_{metric}")
        if isinstance(change, (int, float)) and change and metric != "duration_s":
            moved.append(f"{metric} {_signed(metric, change)}")
    return " ".join([status, *moved])


def _news(comparisons: list[Comparison]) -> list[str]:
    """The summary's lines of specs new to the baseline or better than it."""
    lines: list[str] = []
    for c in comparisons:
        if c.status == "new":
            lines.append(f"baseline: {c.spec}: new (not in the baseline)")
        elif c.status == "improved":
            better = [d for d in c.deltas if d.status == "improved"]
            moved = ", ".join(
                f"{d.metric} {_show(d.metric, d.before)} -> {_show(d.metric, d.after)}"
                for d in better
            )
            lines.append(f"baseline: {c.spec}: improved: {moved}")
    return lines


class BaselineGate:
    """The `baseline` setting: each run's deltas as it ends (in a pytest session they must be
    properties by then to reach JUnit), the whole run's verdict at its end."""

    def __init__(self, path: Path, tolerance: Mapping[str, float | None] | None = None) -> None:
        self.path = path
        self.baseline = load_baseline(path)
        self.tolerance = dict(tolerance or {})
        self.comparisons: list[Comparison] = []
        self.gate: GateResult | None = None

    def item_properties(
        self, nodeid: str, props: Mapping[str, Any], *, own: Mapping[str, float | None]
    ) -> list[tuple[str, Any]]:
        """One run's comparison as properties, plus the spec's own tolerances if any."""
        key = spec_key(nodeid)
        extra = {"atom_baseline_tolerance": format_tolerance(own)} if own else {}
        row = SummaryRow.of(nodeid, {**props, **extra})
        known = {key: self.baseline[key]} if key in self.baseline else {}
        [comparison] = gate_run(known, [row], self.tolerance, statistical=False)[0]
        return list({**delta_properties(comparison), **extra}.items())

    def finish(self, rows: Iterable[SummaryRow]) -> bool:
        """Compare the whole run; True when something regressed (never for INCONCLUSIVE)."""
        self.comparisons, self.gate = gate_run(self.baseline, rows, self.tolerance)
        total = self.gate is not None and self.gate.answer == "REGRESSION"
        return total or any(c.status == "regression" for c in self.comparisons)

    def lines(self) -> list[str]:
        """The summary: the fixed tolerances' findings, then the gate's answers."""
        return [line for line, _ in self.flagged_lines()]

    def flagged_lines(self) -> list[tuple[str, bool]]:
        """`lines`, each with whether it tells of a regression."""
        fixed = [c for c in self.comparisons if c.status not in ("inconclusive", "sampled")]
        gated = {s.spec for s in self.gate.specs} if self.gate else set()
        fixed = [c for c in fixed if c.spec not in gated]
        regressions = [(f"baseline regression: {m}", True) for c in fixed for m in c.messages]
        rest = [(line, False) for line in _news(fixed)]
        return regressions + rest + (self.gate.flagged_lines() if self.gate else [])

    def deltas(self) -> dict[str, dict[str, Any]]:
        """Per spec key, the HTML report's baseline cell (after `finish`)."""
        return {
            c.spec: {
                "baseline": c.status,
                **{d.metric: _signed(d.metric, d.change) for d in c.deltas if d.change},
            }
            for c in self.comparisons
        }
