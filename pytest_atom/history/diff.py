"""Two runs compared, item by item: what `atom diff` and the HTML report's comparison show.

Pure over the store's records. Items are matched by their line through the runs, (spec,
case, arm); an item's repeats are taken together.

- A line with one item a side changed when its outcome did: the change names the checks
  and criteria whose results moved, the first call where the tool-call sequences part, and
  the token and cost deltas by role.
- A line with repeats is a sample on each side, so raw counts are not a change: it is
  compared with the baseline gate's paired test (`baseline.gate`), once for a drop and
  once, sides swapped, for a rise; a moved pass rate the test calls neither is listed as
  within noise. Its checks are compared as pass counts, its tool calls by each side's
  commonest sequence, its deltas per repeat.
- A line in one run only is added or removed.
- A setting that can change an outcome, or the Claude Code version, that differs between
  the runs is named, so a regression a setting caused says so.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from pytest_atom.baseline.gate import gate
from pytest_atom.history.records import (
    ItemRecord,
    RunRecord,
    SeriesKey,
    series_dict,
    series_label,
)
from pytest_atom.replay.scrub import Scrubber
from pytest_atom.reports.markdown import (
    COMMENT_LIMIT,
    Cut,
    block,
    code,
    fitted,
    table,
    table_row,
)
from pytest_atom.words import Scrubbed

#: Each way a line can change, in the order a comment lists them: what needs a look first.
_SHOWN = REGRESSED, IMPROVED, CHANGED, ADDED, REMOVED, NOISE = (
    "regressed",
    "improved",
    "changed",
    "added",
    "removed",
    "within noise",
)


@dataclass(frozen=True)
class CheckChange:
    """A check or criterion whose result moved, as shown (``met 0.67``, ``3/5``); None: absent."""

    kind: str  # "check" or "criterion"
    name: str
    before: str | None
    after: str | None
    detail: str = ""  # the later run's detail or reasons, when it has one

    def line(self) -> str:
        detail = f": {self.detail}" if self.detail else ""
        return f"{self.kind} {self.name}: {self.before or '(absent)'} -> {self.after or '(absent)'}{detail}"


@dataclass(frozen=True)
class ToolDivergence:
    """Where two tool-call sequences part (0-based `index`); None: that side had ended."""

    index: int
    before: str | None
    after: str | None
    before_calls: int
    after_calls: int

    def line(self) -> str:
        return (
            f"tool calls part at call {self.index + 1}: {self.before or '(ended)'} -> "
            f"{self.after or '(ended)'} ({self.before_calls} calls -> {self.after_calls})"
        )


def first_divergence(before: Sequence[str], after: Sequence[str]) -> ToolDivergence | None:
    """Where `after`'s tool calls first differ from `before`'s; None when they are equal."""
    if tuple(before) == tuple(after):
        return None
    index = next(
        (i for i, (b, a) in enumerate(zip(before, after, strict=False)) if b != a),
        min(len(before), len(after)),
    )
    return ToolDivergence(
        index,
        before[index] if index < len(before) else None,
        after[index] if index < len(after) else None,
        len(before),
        len(after),
    )


@dataclass(frozen=True)
class Deltas:
    """Tokens and cost, after minus before, in total and by role."""

    tokens: int = 0
    cost_usd: float = 0.0
    tokens_by_role: Mapping[str, int] = field(default_factory=dict)
    cost_by_role: Mapping[str, float] = field(default_factory=dict)

    @classmethod
    def between(
        cls, before: Sequence[ItemRecord], after: Sequence[ItemRecord], *, mean: bool = False
    ) -> Deltas:
        """`after`'s sums minus `before`'s (`mean`: per item, for repeats)."""

        def sums(items: Sequence[ItemRecord], attr: str) -> dict[str, float]:
            total: dict[str, float] = defaultdict(float)
            for item in items:
                for role, value in getattr(item, attr).items():
                    total[role] += value
            per = len(items) if mean and items else 1
            return {role: value / per for role, value in total.items()}

        tokens_a, tokens_b = sums(before, "tokens"), sums(after, "tokens")
        cost_a, cost_b = sums(before, "cost_usd"), sums(after, "cost_usd")
        roles = sorted({*tokens_a, *tokens_b})
        by_role = {r: round(tokens_b.get(r, 0) - tokens_a.get(r, 0)) for r in roles}
        cost_roles = sorted({*cost_a, *cost_b})
        cost_by = {r: round(cost_b.get(r, 0.0) - cost_a.get(r, 0.0), 6) for r in cost_roles}
        return cls(
            sum(by_role.values()),
            round(sum(cost_by.values()), 6),
            {r: v for r, v in by_role.items() if v},
            {r: v for r, v in cost_by.items() if v},
        )

    def line(self) -> str:
        roles = ", ".join(f"{role} {value:+d}" for role, value in self.tokens_by_role.items())
        return (
            f"tokens {self.tokens:+d}"
            + (f" ({roles})" if roles else "")
            + (f", cost {self.cost_usd:+.4f} $")
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "tokens": self.tokens,
            "cost_usd": self.cost_usd,
            "tokens_by_role": dict(self.tokens_by_role),
            "cost_usd_by_role": dict(self.cost_by_role),
        }


@dataclass(frozen=True)
class ItemChange:
    """One line of items (spec, case, arm) compared across the two runs."""

    key: SeriesKey
    direction: str  # regressed, improved, changed, added, removed, within noise
    before: str  # the outcome, or ``3/5 passed`` with repeats; "" when absent
    after: str
    checks: tuple[CheckChange, ...] = ()
    tools: ToolDivergence | None = None
    deltas: Deltas = field(default_factory=Deltas)
    #: With repeats: the paired test's figures (`baseline.gate.SpecGate.to_dict`).
    test: Mapping[str, Any] | None = None

    @property
    def label(self) -> str:
        return series_label(self.key)

    def lines(self) -> list[str]:
        """The change as the terminal shows it: a head line, then one line per finding."""
        head = f"{self.direction.upper()} {self.label}: {self.before or '(absent)'} -> {self.after or '(absent)'}"
        out = [head]
        if self.test is not None:
            rate, p = _tested(self.test)
            out.append(f"  pass rate change {rate} (Newcombe 95 %); {self.test['test']}: {p}")
        out += ["  " + c.line() for c in self.checks]
        out += ["  " + self.tools.line()] if self.tools is not None else []
        if self.direction not in (ADDED, REMOVED):
            out.append("  " + self.deltas.line())
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "item": self.label,
            **series_dict(self.key),
            "direction": self.direction,
            "before": self.before,
            "after": self.after,
            "checks": [asdict(c) for c in self.checks],
            "tool_calls": asdict(self.tools) if self.tools is not None else None,
            "deltas": self.deltas.to_dict(),
            "test": dict(self.test) if self.test is not None else None,
        }


@dataclass(frozen=True)
class SettingChange:
    """A setting (or the Claude Code version) that differs between the runs, as JSON values."""

    name: str
    before: Any
    after: Any

    def line(self) -> str:
        return f"setting {self.name}: {_value(self.before)} -> {_value(self.after)}"

    def to_dict(self) -> dict[str, Any]:
        return {"setting": self.name, "before": self.before, "after": self.after}


def _value(value: Any) -> str:
    return "(unset)" if value is None else json.dumps(value, sort_keys=True)


#: What `atom history import` adds to a run's settings: where it came from, not how it ran.
_PROVENANCE = frozenset({"imported_from", "files"})


def setting_changes(before: RunRecord, after: RunRecord) -> tuple[SettingChange, ...]:
    """The settings that differ between the runs, then the Claude Code version if it changed."""
    names = [n for n in dict.fromkeys([*after.settings, *before.settings]) if n not in _PROVENANCE]
    found = [
        SettingChange(name, before.settings.get(name), after.settings.get(name))
        for name in names
        if before.settings.get(name) != after.settings.get(name)
    ]
    if before.claude_version != after.claude_version:
        found.append(SettingChange("claude_version", before.claude_version, after.claude_version))
    return tuple(found)


@dataclass(frozen=True)
class RunDiff:
    """`after` compared with `before`: the changed lines, those within noise, how many stayed."""

    before: RunRecord
    after: RunRecord
    changes: tuple[ItemChange, ...]
    noise: tuple[ItemChange, ...]
    unchanged: int
    deltas: Deltas
    #: The paired test over every repeated line together (`baseline.gate.TotalGate`).
    total_test: Mapping[str, Any] | None = None
    #: The settings (and Claude Code version) that differ between the two runs.
    settings: tuple[SettingChange, ...] = ()
    #: How the earlier run was chosen, when it was not named (`history.query.like_run`).
    paired: str = ""

    def lines(self) -> list[str]:
        head = (
            f"{_run_line(self.before)} -> {_run_line(self.after)}: {len(self.changes)} changed, "
            f"{len(self.noise)} within noise, {self.unchanged} unchanged"
        )
        out = [head] + ([self.paired] if self.paired else [])
        out += [change.line() for change in self.settings]
        for change in (*self.changes, *self.noise):
            out += change.lines()
        return out + self._totals()

    def _totals(self) -> list[str]:
        """The paired test over every repeated line, and the deltas over the items."""
        out = []
        if self.total_test is not None:
            test = self.total_test
            out.append(
                f"repeated items together: {test['answer']} ({test['test']}: p = "
                f"{test['p_value']:.3g}, adjusted {test['adjusted_p_value']:.3g})"
            )
        return [*out, "total over the items in both runs: " + self.deltas.line()]

    def markdown(self, limit: int = COMMENT_LIMIT) -> str:
        """The comparison as a pull request's comment (GitHub Markdown, at most `limit` bytes)."""
        scrub = Scrubber().scrub
        counts = Counter(c.direction for c in (*self.changes, *self.noise))
        said = ", ".join(f"{counts[d]} {d}" for d in _SHOWN if counts[d])
        head = [
            "### pytest-atom: this change against its base",
            "",
            f"{_run_cell(self.before)} → {_run_cell(self.after)}: "
            + (f"**{said}**, " if said else "")
            + f"{self.unchanged} unchanged",
            "",
        ]
        notes = [self.paired] * bool(self.paired) + [c.line() for c in self.settings]
        notes += self._totals()
        ordered = sorted((*self.changes, *self.noise), key=lambda c: _SHOWN.index(c.direction))
        header = ["item", "change", "before", "after", "the gate's verdict", "tokens", "cost $"]
        details = [scrub(line) for c in ordered for line in c.lines()]
        fence, *lines, end = block(details)
        items = len(ordered)
        parts: list[Sequence[str] | Cut] = [
            head,
            block([scrub(note) for note in notes]),
            [""],
        ]
        if ordered:
            parts += [
                table(header, [], right=(5, 6)),
                Cut([_change_row(c, scrub) for c in ordered], lambda n: _more(n, items)),
                ["", "What changed in each item:", "", fence],
                Cut(lines, lambda n: f"… and {n} more lines", after=[end]),
            ]
        return fitted(parts, limit)

    def to_dict(self) -> dict[str, Any]:
        return {
            "before": _run_dict(self.before),
            "after": _run_dict(self.after),
            "changed": [c.to_dict() for c in self.changes],
            "within_noise": [c.to_dict() for c in self.noise],
            "unchanged": self.unchanged,
            "deltas": self.deltas.to_dict(),
            "total_test": dict(self.total_test) if self.total_test is not None else None,
            "settings_changed": [c.to_dict() for c in self.settings],
            "paired": self.paired or None,
        }


def _run_cell(run: RunRecord) -> str:
    return f"{code(Scrubbed(run.id))} ({run.kind}, {run.started:%Y-%m-%d %H:%M})"


def _more(left: int, items: int) -> str:
    return f"\n… and {left} more item{'s' * (left != 1)} of {items}"


def _verdict(change: ItemChange) -> str:
    """The paired test's verdict for repeats; for one run a side, what the outcomes say."""
    if change.test is None:
        return {
            REGRESSED: "regressed: it passed before",
            IMPROVED: "improved: it failed before",
            CHANGED: "changed: it passed neither time",
            ADDED: "new in this run",
            REMOVED: "not in this run",
        }.get(change.direction, change.direction)
    rate, p = _tested(change.test)
    return f"{change.direction}: pass rate {rate}, {p}"


def _tested(test: Mapping[str, Any]) -> tuple[str, str]:
    """A paired test's change of pass rate with its interval, and its p-values."""
    change = test["change"]
    return (
        f"{change['estimate']:+.2f} [{change['low']:+.2f}, {change['high']:+.2f}]",
        f"p = {test['p_value']:.3g} (adjusted {test['adjusted_p_value']:.3g})",
    )


def _change_row(change: ItemChange, scrub: Callable[[str], Scrubbed]) -> str:
    moved = change.direction not in (ADDED, REMOVED)
    cells = [
        code(scrub(change.label)),
        f"**{change.direction}**" if change.direction == REGRESSED else change.direction,
        code(scrub(change.before)),
        code(scrub(change.after)),
        _verdict(change),
        f"{change.deltas.tokens:+,}" if moved else "",
        f"{change.deltas.cost_usd:+.4f}" if moved else "",
    ]
    return table_row(cells)


def _run_line(run: RunRecord) -> str:
    return f"{run.id} ({run.kind}, {run.started:%Y-%m-%d %H:%M})"


def _run_dict(run: RunRecord) -> dict[str, Any]:
    return {
        "id": run.id,
        "started": run.started.isoformat(),
        "kind": run.kind,
        "rescore_of": run.rescore_of,
        "commit": run.commit,
        "dirty": run.dirty,
    }


def _lines(items: Sequence[ItemRecord]) -> dict[SeriesKey, list[ItemRecord]]:
    lines: dict[SeriesKey, list[ItemRecord]] = defaultdict(list)
    for item in items:
        lines[item.series].append(item)
    return lines


def _repeated(before: Sequence[ItemRecord], after: Sequence[ItemRecord]) -> bool:
    return len(before) > 1 or len(after) > 1


def diff_runs(
    before: RunRecord,
    before_items: Sequence[ItemRecord],
    after: RunRecord,
    after_items: Sequence[ItemRecord],
) -> RunDiff:
    """`after` compared with `before` (the module's docstring says how)."""
    old, new = _lines(before_items), _lines(after_items)
    keys = list(dict.fromkeys([*new, *old]))
    sampled = [k for k in keys if k in old and k in new and _repeated(old[k], new[k])]
    tests, total = _paired_tests({k: (old[k], new[k]) for k in sampled})
    changes: list[ItemChange] = []
    noise: list[ItemChange] = []
    unchanged = 0
    for key in keys:
        if key not in old:
            changes.append(ItemChange(key, ADDED, "", _said(new[key])))
        elif key not in new:
            changes.append(ItemChange(key, REMOVED, _said(old[key]), ""))
        else:
            change = _compare(key, old[key], new[key], tests.get(key))
            if change is None:
                unchanged += 1
            else:
                (noise if change.direction == NOISE else changes).append(change)
    return RunDiff(
        before,
        after,
        tuple(changes),
        tuple(noise),
        unchanged,
        Deltas.between(
            [i for i in before_items if i.series in new],
            [i for i in after_items if i.series in old],
        ),
        total,
        setting_changes(before, after),
    )


def _said(items: Sequence[ItemRecord]) -> str:
    if len(items) == 1:
        return items[0].outcome
    return f"{sum(i.passed for i in items)}/{len(items)} passed"


def _compare(
    key: SeriesKey,
    old: Sequence[ItemRecord],
    new: Sequence[ItemRecord],
    test: tuple[str, Mapping[str, Any]] | None,
) -> ItemChange | None:
    if test is None:  # one item a side
        a, b = old[0], new[0]
        if a.outcome == b.outcome:
            return None
        direction = REGRESSED if a.passed and not b.passed else CHANGED
        direction = IMPROVED if b.passed and not a.passed else direction
        tools = first_divergence(a.tool_calls, b.tool_calls)
        return ItemChange(
            key,
            direction,
            a.outcome,
            b.outcome,
            _check_changes([a], [b]),
            tools,
            Deltas.between(old, new),
        )
    direction, figures = test
    if direction == "" and _rate(old) == _rate(new):
        return None
    tools = first_divergence(_commonest(old), _commonest(new))
    return ItemChange(
        key,
        direction or NOISE,
        _said(old),
        _said(new),
        _check_changes(old, new),
        tools,
        Deltas.between(old, new, mean=True),
        figures,
    )


def _rate(items: Sequence[ItemRecord]) -> float:
    return sum(i.passed for i in items) / len(items)


def _commonest(items: Sequence[ItemRecord]) -> tuple[str, ...]:
    return Counter(i.tool_calls for i in items).most_common(1)[0][0]


def _check_changes(old: Sequence[ItemRecord], new: Sequence[ItemRecord]) -> tuple[CheckChange, ...]:
    """The checks and criteria whose results moved (pass counts for repeats)."""
    single = len(old) == 1 and len(new) == 1
    found = []
    for kind in ("check", "criterion"):
        names = list(dict.fromkeys(n for item in (*old, *new) for n in _results(item, kind)))
        for name in names:
            before, after = _shown(old, kind, name, single), _shown(new, kind, name, single)
            if before != after:
                found.append(
                    CheckChange(kind, name, before, after, _failing_detail(new, kind, name))
                )
    return tuple(found)


def _failing_detail(items: Sequence[ItemRecord], kind: str, name: str) -> str:
    """The later run's detail (or reasons) of its last item where `name` failed."""
    for item in reversed(items):
        passed, detail, _ = _results(item, kind).get(name, (True, "", 0.0))
        if not passed:
            return detail
    return ""


def _results(item: ItemRecord, kind: str) -> dict[str, tuple[bool, str, float]]:
    """name -> (passed, detail, score) of an item's checks or criteria."""
    if kind == "check":
        return {c.name: (c.passed, c.detail, float(c.passed)) for c in item.checks}
    return {c.text: (c.passed, c.reasons, c.score) for c in item.criteria}


def _shown(items: Sequence[ItemRecord], kind: str, name: str, single: bool) -> str | None:
    found = [_results(i, kind)[name] for i in items if name in _results(i, kind)]
    if not found:
        return None
    if single:
        passed, _, score = found[0]
        if kind == "check":
            return "passed" if passed else "failed"
        return f"{'met' if passed else 'unmet'} {score:.2f}"
    return f"{sum(f[0] for f in found)}/{len(found)}"


Tested = dict[SeriesKey, tuple[str, Mapping[str, Any]]]


def _paired_tests(
    lines: Mapping[SeriesKey, tuple[Sequence[ItemRecord], Sequence[ItemRecord]]],
) -> tuple[Tested, Mapping[str, Any] | None]:
    """Per repeated line: (direction, or "" for neither; the figures); and the total's figures."""
    if not lines:
        return {}, None
    counts = {
        series_label(k): ((sum(i.passed for i in a), len(a)), (sum(i.passed for i in b), len(b)))
        for k, (a, b) in lines.items()
    }
    drop = gate(counts)
    rise = gate({k: (after, before) for k, (before, after) in counts.items()})
    by_label = {series_label(k): k for k in lines}
    found: Tested = {}
    for fell, rose in zip(drop.specs, rise.specs, strict=True):
        direction = REGRESSED if fell.answer == "REGRESSION" else ""
        direction = IMPROVED if rose.answer == "REGRESSION" else direction
        (c1, n1), (c2, n2) = counts[fell.spec]
        rising = direction == IMPROVED or (not direction and c2 / n2 > c1 / n1)
        figures = (rose if rising else fell).to_dict()
        if rising:  # the swapped test's change, turned back to after - before
            change = dict(figures["change"])
            change["estimate"], change["low"], change["high"] = (
                -change["estimate"],
                -change["high"],
                -change["low"],
            )
            figures = {
                **figures,
                "change": change,
                "before": list(counts[fell.spec][0]),
                "after": list(counts[fell.spec][1]),
                "test": "Fisher's exact test, one-sided (rise)",
            }
        found[by_label[fell.spec]] = (direction, figures)
    total: dict[str, Any] | None = None
    if drop.total is not None and rise.total is not None:
        total = drop.total.to_dict()
        if rise.total.answer == "REGRESSION":
            total = {**rise.total.to_dict(), "answer": "IMPROVEMENT"}
    return found, total
