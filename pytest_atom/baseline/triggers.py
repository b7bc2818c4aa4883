"""What a trigger suite (`triggers:`) measures: per component (each trigger spec, each arm),
precision and recall with Wilson intervals over every trial, the prompts that misfired, and
the gate on `min_precision` and `min_recall` (docs/how-to/triggers.md).

Each prompt's run carries what it saw as properties (`trigger_properties`), so the figures
are read from the session's rows and every report counts the same trials. A trial is a run
whose trigger check ran: a run served by the outcome cache or one that broke before its
checks is no trial.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from pytest_atom.baseline import stats
from pytest_atom.results.rows import SummaryRow, pooled_key, spec_key

if TYPE_CHECKING:
    from pytest_atom.results.spec_result import SpecResult

#: The most characters of a prompt a run's properties keep (a misfire names it).
PROMPT_SHOWN = 80


def trigger_properties(result: SpecResult) -> dict[str, Any]:
    """A trigger suite's run: the component (``atom_trigger``), whether the prompt should
    fire it (``atom_trigger_should``), whether it did (``atom_trigger_fired``, only when
    its check ran), the prompt, and the suite's gates. Empty for any other spec."""
    trigger = result.spec.trigger
    if trigger is None:
        return {}
    prompt = " ".join(result.spec.prompt.split())
    props: dict[str, Any] = {
        "atom_trigger": trigger.label,
        "atom_trigger_should": "yes" if trigger.should else "no",
        "atom_trigger_prompt": prompt[: PROMPT_SHOWN - 1] + "…"
        if len(prompt) > PROMPT_SHOWN
        else prompt,
    }
    seen = next((c for c in result.checks if c.check == trigger.check), None)
    if seen is not None and result.cached_from is None:
        props["atom_trigger_fired"] = "yes" if seen.passed == trigger.should else "no"
    for gate in ("min_precision", "min_recall"):
        if (value := getattr(trigger, gate)) is not None:
            props[f"atom_trigger_{gate}"] = value
    return props


@dataclass(frozen=True)
class Prompt:
    """One prompt's trials in one component: how often it fired."""

    id: str
    text: str
    should: bool
    fired: int
    runs: int

    @property
    def misfired(self) -> int:
        """Trials whose firing disagreed with the label."""
        return self.runs - self.fired if self.should else self.fired

    def line(self) -> str:
        want = "should fire" if self.should else "should not fire"
        return f"{self.id} ({want}, fired {self.fired}/{self.runs}): {self.text}"


def _counts(prompts: Iterable[Prompt]) -> tuple[int, int, int]:
    """(true positives, false positives, false negatives) over every trial."""
    tp = fp = fn = 0
    for p in prompts:
        if p.should:
            tp, fn = tp + p.fired, fn + p.runs - p.fired
        else:
            fp += p.fired
    return tp, fp, fn


def _rate(hits: int, total: int) -> float:
    return hits / total if total else math.nan


def precision_recall(prompts: Sequence[Prompt]) -> tuple[float, float]:
    """Precision and recall over every trial of `prompts` (NaN where undefined)."""
    tp, fp, fn = _counts(prompts)
    return _rate(tp, tp + fp), _rate(tp, tp + fn)


@dataclass(frozen=True)
class Paired:
    """An arm's change from the reference arm in precision and recall over the prompts both
    ran, with the paired bootstrap's interval (prompts resampled with both arms' trials)."""

    prompts: int
    precision: stats.Interval | float | None
    recall: stats.Interval | float | None


@dataclass(frozen=True)
class Component:
    """One trigger spec (one arm of it): its prompts' trials and its gates."""

    key: str  # file::name, or file::name[arm]
    label: str  # ``skill changelog``
    prompts: tuple[Prompt, ...]
    not_trials: int  # runs that are no trial: cached, or broken before the check
    min_precision: float | None = None
    min_recall: float | None = None
    arm: str | None = None
    reference: bool = False
    paired: Paired | None = None

    @property
    def trials(self) -> int:
        return sum(p.runs for p in self.prompts)

    @property
    def counts(self) -> tuple[int, int, int]:
        return _counts(self.prompts)

    def precision(self) -> stats.Interval | None:
        """Of the trials that fired it, the share that should have (None: none fired)."""
        tp, fp, _ = self.counts
        return stats.wilson(tp, tp + fp) if tp + fp else None

    def recall(self) -> stats.Interval | None:
        """Of the trials that should have fired it, the share that did."""
        tp, _, fn = self.counts
        return stats.wilson(tp, tp + fn) if tp + fn else None

    @property
    def gated(self) -> bool:
        return self.min_precision is not None or self.min_recall is not None

    def failures(self) -> list[str]:
        """Each gate it does not meet, worded: an unmeasured figure meets no minimum."""
        found = []
        for name, figure, minimum in (
            ("precision", self.precision(), self.min_precision),
            ("recall", self.recall(), self.min_recall),
        ):
            if minimum is not None and (figure is None or figure.estimate < minimum):
                found.append(f"min_{name} {minimum:g}")
        return found

    @property
    def met(self) -> bool:
        return not self.failures()

    def misfired(self) -> list[Prompt]:
        return [p for p in self.prompts if p.misfired]

    def figures_text(self) -> str:
        """``skill x over 20 prompts, 20 trials: precision 0.90 [...] (9 of 10 fired), ...``."""
        tp, fp, fn = self.counts
        precision, recall = self.precision(), self.recall()
        text = (
            f"{self.label} over {len(self.prompts)} prompts, {self.trials} trials: "
            f"precision {precision.show() if precision else '- (nothing fired)'} "
            f"({tp} of {tp + fp} firings should have), "
            f"recall {recall.show() if recall else '-'} ({tp} of {tp + fn} should-fire trials)"
        )
        if self.gated:
            shown = [
                f"min_{n} {v:g}"
                for n, v in (("precision", self.min_precision), ("recall", self.min_recall))
                if v is not None
            ]
            below = self.failures()
            text += f"; BELOW {', '.join(below)}" if below else f"; ok, {', '.join(shown)}"
        if self.not_trials:
            text += f"; {self.not_trials} runs not counted (cached, or no check ran)"
        return text

    def paired_text(self) -> str | None:
        if self.paired is None:
            return None
        return (
            f"vs reference over {self.paired.prompts} prompts: precision "
            f"{_show(self.paired.precision)}, recall {_show(self.paired.recall)}"
        )

    def to_dict(self) -> dict[str, Any]:
        tp, fp, fn = self.counts
        precision, recall = self.precision(), self.recall()
        paired = self.paired
        return {
            "component": self.key,
            "measures": self.label,
            "arm": self.arm,
            "reference": self.reference,
            "prompts": len(self.prompts),
            "trials": self.trials,
            "not_counted": self.not_trials,
            "true_positives": tp,
            "false_positives": fp,
            "false_negatives": fn,
            "precision": precision.to_dict() if precision else None,
            "recall": recall.to_dict() if recall else None,
            "min_precision": self.min_precision,
            "min_recall": self.min_recall,
            "met": self.met,
            "misfired": [
                {"id": p.id, "prompt": p.text, "should": p.should, "fired": p.fired, "runs": p.runs}
                for p in self.misfired()
            ],
            "vs_reference": None
            if paired is None
            else {
                "prompts": paired.prompts,
                "precision": stats.plain(paired.precision),
                "recall": stats.plain(paired.recall),
            },
        }


def _show(value: stats.Interval | float | None) -> str:
    if value is None:
        return "-"
    method = f" ({value.method})" if isinstance(value, stats.Interval) else ""
    return stats.signed(value) + method


def _number(value: Any) -> float | None:
    try:
        return None if value in (None, "") else float(value)
    except (TypeError, ValueError):
        return None


def components(rows: Iterable[SummaryRow]) -> list[Component]:
    """Each trigger spec's (each arm's) figures, in the rows' order, arms paired by prompt."""
    grouped: dict[str, list[SummaryRow]] = {}
    for row in rows:
        if row.properties.get("atom_trigger"):
            grouped.setdefault(pooled_key(row.nodeid, row.properties), []).append(row)
    found = [_component(key, runs) for key, runs in grouped.items()]
    references = {c.key.removesuffix(f"[{c.arm}]"): c for c in found if c.arm and c.reference}
    out = []
    for c in found:
        ref = references.get(c.key.removesuffix(f"[{c.arm}]")) if c.arm else None
        if ref is not None and ref is not c:
            c = replace(c, paired=paired(ref.prompts, c.prompts))
        out.append(c)
    return out


def _component(key: str, runs: Sequence[SummaryRow]) -> Component:
    first = runs[0].properties
    labelled: dict[str, tuple[str, bool]] = {}  # each prompt's id: its text and label
    fired: Counter[str] = Counter()
    tried: Counter[str] = Counter()
    for row in runs:
        props = row.properties
        seen = props.get("atom_trigger_fired")
        if row.cached or seen not in ("yes", "no"):
            continue
        case = str(props.get("atom_case"))
        should = props.get("atom_trigger_should") == "yes"
        labelled.setdefault(case, (str(props.get("atom_trigger_prompt", "")), should))
        fired[case] += seen == "yes"
        tried[case] += 1
    return Component(
        key,
        str(first["atom_trigger"]),
        tuple(
            Prompt(c, text, should, fired[c], tried[c]) for c, (text, should) in labelled.items()
        ),
        len(runs) - tried.total(),
        _number(first.get("atom_trigger_min_precision")),
        _number(first.get("atom_trigger_min_recall")),
        arm=first.get("atom_arm") or None,
        reference=bool(first.get("atom_arm_reference")),
    )


def paired(reference: Sequence[Prompt], arm: Sequence[Prompt]) -> Paired | None:
    """`arm`'s change from `reference` over the prompts both ran (bootstrap from two prompts on)."""
    theirs = {p.id: p for p in arm}
    pairs = [(p, theirs[p.id]) for p in reference if p.id in theirs]
    if not pairs:
        return None

    def change(which: int) -> float | stats.Interval | None:
        def statistic(sample: Sequence[tuple[Prompt, Prompt]]) -> float:
            before = precision_recall([a for a, _ in sample])[which]
            after = precision_recall([b for _, b in sample])[which]
            return after - before

        estimate = statistic(pairs)
        if math.isnan(estimate):
            return None
        if len(pairs) < 2:
            return estimate
        low, high = stats.bootstrap(pairs, statistic)
        return stats.Interval(
            estimate, low, high, f"paired bootstrap by prompt (seed {stats.BOOTSTRAP_SEED})"
        )

    return Paired(len(pairs), change(0), change(1))


def trigger_lines(rows: Iterable[SummaryRow]) -> list[str]:
    """The summary's trigger suites: figures, misfired prompts, an arm's change."""
    found = components(rows)
    if not found:
        return []
    lines = [
        "triggers (95 % Wilson intervals over every trial, repeats included; an arm vs the "
        "reference arm paired by prompt):"
    ]
    for c in found:
        lines.append(f"{c.key}: {c.figures_text()}")
        lines += [f"    misfired: {p.line()}" for p in c.misfired()]
        if (moved := c.paired_text()) is not None:
            lines.append(f"    {moved}")
    return lines


def junit_properties(rows: Iterable[SummaryRow]) -> list[tuple[str, str]]:
    """The trigger lines as JUnit test-suite properties (``atom_triggers <component>``, ...)."""
    props = []
    for c in components(rows):
        text = c.figures_text()
        if (moved := c.paired_text()) is not None:
            text += f"; {moved}"
        props.append((f"atom_triggers {c.key}", text))
        if misfired := c.misfired():
            props.append(
                (f"atom_triggers_misfired {c.key}", " | ".join(p.line() for p in misfired))
            )
    return props


def unmet(rows: Sequence[SummaryRow]) -> tuple[list[Component], set[str]]:
    """The gated components below a minimum, and the spec keys (prompt and arm, no repeat)
    every gated component holds: the gate, not each run, decides those runs."""
    gated = [c for c in components(rows) if c.gated]
    keys = {c.key for c in gated}
    held = {
        spec_key(row.nodeid)
        for row in rows
        if row.properties.get("atom_trigger") and pooled_key(row.nodeid, row.properties) in keys
    }
    return [c for c in gated if not c.met], held


def measured(rows: Iterable[SummaryRow]) -> list[dict[str, Any]]:
    """Each component as plain data: the ``triggers`` part of measured.json."""
    return [c.to_dict() for c in components(rows)]
