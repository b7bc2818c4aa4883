"""The terminal summary fits a 100-column terminal: a spec whose
row is wider takes two lines (three with tokens per role); the full table is in HTML."""

from __future__ import annotations

import itertools
import re

import pytest

from pytest_atom.cost.usage import ROLES
from pytest_atom.reports.summary import SUMMARY_WIDTH, summary_table
from pytest_atom.results.rows import SummaryRow
from tests.helpers import summary_row

LONG = "examples/a-project-with-a-long-folder-name/specs/release_notes_from_commits.atom.yaml"


def _figures(**more: object) -> dict[str, object]:
    props: dict[str, object] = {
        "atom_score": 0.87,
        "atom_attempts": 3,
        "atom_iterations": 12,
        "atom_agent_tokens": 1_234_567,
        "atom_cost_usd": 12.345678,
        "atom_recorded_cost_usd": 3.2,
        "atom_list_price_usd": 3.2,
        "atom_duration_s": 1234.5,
        "atom_recalled": "reflector",
        "atom_baseline": "regression",
        "atom_baseline_tokens": 123456,
        "atom_baseline_turns": 12,
        "atom_limit_exceeded": "exceeded max_turns: 3 > 2",
        "atom_plan": "plan: " + ", ".join(f"a-rather-long-step-name-{n}" for n in range(9)),
    }
    for role in ROLES:
        props[f"atom_{role}_tokens"], props[f"atom_{role}_cost_usd"] = 987_654, 1.2345
    return props | more


def test_a_summary_of_long_names_and_every_role_fits_100_columns() -> None:
    rows = [
        summary_row(
            f"{LONG}::write-release-notes-for-every-merged-pull-request[arm-{n}][r{n}]",
            label,
            _figures(),
        )
        for n, label in enumerate(("passed", "failed", "xfailed", "upstream error"), 1)
    ]
    lines = summary_table(rows, SUMMARY_WIDTH)
    assert max(len(line) for line in lines) <= SUMMARY_WIDTH
    # nothing is lost: each spec's name (its end, where it is cut), figures and roles
    for n, label in enumerate(("passed", "failed", "xfailed", "upstream error"), 1):
        assert any(line.endswith(f"[arm-{n}][r{n}]  {label}") for line in lines)
    text = "\n".join(lines)
    for role in ROLES:
        assert f"{role} 987654" in text
    assert text.count("1234567") == 4 and text.count("12.3457") == 4
    assert text.count("regression turns +12 tokens +123,456") == 4
    # the figures line up under their header
    header = next(line for line in lines if "time s" in line)
    column = header.index("time s") + len("time s")
    assert all(line[column - 6 : column] == "1234.5" for line in lines if "1234.5" in line)


def test_a_summary_that_fits_stays_one_line_a_spec() -> None:
    rows = [summary_row("a.atom.yaml::a", "passed", {"atom_agent_tokens": 10})]
    assert len(summary_table(rows, SUMMARY_WIDTH)) == 2


def test_without_roles_the_figures_share_the_second_line() -> None:
    rows = [summary_row(f"{LONG}::x", "passed", {"atom_agent_tokens": 10, "atom_duration_s": 1})]
    [spec, header, name, figures] = summary_table(rows, SUMMARY_WIDTH)
    assert (spec, name) == ("spec  outcome", f"{LONG}::x  passed")
    assert header.split() == [
        "score",
        "attempts",
        "iter",
        "tokens",
        "cost",
        "$",
        "list",
        "$",
        "time",
        "s",
    ]
    assert figures.split() == ["-", "10", "0.0000", "-", "1.0"]


def test_a_terminal_gets_its_own_width_at_most_100_and_a_log_one_line_a_spec() -> None:
    from pytest_atom.reports.summary import summary_width

    assert summary_width(True, 80) == 80
    assert summary_width(True, 240) == SUMMARY_WIDTH
    assert summary_width(False, 80) is None  # a CI log or a file: one line a spec
    rows = [summary_row(f"{LONG}::x", "passed", {"atom_agent_tokens": 10})]
    assert len(summary_table(rows, None)) == 2 and len(summary_table(rows, 80)) == 4
    assert max(len(line) for line in summary_table(rows, 80)) <= 80


#: Every set of columns a summary can have: the role columns (none, or two and more; the
#: executor alone gets none), with or without a baseline's, with or without a recalled cell.
COLUMN_SETS = [
    (roles, compared, recalled)
    for n in (0, *range(2, len(ROLES) + 1))
    for roles in itertools.combinations(ROLES, n)
    for compared in (False, True)
    for recalled in ((False, True) if roles else (False,))
]


def _rows(roles: tuple[str, ...], compared: bool, recalled: bool) -> list[SummaryRow]:
    """Two runs, as two shipped fixtures replayed: the first with every figure wide."""
    rows = []
    for n, (name, label) in enumerate(
        (("specs/create_file.atom.yaml::create-file", "passed"), (f"{LONG}::notes", "failed"))
    ):
        props: dict[str, object] = {
            "atom_score": 0.9,
            "atom_attempts": 1 + 2 * n,
            "atom_iterations": 2,
            "atom_agent_tokens": 31911,
            "atom_tokens": 36481 * (1 + 30 * n),
            "atom_cost_usd": 0.0123 * n,
            "atom_recorded_cost_usd": 0.4 * n,
            "atom_list_price_usd": 0.4 * n,
            "atom_duration_s": 3.2 + 1000 * n,
        }
        for role in roles:
            props[f"atom_{role}_tokens"] = 4570 if n == 0 else 13
            props[f"atom_{role}_cost_usd"] = 0.01
        if recalled and n == 0:
            props["atom_recalled"] = ", ".join(sorted(roles[-2:]))
        if compared:
            props |= {
                "atom_baseline": "regression",
                "atom_baseline_tokens": 123456,
                "atom_baseline_turns": 12,
            }
        rows.append(summary_row(name, label, props))
    return rows


def _figure_ends(header: str, names: list[str]) -> dict[str, int]:
    """Where each figure column's header ends: its cells' figures end there too."""
    ends, at = {}, 0
    for name in names:
        at = header.index(name, at) + len(name)
        ends[name] = at
    return ends


@pytest.mark.parametrize("width", [SUMMARY_WIDTH, 72])
@pytest.mark.parametrize(("roles", "compared", "recalled"), COLUMN_SETS)
def test_every_column_set_fits_the_width_with_its_figures_under_their_headers(
    roles: tuple[str, ...], compared: bool, recalled: bool, width: int
) -> None:
    """With the executor and reflector columns, and a ``4570 recalled`` cell, the summary
    still fits `width`, each column's figures under their header."""
    lines = summary_table(_rows(roles, compared, recalled), width)
    assert max(map(len, lines)) <= width, "\n".join(lines)
    header = next(
        line for line in lines if line.rstrip().endswith("time s") or "vs baseline" in line
    )
    names = [n for n in ("score", "attempts", "iter", "tokens", *roles) if n in header.split()]
    names += ["cost $", "list $", "time s"]
    ends = _figure_ends(header, names)
    figures = [line for line in lines if re.search(r"\d\.\d{4}", line)]  # each run's cost
    assert len(figures) == 2, "\n".join(lines)
    for line in figures:
        for name, end in ends.items():
            cell = line[:end].rsplit(" ", 1)[-1]
            assert re.fullmatch(r"-|\d+(\.\d+)?", cell), (name, line, header)
            assert end == len(line) or line[end] == " ", (name, line, header)
    text = "\n".join(lines)
    if recalled:  # the word is kept, right after its figure
        assert " 4570 recalled" in text
    for role in roles:  # each role's figures are there, in a column or on a line of their own
        assert f"{role} 13" in text or role in header
