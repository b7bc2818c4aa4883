"""One cost rule in every view: what a run spent, and apart, Claude Code's list price of its
sessions (what recording them costs). The summary, JUnit, the HTML page and the history
store read the same two figures (`cost.usage.Dollars`, `SpecResult.dollars`), so a
scripted run cannot say $0.0000 in one view and $0.1491 in another without naming which
is which."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_atom.history.write import item_record
from pytest_atom.reports.html import render_html, report_row, spec_view
from pytest_atom.reports.properties import result_properties
from pytest_atom.reports.summary import summary_table
from pytest_atom.reports.trace import build_trace
from pytest_atom.results.record import IterationRecord, RunOutcome
from pytest_atom.results.rows import SummaryRow
from pytest_atom.results.spec_result import Attempt, SpecResult
from pytest_atom.spec.types import Spec


def _result(tmp_path: Path, paid: frozenset[str]) -> SpecResult:
    """A one-call run that Claude Code priced at $0.1491 (it prices scripted answers too)."""
    call = IterationRecord(0, usage={"input_tokens": 9000, "output_tokens": 400}, cost_usd=0.1491)
    attempt = Attempt(1, tmp_path / "a01", RunOutcome(True, 1), [call])
    spec = Spec(name="s", path=tmp_path / "s.atom.yaml", line=1, prompt="p")
    return SpecResult(spec, tmp_path, [attempt], 1.0, 0.8, paid=paid)


@pytest.mark.parametrize(("paid", "spent"), [(frozenset(), 0.0), (frozenset({"executor"}), 0.1491)])
def test_every_view_shows_what_was_spent_and_the_list_price_apart(
    tmp_path: Path, paid: frozenset[str], spent: float
) -> None:
    result = _result(tmp_path, paid)
    dollars = result.dollars()
    assert (dollars.spent, dollars.list_price) == pytest.approx((spent, 0.1491))
    props = result_properties(result)
    assert (props["atom_cost_usd"], props["atom_list_price_usd"]) == pytest.approx((spent, 0.1491))
    header, line = summary_table([SummaryRow.of("s.atom.yaml::s", props)])
    cells = dict(zip(header.split("  "), line.split(), strict=False))
    assert line.split()[-3:-1] == [f"{spent:.4f}", "0.1491"] and "list $" in header, cells
    assert build_trace(result)["cost"]["list_price_usd"] == pytest.approx(0.1491)
    stored = item_record(result, None)
    assert (stored.spent_usd, stored.total_cost) == pytest.approx((spent, 0.1491))
    page = render_html([report_row("s.atom.yaml::s", "passed", spec_view(result))])
    assert f'{spent:.4f} <span class="rec">/ 0.1491</span>' in page
    assert "list price $0.1491" in page


def test_a_summary_row_from_a_file_without_the_list_price_adds_up_its_roles() -> None:
    row = SummaryRow.of(
        "s.atom.yaml::s",
        {
            "atom_outcome": "passed",
            "atom_cost_usd": 0.0,
            "atom_executor_tokens": 10,
            "atom_executor_cost_usd": 0.1,
            "atom_reflector_tokens": 5,
            "atom_reflector_cost_usd": 0.0491,
        },
    )
    assert row.list_price_usd == pytest.approx(0.1491)
