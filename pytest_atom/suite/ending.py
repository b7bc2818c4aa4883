"""How a suite run ends: the one decision of its exit status.

Every suite ends here: `pytest --atom` (`pytest_atom.pytest.session`, which `atom run` launches)
and `atom results combine`. Each gives what its own machinery already decided (`Ending.base`:
pytest's session status, the worst run's `Outcome.exit_status` for the commands) and what
the suite saw; `decide` applies the gates in one order:

1. the spending limit stopped the run: 2, whatever else (as `claude plugin eval
   --max-cost-usd`);
2. the machinery failed (a harness error, a replay or an upstream that never answered): 2,
   so CI tells a broken set-up from a failing spec;
3. a baseline regression: 1, even if every run passed;
4. a trigger suite below its `min_precision` or `min_recall`: 1; the runs of a trigger suite
   with either gate are then decided by it, not one by one (`pytest_atom.baseline.triggers`);
5. where a threshold applies (a spec's own `pass_at_least:`, ``--atom-pass-at-least``,
   ``--atom-min-pass-rate``: `pytest_atom.results.thresholds`), the spec's passes over its
   repeats decide, not single failed runs: a spec below its threshold fails the suite, and
   one meeting it passes though some of its repeats failed (a failure outside the spec
   runs, or of a spec no threshold covers, still fails the suite);
6. else pytest's own status (or the worst shard's, for `atom results combine`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pytest_atom.baseline.triggers import unmet
from pytest_atom.cost.spend import EXIT_SPENDING_LIMIT
from pytest_atom.results.rows import SummaryRow
from pytest_atom.results.thresholds import RepeatGates, tallies

EXIT_OK = 0
#: A spec failed, regressed against the baseline or fell below its threshold.
EXIT_FAILED = 1
#: The machinery failed: a harness error, a replay that diverged, an upstream that failed.
EXIT_MACHINERY = 2
#: Ctrl-C under `atom run`, as a shell reports SIGINT: never 1, which means a spec failed.
EXIT_INTERRUPTED = 130


@dataclass(frozen=True)
class Ending:
    """What a suite's exit status is decided from (`decide`)."""

    #: The caller's own status before the gates (pytest's, or the worst run's).
    base: int
    #: Every spec run, as the summary shows them.
    rows: Sequence[SummaryRow] = ()
    min_pass_rate: float | None = None
    #: The run's count of repeats that must pass (``--atom-pass-at-least``).
    pass_at_least: int | None = None
    regressed: bool = False
    spending_limit: bool = False
    machinery_failed: bool = False
    #: Failed reports that are not spec runs: a pass-rate gate never gates them away.
    other_failures: int = 0


def decide(end: Ending) -> int:
    """The suite's exit status (the order is the module's docstring's)."""
    if end.spending_limit:
        return EXIT_SPENDING_LIMIT
    if end.machinery_failed:
        return EXIT_MACHINERY
    if end.regressed:
        return EXIT_FAILED  # a regression, even if all passed
    below, held = unmet(end.rows)
    if below:
        return EXIT_FAILED
    gates = RepeatGates(end.pass_at_least, end.min_pass_rate)
    specs = tallies(end.rows)
    gated = [spec for spec in specs if spec.spec in held or spec.gated(gates)]
    if not gated:
        return end.base
    if any(not spec.met(gates) for spec in gated if spec.spec not in held):
        return EXIT_FAILED
    ungated_failed = any(spec.failed for spec in specs if spec not in gated)
    if end.base == EXIT_FAILED and not end.other_failures and not ungated_failed:
        return EXIT_OK  # the thresholds, not a single failed repeat
    return end.base


def worst(rows: Sequence[SummaryRow]) -> int:
    """The worst run's `Outcome.exit_status` (0 without runs)."""
    return max((row.outcome.exit_status for row in rows), default=EXIT_OK)
