"""Turns to success per conversation spec and per arm, from typed summary rows: an arm's
change from the reference arm is paired by case, with the paired bootstrap's interval."""

from __future__ import annotations

from typing import Any

from pytest_atom.baseline.measure import (
    conversation_figures,
    conversation_lines,
    junit_properties,
    measured,
    measured_lines,
)
from pytest_atom.baseline.stats import Interval
from pytest_atom.results.rows import SummaryRow
from tests.helpers import summary_row


def _row(case: str, arm: str, repeat: int, turns: int, done: bool = True) -> SummaryRow:
    props: dict[str, Any] = {
        "atom_case": case,
        "atom_arm": arm,
        "atom_arm_reference": arm == "base",
        "atom_user_turns": str(turns),
        "atom_user_done": str(done),
    }
    row: SummaryRow = summary_row(
        f"talk.atom.yaml::talk[{case}][{arm}][r{repeat}]", "passed", props
    )
    return row


#: Three personas, two arms, two repeats: the terse arm needs one more turn of the terse
#: persona, two more of the confused one, none more of the adversarial one.
TURNS = {
    ("terse", "base"): (2, 2),
    ("terse", "short"): (3, 3),
    ("confused", "base"): (3, 4),
    ("confused", "short"): (5, 6),
    ("adversarial", "base"): (4, 4),
    ("adversarial", "short"): (4, 4),
}
ROWS = [
    _row(case, arm, n, turns)
    for (case, arm), counts in TURNS.items()
    for n, turns in enumerate(counts, 1)
]


def test_an_arm_changes_turns_to_success_paired_by_case() -> None:
    base, short = conversation_figures(ROWS)
    assert (base.spec, base.runs, base.turns, base.paired) == (
        "talk.atom.yaml::talk[base]",
        6,
        (2, 2, 3, 4, 4, 4),
        None,
    )
    assert short.spec == "talk.atom.yaml::talk[short]" and short.turns == (3, 3, 4, 4, 5, 6)
    # Case by case: terse +1, confused +2, adversarial 0; their mean, bootstrapped.
    assert isinstance(short.paired, Interval)
    assert short.paired.estimate == 1.0
    assert 0 <= short.paired.low <= 1.0 <= short.paired.high <= 2
    assert short.paired.method.startswith("paired bootstrap (seed ")


def test_the_change_is_in_the_summary_and_the_reports_lines() -> None:
    lines = conversation_lines(ROWS)
    assert (
        lines[1] == "talk.atom.yaml::talk[base]: 6/6 succeeded, median 3.5 turns (2: 2, 3: 1, 4: 3)"
    )
    assert lines[2].startswith(
        "talk.atom.yaml::talk[short]: 6/6 succeeded, median 4 turns (3: 2, 4: 2, 5: 1, 6: 1); "
        "vs reference by case: user turns +1.0 ["
    )
    assert lines[1] in measured_lines(ROWS)
    props = dict(junit_properties(ROWS))
    assert props["atom_conversation talk.atom.yaml::talk[short]"] == lines[2].split(": ", 1)[1]
    base, short = measured(ROWS)["conversations"]
    assert (base["succeeded"], base["median_turns"], base["vs_reference_by_case"]) == (6, 3.5, None)
    assert short["vs_reference_by_case"]["estimate"] == 1.0


def test_a_case_the_user_gave_up_on_is_not_paired() -> None:
    rows = [_row("terse", "base", 1, 2), _row("terse", "short", 1, 9, done=False)]
    _, short = conversation_figures(rows)
    assert (short.turns, short.paired) == ((), None)
    assert conversation_lines(rows)[2] == "talk.atom.yaml::talk[short]: 0/1 succeeded"
