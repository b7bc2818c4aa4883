"""A trigger suite's figures, read from its runs' rows (`pytest_atom.baseline.triggers`):
precision and recall with Wilson intervals over every trial, the prompts that misfired, an
arm's change paired by prompt, and the gate on min_precision and min_recall that decides
the exit status (`pytest_atom.suite.ending.decide`)."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_atom.baseline import triggers
from pytest_atom.baseline.measure import measured
from pytest_atom.results.rows import SummaryRow
from pytest_atom.suite.ending import EXIT_FAILED, EXIT_OK, Ending, decide
from tests.helpers import summary_row

SPEC = "t.atom.yaml::notes"


def trial(
    case: str, should: bool, fired: bool | None, *, repeat: int | None = None, **more: Any
) -> SummaryRow:
    """One run of prompt `case`: it passed when it fired as its label says (None: no check
    ran, so it errored)."""
    props: dict[str, Any] = {
        "atom_case": case,
        "atom_trigger": "skill notes",
        "atom_trigger_should": "yes" if should else "no",
        "atom_trigger_prompt": f"the {case} prompt",
        **{f"atom_{k}": v for k, v in more.items()},
    }
    if fired is not None:
        props["atom_trigger_fired"] = "yes" if fired else "no"
    arm = more.get("arm")
    nodeid = f"{SPEC}[{case}]" + (f"[{arm}]" if arm else "") + (f"[r{repeat}]" if repeat else "")
    outcome = "error" if fired is None else "passed" if fired == should else "failed"
    row: SummaryRow = summary_row(nodeid, outcome, props)
    return row


def suite(**gates: Any) -> list[SummaryRow]:
    """10 prompts that should fire (2 did not) and 10 that should not (1 did), one run each."""
    rows = [trial(f"p{n}", True, n > 2, **gates) for n in range(1, 11)]
    return rows + [trial(f"n{n}", False, n == 1, **gates) for n in range(1, 11)]


def test_precision_and_recall_are_counted_over_trials_with_wilson_intervals() -> None:
    (c,) = triggers.components(suite())
    assert c.counts == (8, 1, 2) and c.trials == 20 and len(c.prompts) == 20
    precision, recall = c.precision(), c.recall()
    assert precision is not None and recall is not None
    # By hand: Wilson at z = 1.95996 for 8 of 9 and for 8 of 10.
    assert precision.estimate == pytest.approx(8 / 9)
    assert (precision.low, precision.high) == pytest.approx((0.5650, 0.9801), abs=1e-4)
    assert recall.estimate == pytest.approx(0.8)
    assert (recall.low, recall.high) == pytest.approx((0.4902, 0.9433), abs=1e-4)
    assert [p.id for p in c.misfired()] == ["p1", "p2", "n1"]


def test_repeats_count_as_trials_and_cached_or_broken_runs_do_not() -> None:
    rows = [
        trial("p1", True, True, repeat=1),
        trial("p1", True, False, repeat=2),
        trial("p1", True, True, repeat=3),
        trial("n1", False, False, repeat=1),
        trial("n1", False, True, repeat=2),
        trial("n1", False, None, repeat=3),  # broke before its check ran
        trial("p2", True, True, cached="20261201T000000-aaaa"),  # the store's, not a trial
    ]
    (c,) = triggers.components(rows)
    assert c.counts == (2, 1, 1) and c.trials == 5 and c.not_trials == 2
    assert [(p.id, p.fired, p.runs) for p in c.prompts] == [("p1", 2, 3), ("n1", 1, 2)]
    lines = triggers.trigger_lines(rows)
    assert lines[1] == (
        f"{SPEC}: skill notes over 2 prompts, 5 trials: precision 0.67 [0.21, 0.94] "
        "(2 of 3 firings should have), recall 0.67 [0.21, 0.94] (2 of 3 should-fire "
        "trials); 2 runs not counted (cached, or no check ran)"
    )
    assert lines[2:] == [
        "    misfired: p1 (should fire, fired 2/3): the p1 prompt",
        "    misfired: n1 (should not fire, fired 1/2): the n1 prompt",
    ]


def test_nothing_fired_leaves_precision_unmeasured_and_below_any_minimum() -> None:
    rows = [trial("p1", True, False, trigger_min_precision=0.5), trial("n1", False, False)]
    (c,) = triggers.components(rows)
    assert c.precision() is None and c.failures() == ["min_precision 0.5"]
    assert "precision - (nothing fired)" in triggers.trigger_lines(rows)[1]


def test_the_gate_fails_the_suite_below_min_recall_and_decides_its_runs() -> None:
    below = suite(trigger_min_precision=0.8, trigger_min_recall=0.9)
    assert decide(Ending(base=1, rows=below)) == EXIT_FAILED
    line = triggers.trigger_lines(below)[1]
    assert line.endswith("; BELOW min_recall 0.9")
    met = suite(trigger_min_precision=0.8, trigger_min_recall=0.8)
    assert "; ok, min_precision 0.8, min_recall 0.8" in triggers.trigger_lines(met)[1]
    # its three misfired runs failed, yet the gate, met, decides them
    assert decide(Ending(base=1, rows=met)) == EXIT_OK
    # without a gate each misfire is a failure, as any failed run
    assert decide(Ending(base=1, rows=suite())) == EXIT_FAILED
    # a failure of another spec still fails the suite
    other = summary_row("o.atom.yaml::o", "failed", {})
    assert decide(Ending(base=1, rows=[*met, other])) == EXIT_FAILED


def test_an_arm_is_compared_with_the_reference_paired_by_prompt() -> None:
    """Reference: p1..p4 fire 1, 1, 0, 0 (recall 0.5), n1 n2 silent; the other arm: p1..p4
    all fire (recall 1.0), n1 fires (precision 4/5): +0.5 recall, -0.2 precision."""
    ref = [trial(f"p{n}", True, n <= 2, arm="short", arm_reference=True) for n in range(1, 5)]
    ref += [trial(f"n{n}", False, False, arm="short", arm_reference=True) for n in (1, 2)]
    arm = [trial(f"p{n}", True, True, arm="long") for n in range(1, 5)]
    arm += [trial(f"n{n}", False, n == 1, arm="long") for n in (1, 2)]
    short, long = triggers.components(ref + arm)
    assert (short.key, long.key) == (f"{SPEC}[short]", f"{SPEC}[long]")
    assert short.paired is None and long.paired is not None
    paired = long.paired
    assert paired.prompts == 6
    assert not isinstance(paired.recall, float) and paired.recall is not None
    assert paired.recall.estimate == pytest.approx(0.5)
    assert paired.recall.low <= 0.5 <= paired.recall.high
    assert paired.recall.method == "paired bootstrap by prompt (seed 0)"
    assert not isinstance(paired.precision, float) and paired.precision is not None
    assert paired.precision.estimate == pytest.approx(-0.2)
    lines = triggers.trigger_lines(ref + arm)
    assert any(
        line.startswith("    vs reference over 6 prompts: precision -0.20 [") for line in lines
    )
    figures = measured(ref + arm)["triggers"]
    assert figures[1]["vs_reference"]["recall"]["estimate"] == pytest.approx(0.5)
    assert figures[0]["vs_reference"] is None


def test_junit_and_measured_json_say_the_same_figures() -> None:
    rows = suite(trigger_min_recall=0.7)
    props = dict(triggers.junit_properties(rows))
    assert props[f"atom_triggers {SPEC}"] == triggers.trigger_lines(rows)[1].split(": ", 1)[1]
    assert props[f"atom_triggers_misfired {SPEC}"] == (
        "p1 (should fire, fired 0/1): the p1 prompt | p2 (should fire, fired 0/1): the p2 "
        "prompt | n1 (should not fire, fired 1/1): the n1 prompt"
    )
    (figures,) = measured(rows)["triggers"]
    assert (figures["true_positives"], figures["false_positives"]) == (8, 1)
    assert figures["recall"]["low"] == pytest.approx(0.490162, abs=1e-6)
    assert figures["met"] is True and [m["id"] for m in figures["misfired"]] == ["p1", "p2", "n1"]
