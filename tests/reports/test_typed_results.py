"""Results stay typed to the edge: what a report shows is rendered from
values, never parsed back from a line another part printed."""

from __future__ import annotations

from pytest_atom.baseline.gate import gate
from pytest_atom.baseline.measure import arm_lines, junit_properties
from pytest_atom.reports.phrases import drift_line, drift_summary
from pytest_atom.results.drift import Drift
from tests.helpers import summary_row


def test_the_gate_flags_its_regressions_without_reading_its_text() -> None:
    answer = gate(
        {"a.atom.yaml::x": ((10, 10), (0, 10)), "b.atom.yaml::REGRESSION": ((5, 10), (5, 10))}
    )
    flagged = answer.flagged_lines()
    red = [line for line, is_red in flagged if is_red]
    assert red[0].startswith("baseline gate: REGRESSION")
    assert any("a.atom.yaml::x: REGRESSION" in line for line in red)
    # a spec whose name holds the word is not coloured for it
    assert not any(line.lstrip().startswith("b.atom.yaml::REGRESSION") for line in red)


def _arm_row(nodeid: str, arm: str, label: str, *, reference: bool = False) -> object:
    props = {"atom_arm": arm, "atom_turns": 3, "atom_tokens": 1000}
    if reference:
        props["atom_arm_reference"] = True
    return summary_row(nodeid, label, props)


def test_junit_arm_properties_say_what_the_arm_lines_say() -> None:
    rows = [
        _arm_row("a.atom.yaml::x[on]", "on", "passed", reference=True),
        _arm_row("a.atom.yaml::x[off]", "off", "failed"),
        _arm_row("b.atom.yaml::y[on]", "on", "passed", reference=True),
        _arm_row("b.atom.yaml::y[off]", "off", "passed"),
    ]
    props = dict(junit_properties(rows))  # type: ignore[arg-type]
    printed = arm_lines(rows)  # type: ignore[arg-type]
    assert props["atom_arm a.atom.yaml::x[on] (reference)"] == printed[1].partition(": ")[2]
    off = props["atom_arm a.atom.yaml::x[off]"]
    assert off.startswith("0/1 passed") and "; vs reference: pass_rate -1.00" in off
    assert "atom_arm arm off over 2 specs" in props
    assert props["atom_arm arm off over 2 specs"].startswith("pass rate change ")


def test_the_drift_cell_and_line_come_from_one_value() -> None:
    drift = Drift(recorded_version="2.1.1", live_version="2.1.2", replayed=3, loose=1)
    drift.tools_reworded = {"Bash", "Read"}
    assert drift_line(drift) == (
        "recorded with Claude Code 2.1.1, replayed with 2.1.2: tools reworded Bash Read; "
        "3 requests: 2 identical, 1 matched on the conversation"
    )
    assert drift_summary(drift) == "2.1.1 → 2.1.2; tools changed (2)"
    assert drift_line(None) is None


def test_a_stale_reason_is_classified_by_its_kind_not_its_words() -> None:
    from pytest_atom.replay.staleness import StaleReason

    # worded like a changed script, but a configuration's: the kind decides
    reason = StaleReason("script changed since recording", "config")
    assert reason == "script changed since recording" and reason.refused
    assert not StaleReason("skill x changed since recording", "prompt").refused


def test_a_crossed_limit_names_its_limit_without_being_taken_apart() -> None:
    import pickle

    from pytest_atom.cost.limits import Budget, Limits
    from pytest_atom.results.outcome import RunFacts, decide

    budget = Budget(Limits(max_turns=2))
    budget.usage.turns = 3
    crossed = budget.crossed()
    assert crossed == "exceeded max_turns: 3 > 2" and crossed.limit == "exceeded max_turns"
    in_step = crossed.within("test: the: tests")  # a colon in the step's name is no cut
    assert in_step == "step test: the: tests: exceeded max_turns: 3 > 2"
    outcome = decide(RunFacts(
        attempts=1, decision="fail", score=None, threshold=0.8, completed=False,
        reason="limit", checks_failed=0, checks=0, limit_exceeded=in_step,
    ))  # fmt: skip
    assert outcome.summary_label == "failed: step test: the: tests"
    assert pickle.loads(pickle.dumps(in_step)).limit == "step test: the: tests"
