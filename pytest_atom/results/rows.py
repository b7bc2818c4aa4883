"""One spec run as the summary, the results file and baselines see it: a `SummaryRow`,
read once from the run's JUnit properties (what crosses xdist's process border) into
typed fields, so no report spells a property name to get a figure.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pytest_atom.cost.usage import ROLES
from pytest_atom.results.outcome import Outcome

_REPEAT = re.compile(r"\[r\d+\]$")


def spec_key(nodeid: str) -> str:
    """A spec's key across its repeats: its node id without the ``[rN]`` a repeat adds."""
    return _REPEAT.sub("", nodeid)


def pooled_key(nodeid: str, props: Mapping[str, Any]) -> str:
    """A case's run's key with its case taken out, its arm kept: ``file::name`` or
    ``file::name[arm]``, what statistics pool a spec's cases (a trigger suite's prompts) by."""
    key, arm = spec_key(nodeid), props.get("atom_arm")
    if arm:
        key = key.removesuffix(f"[{arm}]")
    key = key.removesuffix(f"[{props.get('atom_case')}]")
    return f"{key}[{arm}]" if arm else key


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _whole(value: Any) -> int | None:
    number = _number(value)
    return None if number is None else int(number)


def _count(value: Any) -> int | None:
    """A count of runs: a whole number, or its text (a JUnit XML file's attribute)."""
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return _whole(value)


@dataclass(frozen=True)
class RoleFigures:
    tokens: int
    cost_usd: float


def _list_price(props: Mapping[str, Any], roles: Mapping[str, RoleFigures]) -> float:
    """``atom_list_price_usd``; in a file written before it, the roles' dollars added up."""
    given = _number(props.get("atom_list_price_usd"))
    return given if given is not None else round(sum(r.cost_usd for r in roles.values()), 6)


@dataclass(frozen=True)
class SummaryRow:
    """One spec run: its node id, its outcome and the figures the reports show."""

    nodeid: str
    outcome: Outcome
    properties: Mapping[str, Any] = field(default_factory=dict, repr=False)
    score: float | None = None
    attempts: int | None = None
    iterations: int | None = None
    #: Every session's (the roles' sum): the spec's one figure in every report.
    tokens: int | None = None
    roles: Mapping[str, RoleFigures] = field(default_factory=dict)
    cost_usd: float = 0.0
    recorded_cost_usd: float = 0.0
    #: Claude Code's price of every session, paid or not (`cost.usage.Dollars`).
    list_price_usd: float = 0.0
    duration_s: float = 0.0
    source: str | None = None
    drift: str | None = None
    warnings: str | None = None
    limit_exceeded: str | None = None
    sandboxed: bool = True
    plan: str | None = None
    baseline: str | None = None  # the comparison's status, with --atom-baseline
    #: How many runs its spec has and the spec's own `pass_at_least:`; None: not recorded.
    repeats: int | None = None
    pass_at_least: int | None = None
    #: --atom-cache: the stored run whose outcome stood in for this one (nothing ran).
    cached: str | None = None

    @classmethod
    def of(
        cls, nodeid: str, props: Mapping[str, Any], outcome: Outcome | None = None
    ) -> SummaryRow:
        """The row of a run's properties; `outcome` defaults to the one they carry."""
        if outcome is None:
            outcome = Outcome.from_properties(props)
        if outcome is None:
            raise ValueError(f"{nodeid}: its properties carry no atom_outcome")
        tokens = props.get("atom_agent_tokens", props.get("atom_tokens"))
        roles = {
            role: RoleFigures(
                int(props.get(f"atom_{role}_tokens") or 0),
                float(props.get(f"atom_{role}_cost_usd") or 0),
            )
            for role in ROLES
            if f"atom_{role}_tokens" in props
        }
        return cls(
            nodeid,
            outcome,
            dict(props),
            score=_number(props.get("atom_score")),
            attempts=_whole(props.get("atom_attempts")),
            iterations=_whole(props.get("atom_iterations")),
            tokens=_whole(props.get("atom_tokens", tokens)),
            roles=roles,
            cost_usd=_number(props.get("atom_cost_usd")) or 0.0,
            recorded_cost_usd=_number(props.get("atom_recorded_cost_usd")) or 0.0,
            list_price_usd=_list_price(props, roles),
            duration_s=_number(props.get("atom_duration_s")) or 0.0,
            source=props.get("atom_source"),
            drift=props.get("atom_drift") or None,
            warnings=props.get("atom_warnings") or None,
            limit_exceeded=props.get("atom_limit_exceeded") or None,
            sandboxed=props.get("atom_sandbox") != "off",
            plan=props.get("atom_plan") or None,
            baseline=props.get("atom_baseline") or None,
            repeats=_count(props.get("atom_repeats")),
            pass_at_least=_count(props.get("atom_pass_at_least")),
            cached=props.get("atom_cached") or None,
        )

    @property
    def label(self) -> str:
        return self.outcome.label

    def notes(self) -> list[tuple[str, str]]:
        """(label, text) of what the summary says under the table about this run."""
        found = [("drift", self.drift), ("warning", self.warnings)]
        found.append(("limit_exceeded", self.limit_exceeded))
        found.append(("billing", self.properties.get("atom_billing_note")))
        return [(label, text) for label, text in found if text]
