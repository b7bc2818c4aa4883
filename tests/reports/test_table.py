"""Terminal tables: rich lays them out, the cells stay the text they were given."""

from __future__ import annotations

from pytest_atom.reports.table import table_lines


def test_columns_align_left_and_right_two_spaces_apart() -> None:
    lines = table_lines(["SPEC", "RUNS"], [["calc", "12"], ["a-longer-name", "3"]], right=[1])
    assert lines == ["SPEC           RUNS", "calc             12", "a-longer-name     3"]


def test_a_cell_is_text_not_markup_and_keeps_its_trailing_blanks() -> None:
    """A case id in brackets stays whole, and a figure padded to line up with a wider one
    (``13`` beside ``4570 recalled``) keeps its padding."""
    lines = table_lines(
        ["spec", "tokens" + " " * 9],
        [["calc[bold]", "13" + " " * 9], ["calc[case-1]", "4570 recalled"]],
        right=[1],
    )
    assert lines == [
        "spec          tokens",
        "calc[bold]        13",
        "calc[case-1]    4570 recalled",
    ]
